//! Reading objects: one [`Reader`] per thread with its own delta-base
//! cache, header look-ups, and listings of every object (blobs and trees
//! told apart by walking pack headers, not by resolving deltas).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use gix::ObjectId;
use gix::objs::{Find, FindHeader};
use rayon::prelude::*;

use super::loose::Loose;
use super::{Repo, RepoError};

/// Delta-base cache per reader (per thread). When blobs are read in pack
/// order a delta's base was usually decoded shortly before, and a hit turns
/// a delta-chain walk into one delta application. gix caches only delta
/// results, never undeltified bases, so hit rates stay modest (about 20% of
/// lookups on git.git); measured there, 16MB, 64MB and 256MB were within
/// noise of each other and 1GB gained ~15%, not worth the memory.
const READER_PACK_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The pack index files of a pack directory, sorted; none when the
/// directory cannot be read (a repository without packs).
pub(super) fn idx_files(pack_dir: &Path) -> Vec<PathBuf> {
    let Ok(read_dir) = std::fs::read_dir(pack_dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = read_dir
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "idx"))
        .collect();
    paths.sort();
    paths
}

/// A pack opened directly by its index and data file.
pub(super) struct Pack {
    pub(super) index: gix::odb::pack::index::File,
    pub(super) data_path: PathBuf,
}

impl Repo {
    /// The local object directory (`objects/` of the common dir), without
    /// alternates.
    pub fn objects_dir(&self) -> PathBuf {
        self.repo.objects_dir().to_owned()
    }

    /// Every object stored in the local object directory, packed or loose,
    /// each once, sorted. Objects borrowed from alternates are not listed.
    /// Unlike the readers, which skip a pack without a usable index the way
    /// git does, this fails on one: callers use it to decide what may be
    /// deleted.
    pub fn local_objects(&self) -> Result<Vec<ObjectId>, RepoError> {
        let hash = self.object_hash();
        let dir = self.objects_dir();
        let mut ids = Vec::new();
        for idx in idx_files(&dir.join("pack")) {
            let index =
                gix::odb::pack::index::File::at(&idx, hash).map_err(|source| RepoError::Pack {
                    path: idx.clone(),
                    source: gix::Error::from_error(source),
                })?;
            ids.extend(index.iter().map(|e| e.oid));
        }
        for id in gix::odb::loose::Store::at(&dir, hash).iter() {
            ids.push(id.map_err(|e| RepoError::ListObjects {
                path: dir.clone(),
                source: gix::Error::from_error(e),
            })?);
        }
        ids.par_sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// A handle to read blobs from the current thread.
    ///
    /// A `Reader` owns a thread-local view of the object database with its own
    /// delta-base cache, so create one per thread (they are cheap, but not
    /// free: the cache warms up as it is used) and keep it for many reads.
    pub fn reader(&self) -> Reader {
        self.reader_with_cache(READER_PACK_CACHE_BYTES)
    }

    /// A [`reader`](Self::reader) whose delta-base cache holds at most
    /// `bytes`: for work that keeps much else in memory per thread.
    pub fn reader_with_cache(&self, bytes: usize) -> Reader {
        let mut repo = self.local();
        repo.objects.set_pack_cache(move || {
            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(bytes))
        });
        // Blobs are read once each; an object cache would only copy them.
        repo.objects.unset_object_cache();
        Reader {
            repo,
            buf: Vec::new(),
            loose: Loose::new(self.object_dirs()),
        }
    }

    /// Every blob in the object database, loose and packed, including
    /// alternates (what `git cat-file --batch-all-objects` lists), each once,
    /// sorted by id, with its size taken from the object header.
    ///
    /// Packs are walked in offset order, where a delta's base always comes
    /// first, so an object's kind is known from its base without walking
    /// delta chains; only the first bytes of blob deltas are inflated, for
    /// their size. Loose objects (and the rare packed object whose base is
    /// elsewhere) go through gix's header lookup.
    pub fn all_blobs(&self) -> Result<Vec<(ObjectId, u64)>, RepoError> {
        let want = Want {
            trees: false,
            sizes: true,
        };
        Ok(self.list_objects(want)?.0)
    }

    /// The ids of [`Repo::all_blobs`] without their sizes: nothing is
    /// inflated in a pack, since a delta's kind is its base's.
    pub fn all_blob_ids(&self) -> Result<Vec<ObjectId>, RepoError> {
        let want = Want {
            trees: false,
            sizes: false,
        };
        Ok(self
            .list_objects(want)?
            .0
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// [`Repo::all_blobs`], and every tree with its size (sorted by id, each
    /// once), from the same walk.
    #[allow(clippy::type_complexity)]
    pub fn all_blobs_and_trees(
        &self,
    ) -> Result<(Vec<(ObjectId, u64)>, Vec<(ObjectId, u64)>), RepoError> {
        self.list_objects(Want {
            trees: true,
            sizes: true,
        })
    }

    /// Blobs (and trees if wanted) with their sizes (0 unless wanted),
    /// each list sorted by id, each object once.
    #[allow(clippy::type_complexity)]
    fn list_objects(
        &self,
        want: Want,
    ) -> Result<(Vec<(ObjectId, u64)>, Vec<(ObjectId, u64)>), RepoError> {
        let hash = self.object_hash();
        let mut blobs = Vec::new();
        let mut trees = Vec::new();
        let mut unresolved = Vec::new();
        for pack in self.packs() {
            pack_objects(&pack, hash, want, &mut blobs, &mut trees, &mut unresolved)?;
        }
        for dir in self.object_dirs() {
            for id in gix::odb::loose::Store::at(&dir, hash).iter() {
                unresolved.push(id.map_err(|e| RepoError::ListObjects {
                    path: dir.clone(),
                    source: gix::Error::from_error(e),
                })?);
            }
        }
        let readers = ReaderPool::new(self);
        let more = unresolved
            .par_chunks(chunk_len(unresolved.len()))
            .map(|chunk| {
                readers.with(|reader| {
                    let mut out = Vec::new();
                    for id in chunk {
                        let (kind, size) = reader.header(id)?;
                        if matches!(kind, gix::object::Kind::Blob | gix::object::Kind::Tree) {
                            out.push((*id, kind, size));
                        }
                    }
                    Ok(out)
                })
            })
            .collect::<Result<Vec<_>, RepoError>>()?;
        for (id, kind, size) in more.into_iter().flatten() {
            let size = if want.sizes { size } else { 0 };
            if kind == gix::object::Kind::Blob {
                blobs.push((id, size));
            } else if want.trees {
                trees.push((id, size));
            }
        }
        for list in [&mut blobs, &mut trees] {
            list.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
            list.dedup_by(|a, b| a.0 == b.0);
        }
        Ok((blobs, trees))
    }

    /// The objects directory and those of its alternates.
    fn object_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.repo.objects_dir().to_owned()];
        if let Ok(alternates) = self.repo.objects.alternate_db_paths() {
            dirs.extend(alternates);
        }
        dirs
    }

    /// Every pack with both its index and data file, opened directly
    /// (not through gix's object store) so bulk operations can walk a pack in
    /// its own order. A pack whose index cannot be opened is left out, as
    /// git leaves it out.
    pub(super) fn packs(&self) -> Vec<Pack> {
        let hash = self.object_hash();
        let mut packs = Vec::new();
        for dir in self.object_dirs() {
            for idx in idx_files(&dir.join("pack")) {
                let data_path = idx.with_extension("pack");
                if !data_path.is_file() {
                    continue;
                }
                if let Ok(index) = gix::odb::pack::index::File::at(&idx, hash) {
                    packs.push(Pack { index, data_path });
                }
            }
        }
        packs
    }
}

impl Pack {
    pub(super) fn data(
        &self,
        hash: gix::hash::Kind,
    ) -> Result<gix::odb::pack::data::File, RepoError> {
        gix::odb::pack::data::File::at(&self.data_path, hash).map_err(|source| RepoError::Pack {
            path: self.data_path.clone(),
            source,
        })
    }

    fn corrupt(&self, what: &str) -> RepoError {
        RepoError::Pack {
            path: self.data_path.clone(),
            source: gix::Error::from_error(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                what.to_owned(),
            )),
        }
    }
}

/// What a listing gathers besides blob ids: trees, sizes.
#[derive(Clone, Copy, Debug)]
struct Want {
    trees: bool,
    /// Sizes of deltified objects cost an inflation each.
    sizes: bool,
}

/// An entry's header as the walk of a pack needs it: an object's kind and
/// size, or the position of a delta's base among the entries in offset
/// order.
#[derive(Clone, Copy)]
enum Head {
    Object(Option<gix::object::Kind>, u64),
    Delta(Option<usize>),
}

/// Collect the blobs (and trees, if wanted) of `pack`, with their sizes
/// if wanted; objects whose kind cannot be told from this pack alone go
/// to `unresolved`.
fn pack_objects(
    pack: &Pack,
    hash: gix::hash::Kind,
    want: Want,
    blobs: &mut Vec<(ObjectId, u64)>,
    trees: &mut Vec<(ObjectId, u64)>,
    unresolved: &mut Vec<ObjectId>,
) -> Result<(), RepoError> {
    use gix::odb::pack::data::entry::Header;
    let data = pack.data(hash)?;
    let mut entries: Vec<(u64, ObjectId)> =
        pack.index.iter().map(|e| (e.pack_offset, e.oid)).collect();
    entries.par_sort_unstable_by_key(|e| e.0);
    let position = |offset: u64| entries.binary_search_by_key(&offset, |e| e.0).ok();
    let entry_at = |offset: u64| {
        data.entry(offset).map_err(|source| RepoError::Pack {
            path: pack.data_path.clone(),
            source,
        })
    };
    // Headers are parsed on all threads (the walk touches the whole pack);
    // kinds are then passed from bases to deltas in offset order, where a
    // base always comes first.
    let heads = entries
        .par_iter()
        .map(|&(offset, _)| {
            let entry = entry_at(offset)?;
            Ok(match entry.header {
                Header::OfsDelta { base_distance } => Head::Delta(
                    entry
                        .checked_base_pack_offset(base_distance)
                        .and_then(position),
                ),
                Header::RefDelta { base_id } => Head::Delta(
                    pack.index
                        .lookup(base_id)
                        .and_then(|e| position(pack.index.pack_offset_at_index(e))),
                ),
                header => Head::Object(header.as_kind(), entry.decompressed_size),
            })
        })
        .collect::<Result<Vec<Head>, RepoError>>()?;
    let mut kinds: Vec<Option<gix::object::Kind>> = Vec::with_capacity(entries.len());
    for (i, head) in heads.iter().enumerate() {
        let kind = match *head {
            Head::Object(kind, _) => kind,
            Head::Delta(base) => base.filter(|&b| b < i).and_then(|b| kinds[b]),
        };
        kinds.push(kind);
    }
    let mut listed: Vec<(usize, gix::object::Kind)> = Vec::new();
    for (i, kind) in kinds.into_iter().enumerate() {
        match kind {
            Some(k @ gix::object::Kind::Blob) => listed.push((i, k)),
            Some(k @ gix::object::Kind::Tree) if want.trees => listed.push((i, k)),
            Some(_) => {}
            None => unresolved.push(entries[i].1),
        }
    }
    let sized = listed
        .par_chunks(4096)
        .map(|chunk| {
            let mut inflate = gix::zlib::Inflate::default();
            chunk
                .iter()
                .map(|&(i, kind)| {
                    let (offset, id) = entries[i];
                    // A whole object's size is in its header, read above; a
                    // delta's is at the start of its inflated data.
                    let size = match heads[i] {
                        _ if !want.sizes => 0,
                        Head::Object(_, size) => size,
                        Head::Delta(_) => {
                            delta_result_size(pack, &data, &entry_at(offset)?, &mut inflate)?
                        }
                    };
                    Ok((id, kind, size))
                })
                .collect::<Result<Vec<_>, RepoError>>()
        })
        .collect::<Result<Vec<_>, RepoError>>()?;
    for (id, kind, size) in sized.into_iter().flatten() {
        if kind == gix::object::Kind::Blob {
            blobs.push((id, size));
        } else {
            trees.push((id, size));
        }
    }
    Ok(())
}

/// The size of the object a delta produces, from the delta's header: two
/// little-endian base-128 numbers (base size, result size) at its start, so
/// inflating a few bytes is enough.
fn delta_result_size(
    pack: &Pack,
    data: &gix::odb::pack::data::File,
    entry: &gix::odb::pack::data::Entry,
    inflate: &mut gix::zlib::Inflate,
) -> Result<u64, RepoError> {
    let input = data
        .entry_slice(entry.data_offset..data.pack_end() as u64)
        .ok_or_else(|| pack.corrupt("delta entry beyond the end of the pack"))?;
    let mut buf = [0u8; 24];
    let want = usize::try_from(entry.decompressed_size).map_or(buf.len(), |n| n.min(buf.len()));
    inflate.reset();
    let (_, _, got) = inflate
        .once(input, &mut buf[..want])
        .map_err(|source| RepoError::Pack {
            path: pack.data_path.clone(),
            source,
        })?;
    let mut bytes = buf[..got].iter();
    let mut varint = || {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *bytes.next()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    };
    varint()
        .and_then(|_base| varint())
        .ok_or_else(|| pack.corrupt("truncated delta header"))
}

/// Reads objects for one thread. Obtain with [`Repo::reader`].
pub struct Reader {
    repo: gix::Repository,
    buf: Vec<u8>,
    loose: Loose,
}

impl Reader {
    /// Read a blob's bytes into a new vector.
    pub fn blob(&mut self, id: &gix::oid) -> Result<Vec<u8>, RepoError> {
        let mut out = Vec::new();
        self.blob_into(id, &mut out)?;
        Ok(out)
    }

    /// Read a blob's bytes into `buf`, replacing its contents, so one buffer
    /// can serve many reads.
    pub fn blob_into(&mut self, id: &gix::oid, buf: &mut Vec<u8>) -> Result<(), RepoError> {
        if id == ObjectId::empty_blob(id.kind()) {
            buf.clear();
            return Ok(());
        }
        let kind = self.find_checked(id, buf)?;
        if kind != gix::object::Kind::Blob {
            return Err(RepoError::WrongKind {
                id: id.to_owned(),
                expected: gix::object::Kind::Blob,
                actual: kind,
            });
        }
        Ok(())
    }

    /// Read `id` into `buf` as git reads it: from a pack (gix checks that
    /// the entry's zlib stream ends where its size says), else as a loose
    /// object through [`Loose`], which checks its stream to the end.
    fn find_checked(
        &mut self,
        id: &gix::oid,
        buf: &mut Vec<u8>,
    ) -> Result<gix::object::Kind, RepoError> {
        match gix::odb::pack::Find::try_find(&*self.repo.objects, id, buf) {
            Ok(Some((data, Some(_)))) => return Ok(data.kind),
            Ok(None) => return Err(RepoError::MissingObject { id: id.to_owned() }),
            // Loose, or unreadable: the loose file decides.
            Ok(Some((_, None))) | Err(_) => {}
        }
        match self.loose.read(id, buf)? {
            Some(kind) => Ok(kind),
            // No loose file (anymore): gix reports what it finds.
            None => find(&self.repo.objects, id, buf).map(|d| d.kind),
        }
    }

    /// Read any object's bytes into `buf`, replacing its contents, and
    /// return its kind.
    pub fn object_into(
        &mut self,
        id: &gix::oid,
        buf: &mut Vec<u8>,
    ) -> Result<gix::object::Kind, RepoError> {
        if id == ObjectId::empty_blob(id.kind()) {
            buf.clear();
            return Ok(gix::object::Kind::Blob);
        }
        if id == ObjectId::empty_tree(id.kind()) {
            buf.clear();
            return Ok(gix::object::Kind::Tree);
        }
        self.find_checked(id, buf)
    }

    /// [`Reader::blob_ref`] for a blob that is most likely a loose object
    /// (not in any pack when the caller looked): read from its file
    /// directly, and only if there is none through gix, which looks
    /// everywhere.
    pub(super) fn loose_blob_ref(&mut self, id: &gix::oid) -> Result<&[u8], RepoError> {
        match self.loose.read(id, &mut self.buf)? {
            Some(gix::object::Kind::Blob) => Ok(self.buf.as_slice()),
            Some(actual) => Err(RepoError::WrongKind {
                id: id.to_owned(),
                expected: gix::object::Kind::Blob,
                actual,
            }),
            None => self.blob_ref(id),
        }
    }

    /// Read a blob into the reader's own buffer and borrow it.
    pub fn blob_ref(&mut self, id: &gix::oid) -> Result<&[u8], RepoError> {
        let mut buf = std::mem::take(&mut self.buf);
        let res = self.blob_into(id, &mut buf);
        self.buf = buf;
        res.map(|()| self.buf.as_slice())
    }

    /// The kind and size of an object, without decompressing it in full.
    pub fn header(&self, id: &gix::oid) -> Result<(gix::object::Kind, u64), RepoError> {
        header(&self.repo.objects, id)
    }
}

/// One [`Reader`] per rayon thread, created on first use and kept for the
/// whole bulk operation so the delta-base caches stay warm.
///
/// Indexed by `rayon::current_thread_index()`, so each mutex is only ever
/// taken by its own thread and never contended; the mutex is there to
/// satisfy the borrow checker, not to serialise.
pub(super) struct ReaderPool<'a> {
    repo: &'a Repo,
    readers: Vec<Mutex<Option<Reader>>>,
}

impl<'a> ReaderPool<'a> {
    pub(super) fn new(repo: &'a Repo) -> Self {
        let n = rayon::current_num_threads().max(1);
        ReaderPool {
            repo,
            readers: std::iter::repeat_with(|| Mutex::new(None))
                .take(n)
                .collect(),
        }
    }

    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Reader) -> R) -> R {
        let slot = rayon::current_thread_index().unwrap_or(0) % self.readers.len();
        let mut guard = self.readers[slot]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let reader = guard.get_or_insert_with(|| self.repo.reader());
        f(reader)
    }
}

/// Work items small enough to balance between threads, large enough that
/// each thread mostly reads consecutive pack regions.
pub(super) fn chunk_len(n: usize) -> usize {
    (n / (rayon::current_num_threads().max(1) * 64)).clamp(16, 4096)
}

/// Read `id` into `buf` through gix, a loose object read again through
/// [`Loose`] to check its zlib stream to the end (gix stops at the size
/// its header gives), as git checks it.
pub(super) fn find<'a>(
    objects: &gix::OdbHandle,
    id: &gix::oid,
    buf: &'a mut Vec<u8>,
) -> Result<gix::objs::Data<'a>, RepoError> {
    let (kind, _) = Walker::new(objects).find(id, buf, false)?;
    Ok(gix::objs::Data::new(buf, kind, id.kind()))
}

/// [`find`] for many objects of one walk: the loose reader (its zlib
/// state, the object directories) made once, and objects expected to be
/// loose read from their file first.
pub(super) struct Walker<'o> {
    objects: &'o gix::OdbHandle,
    loose: Option<Loose>,
}

impl<'o> Walker<'o> {
    pub(super) fn new(objects: &'o gix::OdbHandle) -> Walker<'o> {
        Walker {
            objects,
            loose: None,
        }
    }

    fn loose(&mut self) -> &mut Loose {
        self.loose
            .get_or_insert_with(|| Loose::new(object_dirs(self.objects)))
    }

    /// Read `id` into `buf`: its kind, and whether it was a loose object.
    /// With `loose_first` (a tree below a loose tree, as a new commit
    /// writes them) its file is tried before gix, which would read it
    /// through a map of its own before [`Loose`] reads it again; a packed
    /// object costs that one failed `open` more.
    pub(super) fn find(
        &mut self,
        id: &gix::oid,
        buf: &mut Vec<u8>,
        loose_first: bool,
    ) -> Result<(gix::object::Kind, bool), RepoError> {
        // A failed loose-first read goes the usual way: packs first, as
        // git searches, so a damaged loose copy of a packed object is
        // ignored as git ignores it, and reported when it is the only one.
        if loose_first && let Ok(Some(kind)) = self.loose().read(id, buf) {
            return Ok((kind, true));
        }
        // gix leaves exactly the object's bytes in `buf`, as the readers
        // rely on.
        let (kind, loose) = match gix::odb::pack::Find::try_find(&**self.objects, id, buf) {
            Ok(Some((data, location))) => (data.kind, location.is_none()),
            Ok(None) => return Err(RepoError::MissingObject { id: id.to_owned() }),
            Err(source) => {
                // A corrupt loose object is named as git names it.
                self.loose().read(id, &mut Vec::new())?;
                return Err(RepoError::ReadObject {
                    id: id.to_owned(),
                    source,
                });
            }
        };
        if !loose {
            return Ok((kind, false));
        }
        match self.loose().read(id, buf)? {
            Some(kind) => Ok((kind, true)),
            // Packed meanwhile: read it from its pack.
            None => match self.objects.try_find(id, buf) {
                Ok(Some(data)) => Ok((data.kind, false)),
                Ok(None) => Err(RepoError::MissingObject { id: id.to_owned() }),
                Err(source) => Err(RepoError::ReadObject {
                    id: id.to_owned(),
                    source,
                }),
            },
        }
    }
}

/// The objects directory of `objects` and those of its alternates.
fn object_dirs(objects: &gix::OdbHandle) -> Vec<PathBuf> {
    let store = objects.store_ref();
    let mut dirs = vec![store.path().to_owned()];
    dirs.extend(store.alternate_db_paths().unwrap_or_default());
    dirs
}

pub(super) fn header(
    objects: &gix::OdbHandle,
    id: &gix::oid,
) -> Result<(gix::object::Kind, u64), RepoError> {
    let hash = id.kind();
    if id == ObjectId::empty_tree(hash) {
        return Ok((gix::object::Kind::Tree, 0));
    }
    if id == ObjectId::empty_blob(hash) {
        return Ok((gix::object::Kind::Blob, 0));
    }
    match objects.try_header(id) {
        Ok(Some(h)) => Ok((h.kind, h.size)),
        Ok(None) => Err(RepoError::MissingObject { id: id.to_owned() }),
        Err(source) => {
            // A corrupt loose object is named as git names it.
            Loose::new(object_dirs(objects)).read(id, &mut Vec::new())?;
            Err(RepoError::ReadObject {
                id: id.to_owned(),
                source,
            })
        }
    }
}
