//! Which objects are searched together: commits, tags, and blobs and trees
//! grouped by path, path groups joined where content moved or was copied
//! (fingerprints), groups too large for memory split.

use std::collections::HashMap;

use gix::object::Kind;

use crate::pack::list::ListedObject;

/// The objects of a pack, as [`write_pack`] takes them on.
pub(super) struct Groups {
    /// Commits (and whatever else the listing names no kind and no path
    /// for), in list order.
    pub(super) commits: Vec<usize>,
    /// Tags and anything whose kind is not known from the pack headers,
    /// written whole, in list order.
    pub(super) whole: Vec<usize>,
    /// Groups of trees and groups of blobs by path, in order of first
    /// appearance, each in list (history) order.
    pub(super) groups: Vec<Vec<usize>>,
    /// For each group cut out of a longer history, the group of the run
    /// before it (newer versions), whose objects are written first.
    pub(super) continues: Vec<Option<usize>>,
}

pub(super) fn groups(objects: &[ListedObject]) -> Groups {
    let mut commits = Vec::new();
    let mut whole = Vec::new();
    let mut trees: Vec<Vec<usize>> = Vec::new();
    let mut blobs: Vec<Vec<usize>> = Vec::new();
    let mut by_path: HashMap<(bool, &[u8]), usize> = HashMap::new();
    for (i, o) in objects.iter().enumerate() {
        let is_tree = match o.kind {
            Some(Kind::Tree) => true,
            Some(Kind::Blob) => false,
            // The listing knows the kind of blobs and trees only; what git's
            // walk prints without a name is a commit (tags carry their
            // ref's name), and a wrong guess costs nothing: bases are only
            // taken from objects of the same kind as read.
            Some(Kind::Commit) => {
                commits.push(i);
                continue;
            }
            None if o.name.is_none() => {
                commits.push(i);
                continue;
            }
            _ => {
                whole.push(i);
                continue;
            }
        };
        let list = if is_tree { &mut trees } else { &mut blobs };
        match &o.name {
            Some(name) => {
                let at = *by_path
                    .entry((is_tree, name.as_slice()))
                    .or_insert_with(|| {
                        list.push(Vec::new());
                        list.len() - 1
                    });
                list[at].push(i);
            }
            None => list.push(vec![i]),
        }
    }
    let blobs = join_continued(objects, blobs);
    trees.extend(blobs);
    let (groups, continues) = split_large(objects, trees);
    Groups {
        commits,
        whole,
        groups,
        continues,
    }
}

/// Split groups holding more than [`MAX_JOINED_BYTES`] of content into runs
/// of consecutive (history-ordered) objects below it: a group's content is
/// in memory while its bases are chosen, and the history of one file can
/// be any size (git.git's `diff.c`: 226 MB in 1,706 versions). Neighbours
/// in history stay together; each run after the first is marked as
/// continuing the one before, whose versions the cross-path pass then
/// offers as bases to what the run leaves whole (without that, each extra
/// run cost one version stored whole: redis's `src/module.c`, 0.3 MB).
fn split_large(
    objects: &[ListedObject],
    groups: Vec<Vec<usize>>,
) -> (Vec<Vec<usize>>, Vec<Option<usize>>) {
    let mut out = Vec::with_capacity(groups.len());
    let mut continues = Vec::with_capacity(groups.len());
    for group in groups {
        let total: u64 = group.iter().map(|&o| objects[o].size).sum();
        if total <= MAX_JOINED_BYTES {
            out.push(group);
            continues.push(None);
            continue;
        }
        let mut run = Vec::new();
        let mut bytes = 0u64;
        let mut before = None;
        for o in group {
            if !run.is_empty() && bytes + objects[o].size > MAX_JOINED_BYTES {
                out.push(std::mem::take(&mut run));
                continues.push(before);
                before = Some(out.len() - 1);
                bytes = 0;
            }
            bytes += objects[o].size;
            run.push(o);
        }
        out.push(run);
        continues.push(before);
    }
    (out, continues)
}

/// Fingerprints at most this far apart make two path groups one (a rename,
/// a copy, a vendored tree): about 80% of the content shared.
const JOIN_DISTANCE: u32 = 40;

/// Groups hold at most this many bytes of content (one object larger than
/// it is a group of its own): joined groups stay below it (boilerplate
/// copied into hundreds of paths would otherwise make one huge group) and
/// larger ones are split ([`split_large`]), since a group's content is in
/// memory while its bases are chosen, one group per thread.
const MAX_JOINED_BYTES: u64 = 64 << 20;

/// Join path groups whose largest blob's nearest fingerprint in another
/// group is within [`JOIN_DISTANCE`]: the history of a file that moved, or
/// was copied, continues in the other group, so their versions are each
/// other's bases. A joined group lists its objects in list order.
fn join_continued(objects: &[ListedObject], groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    use crate::similarity::candidates::{Options, Search};
    use crate::similarity::fingerprint::Sketch;
    // Every fingerprinted blob, and the group each is in.
    let mut group_of = Vec::new();
    let mut sketches = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        for &o in group {
            if let Some(f) = objects[o].fingerprint {
                group_of.push((g, o));
                sketches.push(Sketch {
                    size: objects[o].size,
                    fingerprint: Some(f),
                });
            }
        }
    }
    // Each group's largest fingerprinted blob.
    let mut roots: Vec<(usize, usize)> = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        let root = group
            .iter()
            .filter(|&&o| objects[o].fingerprint.is_some())
            .max_by_key(|&&o| objects[o].size);
        if let Some(&o) = root {
            roots.push((g, o));
        }
    }
    if roots.len() < 2 {
        return groups;
    }
    let search = Search::new(&sketches);
    let dsts: Vec<Sketch> = roots
        .iter()
        .map(|&(_, o)| Sketch {
            size: objects[o].size,
            fingerprint: objects[o].fingerprint,
        })
        .collect();
    let opts = Options {
        min_score: 0,
        per_destination: 8,
        tie_margin: 0,
        max_ties: 0,
    };
    let nearest = search.nearest(&dsts, &opts);
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    let mut members: Vec<u64> = groups
        .iter()
        .map(|g| g.iter().map(|&o| objects[o].size).sum())
        .collect();
    fn find(parent: &mut [usize], mut g: usize) -> usize {
        while parent[g] != g {
            parent[g] = parent[parent[g]];
            g = parent[g];
        }
        g
    }
    for ((g, o), cands) in roots.iter().zip(nearest) {
        let Some(f) = objects[*o].fingerprint else {
            continue;
        };
        let other = cands.sources.iter().find_map(|&s| {
            let (h, so) = group_of[s];
            let d = objects[so].fingerprint.map(|sf| sf.distance(&f))?;
            (h != *g && d <= JOIN_DISTANCE).then_some(h)
        });
        if let Some(h) = other {
            let (a, b) = (find(&mut parent, *g), find(&mut parent, h));
            if a != b && members[a] + members[b] <= MAX_JOINED_BYTES {
                parent[b] = a;
                members[a] += members[b];
            }
        }
    }
    let mut joined: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (g, group) in groups.into_iter().enumerate() {
        let r = find(&mut parent, g);
        joined[r].extend(group);
    }
    joined
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(|mut g| {
            g.sort_unstable();
            g
        })
        .collect()
}
