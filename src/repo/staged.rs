//! A tree and the index read together, using the index's cache-tree to
//! skip the directories it vouches for (what `git diff --cached` and
//! `git commit` trust too).

use gix::ObjectId;

use super::{
    Entry, EntryKind, IndexEntries, IndexRepr, Repo, RepoError, open_index, visit_index_entries,
    walk_tree, walk_tree_with,
};

/// A tree and the index, from [`Repo::staged`]. The tree's entries are
/// split: those under directories the index has identically are the
/// index's own (`same`), the rest are listed (`tree`).
#[derive(Clone, Debug, Default)]
pub struct Staged {
    /// Stage-0 entries of the index in path order, without intent-to-add
    /// entries, sparse directories expanded.
    pub index: IndexEntries,
    /// The tree's entries in path order, except those in `same`.
    pub tree: Vec<Entry>,
    /// Ranges of `index`, in order, that the tree has too: same paths,
    /// kinds and ids, and no other tree entry under their directories.
    pub same: Vec<std::ops::Range<usize>>,
}

impl Repo {
    /// A tree (HEAD's, for what is staged) and the index, read together:
    /// the index's cache-tree names the directories it has exactly as they
    /// were when last written as trees, and those of `tree` need not be read
    /// at all, which in a large repository is most of it. `tree` `None`
    /// (an unborn branch) is an empty tree. The index is read as
    /// [`Repo::index_entries`] reads it.
    pub fn staged(&self, tree: Option<ObjectId>) -> Result<Staged, RepoError> {
        let repo = self.local();
        let index = match open_index(&repo)? {
            // visit_index_entries' choice of entries, without copying them.
            Some(file) if !file.is_sparse() => {
                let mut listed = Vec::with_capacity(file.entries().len());
                for (i, entry) in file.entries().iter().enumerate() {
                    if entry.stage_raw() != 0 {
                        return Err(RepoError::Unmerged {
                            path: entry.path(&file).to_owned(),
                        });
                    }
                    if entry
                        .flags
                        .contains(gix::index::entry::Flags::INTENT_TO_ADD)
                    {
                        continue;
                    }
                    if let Some(kind) = EntryKind::from_index_mode(entry.mode) {
                        listed.push((i, kind));
                    }
                }
                IndexEntries(IndexRepr::File { file, listed })
            }
            Some(file) => {
                let mut entries = Vec::new();
                visit_index_entries(&repo, &file, false, |entry, flags, _, _| {
                    if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                        entries.push(entry);
                    }
                })?;
                IndexEntries(IndexRepr::Owned {
                    file: Some(file),
                    entries,
                })
            }
            None => IndexEntries::default(),
        };
        let mut staged = Staged {
            index,
            ..Staged::default()
        };
        let Some(tree) = tree else {
            return Ok(staged);
        };
        match staged.index.cache_tree() {
            Some(cache) => {
                let mut shortcut = Shortcut {
                    index: &staged.index,
                    exact_counts: !staged.index.is_sparse(),
                    same: Vec::new(),
                    cursor: 0,
                };
                walk_tree_with(
                    &repo.objects,
                    tree,
                    b"",
                    &mut staged.tree,
                    Some((&mut shortcut, cache)),
                )?;
                staged.same = shortcut.same;
            }
            None => walk_tree(&repo.objects, tree, b"", &mut staged.tree)?,
        }
        Ok(staged)
    }
}

/// The subtrees a tree walk need not read because the index has them: a
/// directory whose cache-tree node is valid and has the tree's id holds
/// exactly the index's entries under it (git trusts the same fact to write
/// commits and to skip trees in `diff-index --cached`).
pub(super) struct Shortcut<'a> {
    /// The index's entries (stage 0, sparse directories expanded), sorted.
    index: &'a IndexEntries,
    /// Whether a node's entry count must equal its range's length. In a
    /// sparse index a sparse directory counts once but stands for many
    /// entries, so there the ids alone decide.
    exact_counts: bool,
    /// Ranges of `index` that the walk skipped, in path order.
    same: Vec<std::ops::Range<usize>>,
    /// Where the next range can start: the walk proceeds in path order.
    cursor: usize,
}

impl Shortcut<'_> {
    /// Whether the tree `id` at `dir` (empty for the root, else ending in
    /// `/`) is the index's, per `node`; if so its range is recorded.
    pub(super) fn take(
        &mut self,
        node: &gix::index::extension::Tree,
        id: &ObjectId,
        dir: &[u8],
    ) -> bool {
        let Some(count) = node.num_entries else {
            return false;
        };
        if node.id != *id {
            return false;
        }
        // Ranges are taken in path order, mostly one right after another:
        // gallop from the last one rather than bisect the whole index,
        // where every probe is a cache miss.
        use crate::repo::changes::Listing;
        let index = self.index;
        let start = gallop(index.len(), self.cursor, |i| index.path(i) < dir);
        let under = |i: usize| i < index.len() && index.path(i).starts_with(dir);
        // The node's count says where the range ends; two probes confirm it.
        let end = match usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_add(start))
        {
            Some(end) if end > start && under(end - 1) && !under(end) => end,
            _ => gallop(index.len(), start, under),
        };
        // An empty range or a count that disagrees means a cache-tree that
        // does not describe this index: read the tree instead.
        if start == end || (self.exact_counts && usize::try_from(count) != Ok(end - start)) {
            return false;
        }
        self.same.push(start..end);
        self.cursor = end;
        true
    }
}

/// The first position in `from..len` where `pred` fails, for a `pred`
/// that holds on a prefix of that range and nowhere after: an exponential
/// search, cheap when the answer is near `from`.
fn gallop(len: usize, from: usize, pred: impl Fn(usize) -> bool) -> usize {
    let from = from.min(len);
    let mut step = 1;
    while from + step <= len && pred(from + step - 1) {
        step *= 2;
    }
    // pred holds before `lo` and fails at or before `hi`.
    let (mut lo, mut hi) = (from + step / 2, (from + step).min(len));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::git;

    #[test]
    fn gallop_finds_the_end_of_the_prefix() {
        for len in 0..40 {
            for end in 0..=len {
                for from in 0..=len + 1 {
                    let want = end.max(from.min(len));
                    assert_eq!(
                        gallop(len, from, |i| i < end),
                        want,
                        "len {len} end {end} from {from}"
                    );
                }
            }
        }
    }

    /// HEAD's tree through the cache-tree shortcut is HEAD's tree: the
    /// listed entries plus the index ranges it vouches for are exactly what
    /// `git ls-tree -r HEAD` lists, and the shortcut is taken where the
    /// cache-tree is valid (so the test would notice it never being used).
    #[test]
    fn staged_tree_equals_ls_tree_and_skips_what_the_cache_tree_vouches_for() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        for d in ["a", "a/deep", "b", "c"] {
            std::fs::create_dir_all(dir.join(d)).expect("mkdir");
            for f in 0..5 {
                std::fs::write(dir.join(format!("{d}/f{f}")), format!("{d} {f}\n")).expect("write");
            }
        }
        std::fs::write(dir.join("top"), "top\n").expect("write");
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "one"]);
        let repo = Repo::discover(dir).expect("open");
        let ls_tree = |rev: &str| -> Vec<(Vec<u8>, ObjectId)> {
            let out = git(
                dir,
                &["ls-tree", "-r", "-z", "--format=%(objectname) %(path)", rev],
            );
            let mut listed: Vec<(Vec<u8>, ObjectId)> = out
                .split(|&b| b == 0)
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (id, path) = l.split_at(40);
                    (path[1..].to_vec(), ObjectId::from_hex(id).expect("hex"))
                })
                .collect();
            listed.sort();
            listed
        };
        let rebuilt = |staged: &Staged| -> Vec<(Vec<u8>, ObjectId)> {
            let index = staged.index.to_vec();
            let mut all: Vec<(Vec<u8>, ObjectId)> =
                staged.tree.iter().map(|e| (e.path.clone(), e.id)).collect();
            for r in &staged.same {
                all.extend(index[r.clone()].iter().map(|e| (e.path.clone(), e.id)));
            }
            all.sort();
            all
        };
        let head = || repo.resolve_tree("HEAD").expect("HEAD");

        // Right after a commit the cache-tree is valid everywhere: nothing
        // of the tree need be read.
        let staged = repo.staged(Some(head())).expect("staged");
        assert_eq!(rebuilt(&staged), ls_tree("HEAD"));
        assert!(staged.tree.is_empty(), "{:?}", staged.tree.len());

        // Staging a change invalidates its directories (and their parents):
        // those are read from the tree, the rest still comes from the index.
        std::fs::write(dir.join("a/deep/f1"), "changed\n").expect("write");
        std::fs::write(dir.join("c/new"), "new\n").expect("write");
        // Named paths: `git add -A` invalidates the whole cache-tree.
        git(dir, &["add", "a/deep/f1", "c/new"]);
        let staged = repo.staged(Some(head())).expect("staged");
        assert_eq!(rebuilt(&staged), ls_tree("HEAD"));
        let listed: Vec<&[u8]> = staged.tree.iter().map(|e| e.path.as_slice()).collect();
        assert!(listed.contains(&&b"a/deep/f1"[..]), "{listed:?}");
        assert!(
            !listed.iter().any(|p| p.starts_with(b"b/")),
            "b/ is vouched for: {listed:?}"
        );
        assert!(!staged.same.is_empty());

        // Another tree than the one the cache-tree was written for: the
        // ids disagree, so nothing is taken on trust.
        git(dir, &["commit", "-q", "-m", "two"]);
        let first = repo.resolve_tree("HEAD~1").expect("HEAD~1");
        let staged = repo.staged(Some(first)).expect("staged");
        let want = ls_tree("HEAD~1");
        assert_eq!(rebuilt(&staged), want);
    }
}
