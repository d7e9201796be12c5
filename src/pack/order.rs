//! The order in which `git pack-objects` should look at blobs and trees,
//! and the crafted names that make it do so.
//!
//! pack-objects sorts objects by type, then by a 32-bit hash of the last
//! characters of each object's path, then by size (largest first), and
//! tries each object against the `window` objects sorted just before it as
//! delta bases. That order loses in three ways: unrelated files that share
//! a name (every `Makefile`, `README.md`, `mod.rs`) are interleaved by size
//! and crowd each other out of the window; a file whose size goes up and
//! down has its neighbouring versions scattered; and the history of a file
//! that moved lives under two unrelated hashes.
//!
//! The order built here ([`Strategy::Similarity`]):
//! 1. groups objects by their full path, so only versions of one file share
//!    a window;
//! 2. orders each group newest first (the order `git rev-list` lists them,
//!    which follows history, so a version's neighbours are its parent and
//!    child) unless largest first (git's rule) puts more similar
//!    fingerprints within the window: a changelog that only grows is better
//!    by size, a lock file rewritten back and forth by recency;
//! 3. chains groups whose contents continue each other (renames, copies):
//!    the last blob of a group is followed by the group whose first blob is
//!    nearest by fingerprint, so the move does not start a new delta chain.
//!
//! Trees get step 1 and git's largest-first rule inside each group (see
//! [`tree_order`]); commits and tags keep git's order.
//!
//! The order reaches pack-objects through names: with name hash v1, a name
//! of exactly 13 characters from `a..=d` hashes to a constant plus a
//! 13-digit base-4 number (the last character most significant), so 4^13
//! names with distinct, monotone hashes exist, and `4^13 - 1 - rank` makes
//! pack-objects' descending sort visit objects by rank. Distinct hashes
//! also mean git's thread split can cut anywhere, costing a window's worth
//! of candidates at each of a handful of cuts. [`Strategy::Git`]
//! reproduces git's own order through the same channel: with one thread it
//! gives git's pack byte for byte, which is how the encoding is tested.

use std::collections::HashMap;

use crate::similarity::candidates::{self};
use crate::similarity::fingerprint::Fingerprint;
use crate::similarity::fingerprint::Sketch;

/// How many distinct ranks crafted names can express (4^13).
pub const MAX_RANKS: usize = 1 << 26;

/// Length of a crafted name.
pub const NAME_LEN: usize = 13;

/// The orders that can be chosen; the default is the one measured best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// git's own order (name hash of the path, then size), as a control.
    Git,
    /// Grouped by full path, newest first in each group; no fingerprints.
    Path,
    /// [`Strategy::Path`], each group's order chosen by fingerprints, and
    /// groups that continue each other chained (see the module docs).
    #[default]
    Similarity,
}

impl Strategy {
    /// Every strategy with its command-line name.
    pub const ALL: [(&'static str, Strategy); 3] = [
        ("similarity", Strategy::Similarity),
        ("path", Strategy::Path),
        ("git", Strategy::Git),
    ];

    /// The strategy called `name` on the command line.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }

    /// Whether [`order`] consults fingerprints.
    pub fn needs_fingerprints(self) -> bool {
        self == Strategy::Similarity
    }
}

/// What the order needs to know of an object (a blob or a tree). Objects
/// are given in the order `git rev-list --objects` lists them (newest
/// commits first).
#[derive(Clone, Copy, Debug)]
pub struct Object<'a> {
    /// The path it was first listed under; `None` for unreachable objects.
    pub path: Option<&'a [u8]>,
    /// Size in bytes.
    pub size: u64,
}

/// git's name hash, version 1 (`pack_name_hash` in pack-objects.h): the
/// last sixteen non-whitespace bytes, the last counting most.
pub fn name_hash_v1(name: &[u8]) -> u32 {
    name.iter()
        .filter(|c| !c.is_ascii_whitespace())
        .fold(0u32, |hash, &c| {
            (hash >> 2).wrapping_add(u32::from(c) << 24)
        })
}

/// The name that makes pack-objects visit a blob at `rank` (0 first).
/// `rank` must be below [`MAX_RANKS`].
pub fn crafted_name(rank: usize) -> [u8; NAME_LEN] {
    debug_assert!(rank < MAX_RANKS);
    let value = (MAX_RANKS - 1).saturating_sub(rank);
    let mut name = [b'a'; NAME_LEN];
    for (i, c) in name.iter_mut().enumerate() {
        // Character i carries base-4 digit i: the hash shifts earlier
        // characters right by two bits per later one.
        *c = b'a' + ((value >> (2 * i)) & 3) as u8;
    }
    name
}

/// Groups no closer than this (in bits of 256) are not chained: at 40 bits
/// about 85% of git's similarity is left (see `estimate_similarity`); below
/// that a delta rarely beats a fresh base.
const LINK_MAX_DISTANCE: u32 = 40;

/// The visit order: a permutation of `0..objects.len()`. `fingerprints`
/// gives an object's fingerprint by index; only [`Strategy::Similarity`]
/// asks.
pub fn order(
    objects: &[Object],
    fingerprints: &dyn Fn(usize) -> Option<Fingerprint>,
    strategy: Strategy,
) -> Vec<usize> {
    match strategy {
        Strategy::Git => {
            let hashes: Vec<u32> = objects
                .iter()
                .map(|o| o.path.map_or(0, name_hash_v1))
                .collect();
            let mut order: Vec<usize> = (0..objects.len()).collect();
            order.sort_by(|&a, &b| {
                hashes[b]
                    .cmp(&hashes[a])
                    .then(objects[b].size.cmp(&objects[a].size))
                    .then(a.cmp(&b))
            });
            order
        }
        Strategy::Path => path_groups(objects).into_iter().flatten().collect(),
        Strategy::Similarity => {
            let mut groups = path_groups(objects);
            for g in &mut groups {
                let mut by_size = g.clone();
                largest_first(&mut by_size, objects);
                if window_cost(&by_size, fingerprints, objects)
                    < window_cost(g, fingerprints, objects)
                {
                    *g = by_size;
                }
            }
            chain(&groups, objects, fingerprints)
                .into_iter()
                .flat_map(|g| groups[g].iter().copied())
                .collect()
        }
    }
}

/// How far pack-objects' window (10, git's default) is from holding a good
/// base for each member of a group visited in order `g`: for each member,
/// the fingerprint distance to the nearest of the 10 before it, weighted by
/// its size (a poor base costs in proportion to the bytes it leaves). Only
/// compared between orders of the same group.
fn window_cost(
    g: &[usize],
    fingerprints: &dyn Fn(usize) -> Option<Fingerprint>,
    objects: &[Object],
) -> u64 {
    const WINDOW: usize = 10;
    let fps: Vec<Option<Fingerprint>> = g.iter().map(|&i| fingerprints(i)).collect();
    let mut cost = 0u64;
    for (k, fp) in fps.iter().enumerate().skip(1) {
        let Some(fp) = fp else {
            continue;
        };
        let nearest = fps[k.saturating_sub(WINDOW)..k]
            .iter()
            .flatten()
            .map(|other| other.distance(fp))
            .min()
            .unwrap_or(128);
        cost = cost.saturating_add(u64::from(nearest).saturating_mul(objects[g[k]].size));
    }
    cost
}

/// The visit order of trees: git's own for [`Strategy::Git`], otherwise
/// grouped by path, largest first in each group. Unlike blobs, trees are
/// never better newest first: on git.git, whose many branches interleave
/// the versions of a directory in history order, that made trees 2.3x
/// larger than git's (84 MB against 36 MB), while largest first is within
/// 1% of the best on every repository measured (docs/performance.md).
pub fn tree_order(trees: &[Object], strategy: Strategy) -> Vec<usize> {
    if strategy == Strategy::Git {
        return order(trees, &|_| None, Strategy::Git);
    }
    let mut groups = path_groups(trees);
    for g in &mut groups {
        largest_first(g, trees);
    }
    groups.into_iter().flatten().collect()
}

/// git's order inside a name group: size descending, then input order.
fn largest_first(g: &mut [usize], objects: &[Object]) {
    g.sort_by(|&a, &b| objects[b].size.cmp(&objects[a].size).then(a.cmp(&b)));
}

/// Objects grouped by path, each group newest first (input order), groups
/// in git's order of their paths' name hashes (descending), then by path,
/// which keeps files with similar names (`t1234-foo.sh`, `t1235-foo.sh`)
/// near each other as git does (measured better than sorting by path or by
/// first appearance). Unreachable objects form one group at the end.
fn path_groups(objects: &[Object]) -> Vec<Vec<usize>> {
    let mut by_path: HashMap<Option<&[u8]>, usize> = HashMap::new();
    let mut groups: Vec<(Option<&[u8]>, Vec<usize>)> = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        let g = *by_path.entry(object.path).or_insert_with(|| {
            groups.push((object.path, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups.sort_by(|(a, _), (b, _)| match (a, b) {
        (Some(a), Some(b)) => name_hash_v1(b).cmp(&name_hash_v1(a)).then(a.cmp(b)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    groups.into_iter().map(|(_, members)| members).collect()
}

/// Groups in chain order: each group is followed, where one is close
/// enough, by the group whose first blob is most like its last one, so the
/// window of that first blob holds its likely base. Each group is followed
/// by at most one and follows at most one other; chains start in the
/// groups' own order.
fn chain(
    groups: &[Vec<usize>],
    objects: &[Object],
    fingerprints: &dyn Fn(usize) -> Option<Fingerprint>,
) -> Vec<usize> {
    let item = |i: usize| Sketch {
        size: objects[i].size,
        fingerprint: fingerprints(i),
    };
    let firsts: Vec<Sketch> = groups.iter().map(|g| item(g[0])).collect();
    let lasts: Vec<Sketch> = groups.iter().map(|g| item(g[g.len() - 1])).collect();
    let opts = candidates::Options {
        min_score: crate::similarity::score::DEFAULT_MIN_SCORE,
        per_destination: 8,
        tie_margin: 0,
        max_ties: 8,
    };
    let nearest = candidates::search(&firsts, &lasts, &opts);
    // Strongest links first, so a group wanted by several others goes to
    // the closest.
    let mut links: Vec<(u32, usize, usize)> = Vec::new();
    for (from, cands) in nearest.iter().enumerate() {
        let Some(fp) = lasts[from].fingerprint else {
            continue;
        };
        for &to in &cands.sources {
            if to == from {
                continue;
            }
            if let Some(other) = firsts[to].fingerprint {
                let d = fp.distance(&other);
                if d <= LINK_MAX_DISTANCE {
                    links.push((d, from, to));
                }
            }
        }
    }
    links.sort_unstable();
    let mut next = vec![usize::MAX; groups.len()];
    let mut has_prev = vec![false; groups.len()];
    // Union-find on chains keeps the links acyclic.
    let mut root: Vec<usize> = (0..groups.len()).collect();
    fn find(root: &mut [usize], mut x: usize) -> usize {
        while root[x] != x {
            root[x] = root[root[x]];
            x = root[x];
        }
        x
    }
    for (_, from, to) in links {
        if next[from] != usize::MAX || has_prev[to] {
            continue;
        }
        let (a, b) = (find(&mut root, from), find(&mut root, to));
        if a == b {
            continue;
        }
        root[a] = b;
        next[from] = to;
        has_prev[to] = true;
    }
    let mut out = Vec::with_capacity(groups.len());
    for (start, _) in has_prev.iter().enumerate().filter(|(_, has)| !**has) {
        let mut g = start;
        loop {
            out.push(g);
            g = next[g];
            if g == usize::MAX {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crafted_names_hash_in_descending_rank_order() {
        let base = name_hash_v1(&crafted_name(MAX_RANKS - 1));
        for rank in [0, 1, 2, 3, 4, 5, 1000, 4095, 4096, 1 << 20, MAX_RANKS - 2] {
            let h = name_hash_v1(&crafted_name(rank));
            assert_eq!(h - base, (MAX_RANKS - 1 - rank) as u32, "rank {rank}");
            assert!(h > name_hash_v1(&crafted_name(rank + 1)), "rank {rank}");
        }
    }

    #[test]
    fn name_hash_matches_git_definition() {
        // Worked by hand from pack_name_hash: whitespace skipped, each byte
        // enters at bit 24 and earlier ones shift right by two.
        assert_eq!(name_hash_v1(b""), 0);
        assert_eq!(name_hash_v1(b"a"), 0x61 << 24);
        assert_eq!(name_hash_v1(b"ab"), (0x62 << 24) + ((0x61 << 24) >> 2));
        assert_eq!(name_hash_v1(b"a b"), name_hash_v1(b"ab"));
    }

    fn blob(path: &'static str, size: u64) -> Object<'static> {
        Object {
            path: Some(path.as_bytes()),
            size,
        }
    }

    #[test]
    fn path_groups_keep_a_files_versions_together_newest_first() {
        // Only the last 16 characters count in git's hash: these two
        // paths hash alike.
        let (a, b) = ("a/documentation/README.md", "b/documentation/README.md");
        assert_eq!(name_hash_v1(a.as_bytes()), name_hash_v1(b.as_bytes()));
        let blobs = [blob(a, 100), blob(b, 300), blob(a, 200), blob(b, 50)];
        let order = order(&blobs, &|_| None, Strategy::Path);
        // git interleaves the two READMEs by size: 300, 200, 100, 50.
        assert!(order == [0, 2, 1, 3] || order == [1, 3, 0, 2], "{order:?}");
        let git = super::order(&blobs, &|_| None, Strategy::Git);
        assert_eq!(git, [1, 2, 0, 3]);
    }

    #[test]
    fn similarity_chains_a_moved_file_to_its_old_path() {
        let old = crate::similarity::fingerprint::fingerprint(&[b'x'; 4000]).map(|mut f| {
            f.words[0] ^= 1;
            f
        });
        let new = crate::similarity::fingerprint::fingerprint(&[b'x'; 4000]);
        let blobs = [
            blob("zz/new-name.c", 4000), // newest, after the move
            blob("other/thing.h", 900),
            blob("aa/old-name.c", 4000), // before the move
        ];
        let fps = [new, None, old];
        let order = order(&blobs, &|i| fps[i], Strategy::Similarity);
        let pos = |i: usize| order.iter().position(|&x| x == i);
        assert_eq!(
            pos(2).map(|p| p.abs_diff(pos(0).unwrap_or(9))),
            Some(1),
            "{order:?}"
        );
    }
}
