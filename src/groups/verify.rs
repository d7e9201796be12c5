//! Exact verification of candidate pairs: blob contents or stored chunk
//! histograms (boilerplate taken out) scored as git scores them, nearest
//! pairs first, and the union-find that links the pairs into groups.

use std::collections::HashMap;
use std::sync::Arc;

use gix::ObjectId;
use rayon::prelude::*;

use super::{Contents, GroupsError, Options, Outcome};
use crate::progress::Feedback;
use crate::repo::{Repo, RepoError};
use crate::similarity::candidates::Pair;
use crate::similarity::score::{self, Buckets, Spans};
use crate::similarity::store::StoreError;
use crate::similarity::store::histograms::{Histograms, Loc};

/// Blob contents from the object database or from memory.
pub(super) struct Blobs<'a> {
    pub(super) repo: &'a Repo,
    pub(super) contents: &'a Contents,
    pub(super) feedback: &'a Feedback<'a>,
}

impl Blobs<'_> {
    /// `f(position, content)` of every id, on several threads, in no
    /// particular order; object-database blobs in pack order, each read
    /// once.
    pub(super) fn for_each(
        &self,
        ids: &[ObjectId],
        f: impl Fn(usize, &[u8]) + Sync + Send,
    ) -> Result<(), GroupsError> {
        let (outside, inside): (Vec<usize>, Vec<usize>) =
            (0..ids.len()).partition(|&i| self.contents.contains_key(&ids[i]));
        let odb_ids: Vec<ObjectId> = inside.iter().map(|&i| ids[i]).collect();
        self.repo
            .for_each_blob(&odb_ids, self.feedback, |k, data| f(inside[k], data))
            .map_err(|e| match e {
                RepoError::Interrupted(i) => GroupsError::Interrupted(i),
                e => GroupsError::Repo(e),
            })?;
        for i in outside {
            match self.contents.get(&ids[i]) {
                Some(data) => f(i, data),
                None => return Err(GroupsError::Repo(RepoError::MissingObject { id: ids[i] })),
            }
        }
        Ok(())
    }
}

/// A blob as scored: its histogram without boilerplate, or `None` when it
/// is binary (never linked).
pub(super) type Scored = Option<Arc<Spans>>;

/// Histograms of blobs by position: from the histogram store, or read
/// from the blobs (once, and stored) when the store lacks them; decoded
/// ones kept in memory within a byte budget.
pub(super) struct Scorer<'a> {
    pub(super) reader: &'a Blobs<'a>,
    pub(super) ids: &'a [ObjectId],
    pub(super) common: Buckets,
    pub(super) histograms: Histograms,
    /// Where each position's histogram is, once known.
    pub(super) locs: Vec<Option<Loc>>,
    pub(super) cache: HashMap<usize, Scored>,
    pub(super) cache_bytes: usize,
    pub(super) budget: usize,
}

impl Scorer<'_> {
    /// Make sure the store holds the histogram of every position of
    /// `wanted`: those it lacks are read in one pass (pack order, each
    /// blob once) and added as they come; returns how many were read.
    pub(super) fn ensure(&mut self, wanted: &[usize]) -> Result<usize, GroupsError> {
        let mut unknown: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&p| self.locs[p].is_none())
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(0);
        }
        let ids: Vec<ObjectId> = unknown.iter().map(|&p| self.ids[p]).collect();
        let found = self.histograms.locate(&ids);
        let mut missing = Vec::new();
        for (&p, loc) in unknown.iter().zip(found) {
            match loc {
                Some(l) => self.locs[p] = Some(l),
                None => missing.push(p),
            }
        }
        if missing.is_empty() {
            return Ok(0);
        }
        let ids: Vec<ObjectId> = missing.iter().map(|&p| self.ids[p]).collect();
        let store = std::sync::Mutex::new((&mut self.histograms, None::<StoreError>));
        let read = self.reader.for_each(&ids, |k, data| {
            let spans = Spans::new(data);
            let mut guard = store
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (histograms, failed) = &mut *guard;
            if failed.is_none()
                && let Err(e) = histograms.add(ids[k], &spans)
            {
                *failed = Some(e);
            }
        });
        let (histograms, failed) = store
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        read?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        histograms.flush()?;
        for (&p, loc) in missing.iter().zip(self.histograms.locate(&ids)) {
            match loc {
                Some(l) => self.locs[p] = Some(l),
                None => {
                    return Err(GroupsError::Repo(RepoError::MissingObject {
                        id: self.ids[p],
                    }));
                }
            }
        }
        Ok(missing.len())
    }

    /// The whole histogram of position `p` (boilerplate included), after
    /// [`Scorer::ensure`].
    pub(super) fn whole(&self, p: usize) -> Option<Spans> {
        self.locs[p].and_then(|l| self.histograms.get(l))
    }

    /// Make sure every position of `wanted` is decoded in the cache
    /// (reading what the store lacks first); returns how many blobs were
    /// read. When the cache is over budget it is emptied first: batches
    /// need their own histograms at once, not the older ones, and
    /// decoding again is cheap.
    pub(super) fn load(&mut self, wanted: &mut Vec<usize>) -> Result<usize, GroupsError> {
        wanted.sort_unstable();
        wanted.dedup();
        // Emptied before looking at what it holds: what it held and is
        // wanted again is decoded again with the rest.
        if self.cache_bytes > self.budget {
            self.cache.clear();
            self.cache_bytes = 0;
        }
        wanted.retain(|p| !self.cache.contains_key(p));
        if wanted.is_empty() {
            return Ok(0);
        }
        let read = self.ensure(wanted)?;
        let this = &*self;
        let decoded: Vec<Scored> = wanted
            .par_iter()
            .map(|&p| {
                this.locs[p]
                    .and_then(|l| this.histograms.record(l))
                    .and_then(|r| Spans::decode_without(r, &this.common))
                    .filter(|s| !s.is_binary())
                    .map(Arc::new)
            })
            .collect();
        for (&p, s) in wanted.iter().zip(decoded) {
            self.cache_bytes += s.as_ref().map_or(0, |s| s.heap_bytes());
            self.cache.insert(p, s);
        }
        Ok(read)
    }

    pub(super) fn get(&self, p: usize) -> Scored {
        self.cache.get(&p).cloned().flatten()
    }
}

/// Candidate pairs are scored this many at a time: enough to keep both
/// cores busy, few enough that pairs made redundant by a batch's links
/// are skipped in the next.
pub(super) const BATCH: usize = 1 << 14;

/// The components and the links (blob positions, score) of [`link`].
pub(super) type Linked = (Sets, Vec<(usize, usize, u32)>);

/// Score `pairs` (nearest first), skipping those already connected;
/// returns the components and the links (blob positions, score).
pub(super) fn link(
    scorer: &mut Scorer,
    pairs: &[Pair],
    opts: &Options,
    outcome: &mut Outcome,
) -> Result<Linked, GroupsError> {
    let feedback = scorer.reader.feedback;
    let mut sets = Sets::new(scorer.ids.len());
    let mut links = Vec::new();
    // Reading every blob the store lacks in one pass lets the reader
    // decode packs along their delta trees (each object inflated once)
    // instead of resolving chains batch by batch; the histograms go to
    // the store as they come, so memory does not grow with the pairs.
    let mut all: Vec<usize> = pairs
        .iter()
        .flat_map(|p| [p.a as usize, p.b as usize])
        .collect();
    all.sort_unstable();
    all.dedup();
    outcome.blobs_read += scorer.ensure(&all)?;
    feedback.trace("groups: histograms of the pairs ready");
    let progress = feedback.stage("Scoring pairs", pairs.len() as u64);
    let mut tries: HashMap<(u32, u32), u32> = HashMap::new();
    for batch in pairs.chunks(BATCH) {
        feedback.check()?;
        let mut open: Vec<(usize, usize)> = Vec::with_capacity(batch.len());
        for p in batch {
            let (a, b) = (p.a as usize, p.b as usize);
            if opts.every_pair {
                open.push((a, b));
                continue;
            }
            let (ra, rb) = (sets.find(a), sets.find(b));
            if ra == rb {
                outcome.connected_pairs += 1;
                continue;
            }
            // Two families of versions a little too far apart (each
            // linked inside, under the threshold across) would otherwise
            // have every pair across them scored: |A| x |B| failures.
            // Pairs come nearest first, so after this many tries between
            // the same two components the rest are given up.
            let tried = tries
                .entry((ra.min(rb) as u32, ra.max(rb) as u32))
                .or_insert(0u32);
            if opts.max_tries > 0 && *tried >= opts.max_tries {
                outcome.given_up_pairs += 1;
                continue;
            }
            *tried += 1;
            open.push((a, b));
        }
        let mut wanted: Vec<usize> = open.iter().flat_map(|&(a, b)| [a, b]).collect();
        outcome.blobs_read += scorer.load(&mut wanted)?;
        let scorer_ref = &*scorer;
        let min_score = opts.min_score;
        let scores: Vec<u32> = open
            .par_iter()
            .map(|&(a, b)| match (scorer_ref.get(a), scorer_ref.get(b)) {
                (Some(x), Some(y)) => score::score(&x, &y, min_score),
                _ => 0,
            })
            .collect();
        outcome.scored_pairs += open.len();
        for (&(a, b), s) in open.iter().zip(scores) {
            if s >= min_score && s > 0 {
                outcome.linked_pairs += 1;
                sets.union(a, b);
                links.push((a, b, s));
            }
        }
        progress.inc(batch.len() as u64);
    }
    progress.finish();
    Ok((sets, links))
}

/// Union-find over blob positions, by size with path halving.
pub(super) struct Sets {
    pub(super) parent: Vec<u32>,
    pub(super) size: Vec<u32>,
}

impl Sets {
    pub(super) fn new(n: usize) -> Sets {
        Sets {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    pub(super) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let up = self.parent[self.parent[x] as usize];
            self.parent[x] = up;
            x = up as usize;
        }
        x
    }

    pub(super) fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a as u32;
        self.size[a] += self.size[b];
    }
}
