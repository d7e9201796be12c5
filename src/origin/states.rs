//! The first, cheap pass of `origin`: which directory of which commit
//! shares most files with the local copy, by blob id alone.
//!
//! Most of a vendored copy is files nobody patched, byte for byte the
//! upstream blobs, so a set overlap of ids finds the neighbourhood without
//! reading a single blob. Two things keep it cheap on a long history:
//!
//! - Each tree object is summarised once ([`Summaries`]): its file count,
//!   how many of its files are local blobs, and the best-overlapping
//!   directory inside it. A tree unchanged between commits (almost every
//!   directory of almost every commit) costs a hash lookup.
//! - Only a few commits spread over the range ("probes") are walked in
//!   full, to learn where upstream keeps the files; every commit is then
//!   looked at only along those paths (its root tree and the trees leading
//!   to each path), in parallel.

use std::collections::{HashMap, HashSet};

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted};
use crate::repo::{EntryKind, Repo, RepoError, TreeItem};

/// At most this many commits are walked in full to find where upstream
/// keeps the local files.
pub const PROBES: usize = 48;

/// The overlap of one upstream directory with the local files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overlap {
    /// Files (regular, executable, symlinks) under the directory.
    pub files: u32,
    /// Those whose blob is one of the local files' blobs.
    pub shared: u32,
    /// The local bytes those blobs hold.
    pub shared_bytes: u64,
}

impl Overlap {
    /// Jaccard's coefficient of the two sets of files, as a fraction
    /// `shared / (local + files - shared)` compared without division:
    /// `(numerator, denominator)`.
    pub fn jaccard(&self, local: u32) -> (u64, u64) {
        let union = u64::from(local) + u64::from(self.files) - u64::from(self.shared);
        (u64::from(self.shared), union.max(1))
    }

    /// How much of the local copy `self` holds byte for byte, as far as
    /// blob ids tell: the local bytes and files it holds, each at most the
    /// local total (a blob upstream keeps at several paths counts at each,
    /// and must not make a larger directory look better than the copy
    /// itself).
    pub fn holds(&self, local_files: u32, local_bytes: u64) -> (u64, u32) {
        (
            self.shared_bytes.min(local_bytes),
            self.shared.min(local_files),
        )
    }

    /// The tighter set first ([`Overlap::better_than`]), else equal.
    pub fn tighter(&self, other: &Overlap, local: u32) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        if self.better_than(other, local) {
            Ordering::Less
        } else if other.better_than(self, local) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// Whether `self` overlaps the local files better than `other`:
    /// higher Jaccard, then more shared bytes.
    pub fn better_than(&self, other: &Overlap, local: u32) -> bool {
        let (a, b) = self.jaccard(local);
        let (c, d) = other.jaccard(local);
        match (u128::from(a) * u128::from(d)).cmp(&(u128::from(c) * u128::from(b))) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.shared_bytes > other.shared_bytes,
        }
    }
}

/// The best-overlapping directory inside a tree: its path relative to
/// the tree (empty for the tree itself) and its overlap.
pub type Best = (Vec<u8>, Overlap);

/// What one tree object says about the local files.
#[derive(Clone, Debug, Default)]
struct Summary {
    overlap: Overlap,
    /// The directory under this tree (relative, empty for the tree itself)
    /// that overlaps best, and its overlap; `None` when nothing is shared.
    best: Option<Best>,
}

/// Tree summaries by tree id, for one set of local blobs.
pub struct Summaries<'a> {
    local: &'a HashMap<ObjectId, u64>,
    local_files: u32,
    memo: HashMap<ObjectId, Summary>,
    /// Tree objects read so far.
    pub trees_read: usize,
}

impl<'a> Summaries<'a> {
    /// Summaries against `local` (blob id to its size), `local_files` files.
    pub fn new(local: &'a HashMap<ObjectId, u64>, local_files: u32) -> Self {
        Summaries {
            local,
            local_files,
            memo: HashMap::new(),
            trees_read: 0,
        }
    }

    /// The overlap of the tree `id` and, inside it, the best directory.
    pub fn summary(
        &mut self,
        repo: &Repo,
        id: ObjectId,
    ) -> Result<(Overlap, Option<Best>), RepoError> {
        self.walk(repo, id)?;
        let s = &self.memo[&id];
        Ok((s.overlap, s.best.clone()))
    }

    /// Post-order over the trees not summarised yet, with an explicit
    /// stack: the depth of a tree is the repository's to choose, and a
    /// hostile one must not overflow ours.
    fn walk(&mut self, repo: &Repo, root: ObjectId) -> Result<(), RepoError> {
        if self.memo.contains_key(&root) {
            return Ok(());
        }
        struct Frame {
            id: ObjectId,
            items: Vec<TreeItem>,
            pos: usize,
            acc: Summary,
        }
        let mut reader = repo.reader();
        let mut buf = Vec::new();
        let mut open = |id: ObjectId, reader: &mut crate::repo::Reader| {
            let mut items = Vec::new();
            reader.tree_items(&id, &mut buf, &mut items)?;
            Ok::<_, RepoError>(Frame {
                id,
                items,
                pos: 0,
                acc: Summary::default(),
            })
        };
        self.trees_read += 1;
        let mut stack = vec![open(root, &mut reader)?];
        while let Some(frame) = stack.last_mut() {
            if frame.pos == frame.items.len() {
                let Some(mut done) = stack.pop() else { break };
                let own = done.acc.overlap;
                // On a tie the directory inside wins: the same files under
                // the longer path (`include/fmt` rather than `include`),
                // where the local paths line up.
                if own.shared > 0
                    && done
                        .acc
                        .best
                        .as_ref()
                        .is_none_or(|(_, b)| own.better_than(b, self.local_files))
                {
                    done.acc.best = Some((Vec::new(), own));
                }
                let summary = done.acc;
                if let Some(parent) = stack.last_mut() {
                    let name = &parent.items[parent.pos - 1].name;
                    self.merge(&mut parent.acc, name, &summary);
                }
                self.memo.insert(done.id, summary);
                continue;
            }
            let item = &frame.items[frame.pos];
            frame.pos += 1;
            match item.kind {
                None => {
                    if let Some(known) = self.memo.get(&item.id) {
                        let known = known.clone();
                        let name = item.name.clone();
                        self.merge(&mut frame.acc, &name, &known);
                    } else {
                        let id = item.id;
                        self.trees_read += 1;
                        let child = open(id, &mut reader)?;
                        stack.push(child);
                    }
                }
                Some(EntryKind::Submodule) => {}
                Some(_) => {
                    frame.acc.overlap.files += 1;
                    if let Some(&size) = self.local.get(&item.id) {
                        frame.acc.overlap.shared += 1;
                        frame.acc.overlap.shared_bytes += size;
                    }
                }
            }
        }
        Ok(())
    }

    fn merge(&self, acc: &mut Summary, name: &[u8], child: &Summary) {
        acc.overlap.files += child.overlap.files;
        acc.overlap.shared += child.overlap.shared;
        acc.overlap.shared_bytes += child.overlap.shared_bytes;
        if let Some((path, o)) = &child.best
            && acc
                .best
                .as_ref()
                .is_none_or(|(_, b)| o.better_than(b, self.local_files))
        {
            let mut full = name.to_vec();
            if !path.is_empty() {
                full.push(b'/');
                full.extend_from_slice(path);
            }
            acc.best = Some((full, *o));
        }
    }
}

/// One commit of the range, in the order candidates are preferred.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The commit.
    pub id: ObjectId,
    /// The tag naming it, for the tags of the default range.
    pub tag: Option<String>,
}

/// One state of one upstream directory: a (path, tree) pair, with the
/// commits that have it.
#[derive(Clone, Debug)]
pub struct State {
    /// The directory, relative to the commit's root (empty for the root).
    pub path: Vec<u8>,
    /// Its tree.
    pub tree: ObjectId,
    /// Its overlap with the local files.
    pub overlap: Overlap,
    /// Indices (into the commits) of the first and the last commit with
    /// this state, and how many have it.
    pub first: usize,
    /// See `first`.
    pub last: usize,
    /// See `first`.
    pub commits: usize,
    /// Indices of the tags with this state, in candidate order.
    pub tags: Vec<usize>,
}

/// What [`states`] found, and what it cost.
pub struct Found {
    /// Every state of every candidate path sharing a file with the local
    /// copy, best first (see [`states`]).
    pub states: Vec<State>,
    /// The directories looked at in every commit.
    pub paths: Vec<Vec<u8>>,
    /// Tree objects read.
    pub trees_read: usize,
    /// Commits walked in full.
    pub probes: usize,
}

/// Every state of the directories where upstream keeps the local files,
/// over `commits`, best first: the most of the local copy held byte for
/// byte ([`Overlap::holds`]), then a release before other commits, then
/// the tighter set ([`Overlap::tighter`]), then the earlier commit.
pub fn states(
    repo: &Repo,
    commits: &[Commit],
    local: &Local<'_>,
    feedback: &Feedback,
) -> Result<Found, StatesError> {
    let local_files = local.files;
    let (local_paths, local) = (local.paths, local.sizes);
    let local_bytes: u64 = local.values().sum();
    let stage = feedback.stage("Reading upstream commits", commits.len() as u64);
    let roots: Vec<ObjectId> = commits
        .par_iter()
        .map_init(
            || repo.reader(),
            |reader, c| {
                feedback.check()?;
                stage.inc(1);
                Ok(reader.commit_tree(&c.id)?)
            },
        )
        .collect::<Result<_, StatesError>>()?;
    stage.finish();

    let mut summaries = Summaries::new(local, local_files);
    let probes = probe_indices(commits.len());
    let paths = find_paths(repo, &mut summaries, &roots, &probes, local_paths, feedback)?;

    let stage = feedback.stage("Comparing upstream commits", commits.len() as u64);
    let at: Vec<Vec<Option<ObjectId>>> = roots
        .par_iter()
        .map_init(
            || (repo.reader(), Vec::new(), Vec::new()),
            |(reader, buf, items), &root| {
                feedback.check()?;
                stage.inc(1);
                paths
                    .iter()
                    .map(|p| {
                        reader
                            .subtree(root, p, buf, items)
                            .map_err(StatesError::from)
                    })
                    .collect::<Result<Vec<_>, _>>()
            },
        )
        .collect::<Result<_, StatesError>>()?;
    stage.finish();

    let mut by_state: HashMap<(usize, ObjectId), State> = HashMap::new();
    let mut seen: HashSet<ObjectId> = HashSet::new();
    for (i, trees) in at.iter().enumerate() {
        for (p, tree) in trees.iter().enumerate() {
            let Some(tree) = *tree else { continue };
            if seen.insert(tree) {
                feedback.check()?;
            }
            let (overlap, _) = summaries.summary(repo, tree)?;
            if overlap.shared == 0 {
                continue;
            }
            by_state
                .entry((p, tree))
                .and_modify(|s| {
                    s.last = i;
                    s.commits += 1;
                    if commits[i].tag.is_some() {
                        s.tags.push(i);
                    }
                })
                .or_insert_with(|| State {
                    path: paths[p].clone(),
                    tree,
                    overlap,
                    first: i,
                    last: i,
                    commits: 1,
                    tags: if commits[i].tag.is_some() {
                        vec![i]
                    } else {
                        Vec::new()
                    },
                });
        }
    }
    let mut states: Vec<State> = by_state.into_values().collect();
    // The order the file by file comparison ranks in, as far as blob ids
    // tell (`Match::rank`): a state holding more of the copy byte for
    // byte first; among those holding the same, a release before a
    // commit between releases, then the tighter set.
    let release = |s: &State| {
        s.tags.iter().any(|&i| {
            commits[i]
                .tag
                .as_deref()
                .is_some_and(|t| !super::is_prerelease(t))
        })
    };
    states.sort_by(|a, b| {
        b.overlap
            .holds(local_files, local_bytes)
            .cmp(&a.overlap.holds(local_files, local_bytes))
            .then(release(b).cmp(&release(a)))
            .then(a.overlap.tighter(&b.overlap, local_files))
            .then(a.first.cmp(&b.first))
            .then(a.path.cmp(&b.path))
    });
    Ok(Found {
        states,
        paths,
        trees_read: summaries.trees_read,
        probes: probes.len(),
    })
}

/// The directories where upstream keeps the local files: in each probed
/// commit (`probes`, positions in `roots`), the one overlapping them
/// best, and the one above it where the local paths line up
/// ([`aligned_parent`]).
fn find_paths(
    repo: &Repo,
    summaries: &mut Summaries<'_>,
    roots: &[ObjectId],
    probes: &[usize],
    local_paths: &HashMap<ObjectId, Vec<Vec<u8>>>,
    feedback: &Feedback,
) -> Result<Vec<Vec<u8>>, StatesError> {
    let mut paths: Vec<Vec<u8>> = Vec::new();
    let stage = feedback.stage("Finding the directory upstream", probes.len() as u64);
    for &i in probes {
        feedback.check()?;
        let (_, best) = summaries.summary(repo, roots[i])?;
        if let Some((path, _)) = best
            && !paths.contains(&path)
        {
            // The local paths may start higher up: `lib/x.c` for
            // upstream's `lib`, a copy of the root's `lib/` with its
            // license beside it. That directory is looked at too.
            let parent = aligned_parent(repo, roots[i], &path, local_paths, summaries.local)?;
            paths.push(path);
            if let Some(parent) = parent
                && !paths.contains(&parent)
            {
                paths.push(parent);
            }
        }
        stage.inc(1);
    }
    stage.finish();
    Ok(paths)
}

/// The local files, as the first pass sees them.
pub struct Local<'a> {
    /// Blob id to size.
    pub sizes: &'a HashMap<ObjectId, u64>,
    /// Blob id to the local paths holding it.
    pub paths: &'a HashMap<ObjectId, Vec<Vec<u8>>>,
    /// How many local files.
    pub files: u32,
}

/// The directory above `path` (in the tree `root`) where the local paths
/// line up with upstream's, when most of the shared bytes say so: local
/// `lib/common/mem.h` for upstream `lib`'s `common/mem.h` gives the
/// directory holding `lib`. `None` when the paths line up at `path`
/// itself, or nowhere above it.
fn aligned_parent(
    repo: &Repo,
    root: ObjectId,
    path: &[u8],
    local: &HashMap<ObjectId, Vec<Vec<u8>>>,
    sizes: &HashMap<ObjectId, u64>,
) -> Result<Option<Vec<u8>>, RepoError> {
    if path.is_empty() {
        return Ok(None);
    }
    let mut reader = repo.reader();
    let Some(tree) = reader.subtree(root, path, &mut Vec::new(), &mut Vec::new())? else {
        return Ok(None);
    };
    let mut votes: HashMap<&[u8], u64> = HashMap::new();
    let entries = repo.tree_files(tree)?;
    for e in &entries {
        let Some(paths) = local.get(&e.id) else {
            continue;
        };
        // The local size: a partial clone may lack the blob.
        let size = sizes.get(&e.id).copied().unwrap_or(0).max(1);
        for l in paths {
            let prefix: &[u8] = if *l == e.path {
                b""
            } else if l.len() > e.path.len() + 1
                && l.ends_with(&e.path)
                && l[l.len() - e.path.len() - 1] == b'/'
            {
                &l[..l.len() - e.path.len() - 1]
            } else {
                continue;
            };
            *votes.entry(prefix).or_default() += size;
        }
    }
    let Some((&prefix, &bytes)) = votes.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
    else {
        return Ok(None);
    };
    if prefix.is_empty() || bytes <= votes.get(&b""[..]).copied().unwrap_or(0) {
        return Ok(None);
    }
    let parent = if path == prefix {
        Vec::new()
    } else if path.len() > prefix.len()
        && path.ends_with(prefix)
        && path[path.len() - prefix.len() - 1] == b'/'
    {
        path[..path.len() - prefix.len() - 1].to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(parent))
}

/// At most [`PROBES`] indices spread evenly over `n`, the first and the
/// last included.
fn probe_indices(n: usize) -> Vec<usize> {
    if n <= PROBES {
        return (0..n).collect();
    }
    let mut v: Vec<usize> = (0..PROBES).map(|k| k * (n - 1) / (PROBES - 1)).collect();
    v.dedup();
    v
}

/// The error of the first pass, blob-id overlap (inside [`super::find_origin`]).
#[derive(Debug, thiserror::Error)]
pub enum StatesError {
    /// A commit or tree could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Ctrl-C.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_cover_both_ends() {
        assert_eq!(probe_indices(3), vec![0, 1, 2]);
        let p = probe_indices(1000);
        assert_eq!(p.len(), PROBES);
        assert_eq!(p[0], 0);
        assert_eq!(*p.last().unwrap(), 999);
    }

    #[test]
    fn jaccard_prefers_the_tighter_directory() {
        let sub = Overlap {
            files: 10,
            shared: 9,
            shared_bytes: 900,
        };
        let parent = Overlap {
            files: 400,
            shared: 10,
            shared_bytes: 1000,
        };
        assert!(sub.better_than(&parent, 10));
        assert!(!parent.better_than(&sub, 10));
    }
}
