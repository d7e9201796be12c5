//! Exact verification of candidate pairs: blob contents or stored chunk
//! histograms (boilerplate taken out) scored as git scores them, nearest
//! pairs first, and the union-find that links the pairs into groups.

use std::collections::HashMap;
use std::sync::Arc;

use gix::ObjectId;
use rayon::prelude::*;

use super::search::{self, Blob, Index, Met, Probe};
use super::{Contents, GroupsError, Options, Outcome};
use crate::progress::Feedback;
use crate::repo::{Repo, RepoError};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Buckets, MAX_SCORE, Spans};
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

/// Pairs of blobs scored at once when groups are built (each member
/// against its representative).
pub(super) const BATCH: usize = 1 << 14;

/// Blobs searched at once: their probes run in parallel, then their
/// candidates are scored in rounds.
const PROBES: usize = 512;

/// Pairs scored per round (each active blob its share, at least one):
/// enough to keep both cores busy, few enough that a link found in one
/// round makes the pairs it connects skipped in the next.
const ROUND: usize = 1024;

/// The components and the links (blob positions, score) of [`link`].
pub(super) type Linked = (Sets, Vec<(usize, usize, u32)>);

/// One searched blob and its candidates, nearest fingerprint first.
struct Row {
    blob: Blob,
    candidates: Vec<u32>,
    next: usize,
}

/// Search every blob against the ones before it ([`search`]) and score
/// its candidates nearest first, skipping those already connected to it;
/// returns the components and the links (blob positions, score). With
/// [`Options::every_pair`], every pair the size filter lets through is
/// scored and every pair at the threshold is a link.
pub(super) fn link(
    scorer: &Scorer,
    prints: &[Sketch],
    opts: &Options,
    outcome: &mut Outcome,
) -> Result<Linked, GroupsError> {
    let feedback = scorer.reader.feedback;
    let res = search::residuals(&scorer.histograms, &scorer.locs, &scorer.common);
    feedback.trace("groups: residual sizes and bucket frequencies");
    let t = opts.min_score.max(1);
    let mut index = Index::new(&res, &scorer.histograms, &scorer.locs, &scorer.common, t);
    let mut sets = Sets::new(scorer.ids.len());
    let mut links = Vec::new();
    let n = res.seq.len();
    let progress = feedback.stage("Scoring pairs", n as u64);
    let mut from = 0;
    while from < n {
        feedback.check()?;
        let to = (from + PROBES).min(n);
        index.prepare(from, to);
        let index_ref = &index;
        let rows: Vec<(Row, Met)> = (from..to)
            .into_par_iter()
            .with_min_len(8)
            .map_init(Probe::default, |probe, k| {
                let blob = index_ref.blob(k)?;
                let mut candidates = Vec::new();
                let met = if opts.every_pair {
                    let lo = index_ref.res.window_start(blob.size, t);
                    candidates.extend_from_slice(&index_ref.res.seq[lo..k]);
                    let all = candidates.len();
                    Met {
                        shared: all,
                        proposed: all,
                    }
                } else {
                    let met = index_ref.probe(k, &blob, probe, &mut candidates);
                    nearest_first(prints, blob.p, &mut candidates);
                    met
                };
                Some((
                    Row {
                        blob,
                        candidates,
                        next: 0,
                    },
                    met,
                ))
            })
            .flatten()
            .collect();
        let mut rows: Vec<Row> = rows
            .into_iter()
            .map(|(row, met)| {
                outcome.candidate_pairs += met.proposed;
                outcome.filtered_pairs += met.shared - met.proposed;
                row
            })
            .collect();
        score_rows(
            &index,
            &mut rows,
            &mut sets,
            &mut links,
            t,
            opts.every_pair,
            outcome,
        );
        progress.inc((to - from) as u64);
        from = to;
    }
    progress.finish();
    Ok((sets, links))
}

/// Order `candidates` (positions) by fingerprint distance from `p`'s,
/// nearest first; those without a fingerprint last, by position.
fn nearest_first(prints: &[Sketch], p: usize, candidates: &mut [u32]) {
    let mine = prints[p].fingerprint;
    candidates.sort_by_cached_key(|&q| {
        let d = match (mine, prints[q as usize].fingerprint) {
            (Some(a), Some(b)) => a.distance(&b),
            _ => u32::MAX,
        };
        (d, q)
    });
}

/// Score the candidates of `rows` in rounds: each round, every row's
/// next candidates not yet connected to it (its share of [`ROUND`]),
/// scored in parallel, then joined in row order.
fn score_rows(
    index: &Index,
    rows: &mut [Row],
    sets: &mut Sets,
    links: &mut Vec<(usize, usize, u32)>,
    t: u32,
    every_pair: bool,
    outcome: &mut Outcome,
) {
    let mut work: Vec<(usize, u32)> = Vec::new();
    loop {
        let active = rows.iter().filter(|r| r.next < r.candidates.len()).count();
        if active == 0 {
            return;
        }
        let share = if every_pair {
            usize::MAX
        } else {
            (ROUND / active).max(1)
        };
        work.clear();
        for (i, row) in rows.iter_mut().enumerate() {
            let mine = sets.find(row.blob.p);
            let mut took = 0;
            while took < share && row.next < row.candidates.len() {
                let q = row.candidates[row.next];
                row.next += 1;
                if !every_pair && sets.find(q as usize) == mine {
                    outcome.connected_pairs += 1;
                    continue;
                }
                work.push((i, q));
                took += 1;
            }
        }
        let rows_ref = &*rows;
        let scores: Vec<u32> = work
            .par_iter()
            .with_min_len(16)
            .map(|&(i, q)| {
                let x = &rows_ref[i].blob;
                let size = index.res.size[q as usize];
                let at_least = search::needed(x.size.max(size), t);
                match index
                    .record(q as usize)
                    .and_then(|r| x.spans.copied_stored(r, at_least))
                {
                    Some(copied) if score::sizes_compatible(x.size, size, t) => {
                        let larger = u128::from(x.size.max(size).max(1));
                        let s = u128::from(copied) * u128::from(MAX_SCORE) / larger;
                        u32::try_from(s).unwrap_or(MAX_SCORE)
                    }
                    _ => 0,
                }
            })
            .collect();
        outcome.scored_pairs += work.len();
        for (&(i, q), s) in work.iter().zip(scores) {
            if s < t {
                continue;
            }
            outcome.linked_pairs += 1;
            let (a, b) = (rows[i].blob.p, q as usize);
            if every_pair || sets.find(a) != sets.find(b) {
                sets.union(a, b);
                links.push((a.min(b), a.max(b), s));
            }
        }
    }
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
