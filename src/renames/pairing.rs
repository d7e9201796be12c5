//! Pairing sources with destinations as git does: exact renames by id,
//! unique basenames, and the greedy walk of the sorted score matrix.

use std::collections::HashMap;

use gix::ObjectId;

use super::DetectError;
use super::matrix::Sides;
use super::{
    Content, Detect, Dst, Options, Outcome, Scored, Src, basename, basename_same, inexact_matrix,
    is_regular, record, score_pairs, set_binary,
};
use crate::progress::Feedback;
use crate::similarity::score::MAX_SCORE;

pub(super) fn pair_up(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    opts: &Options,
    want_copies: bool,
    content: &mut impl Content,
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<(), DetectError> {
    // Exact renames. Only ids some destination has are worth indexing:
    // sources can outnumber destinations a thousandfold (copy detection
    // against a whole tree).
    let mut by_id: gix::hashtable::HashMap<ObjectId, Vec<usize>> =
        dsts.iter().map(|d| (d.entry.id, Vec::new())).collect();
    for (i, s) in srcs.iter().enumerate() {
        if let Some(same) = by_id.get_mut(&s.entry.id) {
            same.push(i);
        }
    }
    for d in 0..dsts.len() {
        let Some(same) = by_id.get(&dsts[d].entry.id).filter(|v| !v.is_empty()) else {
            continue;
        };
        let target = &dsts[d].entry;
        let mut best = None;
        let mut best_score = -1;
        let mut budget = 100;
        for &s in same {
            let source = &srcs[s].entry;
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

    // Sources still in play: git culls used ones unless detecting copies.
    let mut active: Vec<usize> = (0..srcs.len())
        .filter(|&s| want_copies || srcs[s].used == 0)
        .collect();
    set_binary(srcs, dsts, &active, content)?;
    feedback.trace("attributes of the paths left to score");
    if !want_copies {
        let min_basename = opts.min_score + (MAX_SCORE - opts.min_score) / 2;
        outcome.basename = basename_pass(srcs, dsts, &active, min_basename, content, feedback)?;
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
    feedback.trace("exact and basename passes");
    let matrix = {
        let sides = Sides::new(srcs, dsts, &active, &remaining, content, feedback)?;
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

/// git's `find_basename_matches()`: pairs whose basename is unique among the
/// remaining sources and among the remaining destinations.
pub(super) fn basename_pass(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    active: &[usize],
    min_score: u32,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<usize, DetectError> {
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
    let pairs: Vec<(usize, usize)> = active
        .iter()
        .filter_map(|&s| {
            let name = basename(&srcs[s].entry.path);
            match (src_names.get(name), dst_names.get(name)) {
                (Some(Some(_)), Some(Some(d))) => Some((s, *d)),
                _ => None,
            }
        })
        .collect();
    let scores = score_pairs(srcs, dsts, &pairs, min_score, content, feedback)?;
    let mut found = 0;
    for (&(s, d), score) in pairs.iter().zip(scores) {
        if score >= min_score && dsts[d].pair.is_none() {
            record(srcs, dsts, d, s, score);
            found += 1;
        }
    }
    Ok(found)
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
