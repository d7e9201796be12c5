//! Replaying git's tie-breaking: where equal scores decided a pairing,
//! a destination's row is re-walked over every source in git's order.

use std::collections::HashMap;

use super::{Dst, Scored, Src, basename_same, better};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, MAX_SCORE};

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

/// An upper bound of the score of two files, for [`replay_row`]: at most
/// the smaller file is copied, and the score divides by the larger. Exact,
/// unlike anything a fingerprint could say (git counts lines as a bag, so
/// a file with its lines shuffled is a 100% copy at any distance); and in
/// rows full of near-duplicates, where replays happen, the slots soon hold
/// scores that rule out most sizes (a bound from the fingerprint distance
/// skipped no more at 100,000 files).
pub(super) fn score_ceiling(a: &Sketch, b: &Sketch) -> u32 {
    let (small, large) = (a.size.min(b.size), a.size.max(b.size));
    let ceiling = u64::from(MAX_SCORE) * small / large.max(1);
    u32::try_from(ceiling).unwrap_or(MAX_SCORE)
}
