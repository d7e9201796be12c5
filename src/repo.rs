//! Repository access: the one place in git-simm that knows gix.
//!
//! Everything else in the crate works on [`Entry`] lists and blob bytes.
//! Keeping gix behind this module means the rest of the code does not chase
//! gix API changes, and the choices that make bulk reading fast are made
//! once, here, instead of at every call site: [`Repo::map_blobs`] decodes a
//! pack along its delta trees when much of it is wanted (every object
//! inflated once) and otherwise reads in pack order with one reader and
//! delta-base cache per thread; [`Repo::all_blobs`] tells blobs from other
//! objects by walking pack headers instead of resolving delta chains.
//!
//! Error messages deliberately read like git's `fatal:` messages and always
//! name the object, path or revision involved, because they end up in front
//! of people who know git, not gix.
//!
//! Known deviations from git:
//! * The work tree is hashed as raw bytes: clean filters, `text`/`eol`
//!   conversion and `ident` from `.gitattributes` are not applied, so a file
//!   that git would normalise on `git add` can hash differently from what
//!   `git hash-object --path` reports. Submodule contents are never read.
//! * Objects git synthesises (the empty tree and the empty blob) are
//!   readable even when they are not stored, as they are in git.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use gix::ObjectId;
use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::{Find, FindHeader};
use rayon::prelude::*;

/// Everything that can go wrong while reading a repository.
///
/// Messages name the object, path or revision involved and read like git's
/// fatal messages; the underlying gix or I/O error is kept as the source.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// No repository was found in the directory or any of its parents.
    #[error("not a git repository (or any of the parent directories): {}", path.display())]
    NotARepository {
        /// The directory the search started from.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The directory to start from cannot be accessed.
    #[error("cannot change to '{}'", path.display())]
    BadDirectory {
        /// The directory given.
        path: PathBuf,
        /// What the file system reported.
        #[source]
        source: std::io::Error,
    },
    /// `GIT_DIR` is set but does not point at a usable repository.
    #[error("not a git repository: '{}'", path.display())]
    BadGitDir {
        /// The value of `GIT_DIR`.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A repository was found but could not be opened (bad config, permissions, ...).
    #[error("cannot open the repository at {}", path.display())]
    Open {
        /// The directory the search started from.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A revision did not resolve to an object.
    #[error("unknown revision or path not in the working tree: '{spec}'")]
    UnknownRevision {
        /// The revision as given.
        spec: String,
        /// What gix reported, e.g. an ambiguous prefix.
        #[source]
        source: gix::Error,
    },
    /// A revision resolved to something that cannot be peeled to a tree.
    #[error("'{spec}' is a {kind}, not a tree-ish")]
    NotATreeish {
        /// The revision as given.
        spec: String,
        /// What it resolved to.
        kind: gix::object::Kind,
    },
    /// An object that should exist is not in the object database.
    #[error("object {id} is missing from the object database")]
    MissingObject {
        /// The object looked for.
        id: ObjectId,
    },
    /// An object exists but is of another kind than needed.
    #[error("object {id} is a {actual}, not a {expected}")]
    WrongKind {
        /// The object read.
        id: ObjectId,
        /// The kind the caller needed.
        expected: gix::object::Kind,
        /// The kind it has.
        actual: gix::object::Kind,
    },
    /// An object could not be read: corrupt loose object, broken pack, I/O error.
    #[error("object {id} is corrupt or unreadable")]
    ReadObject {
        /// The object read.
        id: ObjectId,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A tree, commit or tag could be read but not parsed.
    #[error("{kind} {id} is corrupt")]
    CorruptObject {
        /// The object parsed.
        id: ObjectId,
        /// Its kind.
        kind: gix::object::Kind,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The object database could not be listed.
    #[error("cannot list the objects in {}", path.display())]
    ListObjects {
        /// The objects directory.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A freshly written pack does not hold what it should.
    #[error("new pack {} failed verification: {reason}", path.display())]
    PackVerification {
        /// The pack's index file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A pack file is corrupt or could not be read.
    #[error("pack {} is corrupt or unreadable", path.display())]
    Pack {
        /// The pack data file.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The index file could not be read.
    #[error("index file {} is corrupt or unreadable", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The index has conflicts (stages 1-3).
    #[error("path '{path}' is unmerged; you need to resolve your current index first")]
    Unmerged {
        /// The first conflicted path.
        path: BString,
    },
    /// A work tree was needed but the repository is bare.
    #[error("this operation must be run in a work tree")]
    NoWorkTree,
    /// A work tree file exists but could not be read.
    #[error("cannot read '{path}' from the work tree")]
    WorkTreeFile {
        /// The path relative to the work tree.
        path: BString,
        /// What the file system reported.
        #[source]
        source: std::io::Error,
    },
    /// A path from the index cannot be represented on this platform.
    #[error("path '{path}' cannot be used on this platform")]
    BadPath {
        /// The path as stored by git.
        path: BString,
    },
    /// A configuration value cannot be used, e.g. a path naming an unknown
    /// user's home (`~nobody/x`).
    #[error("bad config value for '{key}'")]
    BadConfig {
        /// The key read.
        key: String,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// Hashing failed (SHA-1 collision attack detected).
    #[error("cannot hash '{path}'")]
    Hash {
        /// The path hashed.
        path: BString,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
}

/// What a tree, index or work tree entry is, as git's file modes tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (mode 100644).
    Regular,
    /// An executable file (mode 100755).
    Executable,
    /// A symbolic link (mode 120000); its blob holds the link target.
    Symlink,
    /// A submodule (gitlink, mode 160000); its id is a commit of another repository.
    Submodule,
}

impl EntryKind {
    fn from_tree_mode(mode: gix::objs::tree::EntryMode) -> Option<Self> {
        use gix::objs::tree::EntryKind as K;
        match mode.kind() {
            K::Blob => Some(EntryKind::Regular),
            K::BlobExecutable => Some(EntryKind::Executable),
            K::Link => Some(EntryKind::Symlink),
            K::Commit => Some(EntryKind::Submodule),
            K::Tree => None,
        }
    }

    fn from_index_mode(mode: gix::index::entry::Mode) -> Option<Self> {
        use gix::index::entry::Mode;
        if mode == Mode::FILE {
            Some(EntryKind::Regular)
        } else if mode == Mode::FILE_EXECUTABLE {
            Some(EntryKind::Executable)
        } else if mode == Mode::SYMLINK {
            Some(EntryKind::Symlink)
        } else if mode == Mode::COMMIT {
            Some(EntryKind::Submodule)
        } else {
            None
        }
    }
}

/// One file of a tree, the index or the work tree.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The path relative to the repository root, as git stores it: raw bytes,
    /// `/`-separated, possibly not UTF-8 and possibly containing spaces or newlines.
    pub path: Vec<u8>,
    /// What the entry is.
    pub kind: EntryKind,
    /// The blob id (a commit id for submodules).
    pub id: ObjectId,
}

/// A tree and the index, from [`Repo::staged`]. The tree's entries are
/// split: those under directories the index has identically are the
/// index's own (`same`), the rest are listed (`tree`).
#[derive(Clone, Debug, Default)]
pub struct Staged {
    /// Stage-0 entries of the index in path order, without intent-to-add
    /// entries, sparse directories expanded.
    pub index: IndexEntries,
    /// The tree's entries in path order, except those in `same`.
    pub tree: Vec<Entry>,
    /// Ranges of `index`, in order, that the tree has too: same paths,
    /// kinds and ids, and no other tree entry under their directories.
    pub same: Vec<std::ops::Range<usize>>,
}

/// The index's entries as [`Repo::index_entries`] lists them, by position
/// ([`crate::changes::Side`]). Read in place from the index file: copying
/// each of 100,000 paths into an [`Entry`] (and freeing it) was a quarter
/// of the pre-commit check of an ordinary commit, which uses only a
/// handful of them whole.
#[derive(Clone, Debug)]
pub struct IndexEntries(IndexRepr);

#[derive(Clone, Debug)]
enum IndexRepr {
    /// The index file, and the positions and kinds of the entries listed.
    File {
        file: gix::index::File,
        listed: Vec<(usize, EntryKind)>,
    },
    /// Entries copied out: a sparse index, whose directories are expanded
    /// (the file is kept for its cache-tree), or no index at all.
    Owned {
        file: Option<gix::index::File>,
        entries: Vec<Entry>,
    },
}

impl Default for IndexEntries {
    fn default() -> Self {
        IndexEntries(IndexRepr::Owned {
            file: None,
            entries: Vec::new(),
        })
    }
}

impl IndexEntries {
    /// The index's cache-tree, if it has one.
    fn cache_tree(&self) -> Option<&gix::index::extension::Tree> {
        match &self.0 {
            IndexRepr::File { file, .. } => file.tree(),
            IndexRepr::Owned { file, .. } => file.as_ref().and_then(|f| f.tree()),
        }
    }

    /// Whether the index is sparse (see [`Shortcut::exact_counts`]).
    fn is_sparse(&self) -> bool {
        match &self.0 {
            IndexRepr::File { file, .. } => file.is_sparse(),
            IndexRepr::Owned { file, .. } => file.as_ref().is_some_and(|f| f.is_sparse()),
        }
    }

    /// Every entry, copied out.
    pub fn to_vec(&self) -> Vec<Entry> {
        use crate::changes::Side;
        (0..self.len()).map(|i| self.entry(i)).collect()
    }
}

impl crate::changes::Side for IndexEntries {
    fn len(&self) -> usize {
        match &self.0 {
            IndexRepr::File { listed, .. } => listed.len(),
            IndexRepr::Owned { entries, .. } => entries.len(),
        }
    }
    fn path(&self, i: usize) -> &[u8] {
        match &self.0 {
            IndexRepr::File { file, listed } => file.entries()[listed[i].0].path(file),
            IndexRepr::Owned { entries, .. } => &entries[i].path,
        }
    }
    fn kind(&self, i: usize) -> EntryKind {
        match &self.0 {
            IndexRepr::File { listed, .. } => listed[i].1,
            IndexRepr::Owned { entries, .. } => entries[i].kind,
        }
    }
    fn id(&self, i: usize) -> ObjectId {
        match &self.0 {
            IndexRepr::File { file, listed } => file.entries()[listed[i].0].id,
            IndexRepr::Owned { entries, .. } => entries[i].id,
        }
    }
}

/// An opened repository, shareable between threads.
pub struct Repo {
    repo: gix::ThreadSafeRepository,
    common_dir: PathBuf,
    git_dir: PathBuf,
    work_dir: Option<PathBuf>,
}

/// Delta-base cache per reader (per thread). When blobs are read in pack
/// order a delta's base was usually decoded shortly before, and a hit turns
/// a delta-chain walk into one delta application. gix caches only delta
/// results, never undeltified bases, so hit rates stay modest (about 20% of
/// lookups on git.git); measured there, 16MB, 64MB and 256MB were within
/// noise of each other and 1GB gained ~15%, not worth the memory.
const READER_PACK_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl Repo {
    /// Discover the repository from `dir` upward like git does.
    ///
    /// `GIT_DIR` (and with it `GIT_WORK_TREE`, `GIT_INDEX_FILE`), as well as
    /// `GIT_CEILING_DIRECTORIES` and `GIT_DISCOVERY_ACROSS_FILESYSTEM`, are
    /// honoured the way git honours them, so git-simm behaves inside hooks.
    pub fn discover(dir: &Path) -> Result<Repo, RepoError> {
        if let Err(source) = std::fs::metadata(dir) {
            return Err(RepoError::BadDirectory {
                path: dir.to_owned(),
                source,
            });
        }
        let git_dir_env = std::env::var_os("GIT_DIR");
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides(dir).map_err(
            |source| {
                if let Some(git_dir) = &git_dir_env {
                    return RepoError::BadGitDir {
                        path: PathBuf::from(git_dir),
                        source,
                    };
                }
                use gix::discover::upwards::Error as Upwards;
                if matches!(
                    source.downcast_any_ref::<Upwards>(),
                    Some(
                        Upwards::NoGitRepository { .. }
                            | Upwards::NoGitRepositoryWithinCeiling { .. }
                            | Upwards::NoGitRepositoryWithinFs { .. }
                    )
                ) {
                    RepoError::NotARepository {
                        path: dir.to_owned(),
                        source,
                    }
                } else {
                    RepoError::Open {
                        path: dir.to_owned(),
                        source,
                    }
                }
            },
        )?;
        // Relative paths would silently change meaning if the process changes
        // its current directory later; anchor them now.
        let absolute = |p: &Path| -> PathBuf {
            if p.is_absolute() {
                p.to_owned()
            } else {
                std::env::current_dir()
                    .map(|cwd| cwd.join(p))
                    .unwrap_or_else(|_| p.to_owned())
            }
        };
        let common_dir = absolute(repo.common_dir.as_deref().unwrap_or_else(|| repo.git_dir()));
        let work_dir = repo.work_dir().map(absolute);
        let git_dir = absolute(repo.git_dir());
        Ok(Repo {
            repo,
            common_dir,
            git_dir,
            work_dir,
        })
    }

    /// The common git dir, shared by all linked worktrees; git-simm keeps its
    /// store there so every worktree benefits from the same fingerprints.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// This repository's own git dir (a linked worktree's, not the common
    /// one): where git processes started for it should point `--git-dir`.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The names of the configured remotes.
    pub fn remote_names(&self) -> Vec<String> {
        self.local()
            .remote_names()
            .iter()
            .map(|n| n.to_string())
            .collect()
    }

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

    /// The root of the work tree, or `None` for a bare repository.
    pub fn work_dir(&self) -> Option<&Path> {
        self.work_dir.as_deref()
    }

    /// The last value of a configuration key (`section.key`), as
    /// `git config --get` would print it; `None` when unset.
    pub fn config_string(&self, key: &str) -> Option<String> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.string(key).map(|v| v.to_string())
    }

    /// Every value of a multi-valued configuration key, in order (as
    /// `git config --get-all`).
    pub fn config_strings(&self, key: &str) -> Vec<String> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// A boolean configuration key as git reads it (`true`, `yes`, `on`,
    /// `1`, ...); `None` when unset or not a boolean.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.boolean(key)
    }

    /// An integer configuration key (with git's k/m/g suffixes); `None`
    /// when unset or not an integer.
    pub fn config_int(&self, key: &str) -> Option<i64> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.integer(key)
    }

    /// A path-valued configuration key as git reads one (`~/` and `~user/`
    /// expanded), not made absolute; `None` when unset or empty.
    pub fn config_path(&self, key: &str) -> Result<Option<PathBuf>, RepoError> {
        let repo = self.local();
        let config = repo.config_snapshot();
        match config.trusted_path(key) {
            Ok(p) => Ok(p.filter(|p| !p.as_os_str().is_empty())),
            Err(e) => Err(RepoError::BadConfig {
                key: key.to_owned(),
                source: gix::Error::from_error(e),
            }),
        }
    }

    /// The directory git runs hooks from: `core.hooksPath` when set (`~`
    /// expanded; relative to the work tree, or to the git dir of a bare
    /// repository, as git resolves it), else `hooks` in the common git dir.
    pub fn hooks_dir(&self) -> PathBuf {
        let repo = self.local();
        let config = repo.config_snapshot();
        match config.trusted_path("core.hooksPath") {
            Ok(Some(p)) if !p.as_os_str().is_empty() => {
                if p.is_absolute() {
                    p
                } else {
                    let base = self
                        .work_dir
                        .clone()
                        .unwrap_or_else(|| repo.git_dir().to_owned());
                    base.join(p)
                }
            }
            _ => self.common_dir.join("hooks"),
        }
    }

    /// The hash function of the repository (SHA-1 unless it is a SHA-256 repository).
    pub fn object_hash(&self) -> gix::hash::Kind {
        self.repo.objects.object_hash()
    }

    fn local(&self) -> gix::Repository {
        self.repo.to_thread_local()
    }

    /// A handle to read blobs from the current thread.
    ///
    /// A `Reader` owns a thread-local view of the object database with its own
    /// delta-base cache, so create one per thread (they are cheap, but not
    /// free: the cache warms up as it is used) and keep it for many reads.
    pub fn reader(&self) -> Reader {
        let mut repo = self.local();
        repo.objects.set_pack_cache(|| {
            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
                READER_PACK_CACHE_BYTES,
            ))
        });
        // Blobs are read once each; an object cache would only copy them.
        repo.objects.unset_object_cache();
        Reader {
            repo,
            buf: Vec::new(),
        }
    }

    fn rev_parse(&self, repo: &gix::Repository, spec: &str) -> Result<ObjectId, RepoError> {
        repo.rev_parse_single(spec)
            .map(|id| id.detach())
            .map_err(|source| RepoError::UnknownRevision {
                spec: spec.to_owned(),
                source,
            })
    }

    /// Resolve a tree-ish (commit, tag, tree, `HEAD~2`, `v1.0^{tree}`,
    /// `HEAD:dir`) to a tree id, peeling tags and commits like git does.
    pub fn resolve_tree(&self, spec: &str) -> Result<ObjectId, RepoError> {
        let repo = self.local();
        let mut id = self.rev_parse(&repo, spec)?;
        let hash = self.object_hash();
        let mut buf = Vec::new();
        // Tags can point at tags; a chain longer than this is a cycle.
        for _ in 0..64 {
            if id == ObjectId::empty_tree(hash) {
                return Ok(id);
            }
            let data = find(&repo.objects, &id, &mut buf)?;
            let corrupt = |source| RepoError::CorruptObject {
                id,
                kind: data.kind,
                source,
            };
            match data.kind {
                gix::object::Kind::Tree => return Ok(id),
                gix::object::Kind::Commit => {
                    id = gix::objs::CommitRefIter::from_bytes(data.data, hash)
                        .tree_id()
                        .map_err(corrupt)?;
                }
                gix::object::Kind::Tag => {
                    id = gix::objs::TagRefIter::from_bytes(data.data, hash)
                        .target_id()
                        .map_err(corrupt)?;
                }
                kind @ gix::object::Kind::Blob => {
                    return Err(RepoError::NotATreeish {
                        spec: spec.to_owned(),
                        kind,
                    });
                }
            }
        }
        Err(RepoError::NotATreeish {
            spec: spec.to_owned(),
            kind: gix::object::Kind::Tag,
        })
    }

    /// Resolve any revision to an object id and its kind, e.g. `HEAD:path`
    /// or a blob's hex id. The object must exist.
    pub fn resolve_object(&self, spec: &str) -> Result<(ObjectId, gix::object::Kind), RepoError> {
        let repo = self.local();
        let id = self.rev_parse(&repo, spec)?;
        let kind = header(&repo.objects, &id)?.0;
        Ok((id, kind))
    }

    /// All entries of a tree, recursively, in git's path order (the order
    /// `git ls-tree -r` prints). Submodules are listed with kind
    /// [`EntryKind::Submodule`]; trees themselves are not listed.
    pub fn tree_entries(&self, tree: ObjectId) -> Result<Vec<Entry>, RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        walk_tree(&repo.objects, tree, b"", &mut out)?;
        Ok(out)
    }

    /// Stage-0 entries of the index in index order (which is path order).
    ///
    /// Conflicted entries (stages 1-3) are an error naming the first such
    /// path, like git's "you need to resolve your current index first".
    /// Intent-to-add entries (`git add -N`) are skipped: they have no blob
    /// yet. Sparse-index directory entries are expanded from their trees, so
    /// callers always see files. A repository without an index file (nothing
    /// added yet) has no entries.
    pub fn index_entries(&self) -> Result<Vec<Entry>, RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        for_each_index_entry(self, &repo, false, |entry, flags, _| {
            if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                out.push(entry);
            }
        })?;
        Ok(out)
    }

    /// A tree (HEAD's, for what is staged) and the index, read together:
    /// the index's cache-tree names the directories it has exactly as they
    /// were when last written as trees, and those of `tree` need not be read
    /// at all, which in a large repository is most of it. `tree` `None`
    /// (an unborn branch) is an empty tree. The index is read as
    /// [`Repo::index_entries`] reads it.
    pub fn staged(&self, tree: Option<ObjectId>) -> Result<Staged, RepoError> {
        let repo = self.local();
        let index = match open_index(self, &repo)? {
            // visit_index_entries' choice of entries, without copying them.
            Some(file) if !file.is_sparse() => {
                let mut listed = Vec::with_capacity(file.entries().len());
                for (i, entry) in file.entries().iter().enumerate() {
                    if entry.stage_raw() != 0 {
                        return Err(RepoError::Unmerged {
                            path: entry.path(&file).to_owned(),
                        });
                    }
                    if entry
                        .flags
                        .contains(gix::index::entry::Flags::INTENT_TO_ADD)
                    {
                        continue;
                    }
                    if let Some(kind) = EntryKind::from_index_mode(entry.mode) {
                        listed.push((i, kind));
                    }
                }
                IndexEntries(IndexRepr::File { file, listed })
            }
            Some(file) => {
                let mut entries = Vec::new();
                visit_index_entries(&repo, &file, false, |entry, flags, _| {
                    if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                        entries.push(entry);
                    }
                })?;
                IndexEntries(IndexRepr::Owned {
                    file: Some(file),
                    entries,
                })
            }
            None => IndexEntries::default(),
        };
        let mut staged = Staged {
            index,
            ..Staged::default()
        };
        let Some(tree) = tree else {
            return Ok(staged);
        };
        match staged.index.cache_tree() {
            Some(cache) => {
                let mut shortcut = Shortcut {
                    index: &staged.index,
                    exact_counts: !staged.index.is_sparse(),
                    same: Vec::new(),
                    cursor: 0,
                };
                walk_tree_with(
                    &repo.objects,
                    tree,
                    b"",
                    &mut staged.tree,
                    Some((&mut shortcut, cache)),
                )?;
                staged.same = shortcut.same;
            }
            None => walk_tree(&repo.objects, tree, b"", &mut staged.tree)?,
        }
        Ok(staged)
    }

    /// Like [`Repo::index_entries`], but during a merge conflict: the
    /// stage-0 entries, and separately the paths in conflict (each once, in
    /// path order), which git's diff reports as `U` and leaves out of rename
    /// detection.
    pub fn index_entries_with_conflicts(&self) -> Result<(Vec<Entry>, Vec<Vec<u8>>), RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        let mut unmerged: Vec<Vec<u8>> = Vec::new();
        for_each_index_entry(self, &repo, true, |entry, flags, stage| {
            if stage != 0 {
                if unmerged.last() != Some(&entry.path) {
                    unmerged.push(entry.path);
                }
            } else if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                out.push(entry);
            }
        })?;
        Ok((out, unmerged))
    }

    /// The work tree version of each index path, with its contents.
    ///
    /// See [`Repo::map_worktree`] for which paths are reported and how; this
    /// is `map_worktree` keeping the contents, which is convenient but holds
    /// the whole work tree in memory. Prefer `map_worktree` for big trees.
    pub fn worktree_entries(&self) -> Result<Vec<(Entry, Vec<u8>)>, RepoError> {
        self.worktree_impl(|_, data| data)
    }

    /// Read the work tree version of each index path in parallel and map it
    /// with `f(entry, contents)`, returning the results in index order.
    ///
    /// * The file's bytes are read from disk; for a symlink its target
    ///   (as git stores it). They are hashed as a git blob *without* clean
    ///   filters or end-of-line conversion (a deliberate deviation from
    ///   `git add`, see the module documentation).
    /// * The kind comes from the disk (executable bit, symlink) unless
    ///   `core.fileMode` / `core.symlinks` say the file system cannot be
    ///   trusted, in which case the index mode is kept, as git does.
    /// * Paths deleted from disk (or replaced by a directory) are skipped.
    /// * Submodules keep the index's commit id, as long as their directory
    ///   exists (populated or not); their contents are not read and `f`
    ///   sees an empty slice.
    /// * `skip-worktree` entries (sparse checkout) are taken from the index:
    ///   git treats them as unchanged, so their blob is read from the object
    ///   database.
    /// * Intent-to-add entries *are* reported: the file exists in the work
    ///   tree even though the index has no content for it yet.
    pub fn map_worktree<T: Send>(
        &self,
        f: impl Fn(&Entry, &[u8]) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        self.worktree_impl(|entry, data| f(entry, &data))
    }

    fn worktree_impl<T: Send>(
        &self,
        f: impl Fn(&Entry, Vec<u8>) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        let work_dir = self.work_dir().ok_or(RepoError::NoWorkTree)?;
        let repo = self.local();
        let config = repo.config_snapshot();
        let trust_exec = config.boolean("core.fileMode").unwrap_or(cfg!(unix));
        let trust_symlinks = config.boolean("core.symlinks").unwrap_or(cfg!(unix));
        let mut entries: Vec<(Entry, bool)> = Vec::new();
        // A path in conflict has up to three stages; its work-tree file is
        // one file, compared like any other (git's diff against the work
        // tree does the same), with the mode of "ours" where there is one.
        for_each_index_entry(self, &repo, true, |entry, flags, stage| {
            if stage != 0
                && let Some((last, _)) = entries.last_mut()
                && last.path == entry.path
            {
                if stage == 2 {
                    last.kind = entry.kind;
                }
                return;
            }
            entries.push((
                entry,
                flags.contains(gix::index::entry::Flags::SKIP_WORKTREE),
            ));
        })?;
        drop(repo);
        let dirs = real_dirs(work_dir, entries.iter().map(|(e, _)| e.path.as_slice()));
        let hash = self.object_hash();
        let readers = ReaderPool::new(self);
        let results = entries
            .into_par_iter()
            .map(|(mut entry, skip_worktree)| {
                if skip_worktree {
                    let data = match entry.kind {
                        EntryKind::Submodule => Vec::new(),
                        _ => readers.with(|reader| reader.blob(&entry.id))?,
                    };
                    let value = f(&entry, data);
                    return Ok(Some((entry, value)));
                }
                let parent = entry
                    .path
                    .rsplit_once_str(b"/")
                    .map_or(&b""[..], |(dir, _)| dir);
                if dirs.get(parent) != Some(&true) {
                    return Ok(None);
                }
                if entry.kind == EntryKind::Submodule {
                    // Present means a directory, populated or not; what is
                    // checked out inside is the submodule's business.
                    if !submodule_present(work_dir, &entry)? {
                        return Ok(None);
                    }
                    let value = f(&entry, Vec::new());
                    return Ok(Some((entry, value)));
                }
                let Some(data) =
                    read_worktree_file(work_dir, &mut entry, trust_exec, trust_symlinks)?
                else {
                    return Ok(None);
                };
                entry.id = gix::objs::compute_hash(hash, gix::object::Kind::Blob, &data).map_err(
                    |source| RepoError::Hash {
                        path: entry.path.clone().into(),
                        source,
                    },
                )?;
                let value = f(&entry, data);
                Ok(Some((entry, value)))
            })
            .collect::<Result<Vec<_>, RepoError>>()?;
        Ok(results.into_iter().flatten().collect())
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
        Ok(self.all_blobs_and_trees()?.0)
    }

    /// [`Repo::all_blobs`], and every tree with its size (sorted by id, each
    /// once), from the same walk.
    #[allow(clippy::type_complexity)]
    pub fn all_blobs_and_trees(
        &self,
    ) -> Result<(Vec<(ObjectId, u64)>, Vec<(ObjectId, u64)>), RepoError> {
        let hash = self.object_hash();
        let mut blobs = Vec::new();
        let mut trees = Vec::new();
        let mut unresolved = Vec::new();
        for pack in self.packs() {
            pack_blobs(&pack, hash, &mut blobs, &mut trees, &mut unresolved)?;
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
            if kind == gix::object::Kind::Blob {
                blobs.push((id, size));
            } else {
                trees.push((id, size));
            }
        }
        for list in [&mut blobs, &mut trees] {
            list.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
            list.dedup_by(|a, b| a.0 == b.0);
        }
        Ok((blobs, trees))
    }

    /// Read the blobs `ids` in parallel and map each with `f(index, bytes)`,
    /// where `index` is the position in `ids`; results come back in input
    /// order. `f` runs on several threads at once, in no particular order.
    ///
    /// How the blobs are read depends on how many are wanted from a pack:
    /// * When a good part of a pack is wanted (at least 1/10 of its objects),
    ///   the whole pack is decoded along its delta trees (gix's
    ///   `traverse_with_index`, the way `git index-pack` resolves deltas):
    ///   every object is inflated exactly once and each delta is applied to
    ///   its base while that is still in memory. Decoding the unwanted
    ///   objects too is far cheaper than re-inflating delta bases, which
    ///   random access does for every delta whose base is not cached.
    /// * Otherwise the blobs are read one by one, sorted by pack offset so a
    ///   delta's base is often still in the reader's delta-base cache, with
    ///   one [`Reader`] and buffer per rayon thread. Loose objects go this way.
    ///
    /// The first error stops the work and is returned.
    pub fn map_blobs<T: Send>(
        &self,
        ids: &[ObjectId],
        f: impl Fn(usize, &[u8]) -> T + Sync + Send,
    ) -> Result<Vec<T>, RepoError> {
        let packs = self.packs();
        let mut located: Vec<(usize, u64, usize)> = ids
            .par_iter()
            .enumerate()
            .map(|(i, id)| {
                packs
                    .iter()
                    .enumerate()
                    .find_map(|(p, pack)| {
                        pack.index
                            .lookup(id)
                            .map(|e| (p, pack.index.pack_offset_at_index(e), i))
                    })
                    .unwrap_or((usize::MAX, 0, i))
            })
            .collect();
        located.par_sort_unstable();

        let slots: Vec<Mutex<Option<T>>> = std::iter::repeat_with(|| Mutex::new(None))
            .take(ids.len())
            .collect();
        let store = |i: usize, value: T| {
            *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
        };
        let mut one_by_one = Vec::new();
        let mut traversed = Vec::new();
        for group in located.chunk_by(|a, b| a.0 == b.0) {
            match packs.get(group[0].0) {
                Some(pack) if traversal_pays(pack, self.object_hash(), group) => {
                    traverse_pack(pack, self.object_hash(), group, ids, &|i, data| {
                        store(i, f(i, data))
                    })?;
                    traversed.extend(group.iter().map(|&(_, _, i)| i));
                }
                _ => one_by_one.extend(group.iter().map(|&(_, _, i)| i)),
            }
        }
        // Whatever a traversal did not deliver (it stopped at a damaged or
        // thin pack, or the index disagrees with its pack) is read one by
        // one: that either succeeds or fails naming the object at fault.
        one_by_one.extend(traversed.into_iter().filter(|&i| {
            slots[i]
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
        }));

        let readers = ReaderPool::new(self);
        one_by_one
            .par_chunks(chunk_len(one_by_one.len()))
            .try_for_each(|chunk| {
                readers.with(|reader| {
                    for &i in chunk {
                        let data = reader.blob_ref(&ids[i])?;
                        store(i, f(i, data));
                    }
                    Ok::<_, RepoError>(())
                })
            })?;
        slots
            .into_iter()
            .zip(ids)
            .map(|(slot, id)| {
                slot.into_inner()
                    .unwrap_or_else(PoisonError::into_inner)
                    .ok_or(RepoError::MissingObject { id: *id })
            })
            .collect()
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
    fn packs(&self) -> Vec<Pack> {
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

/// Whether decoding all of `pack` along its delta trees is cheaper than
/// reading the wanted objects (`group`: pack, offset, index) one by one.
///
/// A traversal inflates every object of the pack once. Reading one by one
/// inflates each wanted object and, at worst, every delta base below it
/// (the reader's delta-base cache saves some of that). So the traversal
/// pays when the wanted objects' delta chains add up to more objects than
/// the pack holds. Measured: git.git (849k objects, delta chains up to
/// 50 deep) broke even near 1/12 of its objects wanted; a rename fixture
/// with half of its 13k blobs wanted and chains of one or two read them
/// one by one in half the time (the traversal also ran on one core there).
/// Only pack entry headers are read to decide, and the count stops at the
/// pack's size.
fn traversal_pays(pack: &Pack, hash: gix::hash::Kind, group: &[(usize, u64, usize)]) -> bool {
    use gix::odb::pack::data::entry::Header;
    let objects = u64::from(pack.index.num_objects());
    if (group.len() as u64) < objects / TRAVERSE_FRACTION_MIN {
        return false;
    }
    let Ok(data) = pack.data(hash) else {
        return false;
    };
    let mut cost: u64 = 0;
    for &(_, offset, _) in group {
        let mut at = offset;
        // A corrupt pack could loop; no real chain is this deep.
        for _ in 0..MAX_CHAIN {
            cost += 1;
            if cost > objects {
                return true;
            }
            let Ok(entry) = data.entry(at) else {
                break;
            };
            let base = match entry.header {
                Header::OfsDelta { base_distance } => entry.checked_base_pack_offset(base_distance),
                Header::RefDelta { base_id } => pack
                    .index
                    .lookup(base_id)
                    .map(|e| pack.index.pack_offset_at_index(e)),
                _ => None,
            };
            match base {
                Some(b) => at = b,
                None => break,
            }
        }
    }
    false
}

/// Below 1/`TRAVERSE_FRACTION_MIN` of a pack's objects, reading one by one
/// always wins and the chains need not be counted.
const TRAVERSE_FRACTION_MIN: u64 = 20;

/// Longest delta chain [`traversal_pays`] follows.
const MAX_CHAIN: usize = 10_000;

/// The pack index files of a pack directory, sorted; none when the
/// directory cannot be read (a repository without packs).
fn idx_files(pack_dir: &Path) -> Vec<PathBuf> {
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
struct Pack {
    index: gix::odb::pack::index::File,
    data_path: PathBuf,
}

impl Pack {
    fn data(&self, hash: gix::hash::Kind) -> Result<gix::odb::pack::data::File, RepoError> {
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

/// Decode all of `pack` along its delta trees and hand the wanted objects,
/// `group` (sorted `(_, offset, position)`), to `deliver`.
fn traverse_pack(
    pack: &Pack,
    hash: gix::hash::Kind,
    group: &[(usize, u64, usize)],
    ids: &[ObjectId],
    deliver: &(dyn Fn(usize, &[u8]) + Sync),
) -> Result<(), RepoError> {
    use gix::odb::pack::index::traverse;
    // Any failure other than a wrong kind leaves objects undelivered, and the
    // caller reads those one by one; that path reports errors per object,
    // which is more useful than a pack-level message.
    let Ok(data) = pack.data(hash) else {
        return Ok(());
    };
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    let failure: Mutex<Option<RepoError>> = Mutex::new(None);
    let _ = pack.index.traverse_with_index(
        &data,
        |kind, bytes: &[u8], entry: &gix::odb::pack::index::Entry, _: &dyn gix::Progress| {
            let start = group.partition_point(|g| g.1 < entry.pack_offset);
            for &(_, offset, i) in &group[start..] {
                if offset != entry.pack_offset || ids[i] != entry.oid {
                    break;
                }
                if kind != gix::object::Kind::Blob {
                    *failure.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(RepoError::WrongKind {
                            id: entry.oid,
                            expected: gix::object::Kind::Blob,
                            actual: kind,
                        });
                    return Err(gix::Error::from_error(std::io::Error::other("not a blob")));
                }
                deliver(i, bytes);
            }
            Ok(())
        },
        &mut gix::progress::Discard,
        &interrupt,
        traverse::with_index::Options {
            // Same trust as a normal object read, which does not re-hash either.
            check: traverse::SafetyCheck::SkipFileAndObjectChecksumVerification,
            thread_limit: Some(rayon::current_num_threads()),
            alloc_limit_bytes: None,
        },
    );
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Collect the blobs of `pack` with their sizes; objects whose kind cannot
/// be told from this pack alone go to `unresolved`.
fn pack_blobs(
    pack: &Pack,
    hash: gix::hash::Kind,
    blobs: &mut Vec<(ObjectId, u64)>,
    trees: &mut Vec<(ObjectId, u64)>,
    unresolved: &mut Vec<ObjectId>,
) -> Result<(), RepoError> {
    use gix::odb::pack::data::entry::Header;
    let data = pack.data(hash)?;
    let mut entries: Vec<(u64, ObjectId)> =
        pack.index.iter().map(|e| (e.pack_offset, e.oid)).collect();
    entries.sort_unstable_by_key(|e| e.0);
    let kind_at = |kinds: &[Option<gix::object::Kind>], offset: u64| {
        entries[..kinds.len()]
            .binary_search_by_key(&offset, |e| e.0)
            .ok()
            .and_then(|j| kinds[j])
    };
    let mut kinds: Vec<Option<gix::object::Kind>> = Vec::with_capacity(entries.len());
    let mut deltas = Vec::new();
    for &(offset, id) in &entries {
        let entry = data.entry(offset).map_err(|source| RepoError::Pack {
            path: pack.data_path.clone(),
            source,
        })?;
        let kind = match entry.header {
            Header::OfsDelta { base_distance } => entry
                .checked_base_pack_offset(base_distance)
                .and_then(|base| kind_at(&kinds, base)),
            Header::RefDelta { base_id } => pack
                .index
                .lookup(base_id)
                .and_then(|e| kind_at(&kinds, pack.index.pack_offset_at_index(e))),
            header => header.as_kind(),
        };
        kinds.push(kind);
        match kind {
            Some(k @ (gix::object::Kind::Blob | gix::object::Kind::Tree))
                if entry.header.is_delta() =>
            {
                deltas.push((id, k, entry))
            }
            Some(gix::object::Kind::Blob) => blobs.push((id, entry.decompressed_size)),
            Some(gix::object::Kind::Tree) => trees.push((id, entry.decompressed_size)),
            Some(_) => {}
            None => unresolved.push(id),
        }
    }
    let sized = deltas
        .par_chunks(4096)
        .map(|chunk| {
            let mut inflate = gix::zlib::Inflate::default();
            chunk
                .iter()
                .map(|(id, kind, entry)| {
                    Ok((
                        *id,
                        *kind,
                        delta_result_size(pack, &data, entry, &mut inflate)?,
                    ))
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
        let data = find(&self.repo.objects, id, buf)?;
        if data.kind != gix::object::Kind::Blob {
            return Err(RepoError::WrongKind {
                id: id.to_owned(),
                expected: gix::object::Kind::Blob,
                actual: data.kind,
            });
        }
        Ok(())
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
struct ReaderPool<'a> {
    repo: &'a Repo,
    readers: Vec<Mutex<Option<Reader>>>,
}

impl<'a> ReaderPool<'a> {
    fn new(repo: &'a Repo) -> Self {
        let n = rayon::current_num_threads().max(1);
        ReaderPool {
            repo,
            readers: std::iter::repeat_with(|| Mutex::new(None))
                .take(n)
                .collect(),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Reader) -> R) -> R {
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
fn chunk_len(n: usize) -> usize {
    (n / (rayon::current_num_threads().max(1) * 64)).clamp(16, 4096)
}

fn find<'a>(
    objects: &gix::OdbHandle,
    id: &gix::oid,
    buf: &'a mut Vec<u8>,
) -> Result<gix::objs::Data<'a>, RepoError> {
    match objects.try_find(id, buf) {
        Ok(Some(data)) => Ok(data),
        Ok(None) => Err(RepoError::MissingObject { id: id.to_owned() }),
        Err(source) => Err(RepoError::ReadObject {
            id: id.to_owned(),
            source,
        }),
    }
}

fn header(objects: &gix::OdbHandle, id: &gix::oid) -> Result<(gix::object::Kind, u64), RepoError> {
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
        Err(source) => Err(RepoError::ReadObject {
            id: id.to_owned(),
            source,
        }),
    }
}

/// Depth-first, in stored order: exactly what `git ls-tree -r` prints. An
/// explicit stack instead of recursion, because tree depth is controlled by
/// the repository's contents and a hostile one must not overflow the stack.
fn walk_tree(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
) -> Result<(), RepoError> {
    walk_tree_with(objects, root, prefix, out, None)
}

/// The subtrees a tree walk need not read because the index has them: a
/// directory whose cache-tree node is valid and has the tree's id holds
/// exactly the index's entries under it (git trusts the same fact to write
/// commits and to skip trees in `diff-index --cached`).
struct Shortcut<'a> {
    /// The index's entries (stage 0, sparse directories expanded), sorted.
    index: &'a IndexEntries,
    /// Whether a node's entry count must equal its range's length. In a
    /// sparse index a sparse directory counts once but stands for many
    /// entries, so there the ids alone decide.
    exact_counts: bool,
    /// Ranges of `index` that the walk skipped, in path order.
    same: Vec<std::ops::Range<usize>>,
    /// Where the next range can start: the walk proceeds in path order.
    cursor: usize,
}

impl Shortcut<'_> {
    /// Whether the tree `id` at `dir` (empty for the root, else ending in
    /// `/`) is the index's, per `node`; if so its range is recorded.
    fn take(&mut self, node: &gix::index::extension::Tree, id: &ObjectId, dir: &[u8]) -> bool {
        let Some(count) = node.num_entries else {
            return false;
        };
        if node.id != *id {
            return false;
        }
        // Ranges are taken in path order, mostly one right after another:
        // gallop from the last one rather than bisect the whole index,
        // where every probe is a cache miss.
        use crate::changes::Side;
        let index = self.index;
        let start = gallop(index.len(), self.cursor, |i| index.path(i) < dir);
        let under = |i: usize| i < index.len() && index.path(i).starts_with(dir);
        // The node's count says where the range ends; two probes confirm it.
        let end = match usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_add(start))
        {
            Some(end) if end > start && under(end - 1) && !under(end) => end,
            _ => gallop(index.len(), start, under),
        };
        // An empty range or a count that disagrees means a cache-tree that
        // does not describe this index: read the tree instead.
        if start == end || (self.exact_counts && usize::try_from(count) != Ok(end - start)) {
            return false;
        }
        self.same.push(start..end);
        self.cursor = end;
        true
    }
}

/// The first position in `from..len` where `pred` fails, for a `pred`
/// that holds on a prefix of that range and nowhere after: an exponential
/// search, cheap when the answer is near `from`.
fn gallop(len: usize, from: usize, pred: impl Fn(usize) -> bool) -> usize {
    let from = from.min(len);
    let mut step = 1;
    while from + step <= len && pred(from + step - 1) {
        step *= 2;
    }
    // pred holds before `lo` and fails at or before `hi`.
    let (mut lo, mut hi) = (from + step / 2, (from + step).min(len));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`walk_tree`], leaving out the subtrees `shortcut` says the index has
/// (`cache` is the index's cache-tree, whose root is `root`'s directory).
fn walk_tree_with(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
    mut shortcut: Option<(&mut Shortcut<'_>, &gix::index::extension::Tree)>,
) -> Result<(), RepoError> {
    struct Frame<'t> {
        id: ObjectId,
        data: Vec<u8>,
        pos: usize,
        prefix_len: usize,
        /// The cache-tree node of this directory, if it has one.
        node: Option<&'t gix::index::extension::Tree>,
    }
    let hash = root.kind();
    let load = |id: ObjectId, data: &mut Vec<u8>| -> Result<(), RepoError> {
        if id == ObjectId::empty_tree(hash) {
            data.clear();
            return Ok(());
        }
        let kind = find(objects, &id, data)?.kind;
        if kind != gix::object::Kind::Tree {
            return Err(RepoError::WrongKind {
                id,
                expected: gix::object::Kind::Tree,
                actual: kind,
            });
        }
        Ok(())
    };
    let mut path = prefix.to_vec();
    let root_node = match &mut shortcut {
        Some((s, node)) => {
            if s.take(node, &root, &path) {
                return Ok(());
            }
            Some(*node)
        }
        None => None,
    };
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut data = Vec::new();
    load(root, &mut data)?;
    let mut stack = vec![Frame {
        id: root,
        data,
        pos: 0,
        prefix_len: path.len(),
        node: root_node,
    }];
    while let Some(frame) = stack.last_mut() {
        let rest = &frame.data[frame.pos..];
        let mut iter = gix::objs::TreeRefIter::from_bytes(rest, hash);
        let Some(entry) = iter.next() else {
            if let Some(done) = stack.pop() {
                spare.push(done.data);
            }
            continue;
        };
        let entry = entry.map_err(|source| RepoError::CorruptObject {
            id: frame.id,
            kind: gix::object::Kind::Tree,
            source,
        })?;
        frame.pos += iter.offset_to_next_entry(rest);
        path.truncate(frame.prefix_len);
        path.extend_from_slice(entry.filename);
        match EntryKind::from_tree_mode(entry.mode) {
            Some(kind) => out.push(Entry {
                path: path.clone(),
                kind,
                id: entry.oid.to_owned(),
            }),
            None => {
                let id = entry.oid.to_owned();
                path.push(b'/');
                // git sorts cache-tree children by name, as gix keeps them.
                let node = frame.node.and_then(|n| {
                    n.children
                        .binary_search_by(|c| c.name.as_slice().cmp(entry.filename.as_bytes()))
                        .ok()
                        .map(|i| &n.children[i])
                });
                if let (Some((s, _)), Some(node)) = (&mut shortcut, node)
                    && s.take(node, &id, &path)
                {
                    continue;
                }
                let mut data = spare.pop().unwrap_or_default();
                load(id, &mut data)?;
                stack.push(Frame {
                    id,
                    data,
                    pos: 0,
                    prefix_len: path.len(),
                    node,
                });
            }
        }
    }
    Ok(())
}

/// The index file, or `None` when there is none yet (nothing added).
///
/// Read without verifying its trailing checksum, as git reads it (only
/// `git fsck` verifies): the checksum guards against torn writes, which
/// writing `index.lock` and renaming it already rule out, and hashing a
/// large index costs as much as decoding it (5 ms of a 100,000-file
/// `check --staged`). An index damaged so that it does not decode (cut
/// short, say) is still an error; as in git, other damage goes unnoticed.
fn open_index(repo_: &Repo, repo: &gix::Repository) -> Result<Option<gix::index::File>, RepoError> {
    if repo_.work_dir().is_none() {
        return Err(RepoError::NoWorkTree);
    }
    let path = repo.index_path();
    // git's index.threads: true (the default) or 0 for as many as there are
    // cores, false or 1 for none.
    let config = repo.config_snapshot();
    let thread_limit = match config.integer("index.threads") {
        Some(n) if n > 0 => usize::try_from(n).ok(),
        Some(_) => None,
        None if config.boolean("index.threads") == Some(false) => Some(1),
        None => None,
    };
    let options = gix::index::decode::Options {
        thread_limit,
        ..Default::default()
    };
    match gix::index::File::at(&path, repo.object_hash(), true, options) {
        Ok(file) => Ok(Some(file)),
        Err(source)
            if source
                .downcast_any_ref::<gix::index::file::init::OpenError>()
                .is_some_and(|e| {
                    e.path == path && e.source.kind() == std::io::ErrorKind::NotFound
                }) =>
        {
            Ok(None)
        }
        Err(source) => Err(RepoError::Index { path, source }),
    }
}

/// Visit the stage-0 entries of the index with their flags, expanding
/// sparse directory entries; fail on the first conflicted path.
fn for_each_index_entry(
    repo_: &Repo,
    repo: &gix::Repository,
    allow_unmerged: bool,
    visit: impl FnMut(Entry, gix::index::entry::Flags, u32),
) -> Result<(), RepoError> {
    match open_index(repo_, repo)? {
        Some(index) => visit_index_entries(repo, &index, allow_unmerged, visit),
        None => Ok(()),
    }
}

/// [`for_each_index_entry`] on an index already open.
fn visit_index_entries(
    repo: &gix::Repository,
    index: &gix::index::File,
    allow_unmerged: bool,
    mut visit: impl FnMut(Entry, gix::index::entry::Flags, u32),
) -> Result<(), RepoError> {
    for entry in index.entries() {
        let path: &BStr = entry.path(index);
        let stage = entry.stage_raw();
        if stage != 0 && !allow_unmerged {
            return Err(RepoError::Unmerged {
                path: path.to_owned(),
            });
        }
        match EntryKind::from_index_mode(entry.mode) {
            Some(kind) => visit(
                Entry {
                    path: path.to_vec(),
                    kind,
                    id: entry.id,
                },
                entry.flags,
                stage,
            ),
            None if entry.mode.is_sparse() => {
                let mut expanded = Vec::new();
                let prefix = path.trim_end_with(|c| c == '/');
                let mut prefix = prefix.to_vec();
                prefix.push(b'/');
                walk_tree(&repo.objects, entry.id, &prefix, &mut expanded)?;
                for e in expanded {
                    // Everything under a sparse directory is outside the
                    // sparse checkout, hence skip-worktree.
                    visit(
                        e,
                        entry.flags | gix::index::entry::Flags::SKIP_WORKTREE,
                        stage,
                    );
                }
            }
            None => {}
        }
    }
    Ok(())
}

/// For every parent directory of `paths`: is it a real directory in the
/// work tree, reached without following a symlink, like git's
/// `has_symlink_leading_path`: a file under a directory that became a
/// symlink (or a file) is gone from the work tree, and reading through the
/// link could leave the work tree altogether. Paths with `..` or other
/// unsafe components never get a real directory.
///
/// Each directory is checked once, sequentially; there are far fewer
/// directories than files.
fn real_dirs<'p>(
    work_dir: &Path,
    paths: impl Iterator<Item = &'p [u8]>,
) -> std::collections::HashMap<Vec<u8>, bool> {
    let mut checked = std::collections::HashMap::new();
    checked.insert(Vec::new(), true);
    for path in paths {
        let Some((parent, _)) = path.rsplit_once_str(b"/") else {
            continue;
        };
        if checked.contains_key(parent) {
            continue;
        }
        // Walk down from the top so every prefix is decided before its
        // children.
        let mut end = 0;
        while end < parent.len() {
            end = parent[end..]
                .find_byte(b'/')
                .map_or(parent.len(), |i| end + i);
            let dir = &parent[..end];
            if !checked.contains_key(dir) {
                let (up, name) = dir.rsplit_once_str(b"/").unwrap_or((b"", dir));
                let ok = checked.get(up).copied().unwrap_or(false)
                    && !matches!(name, b"" | b"." | b".." | b".git")
                    && gix::path::from_byte_slice(dir)
                        .ok()
                        .and_then(|rel| std::fs::symlink_metadata(work_dir.join(rel)).ok())
                        .is_some_and(|m| m.file_type().is_dir());
                checked.insert(dir.to_vec(), ok);
            }
            end += 1;
        }
    }
    checked
}

/// Whether a submodule's directory exists, which is all git asks before
/// calling a gitlink deleted.
fn submodule_present(work_dir: &Path, entry: &Entry) -> Result<bool, RepoError> {
    let rel = gix::path::from_byte_slice(&entry.path).map_err(|_| RepoError::BadPath {
        path: entry.path.clone().into(),
    })?;
    match std::fs::symlink_metadata(work_dir.join(rel)) {
        Ok(meta) => Ok(meta.is_dir()),
        Err(e) if is_gone(&e) => Ok(false),
        Err(source) => Err(RepoError::WorkTreeFile {
            path: entry.path.clone().into(),
            source,
        }),
    }
}

/// Read one work tree file for `entry`, updating its kind from the disk.
/// `Ok(None)` means the path is gone from the work tree.
fn read_worktree_file(
    work_dir: &Path,
    entry: &mut Entry,
    trust_exec: bool,
    trust_symlinks: bool,
) -> Result<Option<Vec<u8>>, RepoError> {
    let name = entry
        .path
        .rsplit_once_str(b"/")
        .map_or(&entry.path[..], |(_, name)| name);
    if matches!(name, b"" | b"." | b".." | b".git") || entry.path.starts_with(b"/") {
        return Err(RepoError::BadPath {
            path: entry.path.clone().into(),
        });
    }
    let rel = gix::path::from_byte_slice(&entry.path).map_err(|_| RepoError::BadPath {
        path: entry.path.clone().into(),
    })?;
    let full = work_dir.join(rel);
    let io_err = |source: std::io::Error| RepoError::WorkTreeFile {
        path: entry.path.clone().into(),
        source,
    };
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        let target = match std::fs::read_link(&full) {
            Ok(target) => target,
            Err(e) if is_gone(&e) => return Ok(None),
            Err(e) => return Err(io_err(e)),
        };
        entry.kind = EntryKind::Symlink;
        let bytes = gix::path::into_bstr(target).map_err(|_| RepoError::BadPath {
            path: entry.path.clone().into(),
        })?;
        return Ok(Some(bytes.into_owned().into()));
    }
    if !file_type.is_file() {
        // A directory where a file was: git reports the file as deleted.
        return Ok(None);
    }
    let data = match std::fs::read(&full) {
        Ok(data) => data,
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    // Without trustworthy symlinks git checks links out as plain files
    // holding the target, so the index mode is the truth.
    if entry.kind != EntryKind::Symlink || trust_symlinks {
        entry.kind = if trust_exec {
            if is_executable(&meta) {
                EntryKind::Executable
            } else {
                EntryKind::Regular
            }
        } else if entry.kind == EntryKind::Executable {
            EntryKind::Executable
        } else {
            EntryKind::Regular
        };
    }
    Ok(Some(data))
}

fn is_gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o100 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// Check a pack before anything relies on it: the index's and the pack's
/// checksums hold, they belong to each other, the pack holds as many
/// objects as its index, and the index lists exactly `expected` (sorted,
/// each once). This reads the pack once for its checksum but does not
/// inflate objects; `git pack-objects` wrote it and checked its deltas.
pub fn verify_pack(
    idx_path: &Path,
    hash: gix::hash::Kind,
    expected: &[ObjectId],
) -> Result<(), RepoError> {
    let fail = |reason: String| RepoError::PackVerification {
        path: idx_path.to_owned(),
        reason,
    };
    let index = gix::odb::pack::index::File::at(idx_path, hash)
        .map_err(|e| fail(format!("index unreadable: {e}")))?;
    let data_path = idx_path.with_extension("pack");
    let data = gix::odb::pack::data::File::at(&data_path, hash)
        .map_err(|e| fail(format!("pack unreadable: {e}")))?;
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    index
        .verify_checksum(&mut gix::progress::Discard, &interrupt)
        .map_err(|e| fail(format!("index checksum: {e}")))?;
    data.verify_checksum(&mut gix::progress::Discard, &interrupt)
        .map_err(|e| fail(format!("pack checksum: {e}")))?;
    if index.pack_checksum() != data.checksum() {
        return Err(fail("the index belongs to another pack".into()));
    }
    if data.num_objects() != index.num_objects() {
        return Err(fail(format!(
            "the pack holds {} objects, its index {}",
            data.num_objects(),
            index.num_objects()
        )));
    }
    if index.num_objects() as usize != expected.len() {
        return Err(fail(format!(
            "{} objects instead of {}",
            index.num_objects(),
            expected.len()
        )));
    }
    // Index entries are sorted by id, like `expected`.
    if let Some((got, want)) = index
        .iter()
        .map(|e| e.oid)
        .zip(expected)
        .find(|(got, want)| got != *want)
    {
        return Err(fail(format!(
            "object {want} is missing (found {got} in its place)"
        )));
    }
    Ok(())
}
