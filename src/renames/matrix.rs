//! The inexact step: which pairs are scored (fingerprint candidates, the
//! exhaustive fallback) and the matrix of each destination's best sources
//! in git's slot order.

use std::collections::HashMap;

use gix::ObjectId;
use rayon::prelude::*;

use super::DetectError;
use super::ties::{Row, hinged_on_ties, replay_row};
use super::{
    Content, Detect, Dst, Options, Outcome, Scored, SpanKey, Src, basename_same, better, is_regular,
};
use crate::progress::Feedback;
use crate::repo::Entry;
use crate::similarity::candidates::{self};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score;

/// Sizes and fingerprints of regular files; a zero-sized placeholder for
/// anything else.
fn regular_items<'e>(
    entries: impl Iterator<Item = &'e Entry>,
    content: &mut impl Content,
) -> Result<Vec<Sketch>, DetectError> {
    let entries: Vec<&Entry> = entries.collect();
    let ids: Vec<ObjectId> = entries
        .iter()
        .filter(|e| is_regular(e.kind))
        .map(|e| e.id)
        .collect();
    let mut found = content.items(&ids)?.into_iter();
    Ok(entries
        .iter()
        .map(|e| {
            let none = Sketch {
                size: 0,
                fingerprint: None,
            };
            if is_regular(e.kind) {
                found.next().unwrap_or(none)
            } else {
                none
            }
        })
        .collect())
}

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
    // A blob takes part in many pairs: each is looked up and read once (at
    // 10,000 moved files, 213,000 ids were 6,600 blobs; sorting them to
    // drop repeats cost more than hashing).
    let mut wanted: gix::hashtable::HashSet<ObjectId> = Default::default();
    let mut todo = Vec::new();
    for (i, &(s, d)) in pairs.iter().enumerate() {
        let (a, b) = (&srcs[s].entry, &dsts[d].entry);
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
    let items = content.items(&wanted)?;
    let size_of: gix::hashtable::HashMap<ObjectId, u64> = wanted
        .iter()
        .zip(&items)
        .map(|(id, item)| (*id, item.size))
        .collect();
    let size = |id: &ObjectId| size_of.get(id).copied().unwrap_or(0);
    // Size filter first: it needs no content.
    let mut need: std::collections::HashSet<SpanKey> = Default::default();
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
    let index: HashMap<SpanKey, usize> = need.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    // One destination against all its sources at a time, its histogram
    // spread out once (`score::Dense`).
    keep.sort_by_key(|&i| (pairs[i].1, i));
    let groups: Vec<&[usize]> = keep.chunk_by(|&a, &b| pairs[a].1 == pairs[b].1).collect();
    let computed: Vec<Vec<(usize, u32)>> = groups
        .par_iter()
        .map_init(score::Dense::default, |dense, group| {
            if feedback.is_interrupted() {
                return Vec::new();
            }
            let dst = &spans[index[&dsts[pairs[group[0]].1].key()]];
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
        .collect();
    feedback.check()?;
    for (i, score) in computed.into_iter().flatten() {
        scores[i] = score;
    }
    Ok(scores)
}

/// What a destination's fingerprint candidates found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// No candidate reached the minimum score.
    Nothing,
    /// Some did, but no better than a source left out might.
    Unsure,
    /// Its best partner.
    Best,
}

/// Destinations searched for candidates between two looks at the interrupt
/// flag: about 0.1 s of searching at 20,000 sources.
const NEAREST_SLICE: usize = 1024;

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
    let Sides {
        srcs,
        dsts,
        active,
        remaining,
        ..
    } = *sides;
    let copts = candidates::Options {
        min_score: opts.min_score,
        ..opts.candidates
    };
    // In slices, so an interrupt is seen within one slice's search.
    let mut cands = Vec::with_capacity(sides.dst_items.len());
    for slice in sides.dst_items.chunks(NEAREST_SLICE) {
        feedback.check()?;
        cands.extend(sides.search.nearest(slice, &copts));
    }
    feedback.trace("candidate search");
    feedback.check()?;
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (k, c) in cands.iter().enumerate() {
        pairs.extend(c.sources.iter().map(|&a| (active[a], remaining[k])));
    }
    outcome.candidate_pairs = pairs.len();
    let mut scores = score_pairs(srcs, dsts, &pairs, opts.min_score, content, feedback)?;
    feedback.trace("exact scores of candidates");
    let extra = beyond_candidates(sides, &cands, &scores, opts, outcome);
    if !extra.is_empty() {
        scores.extend(score_pairs(
            srcs,
            dsts,
            &extra,
            opts.min_score,
            content,
            feedback,
        )?);
        pairs.extend(extra);
    }
    outcome.scored_pairs = pairs.len();
    let full = rows_at_min_score(srcs, dsts, &pairs, &scores, opts.min_score);
    feedback.trace("exhaustive search of unpaired destinations");
    settle_ties(sides, &full, opts, content, feedback, outcome)
}

/// The sources and destinations of the inexact step, with what the search
/// knows of them (indices into `active` and `remaining`).
pub(super) struct Sides<'a> {
    pub(super) srcs: &'a [Src],
    pub(super) dsts: &'a [Dst],
    /// The sources still available, indices into `srcs`.
    pub(super) active: &'a [usize],
    /// The destinations still unpaired, indices into `dsts`.
    pub(super) remaining: &'a [usize],
    /// Size and fingerprint of each of `active`.
    pub(super) src_items: Vec<Sketch>,
    /// Size and fingerprint of each of `remaining`.
    pub(super) dst_items: Vec<Sketch>,
    /// The candidate search over `src_items`.
    pub(super) search: candidates::Search,
}

impl<'a> Sides<'a> {
    /// The sides of the inexact step: sizes and fingerprints of
    /// `active` sources and `remaining` destinations, and the candidate
    /// search over the sources.
    pub(super) fn new(
        srcs: &'a [Src],
        dsts: &'a [Dst],
        active: &'a [usize],
        remaining: &'a [usize],
        content: &mut impl Content,
        feedback: &Feedback,
    ) -> Result<Sides<'a>, DetectError> {
        // Only regular files are scored inexactly, and only their blobs may
        // be read: a submodule's commit is usually not in this repository
        // at all. Others get a zero size, which keeps them out of every
        // size window.
        let src_items = regular_items(active.iter().map(|&s| &srcs[s].entry), content)?;
        let dst_items = regular_items(remaining.iter().map(|&d| &dsts[d].entry), content)?;
        feedback.trace("fingerprints of sources and destinations");
        feedback.check()?;
        let search = candidates::Search::new(&src_items);
        Ok(Sides {
            srcs,
            dsts,
            active,
            remaining,
            src_items,
            dst_items,
            search,
        })
    }
}

/// The pairs to score beyond the fingerprint candidates.
///
/// Destinations that no candidate paired may still have a partner whose
/// edits are scattered enough to hide it from the fingerprints (every
/// other line changed keeps half the lines but few 48-byte windows). So
/// may destinations whose best candidate scores no more than a source
/// left out plausibly could (`Candidates::left_out_score`): a heavily
/// edited file is about as far from its relatives as from unrelated
/// files, which of them made the nearest 32 is luck, and a better one
/// may be among the rest (a real miss: a 53% pair kept, git's 55% one
/// never scored). Score the unpaired against every size-compatible
/// source, then the unsettled against the sources that could plausibly
/// beat their best (`Search::plausibly_scoring`), within a budget so a
/// commit adding thousands of unrelated files stays fast.
fn beyond_candidates(
    sides: &Sides,
    cands: &[candidates::Candidates],
    scores: &[u32],
    opts: &Options,
    outcome: &mut Outcome,
) -> Vec<(usize, usize)> {
    let mut best = vec![None::<u32>; sides.remaining.len()];
    let mut next = scores.iter();
    for (k, c) in cands.iter().enumerate() {
        for &score in next.by_ref().take(c.sources.len()) {
            if score >= opts.min_score {
                best[k] = best[k].max(Some(score));
            }
        }
    }
    let found: Vec<Found> = best
        .iter()
        .zip(cands)
        .map(|(best, c)| match best {
            None => Found::Nothing,
            Some(b) if *b <= c.left_out_score() => Found::Unsure,
            Some(_) => Found::Best,
        })
        .collect();
    let mut budget = opts.exhaustive_budget;
    let mut extra: Vec<(usize, usize)> = Vec::new();
    for pass in [Found::Nothing, Found::Unsure] {
        for (k, &d) in sides.remaining.iter().enumerate() {
            if found[k] != pass || sides.dst_items[k].size == 0 {
                continue;
            }
            let tried: std::collections::HashSet<usize> =
                cands[k].sources.iter().copied().collect();
            // A paired destination needs only the sources that could beat
            // or tie its best: far fewer than the whole size window.
            let all = match best[k] {
                Some(b) => sides.search.plausibly_scoring(&sides.dst_items[k], b),
                None => sides
                    .search
                    .all_compatible(&sides.dst_items[k], opts.min_score),
            };
            let untried: Vec<usize> = all.into_iter().filter(|a| !tried.contains(a)).collect();
            if untried.len() > budget {
                outcome.exhaustive_skipped += 1;
                continue;
            }
            budget -= untried.len();
            outcome.exhaustive_destinations += 1;
            extra.extend(untried.into_iter().map(|a| (sides.active[a], d)));
        }
    }
    extra
}

/// Every pair at the minimum score and up, per destination, best first
/// and equals by source order. git keeps only the best 4 of each
/// destination; the rest are kept here to tell when that cut splits
/// equally scored sources.
fn rows_at_min_score(
    srcs: &[Src],
    dsts: &[Dst],
    pairs: &[(usize, usize)],
    scores: &[u32],
    min_score: u32,
) -> HashMap<usize, Vec<Scored>> {
    let mut full: HashMap<usize, Vec<Scored>> = HashMap::new();
    for (&(s, d), &score) in pairs.iter().zip(scores) {
        if score >= min_score {
            full.entry(d).or_default().push(Scored {
                score,
                same_name: basename_same(&srcs[s].entry.path, &dsts[d].entry.path),
                src: s,
            });
        }
    }
    for kept in full.values_mut() {
        kept.sort_by(|a, b| better(a, b).then(a.src.cmp(&b.src)));
    }
    full
}

/// git's matrix: each destination's 4 slots (its best 4, or the replayed
/// slots), sorted best first. The sort is stable, so equals keep
/// destination order, then slot order, as git's merge sort leaves them.
pub(super) fn sorted_matrix(
    remaining: &[usize],
    full: &HashMap<usize, Vec<Scored>>,
    replayed: &HashMap<usize, Vec<Scored>>,
) -> Vec<(usize, Scored)> {
    let mut matrix: Vec<(usize, Scored)> = Vec::new();
    for &d in remaining {
        let slots = match (replayed.get(&d), full.get(&d)) {
            (Some(slots), _) => &slots[..],
            (None, Some(kept)) => &kept[..kept.len().min(4)],
            (None, None) => continue,
        };
        matrix.extend(slots.iter().map(|&sc| (d, sc)));
    }
    matrix.sort_by(|a, b| better(&a.1, &b.1));
    matrix
}

/// Settle the ties that decide a pairing, and return git's matrix.
///
/// Among equally scored sources, git's choice follows the order of its 4
/// candidate slots, which depends on every source it scored before, in
/// source order: only a replay of the whole row reproduces it. A tie
/// matters only where it decides something, which the assignment itself
/// shows, so: assign on a trial basis, replay the destinations whose
/// pairing hinged on a tie, assign again (a replayed destination may take
/// another source and so change what others get), until none is left or
/// the replay budget is spent. Replays of one round are scored in one
/// batch, so each blob is read and chunked once.
pub(super) fn settle_ties(
    sides: &Sides,
    full: &HashMap<usize, Vec<Scored>>,
    opts: &Options,
    content: &mut impl Content,
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<Vec<(usize, Scored)>, DetectError> {
    let Sides {
        srcs,
        dsts,
        active,
        remaining,
        src_items,
        dst_items,
        search,
    } = sides;
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    let k_of: HashMap<usize, usize> = remaining.iter().enumerate().map(|(k, &d)| (d, k)).collect();
    let mut replayed: HashMap<usize, Vec<Scored>> = HashMap::new();
    let mut replay_budget = opts.replay_budget;
    let mut refused: std::collections::HashSet<usize> = std::collections::HashSet::new();
    loop {
        feedback.check()?;
        let matrix = sorted_matrix(remaining, full, &replayed);
        let hinged = hinged_on_ties(
            &matrix,
            full,
            &replayed,
            sides.srcs,
            sides.dsts,
            opts.min_score,
            want_copies,
        );
        let mut chosen = Vec::new();
        let mut window: Vec<usize> = Vec::new();
        for &d in &hinged {
            if refused.contains(&d) {
                continue;
            }
            let row = search.all_compatible(&dst_items[k_of[&d]], opts.min_score);
            if row.len() <= replay_budget {
                replay_budget -= row.len();
                window.extend(row);
                chosen.push(d);
            } else {
                // Asked once: the budget only shrinks.
                refused.insert(d);
            }
        }
        if chosen.is_empty() {
            outcome.ties_unreplayed = hinged.len();
            return Ok(matrix);
        }
        outcome.full_rescans += chosen.len();
        window.sort_unstable();
        window.dedup();
        let mut keys: Vec<SpanKey> = window.iter().map(|&a| srcs[active[a]].key()).collect();
        keys.extend(chosen.iter().map(|&d| dsts[d].key()));
        let spans: HashMap<SpanKey, std::sync::Arc<score::Spans>> =
            keys.iter().copied().zip(content.spans(&keys)?).collect();
        let rows: Vec<Vec<Scored>> = chosen
            .par_iter()
            .map_init(score::Dense::default, |dense, &d| {
                let Some(dst) = spans.get(&dsts[d].key()) else {
                    return Vec::new();
                };
                if feedback.is_interrupted() {
                    return Vec::new();
                }
                dense.with(dst, |loaded| {
                    let row = Row {
                        d,
                        item: &dst_items[k_of[&d]],
                        loaded,
                        known: full.get(&d).map_or(&[][..], |v| &v[..]),
                    };
                    replay_row(
                        sides.srcs,
                        sides.dsts,
                        active,
                        src_items,
                        &row,
                        opts.min_score,
                        |a| spans.get(&srcs[active[a]].key()).map(|s| &**s),
                    )
                })
            })
            .collect();
        // Rows cut short are not replays: stop before using them.
        feedback.check()?;
        replayed.extend(chosen.into_iter().zip(rows));
    }
}
