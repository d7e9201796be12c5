//! Replaying git's tie-breaking: where equal scores decided a pairing,
//! a destination's row is re-walked over every source in git's order.

use std::collections::HashMap;

use gix::ObjectId;
use rayon::prelude::*;

use super::matrix::{Sides, sorted_matrix};
use super::{
    Content, Detect, DetectError, Dst, Options, Outcome, Scored, Src, basename_same, better,
    score_ceiling,
};
use crate::progress::Feedback;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self};

/// The destinations, not yet replayed, whose pairing under `matrix` may
/// differ from git's because of how equal scores were ordered, in the
/// order the assignment reached them. Walking the matrix as
/// `find_renames` does, a destination takes its first entry whose source
/// is free; that choice hinges on a tie when another entry of the same
/// score (and basename match) had a free source too (git may list that one
/// first), or when equal entries straddle the cut at 4 (git may have kept
/// a different one). A destination left unpaired hinges on a tie when
/// equal entries straddle the cut and one of them is free. With copies,
/// an unpaired destination then takes its first entry whatever its use,
/// so a tie for first place decides.
pub(super) fn hinged_on_ties(
    matrix: &[(usize, Scored)],
    full: &HashMap<usize, Vec<Scored>>,
    replayed: &HashMap<usize, Vec<Scored>>,
    srcs: &[Src],
    dsts: &[Dst],
    min_score: u32,
    copies: bool,
) -> Vec<usize> {
    let mut used: Vec<bool> = srcs.iter().map(|s| s.used > 0).collect();
    let mut paired: Vec<bool> = dsts.iter().map(|d| d.pair.is_some()).collect();
    let mut flagged: Vec<bool> = vec![false; dsts.len()];
    let mut hinged: Vec<usize> = Vec::new();
    let same = |a: &Scored, b: &Scored| better(a, b).is_eq();
    // Equal entries straddle the cut at 4 when the 4th and 5th are equal.
    let straddles = |kept: &[Scored], at: &Scored| {
        kept.len() > 4 && same(&kept[3], &kept[4]) && same(&kept[3], at)
    };
    for &(d, sc) in matrix {
        if sc.score < min_score {
            break;
        }
        if paired[d] {
            continue;
        }
        let open = full
            .get(&d)
            .filter(|_| !replayed.contains_key(&d) && !flagged[d]);
        if used[sc.src] {
            // Passed over; but if equals straddle the cut here and one of
            // them is still free, git's 4 may hold that one instead. This
            // must be asked now: a later, weaker pair may take it.
            if let Some(kept) = open
                && straddles(kept, &sc)
                && kept.iter().any(|e| same(e, &sc) && !used[e.src])
            {
                flagged[d] = true;
                hinged.push(d);
            }
            continue;
        }
        if let Some(kept) = open {
            let free_equals = kept.iter().filter(|e| same(e, &sc) && !used[e.src]).count();
            if free_equals > 1 || straddles(kept, &sc) {
                flagged[d] = true;
                hinged.push(d);
            }
        }
        used[sc.src] = true;
        paired[d] = true;
    }
    if copies {
        let mut unpaired: Vec<(&usize, &Vec<Scored>)> = full
            .iter()
            .filter(|(d, _)| !paired[**d] && !flagged[**d] && !replayed.contains_key(*d))
            .collect();
        unpaired.sort_unstable_by_key(|(d, _)| **d);
        for (&d, kept) in unpaired {
            if kept.len() > 1 && same(&kept[0], &kept[1]) {
                hinged.push(d);
            }
        }
    }
    hinged
}

/// The destination a row of git's matrix is replayed for.
pub(super) struct Row<'a> {
    pub(super) d: usize,
    pub(super) item: &'a Sketch,
    /// Its chunk histogram, loaded for scoring against many sources.
    pub(super) loaded: &'a score::Loaded<'a>,
    /// Sources already scored at the minimum and up (its `full` list).
    pub(super) known: &'a [Scored],
}

/// Replay git's `record_if_better()` for one destination against every
/// active source, in source order, and return its four slots in slot order
/// (only those at or above the minimum score matter afterwards).
///
/// git scores every source; so must a replay, since a source's exact score
/// decides which slot it takes or frees. But a source whose score cannot
/// beat the worst slot changes nothing: once the slots hold the
/// destination's relatives, a source is skipped when its score's ceiling
/// ([`score_ceiling`]) is no better than the worst slot. Scores known from
/// the candidate search are used as they are. Sources outside git's size
/// window score 0 without reading, as in git. `spans_of` gives the chunk
/// histogram of the source at a position of `active`.
pub(super) fn replay_row<'s>(
    srcs: &[Src],
    dsts: &[Dst],
    active: &[usize],
    src_items: &[Sketch],
    row: &Row<'_>,
    min_score: u32,
    spans_of: impl Fn(usize) -> Option<&'s score::Spans>,
) -> Vec<Scored> {
    let mut slots: [Option<Scored>; 4] = [None; 4];
    // git's score_compare with empty slots sinking to the bottom: true when
    // `a` is worse than `b`.
    let worse = |a: &Option<Scored>, b: &Option<Scored>| match (a, b) {
        (None, Some(_)) => true,
        (None, None) | (Some(_), None) => false,
        (Some(a), Some(b)) => better(a, b).is_gt(),
    };
    let dst = row.item;
    let dst_path = &dsts[row.d].entry.path;
    let mut known: Vec<(usize, u32)> = row.known.iter().map(|k| (k.src, k.score)).collect();
    known.sort_unstable();
    let mut next_known = 0;
    for (a, &s) in active.iter().enumerate() {
        let src = &src_items[a];
        let same_name = basename_same(&srcs[s].entry.path, dst_path);
        let mut worst = 0;
        for i in 1..4 {
            if worse(&slots[i], &slots[worst]) {
                worst = i;
            }
        }
        let compatible =
            src.size > 0 && dst.size > 0 && score::sizes_compatible(src.size, dst.size, min_score);
        // `active` is in source order, so a cursor finds known scores.
        while known.get(next_known).is_some_and(|&(k, _)| k < s) {
            next_known += 1;
        }
        let known = known
            .get(next_known)
            .filter(|&&(k, _)| k == s)
            .map(|&(_, score)| score);
        let score = if !compatible {
            0
        } else if let Some(score) = known {
            score
        } else {
            if let Some(w) = &slots[worst] {
                let ceiling = Scored {
                    score: score_ceiling(src, dst),
                    same_name,
                    src: s,
                };
                if !better(&ceiling, w).is_lt() {
                    continue;
                }
            }
            spans_of(a).map_or(0, |spans| row.loaded.score(spans, min_score))
        };
        let candidate = Some(Scored {
            score,
            same_name,
            src: s,
        });
        if worse(&slots[worst], &candidate) {
            slots[worst] = candidate;
        }
    }
    slots
        .into_iter()
        .flatten()
        .filter(|s| s.score >= min_score)
        .collect()
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
        let mut ids: Vec<ObjectId> = window.iter().map(|&a| srcs[active[a]].entry.id).collect();
        ids.extend(chosen.iter().map(|&d| dsts[d].entry.id));
        let spans: HashMap<ObjectId, std::sync::Arc<score::Spans>> =
            ids.iter().copied().zip(content.spans(&ids)?).collect();
        let rows: Vec<Vec<Scored>> = chosen
            .par_iter()
            .map_init(score::Dense::default, |dense, &d| {
                let Some(dst) = spans.get(&dsts[d].entry.id) else {
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
                        |a| spans.get(&srcs[active[a]].entry.id).map(|s| &**s),
                    )
                })
            })
            .collect();
        // Rows cut short are not replays: stop before using them.
        feedback.check()?;
        replayed.extend(chosen.into_iter().zip(rows));
    }
}
