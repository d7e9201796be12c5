//! The cross-path pass. A group's own search leaves its first version
//! whole, and with it every file that lives at one path only: a release's
//! generated documentation saved under a new name each time, test data
//! copied into another directory, a file the fingerprint join could not
//! add to its relatives' group because that group was full. git's
//! `--path-walk` finds bases for such objects in a second window pass over
//! all objects; here each is tried against its nearest fingerprints among
//! the objects already written, whatever their path, and keeps the
//! smallest delta if it beats the whole object.
//!
//! Bases must be written first (an OFS_DELTA points backwards), so the
//! candidates are the objects appended in earlier batches and those of
//! groups earlier in the same batch. A root that becomes a delta makes
//! every chain below it longer: a candidate is only tried when its depth,
//! plus one, plus the height of the root's own tree of deltas stays within
//! `--depth`; and since a candidate from the same batch may itself still
//! move deeper (its own root may become a delta), the final check is made
//! when the entry is appended ([`Settle`]), with the whole object kept to
//! fall back on.
//!
//! A run cut out of a longer history (one file's versions beyond 64 MiB)
//! is also offered the run before it: its roots (trees too, which have no
//! fingerprint) try the shallowest of that run's oldest versions, the
//! ones next to their own in history. Such a run keeps [`RUN_RESERVE`]
//! links of `--depth` free in its own chains, without which its roots,
//! heading chains as deep as allowed, could hang under nothing: on redis
//! (`src/module.c`, 800 versions of up to 580 KB in five runs) the pack
//! went from 19,328,829 to 18,855,072 bytes, on git.git from 101.0 to
//! 100.5 MB.

use std::collections::HashMap;
use std::path::Path;

use gix::object::Kind;
use rayon::prelude::*;

use super::search::{MIN_DELTA_SIZE, Workers, delta_limit};
use super::{Ready, ReadyHead};
use crate::pack::PackError;
use crate::pack::delta::Index;
use crate::pack::list::ListedObject;
use crate::pack::write::deflate_into;
use crate::progress::Feedback;
use crate::repo::RepoError;
use crate::similarity::candidates::{Options, Search};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::MAX_SCORE;

/// How many nearest fingerprints (among those already written) are tried
/// as a root's base.
const CROSS_CANDIDATES: usize = 4;

/// Fingerprints farther apart than this are not tried: by then little of
/// the content is shared (a delta must be under half the object to count).
const CROSS_DISTANCE: u32 = 96;

/// Blobs that can be a base across paths: every fingerprinted blob, and
/// the group each is in.
pub(super) struct Cross {
    search: Search,
    /// Search position to list position.
    listed: Vec<usize>,
    /// List position to group (`u32::MAX`: in no group).
    group_of: Vec<u32>,
    /// For a group cut out of a longer history, the oldest versions of the
    /// run before it: the versions next to its own in history.
    run_before: HashMap<usize, Vec<usize>>,
}

/// How many of the previous run's last versions are looked at for a
/// run's roots, and how many of them (the shallowest, then the latest)
/// are tried.
const RUN_TAIL: usize = 64;
const RUN_TRIED: usize = 6;

/// Links of `--depth` a run cut out of a longer history keeps free in its
/// own chains, so that its roots can hang under the run before: its roots
/// head trees of deltas as deep as the depth allows otherwise.
const RUN_RESERVE: u32 = 10;

/// Roots turned into deltas by [`Cross::improve`], by list position, with
/// what is needed to undo the change when it is appended.
#[derive(Default)]
pub(super) struct Settle {
    replaced: HashMap<usize, Replaced>,
    /// How many roots became deltas, and the bytes (compressed) saved.
    pub(super) count: usize,
    pub(super) saved: u64,
}

struct Replaced {
    /// The object stored whole, as the group's search left it.
    full: Ready,
    /// The longest chain of deltas below it in its group.
    height: u32,
}

impl Settle {
    /// The entry to append for `r`: the cross-path delta if its base's
    /// final depth (`depth_of`, list position to depth of appended
    /// objects) leaves room for the chains below it, else the whole
    /// object.
    pub(super) fn settle(&mut self, r: Ready, depth_of: &[u32], max_depth: u32) -> Ready {
        let Some(rep) = self.replaced.remove(&r.obj) else {
            return r;
        };
        match r.head {
            ReadyHead::Delta(base)
                if depth_of[base].saturating_add(1 + rep.height) <= max_depth =>
            {
                r
            }
            _ => {
                self.count -= 1;
                self.saved -= rep.full.deflated.len().saturating_sub(r.deflated.len()) as u64;
                rep.full
            }
        }
    }
}

impl Cross {
    /// Links of `max_depth` group `g`'s own search should leave free.
    pub(super) fn reserved(&self, g: usize, max_depth: u32) -> u32 {
        if self.run_before.contains_key(&g) {
            RUN_RESERVE.min(max_depth / 2)
        } else {
            0
        }
    }

    pub(super) fn new(
        objects: &[ListedObject],
        groups: &[Vec<usize>],
        continues: &[Option<usize>],
    ) -> Cross {
        let run_before = continues
            .iter()
            .enumerate()
            .filter_map(|(g, before)| {
                let tail = &groups[(*before)?];
                Some((g, tail[tail.len().saturating_sub(RUN_TAIL)..].to_vec()))
            })
            .collect();
        let mut group_of = vec![u32::MAX; objects.len()];
        let mut listed = Vec::new();
        let mut sketches = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            for &o in group {
                group_of[o] = g as u32;
                let obj = &objects[o];
                if obj.fingerprint.is_some() && obj.kind == Some(Kind::Blob) && !obj.no_delta {
                    listed.push(o);
                    sketches.push(Sketch {
                        size: obj.size,
                        fingerprint: obj.fingerprint,
                    });
                }
            }
        }
        Cross {
            search: Search::new(&sketches),
            listed,
            group_of,
            run_before,
        }
    }

    /// Try every root of `done` (the searched groups `first..`, each in
    /// visiting order) against its nearest fingerprints written before it;
    /// `written_depth` gives the depth of an object appended already.
    /// Roots whose best delta beats the whole object are replaced in
    /// `done`; `settle` keeps what undoing that needs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn improve(
        &self,
        workers: &Workers<'_>,
        objects: &[ListedObject],
        max_depth: u32,
        first: usize,
        done: &mut [Vec<Ready>],
        written_depth: &[u32],
        settle: &mut Settle,
        feedback: &Feedback,
        tmp_path: &Path,
    ) -> Result<(), PackError> {
        // Depths inside this batch as its groups' searches left them (a
        // group's entries come bases first), and each root's height.
        let mut local: HashMap<usize, (usize, u32)> = HashMap::new();
        let mut height: HashMap<usize, u32> = HashMap::new();
        for (gi, group) in done.iter().enumerate() {
            for r in group {
                let d = match r.head {
                    ReadyHead::Full(_) => 0,
                    ReadyHead::Delta(b) => local.get(&b).map_or(0, |&(_, d)| d + 1),
                };
                local.insert(r.obj, (gi, d));
            }
            for r in group.iter().rev() {
                if let ReadyHead::Delta(b) = r.head {
                    let h = height.get(&r.obj).copied().unwrap_or(0) + 1;
                    let e = height.entry(b).or_insert(0);
                    *e = (*e).max(h);
                }
            }
        }
        let mut roots: Vec<(usize, usize, usize)> = Vec::new();
        for (gi, group) in done.iter().enumerate() {
            for (ri, r) in group.iter().enumerate() {
                let obj = &objects[r.obj];
                let continued = self.run_before.contains_key(&(first + gi));
                let kind_ok = match r.head {
                    ReadyHead::Full(Kind::Blob) => obj.fingerprint.is_some() || continued,
                    ReadyHead::Full(Kind::Tree) => continued,
                    _ => false,
                };
                if kind_ok && r.size >= MIN_DELTA_SIZE as u64 && !obj.no_delta {
                    roots.push((gi, ri, r.obj));
                }
            }
        }
        if roots.is_empty() {
            return Ok(());
        }
        let sketches: Vec<Sketch> = roots
            .iter()
            .map(|&(_, _, o)| Sketch {
                size: objects[o].size,
                fingerprint: objects[o].fingerprint,
            })
            .collect();
        // Bases within twice or half the size: a smaller base leaves
        // most of the object to insert, a larger one is read for little.
        let opts = Options {
            min_score: MAX_SCORE / 2,
            per_destination: 16,
            tie_margin: 0,
            max_ties: 0,
        };
        let nearest = self.search.nearest(&sketches, &opts);
        let written = |c: usize, gi: usize| -> Option<u32> {
            let g = self.group_of[c];
            if g != u32::MAX && (g as usize) >= first && (g as usize) < first + done.len() {
                // The same batch: only groups appended before this one.
                local.get(&c).filter(|&&(cg, _)| cg < gi).map(|&(_, d)| d)
            } else {
                // Appended in an earlier batch, or not yet at all.
                Some(written_depth[c]).filter(|&d| d != NOT_WRITTEN)
            }
        };
        let mut work: Vec<Root> = Vec::new();
        for (&(gi, ri, o), cands) in roots.iter().zip(nearest) {
            let h = height.get(&o).copied().unwrap_or(0);
            let mut picked = Vec::new();
            // A run cut out of a longer history: the versions just before
            // it in history, at the same path.
            let mut tail: Vec<(u32, std::cmp::Reverse<usize>, usize)> = Vec::new();
            for (at, &c) in self
                .run_before
                .get(&(first + gi))
                .into_iter()
                .flatten()
                .enumerate()
            {
                let usable = objects[c].kind == objects[o].kind && !objects[c].no_delta;
                if let Some(d) = written(c, gi).filter(|&d| usable && d + 1 + h <= max_depth) {
                    tail.push((d, std::cmp::Reverse(at), c));
                }
            }
            tail.sort_unstable();
            picked.extend(tail.into_iter().take(RUN_TRIED).map(|(d, _, c)| (c, d)));
            let from_run = picked.len();
            // Blobs without a fingerprint (too small or large) have only
            // the run before to try.
            let f = objects[o].fingerprint;
            for &s in cands.sources.iter().take_while(|_| f.is_some()) {
                let Some(&c) = self.listed.get(s) else {
                    continue;
                };
                let close = objects[c]
                    .fingerprint
                    .zip(f)
                    .is_some_and(|(cf, f)| cf.distance(&f) <= CROSS_DISTANCE);
                if c == o || !close || self.group_of[c] == self.group_of[o] {
                    continue;
                }
                if picked.iter().any(|&(p, _)| p == c) {
                    continue;
                }
                if let Some(d) = written(c, gi).filter(|&d| d + 1 + h <= max_depth) {
                    picked.push((c, d));
                    if picked.len() == from_run + CROSS_CANDIDATES {
                        break;
                    }
                }
            }
            if !picked.is_empty() {
                work.push(Root {
                    group: gi,
                    entry: ri,
                    obj: o,
                    picked,
                });
            }
        }
        let found = work
            .par_iter()
            .map(|root| {
                if feedback.is_interrupted() {
                    return Err(PackError::Interrupted(crate::progress::Interrupted));
                }
                let full_len = done[root.group][root.entry].deflated.len();
                workers
                    .with(|w| try_bases(w, objects, root.obj, &root.picked, max_depth, full_len))
                    .map_err(|e| cross_err(e, tmp_path))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (root, ready) in work.iter().zip(found) {
            let Some(ready) = ready else {
                continue;
            };
            let (gi, ri) = (root.group, root.entry);
            let obj = ready.obj;
            let full = std::mem::replace(&mut done[gi][ri], ready);
            settle.count += 1;
            settle.saved += full
                .deflated
                .len()
                .saturating_sub(done[gi][ri].deflated.len()) as u64;
            let h = height.get(&obj).copied().unwrap_or(0);
            settle.replaced.insert(obj, Replaced { full, height: h });
        }
        Ok(())
    }
}

/// A root of a searched group with the bases to try for it.
struct Root {
    /// Its group (in the batch) and entry (in the group's entries).
    group: usize,
    entry: usize,
    /// Its list position.
    obj: usize,
    /// Candidate bases: list position and depth.
    picked: Vec<(usize, u32)>,
}

/// `written_depth` of an object not appended yet.
pub(super) const NOT_WRITTEN: u32 = u32::MAX;

enum CrossError {
    Repo(RepoError),
    Write(crate::pack::write::WriteError),
    BadDelta(gix::ObjectId),
}

fn cross_err(e: CrossError, tmp_path: &Path) -> PackError {
    match e {
        CrossError::Repo(e) => PackError::Repo(e),
        CrossError::Write(e) => super::write_err(tmp_path, e),
        CrossError::BadDelta(id) => PackError::Repo(RepoError::PackVerification {
            path: tmp_path.to_owned(),
            reason: format!("the delta chosen for {id} does not rebuild it"),
        }),
    }
}

/// The smallest delta of object `o` against the `picked` bases (list
/// position, depth), compressed, if it is smaller than the whole object
/// compressed (`full_len`).
fn try_bases(
    w: &mut super::Worker,
    objects: &[ListedObject],
    o: usize,
    picked: &[(usize, u32)],
    max_depth: u32,
    full_len: usize,
) -> Result<Option<Ready>, CrossError> {
    let mut target = Vec::new();
    let target_kind = w
        .reader
        .object_into(&objects[o].id, &mut target)
        .map_err(CrossError::Repo)?;
    let mut best: Option<(usize, u32, Vec<u8>, Vec<u8>)> = None;
    for &(c, depth) in picked {
        let kind = w
            .reader
            .object_into(&objects[c].id, &mut w.buf)
            .map_err(CrossError::Repo)?;
        // A delta makes an object of its base's kind.
        if kind != target_kind || w.buf.len() < target.len() / 32 || w.buf.is_empty() {
            continue;
        }
        let limit = delta_limit(
            target.len(),
            best.as_ref().map(|(_, d, delta, _)| (delta.len(), *d)),
            depth,
            max_depth,
        );
        if limit == 0 {
            continue;
        }
        if let Some(delta) = Index::new(&w.buf).delta(&target, limit) {
            // Proven here, where base and target are at hand (the pack
            // is not indexed by rebuilding its objects).
            if crate::pack::delta::apply(&w.buf, &delta).ok().as_deref() != Some(&target[..]) {
                return Err(CrossError::BadDelta(objects[o].id));
            }
            best = Some((c, depth, delta, Vec::new()));
        }
    }
    let Some((c, _, delta, mut deflated)) = best else {
        return Ok(None);
    };
    deflate_into(&mut w.zlib, &delta, &mut deflated).map_err(CrossError::Write)?;
    if deflated.len() >= full_len {
        return Ok(None);
    }
    deflated.shrink_to_fit();
    Ok(Some(Ready {
        obj: o,
        head: ReadyHead::Delta(c),
        size: delta.len() as u64,
        crc32: crc32fast::hash(&delta),
        deflated,
    }))
}
