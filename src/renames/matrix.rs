//! The inexact step: which pairs are scored, and the matrix of each
//! destination's best sources in git's slot order.
//!
//! git scores every destination against every source and keeps each
//! destination's best 4 ([`SLOTS`]). Here, per destination, for its best
//! `k` sources:
//!
//! 1. the nearest sources by fingerprint ([`NEAREST`] of them, within git's
//!    size window) are scored exactly: a fast first guess at the best (the
//!    fingerprints are those of the histograms,
//!    [`crate::similarity::score::simhash`], so that no blob is read for
//!    anything but its histogram);
//! 2. the destination's own threshold is raised to what it already holds:
//!    its `k`th best score if it has `k` at the minimum score, else the
//!    minimum;
//! 3. the prefix index ([`PrefixIndex`]) proposes every source that could
//!    score that threshold or more, provably ([`crate::similarity::prefix`]),
//!    and those not yet scored are scored.
//!
//! After step 3, every source scoring the destination's threshold or more
//! has been scored, so its best `k`, and every source tied with the `k`th,
//! are known exactly: no pair git would keep is missed, whatever the
//! fingerprints said. Sources never scored are known to score below the
//! threshold, which is what replaying git's slots needs where ties decide
//! ([`settle_ties`]).
//!
//! Every destination is searched first for its best source alone (`k` =
//! 1): its threshold is then its best score, far above the minimum, and
//! the probe reads a fraction of the postings. git's assignment
//! (`find_renames`) walks the matrix best first and pairs a destination
//! at its first entry whose source is free; the entries after that are
//! never looked at, and in a copy pass an unpaired destination takes its
//! first entry. So a row known down to its best score decides the
//! assignment exactly as git's full row does, unless the walk passes
//! over every entry of it (their sources taken by better pairs): only
//! then, and before any tie is replayed, is the destination searched
//! again for git's 4 ([`settle_ties`]). The walk is repeated until no
//! row is wanting, so the matrix handed on is git's wherever the
//! assignment reads it.

use std::cell::RefCell;

use gix::ObjectId;
use rayon::prelude::*;

use super::DetectError;
use super::sides::{Found, SideSpans, Sides, name_key};
use super::ties::{Row, hinged_on_ties, replay_row};
use super::{
    Content, Detect, Dst, Options, Outcome, RowMap, Scored, SpanKey, SpanMap, SpanSet, Src, better,
    is_regular,
};
use crate::progress::Feedback;
use crate::similarity::prefix::{PrefixIndex, Probe};
use crate::similarity::score::{self, Coarse, Spans};

/// git's `NUM_CANDIDATE_PER_DST`: the sources a destination keeps.
pub(super) const SLOTS: usize = 4;

/// Sources proposed by fingerprint distance per destination before the
/// bound: enough that a destination among many near-identical files
/// usually holds 4 good scores at once, which raises its threshold and
/// shortens its probe.
pub const NEAREST: usize = 8;

/// git's score of each (source, destination) pair, reading each blob once;
/// `feedback`'s flag is polled per destination.
pub(super) fn score_pairs(
    srcs: &[Src],
    dsts: &[Dst],
    pairs: &[(usize, usize)],
    min_score: u32,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<Vec<u32>, DetectError> {
    let mut scores = vec![0; pairs.len()];
    // A blob takes part in many pairs: each is looked up and read once.
    let mut wanted: gix::hashtable::HashSet<ObjectId> = Default::default();
    let mut todo = Vec::new();
    for (i, &(s, d)) in pairs.iter().enumerate() {
        let (a, b) = (srcs[s].entry, dsts[d].entry);
        if is_regular(a.kind) && is_regular(b.kind) {
            wanted.insert(a.id);
            wanted.insert(b.id);
            todo.push(i);
        }
    }
    if todo.is_empty() {
        return Ok(scores);
    }
    let mut wanted: Vec<ObjectId> = wanted.into_iter().collect();
    // The store answers sorted ids with one walk of its tables.
    wanted.sort_unstable();
    let sizes = content.sizes(&wanted)?;
    let size_of: gix::hashtable::HashMap<ObjectId, u64> =
        wanted.iter().copied().zip(sizes).collect();
    let size = |id: &ObjectId| size_of.get(id).copied().unwrap_or(0);
    // Size filter first: it needs no content.
    let mut need: SpanSet = Default::default();
    let mut keep = Vec::new();
    for &i in &todo {
        let (s, d) = pairs[i];
        let (a, b) = (size(&srcs[s].entry.id), size(&dsts[d].entry.id));
        if score::sizes_compatible(a, b, min_score) && b > 0 {
            keep.push(i);
            need.insert(srcs[s].key());
            need.insert(dsts[d].key());
        }
    }
    let need: Vec<SpanKey> = need.into_iter().collect();
    let spans = content.spans(&need)?;
    let index: SpanMap<usize> = need.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    // One destination against all its sources at a time, its histogram
    // spread out once (`score::Dense`).
    keep.sort_by_key(|&i| (pairs[i].1, i));
    let groups: Vec<&[usize]> = keep.chunk_by(|&a, &b| pairs[a].1 == pairs[b].1).collect();
    let computed: Vec<Vec<(usize, u32)>> = groups
        .par_iter()
        .map(|group| {
            if feedback.is_interrupted() {
                return Vec::new();
            }
            let dst = &spans[index[&dsts[pairs[group[0]].1].key()]];
            with_scratch(|dense, _| {
                dense.with(dst, |loaded| {
                    group
                        .iter()
                        .map(|&i| {
                            let src = &spans[index[&srcs[pairs[i].0].key()]];
                            (i, loaded.score(src, min_score))
                        })
                        .collect()
                })
            })
        })
        .collect();
    feedback.check()?;
    for (i, score) in computed.into_iter().flatten() {
        scores[i] = score;
    }
    Ok(scores)
}

/// Destinations searched between two looks at the interrupt flag.
const SLICE: usize = 1024;

/// The kept entries of git's matrix, in the order git's stable sort leaves
/// them: (score, same basename) descending, then destination order, then
/// slot order.
pub(super) fn inexact_matrix(
    sides: &Sides,
    opts: &Options,
    content: &mut impl Content,
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<Vec<(usize, Scored)>, DetectError> {
    let spans = sides.spans(opts.min_score, content)?;
    feedback.trace("chunk histograms of sources and destinations");
    feedback.check()?;
    let refs: Vec<Option<&Spans>> = spans.src.iter().map(|s| s.as_deref()).collect();
    // Side by side: the index's frequency count, order and posting
    // placement run on one thread, and the other takes the bins.
    let (index, coarse) = rayon::join(
        || PrefixIndex::build(&refs, opts.min_score),
        || -> Vec<Option<Coarse>> {
            spans
                .src
                .par_iter()
                .map(|s| s.as_deref().map(Coarse::of))
                .collect()
        },
    );
    feedback.trace("prefix index of sources");
    let mut found: Vec<Found> = Vec::with_capacity(sides.remaining.len());
    let ks: Vec<usize> = (0..sides.remaining.len()).collect();
    for slice in ks.chunks(SLICE) {
        feedback.check()?;
        found.par_extend(slice.par_iter().map(|&k| {
            let ctx = Search {
                sides,
                spans: &spans,
                coarse: &coarse,
                index: &index,
                opts,
            };
            with_scratch(|dense, probe| search_row(&ctx, k, 1, dense, probe))
        }));
    }
    feedback.trace("candidate search with the bound");
    for f in &found {
        count_search(f, outcome);
    }
    let search = Search {
        sides,
        spans: &spans,
        coarse: &coarse,
        index: &index,
        opts,
    };
    let matrix = settle_ties(&search, &mut found, feedback, outcome);
    outcome.scored_pairs =
        outcome.fingerprint_pairs + outcome.bound_pairs - outcome.ceiling_ruled_out;
    matrix
}

thread_local! {
    /// Each thread's dense array (420 KiB) and probe, kept from search to
    /// search: made anew for each of rayon's splits, they were zeroed a
    /// hundred times over in a large move's run (39 MB).
    static SCRATCH: RefCell<(score::Dense, Probe)> = RefCell::new(Default::default());
}

/// Run `f` with this thread's [`SCRATCH`]; with fresh ones if that is in
/// use further up this thread's stack (rayon may run another search there
/// while this one waits). A dense array is all zeros again after each
/// `with`.
fn with_scratch<R>(f: impl FnOnce(&mut score::Dense, &mut Probe) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let (dense, probe) = &mut *scratch;
            f(dense, probe)
        }
        Err(_) => f(&mut score::Dense::default(), &mut Probe::default()),
    })
}

/// Add one search's pairs to the run's statistics.
fn count_search(f: &Found, outcome: &mut Outcome) {
    outcome.fingerprint_pairs += f.by_fingerprint;
    outcome.bound_pairs += f.tried - f.by_fingerprint;
    outcome.ceiling_ruled_out += f.ruled_out;
}

/// What every destination's search reads.
struct Search<'a> {
    sides: &'a Sides<'a>,
    spans: &'a SideSpans,
    /// Each source's bins, for the ceiling that rules pairs out unscored.
    coarse: &'a [Option<Coarse>],
    index: &'a PrefixIndex,
    opts: &'a Options,
}

/// One destination's search for its best `slots` sources (the module
/// documentation's steps 1 to 3).
fn search_row(
    ctx: &Search<'_>,
    k: usize,
    slots: usize,
    dense: &mut score::Dense,
    probe: &mut Probe,
) -> Found {
    let Search {
        sides,
        spans,
        coarse,
        index,
        opts,
    } = *ctx;
    let min = opts.min_score;
    let n = sides.active.len();
    let Some(dst) = spans.dst[k].as_deref() else {
        // Not a regular file, or empty: git scores it 0 against every
        // source, which only a minimum of 0 keeps.
        return if min == 0 {
            Found {
                scored: (0..n as u32).map(|a| (a, 0)).collect(),
                bound: 0,
                by_fingerprint: 0,
                tried: 0,
                ruled_out: 0,
                partial: false,
            }
        } else {
            Found {
                bound: 1,
                ..Found::default()
            }
        };
    };
    dense.with(dst, |loaded| {
        let score_of = |a: u32| -> u32 {
            spans.src[a as usize]
                .as_deref()
                .map_or(0, |s| loaded.score(s, min))
        };
        if min == 0 {
            return Found {
                scored: (0..n as u32).map(|a| (a, score_of(a))).collect(),
                bound: 0,
                by_fingerprint: 0,
                tried: n,
                ruled_out: 0,
                partial: false,
            };
        }
        // Scores below what a source needs to matter are not computed to
        // the end (`score_at_least`): such a source is known to score
        // below the bound, which is all the bound promises.
        // A source whose bins cannot hold the copied bytes `need` asks for
        // scores below it (`Coarse`): ruled out without scoring.
        let dst_coarse = Coarse::of(dst);
        let mut ruled_out = 0;
        let mut score_at_least = |a: usize, src: &Spans, need: u32| -> Option<u32> {
            if let Some(c) = &coarse[a]
                && c.copied_ceiling(&dst_coarse)
                    < score::copied_needed(need, src.size(), dst.size())
            {
                ruled_out += 1;
                return None;
            }
            loaded.score_at_least(src, min, need)
        };
        let nearest = sides
            .search
            .nearest_fingerprinted(&sides.dst_items[k], min, NEAREST);
        let mut best = Best::new(min, slots);
        let mut scored: Vec<(u32, u32)> = Vec::new();
        let mut tried = 0;
        for &a in &nearest {
            let Some(src) = spans.src[a].as_deref() else {
                continue;
            };
            tried += 1;
            if let Some(s) = score_at_least(a, src, best.bound()) {
                best.add(s);
                scored.push((a as u32, s));
            }
        }
        let by_fingerprint = tried;
        let known: Vec<u32> = nearest.iter().map(|&a| a as u32).collect();
        let mut more = Vec::new();
        index.probe_reach(dst, best.bound(), &known, probe, &mut more);
        // Best reach first: the likeliest partners raise the threshold
        // soonest, and a source whose reach is below it cannot score it.
        more.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (a, reach) in more {
            let need = best.bound();
            if reach < need {
                break;
            }
            let Some(src) = spans.src[a as usize].as_deref() else {
                continue;
            };
            tried += 1;
            if let Some(s) = score_at_least(a as usize, src, need) {
                best.add(s);
                scored.push((a, s));
            }
        }
        let bound = best.bound();
        scored.sort_unstable();
        let partial = slots < SLOTS
            && bound > min
            && scored.iter().filter(|&&(_, s)| s >= bound).count() < SLOTS;
        Found {
            scored,
            bound,
            by_fingerprint,
            tried,
            ruled_out,
            partial,
        }
    })
}

/// The best `slots` (at most 4) scores at the minimum and up seen so
/// far, and the threshold they set: a source must score at least the
/// `slots`th best to be among them (or to tie with one that is).
struct Best {
    min: u32,
    top: [u32; SLOTS],
    slots: usize,
    len: usize,
}

impl Best {
    fn new(min: u32, slots: usize) -> Best {
        Best {
            min,
            top: [0; SLOTS],
            slots: slots.clamp(1, SLOTS),
            len: 0,
        }
    }

    fn add(&mut self, score: u32) {
        if score < self.min {
            return;
        }
        if self.len < self.slots {
            self.top[self.len] = score;
            self.len += 1;
        } else if let Some(low) = self.top[..self.slots].iter_mut().min()
            && score > *low
        {
            *low = score;
        }
    }

    /// The `slots`th best score, or the minimum while fewer reach it.
    fn bound(&self) -> u32 {
        if self.len < self.slots {
            self.min
        } else {
            self.top[..self.slots]
                .iter()
                .copied()
                .min()
                .unwrap_or(self.min)
        }
    }
}

/// A destination's entries that can enter git's slots: its best
/// [`SLOTS`] by (score, same basename), and every entry tied with the
/// last of them, best first and equals by source order; of a partial row
/// ([`Found::partial`]), the entries at its best score. Only entries at
/// the minimum score and up, and at the search's bound (below it, a
/// source the search did not score could be missing).
fn kept_row(sides: &Sides, k: usize, found: &Found, min_score: u32) -> Vec<Scored> {
    let d = sides.remaining[k];
    let path = &sides.dsts[d].entry.path;
    let key = name_key(path);
    let floor = min_score.max(found.bound);
    let mut row: Vec<Scored> = found
        .scored
        .iter()
        .filter(|&&(_, score)| score >= floor)
        .map(|&(a, score)| Scored {
            score,
            same_name: sides.same_name(a as usize, path, key),
            src: sides.active[a as usize],
        })
        .collect();
    row.sort_by(|a, b| better(a, b).then(a.src.cmp(&b.src)));
    if row.len() > SLOTS {
        let last = row[SLOTS - 1];
        let keep = SLOTS + row[SLOTS..].partition_point(|e| better(e, &last).is_eq());
        row.truncate(keep);
    }
    row
}

/// git's matrix: each destination's 4 slots (its best 4, or the replayed
/// slots), sorted best first. The sort is stable, so equals keep
/// destination order, then slot order, as git's merge sort leaves them.
pub(super) fn sorted_matrix(
    remaining: &[usize],
    kept: &RowMap<Vec<Scored>>,
    replayed: &RowMap<Vec<Scored>>,
) -> Vec<(usize, Scored)> {
    let mut matrix: Vec<(usize, Scored)> = Vec::new();
    for &d in remaining {
        let slots = match (replayed.get(&d), kept.get(&d)) {
            (Some(slots), _) => &slots[..],
            (None, Some(kept)) => &kept[..kept.len().min(SLOTS)],
            (None, None) => continue,
        };
        matrix.extend(slots.iter().map(|&sc| (d, sc)));
    }
    matrix.sort_by(|a, b| better(&a.1, &b.1));
    matrix
}

/// Settle the ties that decide a pairing, widen the partial rows the
/// assignment reaches past, and return git's matrix.
///
/// Among equally scored sources, git's choice follows the order of its 4
/// candidate slots, which depends on every source it scored before, in
/// source order: only a replay of the row reproduces it. A tie matters
/// only where it decides something, which the assignment itself shows
/// ([`hinged_on_ties`]); so does a partial row whose every entry is
/// passed over. So: assign on a trial basis, search again for 4 the
/// partial rows the assignment read past (or whose head is a tie), replay
/// the full rows whose pairing hinged on a tie, assign again (either may
/// change what others get), until none is left. A row is widened once
/// and replayed once, so this ends.
fn settle_ties(
    search: &Search<'_>,
    found: &mut [Found],
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<Vec<(usize, Scored)>, DetectError> {
    let Search {
        sides,
        spans,
        coarse,
        opts,
        ..
    } = *search;
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    let k_of: RowMap<usize> = sides
        .remaining
        .iter()
        .enumerate()
        .map(|(k, &d)| (d, k))
        .collect();
    // On every thread: reading each scored source's path for the
    // basename test misses the cache, row after row.
    let rows: Vec<Vec<Scored>> = found
        .par_iter()
        .enumerate()
        .map(|(k, f)| kept_row(sides, k, f, opts.min_score))
        .collect();
    let mut kept: RowMap<Vec<Scored>> = RowMap::default();
    kept.reserve(rows.len());
    for (k, row) in rows.into_iter().enumerate() {
        if !row.is_empty() {
            kept.insert(sides.remaining[k], row);
        }
    }
    let mut replayed: RowMap<Vec<Scored>> = RowMap::default();
    loop {
        feedback.check()?;
        let matrix = sorted_matrix(sides.remaining, &kept, &replayed);
        let partial: RowMap<usize> = found
            .iter()
            .enumerate()
            .filter(|(_, f)| f.partial)
            .filter_map(|(k, _)| {
                let d = sides.remaining[k];
                kept.get(&d).map(|row| (d, row.len()))
            })
            .collect();
        let hinged = hinged_on_ties(
            &matrix,
            &kept,
            &replayed,
            &partial,
            sides.srcs,
            sides.dsts,
            opts.min_score,
            want_copies,
        );
        if hinged.is_empty() {
            feedback.trace("tie replays");
            return Ok(matrix);
        }
        let (widen, replay): (Vec<usize>, Vec<usize>) =
            hinged.into_iter().partition(|d| partial.contains_key(d));
        let wider: Vec<Found> = widen
            .par_iter()
            .map(|&d| {
                if feedback.is_interrupted() {
                    return Found::default();
                }
                with_scratch(|dense, probe| search_row(search, k_of[&d], SLOTS, dense, probe))
            })
            .collect();
        outcome.replayed_destinations += replay.len();
        let rows: Vec<(Vec<Scored>, usize)> = replay
            .par_iter()
            .map(|&d| {
                let k = k_of[&d];
                let Some(dst) = spans.dst[k].as_deref() else {
                    return (Vec::new(), 0);
                };
                if feedback.is_interrupted() {
                    return (Vec::new(), 0);
                }
                let dst_coarse = Coarse::of(dst);
                with_scratch(|dense, _| {
                    dense.with(dst, |loaded| {
                        let row = Row {
                            d,
                            item: &sides.dst_items[k],
                            loaded,
                            coarse: &dst_coarse,
                            found: &found[k],
                        };
                        replay_row(
                            sides,
                            &row,
                            opts.min_score,
                            |a| spans.src[a].as_deref(),
                            |a| coarse[a].as_ref(),
                        )
                    })
                })
            })
            .collect();
        // Rows cut short are neither searches nor replays: stop before
        // using them.
        feedback.check()?;
        outcome.widened_destinations += widen.len();
        for (&d, f) in widen.iter().zip(wider) {
            let k = k_of[&d];
            count_search(&f, outcome);
            let row = kept_row(sides, k, &f, opts.min_score);
            found[k] = f;
            if row.is_empty() {
                kept.remove(&d);
            } else {
                kept.insert(d, row);
            }
        }
        for (&d, (slots, scored)) in replay.iter().zip(rows) {
            outcome.replay_scored_pairs += scored;
            replayed.insert(d, slots);
        }
    }
}
