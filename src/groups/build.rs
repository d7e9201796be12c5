//! One group out of its linked blobs: the representative, each member's
//! score against it, and the bytes a single copy would save.

use std::collections::HashMap;

use gix::ObjectId;

use super::verify::Scorer;
use super::{Group, Link, Member};
use crate::similarity::fingerprint::Sketch;

/// The representative of the blobs at `blobs_in` (positions), given the
/// links among them: most links, then most copies, then largest, then
/// first path.
pub(super) fn representative(
    scorer: &Scorer,
    blobs_in: &[usize],
    links: &[(usize, usize, u32)],
    paths_of: &HashMap<ObjectId, Vec<&[u8]>>,
    prints: &[Sketch],
) -> usize {
    let mut degree: HashMap<usize, usize> = HashMap::new();
    for &(a, b, _) in links {
        *degree.entry(a).or_default() += 1;
        *degree.entry(b).or_default() += 1;
    }
    let first_path = |p: usize| first_path(scorer, paths_of, p);
    blobs_in
        .iter()
        .copied()
        .max_by(|&x, &y| {
            let key = |p: usize| {
                (
                    degree.get(&p).copied().unwrap_or(0),
                    paths_of.get(&scorer.ids[p]).map_or(0, Vec::len),
                    prints[p].size,
                )
            };
            key(x)
                .cmp(&key(y))
                .then_with(|| first_path(y).cmp(first_path(x)))
        })
        .unwrap_or(blobs_in[0])
}

/// The first (smallest) path of the blob at `p`.
pub(super) fn first_path<'a>(
    scorer: &Scorer,
    paths_of: &'a HashMap<ObjectId, Vec<&[u8]>>,
    p: usize,
) -> &'a [u8] {
    paths_of
        .get(&scorer.ids[p])
        .and_then(|v| v.iter().min().copied())
        .unwrap_or_default()
}

/// The group of the blobs at `blobs_in` (positions) around `rep`, each
/// scoring `score_of` against it, with the links among them.
pub(super) fn build_group(
    scorer: &Scorer,
    blobs_in: &[usize],
    rep: usize,
    score_of: impl Fn(usize) -> u32,
    links: &[(usize, usize, u32)],
    paths_of: &HashMap<ObjectId, Vec<&[u8]>>,
    prints: &[Sketch],
) -> Group {
    let mut members: Vec<Member> = Vec::new();
    for &p in blobs_in {
        let score = score_of(p);
        let id = scorer.ids[p];
        let mut paths: Vec<&[u8]> = paths_of.get(&id).cloned().unwrap_or_default();
        paths.sort_unstable();
        for path in paths {
            members.push(Member {
                path: path.to_vec(),
                id,
                size: prints[p].size,
                score,
            });
        }
    }
    let rep_id = scorer.ids[rep];
    let rep_path = first_path(scorer, paths_of, rep).to_vec();
    members.sort_by(|a, b| {
        let is_rep = |m: &Member| m.id == rep_id && m.path == rep_path;
        is_rep(b)
            .cmp(&is_rep(a))
            .then_with(|| b.score.cmp(&a.score))
            .then_with(|| a.path.cmp(&b.path))
    });
    let waste = members.iter().skip(1).map(|m| m.size).sum();
    let member_of: HashMap<ObjectId, usize> = members
        .iter()
        .enumerate()
        .rev()
        .map(|(i, m)| (m.id, i))
        .collect();
    let at = |p: usize| member_of.get(&scorer.ids[p]).copied().unwrap_or(0);
    let mut group_links: Vec<Link> = links
        .iter()
        .map(|&(a, b, score)| {
            let (x, y) = (at(a), at(b));
            Link {
                a: x.min(y),
                b: x.max(y),
                score,
            }
        })
        .collect();
    group_links.sort_by_key(|l| (l.a, l.b));
    Group {
        members,
        links: group_links,
        waste,
    }
}
