//! A pack whose delta bases git-simm chooses itself (`repack --bases=simm`),
//! written with [`crate::pack::write`] instead of `git pack-objects`.
//!
//! Blobs and trees are grouped by the path they were listed under (the
//! insight of git's `--path-walk`: versions of one file are each other's
//! best bases). Inside a group objects are visited largest first (git's
//! rule: a delta that removes is cheaper than one that adds), and each is
//! tried against the `window` objects visited just before it and against
//! its neighbours in history (the versions listed just before and after it
//! by `git rev-list`, when they were visited already); real deltas are
//! computed ([`crate::pack::delta`], bounded by the best so far, as git
//! bounds its search) and the smallest is kept. Since a base is always
//! visited before the objects that use it, the bases form a forest, and
//! writing each group in visiting order puts every base before its deltas,
//! as an OFS_DELTA needs. Chains respect `depth` (git's meaning: a delta's
//! chain has at most `depth` links).
//!
//! Commits come first, their bases chosen the same way in runs of history
//! (git deltifies commits too: their author lines and messages repeat) and
//! written in `rev-list` order with each base just before its first delta,
//! as git writes them, which keeps history walks reading forwards; then
//! tags, whole; then trees, then blobs. Groups are processed in batches of bounded total size on all
//! the threads of the pool (search and compression both); a batch's
//! entries are then appended in order by one writer, so memory holds one
//! batch, not the repository.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use gix::object::Kind;
use gix::zlib::Compression;
use gix::zlib::stream::deflate::Compress;
use rayon::prelude::*;

use super::PackError;
use super::delta::Index;
use super::idx::IndexedEntry;
use super::list::{ListedObject, PackList};
use super::reread::{Meant, MeantHead};
use super::write::{Head, PackWriter, deflate_into};
use crate::progress::Feedback;
use crate::repo::{Reader, Repo, RepoError};

/// Options of [`write_pack`].
#[derive(Clone, Copy, Debug)]
pub struct BasesOptions {
    /// Longest delta chain (git's `--depth`, default 50).
    pub depth: u32,
    /// How many objects visited before one are tried as its base (git's
    /// `--window`, default 10).
    pub window: usize,
    /// zlib level.
    pub level: Compression,
}

/// Batches hold groups up to this many bytes of content (a single larger
/// group is a batch of its own).
const BATCH_BYTES: u64 = 32 << 20;

/// Objects smaller than this are written whole (git's delta search skips
/// them too: a delta header and base reference cost as much).
const MIN_DELTA_SIZE: usize = 50;

/// How many of the objects visited before one are scanned for the nearest
/// fingerprints.
const MAX_SCANNED: usize = 2048;

/// How many nearest fingerprints are tried besides the window.
const NEAR_CANDIDATES: usize = 3;

/// Fingerprints farther apart than this are not tried as bases beyond the
/// window.
const NEAR_DISTANCE: u32 = 64;

/// One entry ready to append: compressed content or delta.
struct Ready {
    /// Position in the list.
    obj: usize,
    head: ReadyHead,
    /// Size before compression.
    size: u64,
    /// CRC-32 before compression, which reading the pack back checks.
    crc32: u32,
    deflated: Vec<u8>,
}

enum ReadyHead {
    Full(Kind),
    /// A delta against this list position (written earlier).
    Delta(usize),
}

/// Write every object of `list` into a pack in `dir` with its `.idx` and
/// `.rev` ([`crate::pack::idx`]), read it back ([`crate::pack::reread`]),
/// and return its name without extension (`pack-<hash>`).
pub fn write_pack(
    repo: &Repo,
    list: &PackList,
    opts: &BasesOptions,
    dir: &Path,
    feedback: &Feedback,
) -> Result<String, PackError> {
    let objects = &list.listed;
    let Groups {
        commits,
        whole,
        groups,
    } = groups(objects);
    feedback.trace("bases: groups");
    let tmp_path = dir.join("tmp-simm.pack");
    let io_err = |what: &'static str, path: &Path, source: std::io::Error| PackError::Io {
        what,
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::create(&tmp_path).map_err(|e| io_err("create", &tmp_path, e))?;
    let mut writer = PackWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        objects.len(),
        repo.object_hash(),
        opts.level,
    )
    .map_err(|e| write_err(&tmp_path, e))?;
    // Where each list position landed in the pack (entry index), and
    // for each entry, its object and what it was meant to hold.
    let mut entry_of: Vec<usize> = vec![usize::MAX; objects.len()];
    let mut appended = Appended {
        entry_of: &mut entry_of,
        ids: Vec::with_capacity(objects.len()),
        meant: Vec::with_capacity(objects.len()),
    };
    let stage = feedback.stage("Writing objects", objects.len() as u64);
    let workers = Workers::new(repo, opts.level);

    // Commits, in runs of history: bases chosen as for a path's versions
    // (the window over size order, and the neighbours in history), then
    // written in history order, each base just before its first delta, as
    // git writes them, so that walking history reads the pack forwards.
    for runs in commits.chunks(COMMIT_RUN * rayon::current_num_threads().max(1)) {
        feedback.check()?;
        let runs: Vec<&[usize]> = runs.chunks(COMMIT_RUN).collect();
        let done = workers.search_all(&runs, objects, opts, feedback, &tmp_path);
        for run in done {
            for r in bases_first(run?) {
                appended.append(&mut writer, objects, r, &tmp_path)?;
                stage.inc(1);
            }
        }
    }

    // Tags (and anything of unknown kind), whole, in batches too (their
    // content is read and compressed on the pool).
    for chunk in whole.chunks(4096) {
        feedback.check()?;
        let ready: Vec<Result<Ready, PackError>> = chunk
            .par_iter()
            .map(|&obj| {
                workers.with(|Worker { reader, zlib, buf }| {
                    let kind = reader.object_into(&objects[obj].id, buf)?;
                    let mut deflated = Vec::new();
                    deflate_into(zlib, buf, &mut deflated).map_err(|e| write_err(&tmp_path, e))?;
                    deflated.shrink_to_fit();
                    Ok(Ready {
                        obj,
                        head: ReadyHead::Full(kind),
                        size: buf.len() as u64,
                        crc32: crc32fast::hash(buf),
                        deflated,
                    })
                })
            })
            .collect();
        for r in ready {
            appended.append(&mut writer, objects, r?, &tmp_path)?;
            stage.inc(1);
        }
    }
    feedback.trace("bases: commits and tags");

    // Trees and blobs, group by group, in batches of bounded size.
    let mut start = 0;
    while start < groups.len() {
        feedback.check()?;
        let mut end = start;
        let mut bytes = 0u64;
        while end < groups.len() && (end == start || bytes < BATCH_BYTES) {
            bytes += groups[end].iter().map(|&o| objects[o].size).sum::<u64>();
            end += 1;
        }
        let done = workers.search_all(&groups[start..end], objects, opts, feedback, &tmp_path);
        for group in done {
            for r in group? {
                appended.append(&mut writer, objects, r, &tmp_path)?;
                stage.inc(1);
            }
        }
        start = end;
    }
    stage.finish();
    feedback.trace("bases: deltas searched and pack written");
    let pack = writer.finish().map_err(|e| write_err(&tmp_path, e))?;
    pack.out
        .into_inner()
        .map_err(|e| io_err("write", &tmp_path, e.into_error()))?
        .sync_all()
        .map_err(|e| io_err("sync", &tmp_path, e))?;
    let name = format!("pack-{}", pack.checksum.to_hex());
    let pack_path = dir.join(format!("{name}.pack"));
    std::fs::rename(&tmp_path, &pack_path).map_err(|e| io_err("rename", &pack_path, e))?;
    // Read-only, as git leaves packs.
    #[cfg(unix)]
    std::fs::set_permissions(
        &pack_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o444),
    )
    .map_err(|e| io_err("chmod", &pack_path, e))?;
    feedback.check()?;
    super::reread::check_written(
        &pack_path,
        pack.len,
        pack.checksum.as_bytes().len(),
        &pack.entries,
        &appended.meant,
        feedback,
    )?;
    feedback.trace("bases: pack read back");

    let indexed: Vec<IndexedEntry> = appended
        .ids
        .iter()
        .zip(&pack.entries)
        .map(|(&id, &written)| IndexedEntry { id, written })
        .collect();
    let hash = repo.object_hash();
    let (idx, sorted) = super::idx::index_bytes(hash, &indexed, &pack.checksum)
        .map_err(|e| write_err(&pack_path, e))?;
    let rev = super::idx::rev_bytes(hash, &indexed, &sorted, &pack.checksum)
        .map_err(|e| write_err(&pack_path, e))?;
    // The .rev before the .idx: a pack is visible by its index.
    for (ext, bytes) in [("rev", rev), ("idx", idx)] {
        let path = dir.join(format!("{name}.{ext}"));
        write_read_only(&path, &bytes).map_err(|e| io_err("write", &path, e))?;
    }
    feedback.trace("bases: index written");
    Ok(name)
}

/// Write a file as git writes pack indexes: read-only (0444 before the
/// umask), synced.
fn write_read_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o444);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The entries appended so far: where each list position went, and per
/// entry its object and what it holds.
struct Appended<'a> {
    entry_of: &'a mut [usize],
    ids: Vec<gix::ObjectId>,
    meant: Vec<Meant>,
}

impl Appended<'_> {
    fn append<W: Write>(
        &mut self,
        writer: &mut PackWriter<W>,
        objects: &[ListedObject],
        r: Ready,
        path: &Path,
    ) -> Result<(), PackError> {
        let (head, meant) = match r.head {
            ReadyHead::Full(kind) => (Head::Full(kind), MeantHead::Full(kind)),
            ReadyHead::Delta(base) => (
                Head::Delta(self.entry_of[base]),
                MeantHead::Delta(self.entry_of[base]),
            ),
        };
        let index = writer
            .add_deflated(head, r.size, &r.deflated)
            .map_err(|e| write_err(path, e))?;
        self.entry_of[r.obj] = index;
        self.ids.push(objects[r.obj].id);
        self.meant.push(Meant {
            head: meant,
            size: r.size,
            crc32: r.crc32,
        });
        Ok(())
    }
}

/// Commits per run whose bases are chosen together: about as many as
/// git's window sees in a few megabytes of commits, and all in memory at
/// once per thread.
const COMMIT_RUN: usize = 8192;

fn search_err(e: SearchError, tmp_path: &Path) -> PackError {
    match e {
        SearchError::Repo(e) => PackError::Repo(e),
        SearchError::Write(e) => write_err(tmp_path, e),
        SearchError::Interrupted => PackError::Interrupted(crate::progress::Interrupted),
        SearchError::BadDelta(id) => PackError::Repo(RepoError::PackVerification {
            path: tmp_path.to_owned(),
            reason: format!("the delta chosen for {id} does not rebuild it"),
        }),
    }
}

/// A run's entries (in visiting order, each base visited before its
/// deltas) reordered into list order, except that each base comes just
/// before the first entry that needs it: git's write order.
fn bases_first(ready: Vec<Ready>) -> Vec<Ready> {
    let mut order: Vec<usize> = ready.iter().map(|r| r.obj).collect();
    order.sort_unstable();
    let mut by_obj: HashMap<usize, Ready> = ready.into_iter().map(|r| (r.obj, r)).collect();
    let mut out = Vec::with_capacity(by_obj.len());
    let mut chain = Vec::new();
    for obj in order {
        let mut cur = obj;
        while let Some(r) = by_obj.remove(&cur) {
            let base = match r.head {
                ReadyHead::Delta(b) => Some(b),
                ReadyHead::Full(_) => None,
            };
            chain.push(r);
            match base {
                Some(b) => cur = b,
                None => break,
            }
        }
        out.extend(chain.drain(..).rev());
    }
    out
}

/// Each worker's delta-base cache. Groups are read path by path, not in
/// pack order, so a large cache hits little more often than a small one,
/// and it is held per thread beside the group's contents.
const READER_CACHE_BYTES: usize = 16 << 20;

/// What each thread of the pool works with: one reader (its delta-base
/// cache stays warm across groups) and one compressor.
struct Worker {
    reader: Reader,
    zlib: Compress,
    buf: Vec<u8>,
}

/// One [`Worker`] per pool thread, made on first use; each is only ever
/// locked by its own thread.
struct Workers<'a> {
    repo: &'a Repo,
    level: Compression,
    slots: Vec<std::sync::Mutex<Option<Worker>>>,
}

impl<'a> Workers<'a> {
    fn new(repo: &'a Repo, level: Compression) -> Self {
        Workers {
            repo,
            level,
            slots: std::iter::repeat_with(|| std::sync::Mutex::new(None))
                .take(rayon::current_num_threads().max(1))
                .collect(),
        }
    }

    /// [`search_group`] on every group, in parallel: each group's entries
    /// in visiting order.
    fn search_all<G: AsRef<[usize]> + Sync>(
        &self,
        groups: &[G],
        objects: &[ListedObject],
        opts: &BasesOptions,
        feedback: &Feedback,
        tmp_path: &Path,
    ) -> Vec<Result<Vec<Ready>, PackError>> {
        groups
            .par_iter()
            .map(|group| {
                if feedback.is_interrupted() {
                    return Err(PackError::Interrupted(crate::progress::Interrupted));
                }
                self.with(|w| {
                    search_group(
                        &mut w.reader,
                        &mut w.buf,
                        &mut w.zlib,
                        objects,
                        group.as_ref(),
                        opts,
                        feedback,
                    )
                    .map_err(|e| search_err(e, tmp_path))
                })
            })
            .collect()
    }

    fn with<R>(&self, f: impl FnOnce(&mut Worker) -> R) -> R {
        let slot = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let mut guard = self.slots[slot]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let worker = guard.get_or_insert_with(|| Worker {
            reader: self.repo.reader_with_cache(READER_CACHE_BYTES),
            zlib: Compress::new(self.level),
            buf: Vec::new(),
        });
        f(worker)
    }
}

fn write_err(path: &Path, e: super::write::WriteError) -> PackError {
    PackError::Write {
        path: path.to_owned(),
        source: e,
    }
}

/// The objects of a pack, as [`write_pack`] takes them on.
struct Groups {
    /// Commits (and whatever else the listing names no kind and no path
    /// for), in list order.
    commits: Vec<usize>,
    /// Tags and anything whose kind is not known from the pack headers,
    /// written whole, in list order.
    whole: Vec<usize>,
    /// Groups of trees and groups of blobs by path, in order of first
    /// appearance, each in list (history) order.
    groups: Vec<Vec<usize>>,
}

fn groups(objects: &[ListedObject]) -> Groups {
    let mut commits = Vec::new();
    let mut whole = Vec::new();
    let mut trees: Vec<Vec<usize>> = Vec::new();
    let mut blobs: Vec<Vec<usize>> = Vec::new();
    let mut by_path: HashMap<(bool, &[u8]), usize> = HashMap::new();
    for (i, o) in objects.iter().enumerate() {
        let is_tree = match o.kind {
            Some(Kind::Tree) => true,
            Some(Kind::Blob) => false,
            // The listing knows the kind of blobs and trees only; what git's
            // walk prints without a name is a commit (tags carry their
            // ref's name), and a wrong guess costs nothing: bases are only
            // taken from objects of the same kind as read.
            Some(Kind::Commit) => {
                commits.push(i);
                continue;
            }
            None if o.name.is_none() => {
                commits.push(i);
                continue;
            }
            _ => {
                whole.push(i);
                continue;
            }
        };
        let list = if is_tree { &mut trees } else { &mut blobs };
        match &o.name {
            Some(name) => {
                let at = *by_path
                    .entry((is_tree, name.as_slice()))
                    .or_insert_with(|| {
                        list.push(Vec::new());
                        list.len() - 1
                    });
                list[at].push(i);
            }
            None => list.push(vec![i]),
        }
    }
    let blobs = join_continued(objects, blobs);
    trees.extend(blobs);
    Groups {
        commits,
        whole,
        groups: split_large(objects, trees),
    }
}

/// Split groups holding more than [`MAX_JOINED_BYTES`] of content into runs
/// of consecutive (history-ordered) objects below it: a group's content is
/// in memory while its bases are chosen, and the history of one file can
/// be any size (git.git's `diff.c`: 226 MB in 1,706 versions). Neighbours
/// in history stay together; each extra run costs about one object stored
/// whole.
fn split_large(objects: &[ListedObject], groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let total: u64 = group.iter().map(|&o| objects[o].size).sum();
        if total <= MAX_JOINED_BYTES {
            out.push(group);
            continue;
        }
        let mut run = Vec::new();
        let mut bytes = 0u64;
        for o in group {
            if !run.is_empty() && bytes + objects[o].size > MAX_JOINED_BYTES {
                out.push(std::mem::take(&mut run));
                bytes = 0;
            }
            bytes += objects[o].size;
            run.push(o);
        }
        out.push(run);
    }
    out
}

/// Fingerprints at most this far apart make two path groups one (a rename,
/// a copy, a vendored tree): about 80% of the content shared.
const JOIN_DISTANCE: u32 = 40;

/// Groups hold at most this many bytes of content (one object larger than
/// it is a group of its own): joined groups stay below it (boilerplate
/// copied into hundreds of paths would otherwise make one huge group) and
/// larger ones are split ([`split_large`]), since a group's content is in
/// memory while its bases are chosen, one group per thread.
const MAX_JOINED_BYTES: u64 = 64 << 20;

/// Join path groups whose largest blob's nearest fingerprint in another
/// group is within [`JOIN_DISTANCE`]: the history of a file that moved, or
/// was copied, continues in the other group, so their versions are each
/// other's bases. A joined group lists its objects in list order.
fn join_continued(objects: &[ListedObject], groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    use crate::similarity::candidates::{Options, Search};
    use crate::similarity::fingerprint::Sketch;
    // Every fingerprinted blob, and the group each is in.
    let mut group_of = Vec::new();
    let mut sketches = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for &o in group {
            if let Some(f) = objects[o].fingerprint {
                group_of.push((g, o));
                sketches.push(Sketch {
                    size: objects[o].size,
                    fingerprint: Some(f),
                });
            }
        }
    }
    // Each group's largest fingerprinted blob.
    let mut roots: Vec<(usize, usize)> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        let root = group
            .iter()
            .filter(|&&o| objects[o].fingerprint.is_some())
            .max_by_key(|&&o| objects[o].size);
        if let Some(&o) = root {
            roots.push((g, o));
        }
    }
    if roots.len() < 2 {
        return groups;
    }
    let search = Search::new(&sketches);
    let dsts: Vec<Sketch> = roots
        .iter()
        .map(|&(_, o)| Sketch {
            size: objects[o].size,
            fingerprint: objects[o].fingerprint,
        })
        .collect();
    let opts = Options {
        min_score: 0,
        per_destination: 8,
        tie_margin: 0,
        max_ties: 0,
    };
    let nearest = search.nearest(&dsts, &opts);
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    let mut members: Vec<u64> = groups
        .iter()
        .map(|g| g.iter().map(|&o| objects[o].size).sum())
        .collect();
    fn find(parent: &mut [usize], mut g: usize) -> usize {
        while parent[g] != g {
            parent[g] = parent[parent[g]];
            g = parent[g];
        }
        g
    }
    for ((g, o), cands) in roots.iter().zip(nearest) {
        let Some(f) = objects[*o].fingerprint else {
            continue;
        };
        let other = cands.sources.iter().find_map(|&s| {
            let (h, so) = group_of[s];
            let d = objects[so].fingerprint.map(|sf| sf.distance(&f))?;
            (h != *g && d <= JOIN_DISTANCE).then_some(h)
        });
        if let Some(h) = other {
            let (a, b) = (find(&mut parent, *g), find(&mut parent, h));
            if a != b && members[a] + members[b] <= MAX_JOINED_BYTES {
                parent[b] = a;
                members[a] += members[b];
            }
        }
    }
    let mut joined: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (g, group) in groups.into_iter().enumerate() {
        let r = find(&mut parent, g);
        joined[r].extend(group);
    }
    joined
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|mut g| {
            g.sort_unstable();
            g
        })
        .collect()
}

enum SearchError {
    Interrupted,
    /// A delta that does not rebuild its object (a bug in the encoder).
    BadDelta(gix::ObjectId),
    Repo(RepoError),
    Write(super::write::WriteError),
}

impl From<RepoError> for SearchError {
    fn from(e: RepoError) -> Self {
        SearchError::Repo(e)
    }
}

impl From<super::write::WriteError> for SearchError {
    fn from(e: super::write::WriteError) -> Self {
        SearchError::Write(e)
    }
}

/// Choose a base for every object of one group (list positions in history
/// order) and compress the results, in visiting order.
fn search_group(
    reader: &mut Reader,
    scratch: &mut Vec<u8>,
    zlib: &mut Compress,
    objects: &[ListedObject],
    group: &[usize],
    opts: &BasesOptions,
    feedback: &Feedback,
) -> Result<Vec<Ready>, SearchError> {
    let n = group.len();
    let mut contents: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    for &o in group {
        kinds.push(reader.object_into(&objects[o].id, scratch)?);
        // An exact copy: the decoder leaves two to three times an object's
        // size allocated (room for delta chains), which, kept for a whole
        // group, tripled the memory the group took.
        contents.push(scratch.as_slice().to_vec());
    }
    // Visiting order: largest first, history order among equals.
    let mut visit: Vec<usize> = (0..n).collect();
    visit.sort_by_key(|&k| std::cmp::Reverse(contents[k].len()));
    // rank[k]: when history position k is visited.
    let mut rank = vec![0usize; n];
    for (r, &k) in visit.iter().enumerate() {
        rank[k] = r;
    }
    let mut depth = vec![0u32; n];
    let mut indexes: Vec<Option<Index<'_>>> = std::iter::repeat_with(|| None).take(n).collect();
    let mut out = Vec::with_capacity(n);
    for (r, &k) in visit.iter().enumerate() {
        // A large group takes a while: an interrupt is noticed per object.
        if feedback.is_interrupted() {
            return Err(SearchError::Interrupted);
        }
        let target = &contents[k];
        let mut best: Option<(usize, Vec<u8>)> = None;
        let no_delta = objects[group[k]].no_delta;
        if !no_delta && target.len() >= MIN_DELTA_SIZE && opts.depth > 0 {
            // Candidates (history positions): the window before in visiting
            // order, then history neighbours visited already.
            let mut cands: Vec<usize> = visit[r.saturating_sub(opts.window)..r]
                .iter()
                .rev()
                .copied()
                .collect();
            for h in [k.wrapping_sub(1), k + 1, k.wrapping_sub(2), k + 2] {
                if h < n && rank[h] < r && !cands.contains(&h) {
                    cands.push(h);
                }
            }
            // And the nearest fingerprints among those visited already.
            if let Some(f) = objects[group[k]].fingerprint {
                let mut near: Vec<(u32, usize)> = visit[r.saturating_sub(MAX_SCANNED)..r]
                    .iter()
                    .filter_map(|&h| {
                        let d = objects[group[h]].fingerprint?.distance(&f);
                        (d <= NEAR_DISTANCE).then_some((d, h))
                    })
                    .collect();
                near.sort_unstable();
                for (_, h) in near.into_iter().take(NEAR_CANDIDATES) {
                    if !cands.contains(&h) {
                        cands.push(h);
                    }
                }
            }
            for c in cands {
                // A delta makes an object of its base's kind.
                if depth[c] >= opts.depth || objects[group[c]].no_delta || kinds[c] != kinds[k] {
                    continue;
                }
                let base = &contents[c];
                if base.len() < target.len() / 32 || base.is_empty() {
                    continue;
                }
                // git's bound (try_delta): the best so far, or half the
                // object, scaled down for deep bases so shallow ones win.
                let (bound, ref_depth) = match &best {
                    Some((b, d)) => (d.len().saturating_sub(1), depth[*b] + 1),
                    None => ((target.len() / 2).saturating_sub(20), 1),
                };
                let max_depth = opts.depth as usize;
                let limit = bound * (max_depth - depth[c] as usize)
                    / (max_depth + 1).saturating_sub(ref_depth as usize).max(1);
                if limit == 0 {
                    continue;
                }
                // Only the window's indexes are kept: the others serve
                // one target.
                let found = if rank[c] + opts.window >= r {
                    indexes[c]
                        .get_or_insert_with(|| Index::new(base))
                        .delta(target, limit)
                } else {
                    Index::new(base).delta(target, limit)
                };
                if let Some(d) = found {
                    best = Some((c, d));
                }
            }
        }
        // Indexes leaving the window are not needed again.
        if r >= opts.window {
            indexes[visit[r - opts.window]] = None;
        }
        let mut deflated = Vec::new();
        let ready = match best {
            Some((c, d)) => {
                // The pack is not indexed by rebuilding its objects (see
                // `pack::reread`): prove each delta here, where base and
                // target are at hand.
                if super::delta::apply(&contents[c], &d).ok().as_deref() != Some(&target[..]) {
                    return Err(SearchError::BadDelta(objects[group[k]].id));
                }
                depth[k] = depth[c] + 1;
                deflate_into(zlib, &d, &mut deflated)?;
                deflated.shrink_to_fit();
                Ready {
                    obj: group[k],
                    head: ReadyHead::Delta(group[c]),
                    size: d.len() as u64,
                    crc32: crc32fast::hash(&d),
                    deflated,
                }
            }
            None => {
                deflate_into(zlib, target, &mut deflated)?;
                deflated.shrink_to_fit();
                Ready {
                    obj: group[k],
                    head: ReadyHead::Full(kinds[k]),
                    size: target.len() as u64,
                    crc32: crc32fast::hash(target),
                    deflated,
                }
            }
        };
        out.push(ready);
    }
    Ok(out)
}

/// The zlib level of packs: `pack.compression`, else `core.compression`,
/// else zlib's default (git's `Z_DEFAULT_COMPRESSION`, level 6); -1 means
/// the default, 0-9 a level.
pub fn compression_level(repo: &Repo) -> Compression {
    let level = repo
        .config_int("pack.compression")
        .or_else(|| repo.config_int("core.compression"))
        .unwrap_or(-1);
    i32::try_from(level)
        .ok()
        .filter(|l| (0..=9).contains(l))
        .and_then(Compression::new)
        .unwrap_or(Compression::DEFAULT)
}
