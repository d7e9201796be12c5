//! Replaying git's tie-breaking: where equal scores decided a pairing,
//! a destination's row is re-walked over every source in git's order.

use super::sides::{Found, Sides, name_key};
use super::{Dst, RowMap, Scored, Src, better};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Coarse, MAX_SCORE};

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
///
/// `partial` holds the destinations whose rows are known only down to
/// their best score, with the number of entries known: one whose every
/// known entry is passed over is returned too, as the walk would read
/// entries of it nobody scored.
#[allow(clippy::too_many_arguments)]
pub(super) fn hinged_on_ties(
    matrix: &[(usize, Scored)],
    full: &RowMap<Vec<Scored>>,
    replayed: &RowMap<Vec<Scored>>,
    partial: &RowMap<usize>,
    srcs: &[Src],
    dsts: &[Dst],
    min_score: u32,
    copies: bool,
) -> Vec<usize> {
    let mut used: Vec<bool> = srcs.iter().map(|s| s.used > 0).collect();
    let mut paired: Vec<bool> = dsts.iter().map(|d| d.pair.is_some()).collect();
    let mut flagged: Vec<bool> = vec![false; dsts.len()];
    let mut hinged: Vec<usize> = Vec::new();
    let mut unread = partial.clone();
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
            if let Some(left) = unread.get_mut(&d)
                && !flagged[d]
            {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    flagged[d] = true;
                    hinged.push(d);
                }
                continue;
            }
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
    /// Its histogram's bins, for a ceiling of the bytes a source copies.
    pub(super) coarse: &'a Coarse,
    /// What the candidate search scored, and the bound below which every
    /// source it did not score falls.
    pub(super) found: &'a Found,
}

/// Replay git's `record_if_better()` for one destination against every
/// active source, in source order, and return its four slots in slot order
/// (only those at or above the minimum score matter afterwards), with the
/// number of pairs scored here.
///
/// git scores every source; so must a replay where a source's exact score
/// decides which slot it takes or frees. But a source that cannot beat
/// the worst slot changes nothing, and two facts bound a score without
/// reading anything: the size ceiling ([`score_ceiling`]) and the
/// candidate search's bound (a source it did not score scores below
/// [`Found::bound`]). Once the four slots hold scores at the bound, only
/// the sources the search scored can still enter, and the replay walks
/// just those. Sources outside git's size window score 0 without reading,
/// as in git. Once the slots are full, a source's score matters only if
/// it beats the worst slot: the bins' ceiling ([`Coarse`]) rules many out
/// unread, and the rest are scored only as far as it takes to see they
/// fall short ([`score::Loaded::score_at_least`]). `spans_of` gives the
/// chunk histogram of the source at a position of `active` (`None`: it
/// cannot score), `coarse_of` its bins.
pub(super) fn replay_row<'s>(
    sides: &Sides,
    row: &Row<'_>,
    min_score: u32,
    spans_of: impl Fn(usize) -> Option<&'s score::Spans>,
    coarse_of: impl Fn(usize) -> Option<&'s Coarse>,
) -> (Vec<Scored>, usize) {
    let (dsts, active) = (sides.dsts, sides.active);
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
    let dst_key = name_key(dst_path);
    let found = row.found;
    let mut scored_here = 0;
    // `found.scored[cursor]` is the first scored source at `a` or after.
    let mut cursor = 0;
    let mut a = 0;
    while a < active.len() {
        let mut worst = 0;
        for i in 1..4 {
            if worse(&slots[i], &slots[worst]) {
                worst = i;
            }
        }
        while found
            .scored
            .get(cursor)
            .is_some_and(|&(p, _)| (p as usize) < a)
        {
            cursor += 1;
        }
        // Every slot at the bound (a filled worst slot means all four are
        // filled): only scored sources can still enter.
        if slots[worst].is_some_and(|w| found.bound > 0 && w.score >= found.bound) {
            match found.scored.get(cursor) {
                Some(&(p, _)) => a = p as usize,
                None => break,
            }
        }
        let s = active[a];
        let known = found
            .scored
            .get(cursor)
            .filter(|&&(p, _)| p as usize == a)
            .map(|&(_, score)| score);
        let same_name = sides.same_name(a, dst_path, dst_key);
        let src = &sides.src_items[a];
        let compatible =
            src.size > 0 && dst.size > 0 && score::sizes_compatible(src.size, dst.size, min_score);
        let score = if let Some(score) = known {
            score
        } else if !compatible {
            0
        } else if let Some(w) = &slots[worst] {
            let mut ceiling = score_ceiling(src, dst);
            if found.bound > 0 {
                ceiling = ceiling.min(found.bound - 1);
            }
            let ceiling = Scored {
                score: ceiling,
                same_name,
                src: s,
            };
            if !better(&ceiling, w).is_lt() {
                a += 1;
                continue;
            }
            // The least score that beats the worst slot: an equal score
            // does when the basename match breaks the tie its way.
            let need = if same_name && !w.same_name {
                w.score
            } else {
                w.score + 1
            };
            let Some(spans) = spans_of(a) else {
                // Cannot score: 0, which never beats a filled slot.
                a += 1;
                continue;
            };
            if coarse_of(a).is_some_and(|c| {
                c.copied_ceiling(row.coarse) < score::copied_needed(need, src.size, dst.size)
            }) {
                a += 1;
                continue;
            }
            scored_here += 1;
            match row.loaded.score_at_least(spans, min_score, need) {
                Some(score) => score,
                None => {
                    a += 1;
                    continue;
                }
            }
        } else {
            scored_here += 1;
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
        a += 1;
    }
    let slots = slots
        .into_iter()
        .flatten()
        .filter(|s| s.score >= min_score)
        .collect();
    (slots, scored_here)
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
