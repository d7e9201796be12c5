//! Pairing sources with destinations as git does: exact renames by id,
//! unique basenames, and the greedy walk of the sorted score matrix.

use std::collections::HashMap;

use gix::ObjectId;

use super::DetectError;
use super::sides::Sides;
use super::{
    Content, Detect, Dst, Options, Outcome, Scored, Src, basename, basename_same, inexact_matrix,
    is_regular, record, score_pairs, set_binary,
};
use crate::progress::Feedback;
use crate::repo::{Entry, EntryKind};
use crate::similarity::score::MAX_SCORE;

/// No source: the end of a chain of sources with one id.
const NONE: usize = usize::MAX;

/// git's pairing steps after setup. `break_mode`: a broken pair's
/// deletion half is among the sources (git's `break_idx`), which keeps
/// used sources in play and skips the basename pass.
pub(super) fn pair_up(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    opts: &Options,
    break_mode: bool,
    content: &mut impl Content,
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<(), DetectError> {
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    // Exact renames. Only ids some destination has are worth indexing:
    // sources can outnumber destinations a thousandfold (copy detection
    // against a whole tree).
    // Each id's sources as a chain through `next`, not a list per id:
    // after a large move, thousands of small allocations. Linked from the
    // last source back, each chain runs in source order; from the first
    // source on, in reverse order, where git's table lists them so.
    let mut first: gix::hashtable::HashMap<ObjectId, usize> =
        dsts.iter().map(|d| (d.entry.id, NONE)).collect();
    let mut next = vec![NONE; srcs.len()];
    let mut link = |i: usize, s: &Src| {
        if let Some(head) = first.get_mut(&s.entry.id) {
            next[i] = *head;
            *head = i;
        }
    };
    if exact_table_reverses(srcs.len()) {
        srcs.iter().enumerate().for_each(|(i, s)| link(i, s));
    } else {
        srcs.iter().enumerate().rev().for_each(|(i, s)| link(i, s));
    }
    let chain = |head: usize| {
        std::iter::successors((head != NONE).then_some(head), |&s| {
            (next[s] != NONE).then_some(next[s])
        })
    };
    for d in 0..dsts.len() {
        let Some(&head) = first.get(&dsts[d].entry.id).filter(|&&h| h != NONE) else {
            continue;
        };
        let target = dsts[d].entry;
        let mut best = None;
        let mut best_score = -1;
        let mut budget = 100;
        for s in chain(head) {
            let source = srcs[s].entry;
            if !(is_regular(source.kind) && is_regular(target.kind)) && source.kind != target.kind {
                continue;
            }
            if srcs[s].used > 0 && !want_copies {
                continue;
            }
            let score =
                i32::from(srcs[s].used == 0) + i32::from(basename_same(&source.path, &target.path));
            if score > best_score {
                best = Some(s);
                best_score = score;
                if score == 2 {
                    break;
                }
            }
            budget -= 1;
            if budget == 0 {
                break;
            }
        }
        if let Some(s) = best {
            record(srcs, dsts, d, s, MAX_SCORE);
            outcome.exact += 1;
        }
    }
    if opts.min_score >= MAX_SCORE {
        return Ok(());
    }

    // Sources still in play: git culls used ones unless detecting copies
    // or breaks (`remove_unneeded_paths_from_src`); a used one left in
    // can still take one of a destination's four slots, though only a
    // copy may use it.
    let cull = !want_copies && !break_mode;
    let mut active: Vec<usize> = (0..srcs.len())
        .filter(|&s| !cull || srcs[s].used == 0)
        .collect();
    set_binary(srcs, dsts, &active, content)?;
    feedback.trace("attributes of the paths left to score");
    if cull {
        let min_basename = opts.min_score + (MAX_SCORE - opts.min_score) / 2;
        let pairs = basename_pairs(srcs, dsts, &active);
        content.prefetch(&basename_prefetch(srcs, dsts, &active, &pairs, opts))?;
        outcome.basename = basename_pass(srcs, dsts, &pairs, min_basename, content, feedback)?;
        active.retain(|&s| srcs[s].used == 0);
    }

    let remaining: Vec<usize> = (0..dsts.len())
        .filter(|&d| dsts[d].pair.is_none())
        .collect();
    if remaining.is_empty() || active.is_empty() {
        return Ok(());
    }
    if opts.limit > 0 {
        let limit2 = opts.limit.saturating_mul(opts.limit);
        if remaining.len().saturating_mul(active.len()) > limit2 {
            let limited = active.iter().filter(|&&s| !srcs[s].unchanged).count();
            if opts.detect == Detect::CopiesHarder
                && remaining.len().saturating_mul(limited) <= limit2
            {
                outcome.degraded_to_copies = true;
                active.retain(|&s| !srcs[s].unchanged);
            } else {
                outcome.limit_needed = Some(active.len().max(remaining.len()));
                return Ok(());
            }
        }
    }
    // git's `inexact_prefetch`: every destination left and every source
    // still in play.
    let ids: Vec<ObjectId> = remaining
        .iter()
        .map(|&d| dsts[d].entry)
        .chain(active.iter().map(|&s| srcs[s].entry))
        .filter_map(fetchable)
        .collect();
    content.prefetch(&ids)?;
    feedback.trace("exact and basename passes");
    let matrix = {
        let sides = Sides::new(
            srcs,
            dsts,
            &active,
            &remaining,
            opts.min_score,
            content,
            feedback,
        )?;
        inexact_matrix(&sides, opts, content, feedback, outcome)?
    };
    feedback.trace("matrix with tie replays");
    let before = srcs.iter().map(|s| s.used).sum::<u32>();
    find_renames(srcs, dsts, &matrix, opts.min_score, false);
    if want_copies {
        find_renames(srcs, dsts, &matrix, opts.min_score, true);
    }
    outcome.inexact = (srcs.iter().map(|s| s.used).sum::<u32>() - before) as usize;
    Ok(())
}

/// The blobs to fetch before the basename pass, in a partial clone.
///
/// git fetches in two batches: the blobs of the basename pairs
/// (`basename_prefetch`), then, if the inexact matrix runs, every
/// destination and source left (`inexact_prefetch`). When the matrix is
/// sure to run (a destination and a source outside every pair, and no
/// rename limit that could stop it), the two batches fetch the same
/// blobs together, so they are fetched as one; otherwise only the pairs'
/// blobs are, and the rest waits for the matrix, as in git.
fn basename_prefetch(
    srcs: &[Src],
    dsts: &[Dst],
    active: &[usize],
    pairs: &[(usize, usize)],
    opts: &Options,
) -> Vec<ObjectId> {
    let mut src_paired = vec![false; srcs.len()];
    let mut dst_paired = vec![false; dsts.len()];
    for &(s, d) in pairs {
        src_paired[s] = true;
        dst_paired[d] = true;
    }
    let matrix_sure = opts.limit == 0
        && (0..dsts.len()).any(|d| dsts[d].pair.is_none() && !dst_paired[d])
        && active.iter().any(|&s| !src_paired[s]);
    if matrix_sure {
        (0..dsts.len())
            .filter(|&d| dsts[d].pair.is_none())
            .map(|d| dsts[d].entry)
            .chain(active.iter().map(|&s| srcs[s].entry))
            .filter_map(fetchable)
            .collect()
    } else {
        pairs
            .iter()
            .flat_map(|&(s, d)| [srcs[s].entry, dsts[d].entry])
            .filter_map(fetchable)
            .collect()
    }
}

/// The blob of `entry` a prefetch may ask for: a submodule's id names a
/// commit of another repository, which git never fetches
/// (`diff_add_if_missing`).
fn fetchable(entry: &Entry) -> Option<ObjectId> {
    (entry.kind != EntryKind::Submodule).then_some(entry.id)
}

/// git's `find_basename_matches()`: pairs whose basename is unique among the
/// remaining sources and among the remaining destinations, from
/// [`basename_pairs`].
pub(super) fn basename_pass(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    pairs: &[(usize, usize)],
    min_score: u32,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<usize, DetectError> {
    let scores = score_pairs(srcs, dsts, pairs, min_score, content, feedback)?;
    let mut found = 0;
    for (&(s, d), score) in pairs.iter().zip(scores) {
        if score >= min_score && dsts[d].pair.is_none() {
            record(srcs, dsts, d, s, score);
            found += 1;
        }
    }
    Ok(found)
}

/// The (source, destination) pairs of git's basename pass, in source
/// order: the basename is unique among the sources in play and among the
/// destinations not yet paired.
pub(super) fn basename_pairs(srcs: &[Src], dsts: &[Dst], active: &[usize]) -> Vec<(usize, usize)> {
    let mut src_names: HashMap<&[u8], Option<usize>> = HashMap::new();
    for &s in active {
        src_names
            .entry(basename(&srcs[s].entry.path))
            .and_modify(|v| *v = None)
            .or_insert(Some(s));
    }
    let mut dst_names: HashMap<&[u8], Option<usize>> = HashMap::new();
    for (d, dst) in dsts.iter().enumerate() {
        if dst.pair.is_none() {
            dst_names
                .entry(basename(&dst.entry.path))
                .and_modify(|v| *v = None)
                .or_insert(Some(d));
        }
    }
    // Each destination is in at most one pair, so the pairs can be scored
    // together and then recorded in source order, as git does one by one.
    active
        .iter()
        .filter_map(|&s| {
            let name = basename(&srcs[s].entry.path);
            match (src_names.get(name), dst_names.get(name)) {
                (Some(Some(_)), Some(Some(d))) => Some((s, *d)),
                _ => None,
            }
        })
        .collect()
}

/// git's `find_renames()`: walk the sorted matrix, best pairs first.
fn find_renames(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    matrix: &[(usize, Scored)],
    min_score: u32,
    copies: bool,
) {
    for &(d, sc) in matrix {
        if sc.score < min_score {
            break;
        }
        if dsts[d].pair.is_some() {
            continue;
        }
        if !copies && srcs[sc.src].used > 0 {
            continue;
        }
        record(srcs, dsts, d, sc.src, sc.score);
    }
}

/// Whether git's exact-rename pass meets the sources of one id last first.
///
/// git (`find_exact_renames`) adds the `n` sources to a hash table sized
/// for `n` (`hashmap_init`), last source first, each at the head of its
/// bucket's chain, so that one id's sources are met in source order and
/// the first of equal standing wins. But the table is sized by integer
/// arithmetic (`n * 100 / 80` rounded down, then 64 times a power of four
/// at least that) and grows once its count passes 80% of its size
/// (rounded down): for `n` = 205, 3,277, 52,429 and so on (16 times the
/// last, plus or minus one) it grows as the last source goes in, and
/// growing relinks every chain in reverse (`rehash` in hashmap.c). git
/// then meets one id's sources last first, and a destination identical to
/// two sources of the same basename takes the later one. Sized at least
/// that large up front, the table never grows more than once, and only
/// with the last source.
pub(super) fn exact_table_reverses(n: usize) -> bool {
    // git keeps these in `unsigned int`; no list of sources comes near
    // where that would wrap.
    let n = n as u64;
    let wanted = n * 100 / 80;
    let mut size: u64 = 64;
    while wanted > size {
        size <<= 2;
    }
    n > size * 80 / 100
}

#[cfg(test)]
mod tests {
    use super::exact_table_reverses;

    /// The source counts where git's table grows with its last entry, and
    /// their neighbours, from hashmap.c's arithmetic worked by hand: 205
    /// wants 256 buckets, whose 80% is 204.
    #[test]
    fn git_table_grows_with_its_last_entry_only_at_these_counts() {
        for n in [205, 3_277, 52_429, 838_861] {
            assert!(exact_table_reverses(n), "{n}");
            assert!(!exact_table_reverses(n - 1), "{}", n - 1);
            assert!(!exact_table_reverses(n + 1), "{}", n + 1);
        }
        let reversing = (0..100_000).filter(|&n| exact_table_reverses(n)).count();
        assert_eq!(reversing, 3);
    }
}
