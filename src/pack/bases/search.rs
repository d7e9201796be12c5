//! Choosing delta bases inside one group (a path's versions, joined with
//! the paths its content continued in): the window over size order, the
//! neighbours in history and the nearest fingerprints, each tried with a
//! real delta; and the per-thread readers and compressors that do it.

use gix::zlib::Compression;
use gix::zlib::stream::deflate::Compress;
use rayon::prelude::*;
use std::path::Path;

use super::{BasesOptions, Ready, ReadyHead};
use crate::pack::PackError;
use crate::pack::delta::Index;
use crate::pack::list::ListedObject;
use crate::pack::write::deflate_into;
use crate::progress::Feedback;
use crate::repo::{Reader, Repo, RepoError};

/// Objects smaller than this are written whole (git's delta search skips
/// them too: a delta header and base reference cost as much).
pub(super) const MIN_DELTA_SIZE: usize = 50;

/// How many of the objects visited before one are scanned for the nearest
/// fingerprints.
const MAX_SCANNED: usize = 2048;

/// How many ancestors of a deep candidate are tried, and how many links
/// apart.
const ANCESTORS: usize = 3;
const ANCESTOR_STRIDE: usize = 16;

/// How many nearest fingerprints are tried besides the window.
const NEAR_CANDIDATES: usize = 3;

/// Fingerprints farther apart than this are not tried as bases beyond the
/// window.
const NEAR_DISTANCE: u32 = 64;

/// The same for trees, whose fingerprints are the only guide to their
/// history (blobs also have their neighbours in history and in size):
/// measured on git.git, 3 within 64 bits 101.5 MB, 8 within 96 100.6 MB.
const TREE_NEAR_CANDIDATES: usize = 8;
const TREE_NEAR_DISTANCE: u32 = 96;
/// Each worker's delta-base cache. Groups are read path by path, not in
/// pack order, so a large cache hits little more often than a small one,
/// and it is held per thread beside the group's contents.
const READER_CACHE_BYTES: usize = 16 << 20;

/// What each thread of the pool works with: one reader (its delta-base
/// cache stays warm across groups) and one compressor.
pub(super) struct Worker {
    pub(super) reader: Reader,
    pub(super) zlib: Compress,
    pub(super) buf: Vec<u8>,
}

/// One [`Worker`] per pool thread, made on first use; each is only ever
/// locked by its own thread.
pub(super) struct Workers<'a> {
    repo: &'a Repo,
    level: Compression,
    slots: Vec<std::sync::Mutex<Option<Worker>>>,
}

impl<'a> Workers<'a> {
    pub(super) fn new(repo: &'a Repo, level: Compression) -> Self {
        Workers {
            repo,
            level,
            slots: std::iter::repeat_with(|| std::sync::Mutex::new(None))
                .take(rayon::current_num_threads().max(1))
                .collect(),
        }
    }

    /// [`search_group`] on every group, in parallel: each group's entries
    /// in visiting order. `reserved(i)` links of `--depth` are kept free
    /// in group `i`'s chains (for the cross-path pass to hang its roots
    /// under a base).
    pub(super) fn search_all<G: AsRef<[usize]> + Sync>(
        &self,
        groups: &[G],
        objects: &[ListedObject],
        opts: &BasesOptions,
        reserved: &(dyn Fn(usize) -> u32 + Sync),
        feedback: &Feedback,
        tmp_path: &Path,
    ) -> Vec<Result<Vec<Ready>, PackError>> {
        groups
            .par_iter()
            .enumerate()
            .map(|(i, group)| {
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
                        &BasesOptions {
                            depth: opts.depth.saturating_sub(reserved(i)),
                            ..*opts
                        },
                        feedback,
                    )
                    .map_err(|e| search_err(e, tmp_path))
                })
            })
            .collect()
    }

    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Worker) -> R) -> R {
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

fn search_err(e: SearchError, tmp_path: &Path) -> PackError {
    match e {
        SearchError::Repo(e) => PackError::Repo(e),
        SearchError::Write(e) => super::write_err(tmp_path, e),
        SearchError::Interrupted => PackError::Interrupted(crate::progress::Interrupted),
        SearchError::BadDelta(id) => PackError::Repo(RepoError::PackVerification {
            path: tmp_path.to_owned(),
            reason: format!("the delta chosen for {id} does not rebuild it"),
        }),
    }
}

enum SearchError {
    Interrupted,
    /// A delta that does not rebuild its object (a bug in the encoder).
    BadDelta(gix::ObjectId),
    Repo(RepoError),
    Write(crate::pack::write::WriteError),
}

impl From<RepoError> for SearchError {
    fn from(e: RepoError) -> Self {
        SearchError::Repo(e)
    }
}

impl From<crate::pack::write::WriteError> for SearchError {
    fn from(e: crate::pack::write::WriteError) -> Self {
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
    // Fingerprints: the store's for blobs; trees have none stored, so
    // theirs are computed here. A tree's versions differ by a few entries,
    // which move a few of its windows, so the nearest fingerprints find the
    // version a tree was made from (its commit's parent's), which a large
    // directory's thousands of versions of about one size hide from the
    // window: on git.git, whose root tree has 84,816 versions, this took
    // the pack from 109.4 to 100.6 MB for 4% more CPU.
    let mut fingerprinter = None;
    let fps: Vec<Option<crate::similarity::fingerprint::Fingerprint>> = group
        .iter()
        .zip(&kinds)
        .zip(&contents)
        .map(|((&o, kind), content)| match kind {
            gix::object::Kind::Tree => fingerprinter
                .get_or_insert_with(crate::similarity::fingerprint::Fingerprinter::new)
                .fingerprint(content),
            _ => objects[o].fingerprint,
        })
        .collect();
    // Visiting order: largest first, history order among equals.
    let mut visit: Vec<usize> = (0..n).collect();
    visit.sort_by_key(|&k| std::cmp::Reverse(contents[k].len()));
    // rank[k]: when history position k is visited.
    let mut rank = vec![0usize; n];
    for (r, &k) in visit.iter().enumerate() {
        rank[k] = r;
    }
    let mut depth = vec![0u32; n];
    // Each object's base (history position), once it has one.
    let mut parent = vec![usize::MAX; n];
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
            let (near_candidates, near_distance) = if kinds[k] == gix::object::Kind::Tree {
                (TREE_NEAR_CANDIDATES, TREE_NEAR_DISTANCE)
            } else {
                (NEAR_CANDIDATES, NEAR_DISTANCE)
            };
            if let Some(f) = fps[k] {
                let mut near: Vec<(u32, usize)> = visit[r.saturating_sub(MAX_SCANNED)..r]
                    .iter()
                    .filter_map(|&h| {
                        let d = fps[h]?.distance(&f);
                        (d <= near_distance).then_some((d, h))
                    })
                    .collect();
                near.sort_unstable();
                for (_, h) in near.into_iter().take(near_candidates) {
                    if !cands.contains(&h) {
                        cands.push(h);
                    }
                }
            }
            ancestors_of_deep(&mut cands, &depth, &parent, opts.depth);
            for c in cands {
                // A delta makes an object of its base's kind.
                if depth[c] >= opts.depth || objects[group[c]].no_delta || kinds[c] != kinds[k] {
                    continue;
                }
                let base = &contents[c];
                if base.len() < target.len() / 32 || base.is_empty() {
                    continue;
                }
                let limit = delta_limit(
                    target.len(),
                    best.as_ref().map(|(b, d)| (d.len(), depth[*b])),
                    depth[c],
                    opts.depth,
                );
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
                if crate::pack::delta::apply(&contents[c], &d).ok().as_deref() != Some(&target[..])
                {
                    return Err(SearchError::BadDelta(objects[group[k]].id));
                }
                depth[k] = depth[c] + 1;
                parent[k] = c;
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

/// git's bound on a delta worth computing (`try_delta`): smaller than the
/// best so far (`best`: its length and its base's depth), or than half the
/// object, scaled down for deep bases so that shallow ones win.
pub(super) fn delta_limit(
    target_len: usize,
    best: Option<(usize, u32)>,
    base_depth: u32,
    max_depth: u32,
) -> usize {
    let (bound, ref_depth) = match best {
        Some((len, depth)) => (len.saturating_sub(1), depth as usize + 1),
        None => ((target_len / 2).saturating_sub(20), 1),
    };
    let max_depth = max_depth as usize;
    bound * max_depth.saturating_sub(base_depth as usize)
        / (max_depth + 1).saturating_sub(ref_depth).max(1)
}

/// Add to `cands` ancestors (bases, bases of bases) of the deep ones.
///
/// Versions of a file visited in size order form long chains: the window's
/// and the history neighbours' best bases are usually each other, so the
/// chains soon reach `--depth`, and a base at depth 49 of 50 only counts if
/// its delta is tiny (git's bound scales with the depth left). Measured on
/// fzf, the objects this left whole or with poor deltas had a history
/// neighbour at full depth that git's 250-object window used one link
/// higher up. The ancestors of a deep candidate are earlier versions of
/// much the same content with room below them: the first one above the
/// deep zone, then every [`ANCESTOR_STRIDE`] links higher. On fzf, jq,
/// ripgrep, commons-lang and libgit2 this took 0.3-3.6% off the pack for
/// 1-4% more CPU (benches/repack-compare.sh).
fn ancestors_of_deep(cands: &mut Vec<usize>, depth: &[u32], parent: &[usize], max_depth: u32) {
    // Deep: in the last two fifths of `--depth` (20 links at git's 50).
    let deep = max_depth - max_depth * 2 / 5;
    let mut extra = Vec::new();
    for &c in cands.iter() {
        if depth[c] < deep {
            continue;
        }
        let mut a = c;
        while depth[a] >= deep && parent[a] != usize::MAX {
            a = parent[a];
        }
        for _ in 0..ANCESTORS {
            if depth[a] < deep && !cands.contains(&a) && !extra.contains(&a) {
                extra.push(a);
            }
            for _ in 0..ANCESTOR_STRIDE {
                if parent[a] == usize::MAX {
                    break;
                }
                a = parent[a];
            }
        }
    }
    cands.extend(extra);
}
