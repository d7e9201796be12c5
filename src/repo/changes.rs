//! The raw difference between two sides (trees, the index, the work tree):
//! which paths were added, deleted, modified or changed type, before any
//! rename detection. This is git's diff queue as `diff-tree` fills it.
//!
//! Both sides arrive sorted by path bytes, which for flattened trees is the
//! order git's tree walk produces, so one merge pass gives the changes in
//! the order git prints them.

use std::cmp::Ordering;
use std::ops::Range;

use gix::ObjectId;

use crate::repo::{Entry, EntryKind};

/// What happened to one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// Only on the new side.
    Added,
    /// Only on the old side.
    Deleted,
    /// On both sides with different content or executable bit.
    Modified,
    /// On both sides as different kinds of thing (file, symlink,
    /// submodule): git's `T`.
    TypeChanged,
    /// Identical on both sides (listed only when asked: copy sources for
    /// `--find-copies-harder`).
    Unchanged,
    /// In conflict in the index (git's `U`): never a destination, and a
    /// copy source only by the old side's version (`old`), as git's diff
    /// against the index fills that side alone.
    Unmerged,
}

/// One path's change.
#[derive(Clone, Debug)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// The old side's entry (None for additions).
    pub old: Option<Entry>,
    /// The new side's entry (None for deletions).
    pub new: Option<Entry>,
    /// The new side is a work-tree file whose stat data in the index are
    /// not up to date: git's diff compares it by content without knowing
    /// its object id (it shows the null id in `--raw`), so, unlike one it
    /// knows, an empty such file is not taken for the empty blob when
    /// rename detection leaves empty files out.
    pub stat_dirty: bool,
}

impl Change {
    /// The path this change is about (both sides have it).
    pub fn path(&self) -> &[u8] {
        self.new
            .as_ref()
            .or(self.old.as_ref())
            .map_or(&[][..], |e| e.path.as_slice())
    }
}

/// One side of a diff by position, in path order: a slice of entries, or
/// the index read in place ([`crate::repo::IndexEntries`]), which keeps a
/// large index from being copied into an [`Entry`] per file.
pub trait Listing {
    /// Number of entries.
    fn len(&self) -> usize;
    /// Path of entry `i`.
    fn path(&self, i: usize) -> &[u8];
    /// Kind of entry `i`.
    fn kind(&self, i: usize) -> EntryKind;
    /// Blob (or commit) id of entry `i`.
    fn id(&self, i: usize) -> ObjectId;
    /// Whether there are no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entry `i`, copied out.
    fn entry(&self, i: usize) -> Entry {
        Entry {
            path: self.path(i).to_vec(),
            kind: self.kind(i),
            id: self.id(i),
        }
    }
    /// The position of `path`, by binary search.
    fn position(&self, path: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.path(mid).cmp(path) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

impl Listing for [Entry] {
    fn len(&self) -> usize {
        <[Entry]>::len(self)
    }
    fn path(&self, i: usize) -> &[u8] {
        &self[i].path
    }
    fn kind(&self, i: usize) -> EntryKind {
        self[i].kind
    }
    fn id(&self, i: usize) -> ObjectId {
        self[i].id
    }
    fn entry(&self, i: usize) -> Entry {
        self[i].clone()
    }
}

/// Two lists of changes about different paths, each in path order, as one
/// list in path order.
pub fn merge(
    a: impl IntoIterator<Item = Change>,
    b: impl IntoIterator<Item = Change>,
) -> Vec<Change> {
    let mut b = b.into_iter().peekable();
    let mut out = Vec::new();
    for change in a {
        while let Some(earlier) = b.next_if(|c| c.path() < change.path()) {
            out.push(earlier);
        }
        out.push(change);
    }
    out.extend(b);
    out
}

/// git's notion of "the same type of thing": the file-type bits of the mode.
/// A regular file and an executable are the same type (chmod is `M`).
fn same_type(a: EntryKind, b: EntryKind) -> bool {
    let class = |k| match k {
        EntryKind::Regular | EntryKind::Executable => 0,
        EntryKind::Symlink => 1,
        EntryKind::Submodule => 2,
    };
    class(a) == class(b)
}

/// Changes from `old` to `new`, both sorted by path bytes, in path order.
pub fn diff(old: &[Entry], new: &[Entry], include_unchanged: bool) -> Vec<Change> {
    let mut out = Vec::new();
    diff_into(old, new, 0..new.len(), include_unchanged, &mut out, None);
    out
}

/// [`diff`] of two lists it takes apart: each entry moves into its change
/// instead of being copied (after a large move, tens of thousands of
/// paths allocated and the lists' freed).
pub fn diff_owned(old: Vec<Entry>, new: Vec<Entry>, include_unchanged: bool) -> Vec<Change> {
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    let mut old = old.into_iter().peekable();
    let mut new = new.into_iter().peekable();
    let change = |kind, old, new| Change {
        kind,
        old,
        new,
        stat_dirty: false,
    };
    loop {
        let order = match (old.peek(), new.peek()) {
            (Some(o), Some(n)) => o.path.cmp(&n.path),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match (
            order,
            old.next_if(|_| order != Ordering::Greater),
            new.next_if(|_| order != Ordering::Less),
        ) {
            (Ordering::Less, o, _) => out.push(change(ChangeKind::Deleted, o, None)),
            (Ordering::Greater, _, n) => out.push(change(ChangeKind::Added, None, n)),
            (Ordering::Equal, Some(o), Some(n)) => {
                let kind = classify(&o, n.kind, n.id);
                if kind != ChangeKind::Unchanged || include_unchanged {
                    out.push(change(kind, Some(o), Some(n)));
                }
            }
            // Both sides were peeked at: not reached.
            (Ordering::Equal, _, _) => break,
        }
    }
    out
}

/// What happened to a path both sides hold: `o` before, `kind` and `id`
/// after.
fn classify(o: &Entry, kind: EntryKind, id: ObjectId) -> ChangeKind {
    if !same_type(o.kind, kind) {
        ChangeKind::TypeChanged
    } else if o.id != id || o.kind != kind {
        ChangeKind::Modified
    } else {
        ChangeKind::Unchanged
    }
}

/// The changes from a tree to the index as [`crate::repo::Staged`] holds
/// them (the tree's entries outside `same`, the index, and the ranges of
/// the index the tree has identically), in path order, and the positions
/// in `new` of the entries that did not change (what [`diff`] would list
/// as [`ChangeKind::Unchanged`]), in order. Only the entries outside
/// `same` are compared: in a large tree with a small change, nearly none.
pub fn diff_staged(
    old: &[Entry],
    new: &(impl Listing + ?Sized),
    same: &[Range<usize>],
) -> (Vec<Change>, Vec<usize>) {
    let mut changes = Vec::new();
    let mut unchanged = Vec::new();
    let (mut i, mut j) = (0, 0);
    for range in same {
        if range.start >= new.len() {
            break;
        }
        // `old` has nothing under a range's directory, so its entries
        // before the range are those sorting before the range's first.
        let first = new.path(range.start);
        let k = i + old[i..].partition_point(|e| e.path.as_slice() < first);
        let before = range.start.max(j);
        diff_into(
            &old[i..k],
            new,
            j..before,
            false,
            &mut changes,
            Some(&mut unchanged),
        );
        let end = range.end.min(new.len()).max(before);
        unchanged.extend(before..end);
        i = k;
        j = end;
    }
    diff_into(
        &old[i..],
        new,
        j..new.len(),
        false,
        &mut changes,
        Some(&mut unchanged),
    );
    (changes, unchanged)
}

/// [`diff`] of `old` and the entries of `new` in `range`, appending to
/// `out`; the positions in `new` of unchanged entries go to `unchanged`.
fn diff_into(
    old: &[Entry],
    new: &(impl Listing + ?Sized),
    range: Range<usize>,
    include_unchanged: bool,
    out: &mut Vec<Change>,
    mut unchanged: Option<&mut Vec<usize>>,
) {
    let (mut i, mut j) = (0, range.start);
    while i < old.len() || j < range.end {
        let order = match (old.get(i), j < range.end) {
            (Some(o), true) => o.path.as_slice().cmp(new.path(j)),
            (Some(_), false) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                out.push(Change {
                    kind: ChangeKind::Deleted,
                    old: Some(old[i].clone()),
                    new: None,
                    stat_dirty: false,
                });
                i += 1;
            }
            Ordering::Greater => {
                out.push(Change {
                    kind: ChangeKind::Added,
                    old: None,
                    new: Some(new.entry(j)),
                    stat_dirty: false,
                });
                j += 1;
            }
            Ordering::Equal => {
                let o = &old[i];
                let change = classify(o, new.kind(j), new.id(j));
                if change == ChangeKind::Unchanged
                    && let Some(u) = unchanged.as_deref_mut()
                {
                    u.push(j);
                }
                if change != ChangeKind::Unchanged || include_unchanged {
                    out.push(Change {
                        kind: change,
                        old: Some(o.clone()),
                        new: Some(new.entry(j)),
                        stat_dirty: false,
                    });
                }
                i += 1;
                j += 1;
            }
        }
    }
}

/// Like [`diff`], with a new side (the index) that has `unmerged` paths in
/// conflict, sorted: each becomes one [`ChangeKind::Unmerged`] change in its
/// place, and the old side's entry there takes no other part. A conflicted
/// path the old side lacks gets the null id of `hash` (as `git diff --raw`
/// shows it).
pub fn diff_with_unmerged(
    old: Vec<Entry>,
    new: Vec<Entry>,
    unmerged: &[Vec<u8>],
    include_unchanged: bool,
    hash: gix::hash::Kind,
) -> Vec<Change> {
    if unmerged.is_empty() {
        return diff_owned(old, new, include_unchanged);
    }
    let conflicts: Vec<Change> = {
        let old_at: std::collections::HashMap<&[u8], &Entry> =
            old.iter().map(|e| (e.path.as_slice(), e)).collect();
        unmerged
            .iter()
            .map(|u| unmerged_change(u, &old_at, hash))
            .collect()
    };
    let conflicted: std::collections::HashSet<&[u8]> = unmerged.iter().map(Vec::as_slice).collect();
    let kept_old: Vec<Entry> = old
        .into_iter()
        .filter(|e| !conflicted.contains(e.path.as_slice()))
        .collect();
    merge(diff_owned(kept_old, new, include_unchanged), conflicts)
}

fn unmerged_change(
    path: &[u8],
    old_at: &std::collections::HashMap<&[u8], &Entry>,
    hash: gix::hash::Kind,
) -> Change {
    let old = old_at.get(path).map(|e| (*e).clone());
    let new = old.clone().or_else(|| {
        Some(Entry {
            path: path.to_vec(),
            kind: EntryKind::Regular,
            id: gix::ObjectId::null(hash),
        })
    });
    Change {
        kind: ChangeKind::Unmerged,
        old,
        new,
        stat_dirty: false,
    }
}

/// How `git diff` sees the work tree beside an old side: [`diff_with_unmerged`]
/// with the paths whose index stat data are stale (`stale`: git compares
/// them by content) treated as git's diff treats them.
///
/// git drops a stale file whose content is unchanged
/// (`diffcore_skip_stat_unmatch`) only when it may refresh the index
/// (`auto_refresh`, `diff.autoRefreshIndex`); otherwise it shows the file
/// as modified, and so takes it as a copy source for `-C`. A stale file's
/// id is unknown to git's diff (the null id), so a tree entry naming the
/// null id looks unchanged beside it (`show_modified`): not shown, but
/// queued under `--find-copies-harder` (`harder`), where git's content
/// check then fails to read the null object: [`super::RepoError::NullObject`].
pub fn diff_worktree(
    old: Vec<Entry>,
    new: Vec<Entry>,
    stale: &std::collections::HashSet<Vec<u8>>,
    unmerged: &[Vec<u8>],
    harder: bool,
    auto_refresh: bool,
    hash: gix::hash::Kind,
) -> Result<Vec<Change>, super::RepoError> {
    let stat_only_shown = !auto_refresh && !stale.is_empty();
    let mut changes = diff_with_unmerged(old, new, unmerged, harder || stat_only_shown, hash);
    if stale.is_empty() {
        return Ok(changes);
    }
    let null = ObjectId::null(hash);
    let null_named = |c: &Change| {
        stale.contains(c.path())
            && matches!((&c.old, &c.new), (Some(o), Some(n)) if o.id == null && o.kind == n.kind)
    };
    if let Some(c) = changes.iter().find(|c| null_named(c)) {
        if harder && auto_refresh {
            return Err(super::RepoError::NullObject { id: null });
        }
        let path = c.path().to_vec();
        changes.retain(|c| c.path() != path.as_slice() || !null_named(c));
    }
    changes.retain(|c| match c.kind {
        ChangeKind::Unchanged if stale.contains(c.path()) => stat_only_shown,
        ChangeKind::Unchanged => harder,
        _ => true,
    });
    for c in &mut changes {
        c.stat_dirty = c.new.is_some() && stale.contains(c.path());
        if c.kind == ChangeKind::Unchanged && c.stat_dirty {
            c.kind = ChangeKind::Modified;
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(path: &str, kind: EntryKind, id: u8) -> Entry {
        let mut bytes = [0u8; 20];
        bytes[0] = id;
        Entry {
            path: path.as_bytes().to_vec(),
            kind,
            id: ObjectId::from_bytes_or_panic(&bytes),
        }
    }

    /// Taking the lists apart gives what copying from them gives: random
    /// lists over a small set of paths (so that most are on both sides),
    /// every kind, with and without unchanged entries.
    #[test]
    fn diff_owned_is_diff() {
        use EntryKind::*;
        let kinds = [Regular, Executable, Symlink, Submodule];
        let mut rng = crate::testing::Rng(3);
        for round in 0..300 {
            let side = |rng: &mut crate::testing::Rng| {
                let mut v: Vec<Entry> = (0..rng.below(40))
                    .map(|_| {
                        let path = format!("d{}/f{}", rng.below(4), rng.below(12));
                        e(&path, kinds[rng.below(4)], rng.below(3) as u8)
                    })
                    .collect();
                v.sort_by(|a, b| a.path.cmp(&b.path));
                v.dedup_by(|a, b| a.path == b.path);
                v
            };
            let (old, new) = (side(&mut rng), side(&mut rng));
            let unchanged = round % 2 == 0;
            let plain = |c: Vec<Change>| -> Vec<_> {
                c.into_iter()
                    .map(|c| (c.kind, c.old, c.new, c.stat_dirty))
                    .collect()
            };
            assert_eq!(
                plain(diff_owned(old.clone(), new.clone(), unchanged)),
                plain(diff(&old, &new, unchanged)),
                "round {round}"
            );
        }
    }

    #[test]
    fn classifies_each_path() {
        use EntryKind::*;
        let old = [
            e("a", Regular, 1),
            e("b", Regular, 2),
            e("c", Regular, 3),
            e("d", Regular, 4),
            e("e", Regular, 5),
        ];
        let new = [
            e("b", Regular, 9),
            e("c", Symlink, 3),
            e("d", Executable, 4),
            e("e", Regular, 5),
            e("f", Regular, 6),
        ];
        let kinds: Vec<_> = diff(&old, &new, true).iter().map(|c| c.kind).collect();
        use ChangeKind as K;
        assert_eq!(
            kinds,
            [
                K::Deleted,
                K::Modified,
                K::TypeChanged,
                K::Modified,
                K::Unchanged,
                K::Added
            ]
        );
        assert_eq!(diff(&old, &new, false).len(), 5);
    }

    /// Splitting the old side into listed entries and ranges of the new
    /// side it has identically changes nothing but the work.
    #[test]
    fn diff_staged_agrees_with_diff() {
        use EntryKind::*;
        let old = [
            e("a", Regular, 1),
            e("b/x", Regular, 2),
            e("b/y", Regular, 3),
            e("c", Regular, 4),
            e("d/x", Regular, 5),
            e("d/y", Executable, 6),
            e("e", Regular, 7),
        ];
        let new = [
            e("a", Regular, 9),
            e("b/x", Regular, 2),
            e("b/y", Regular, 3),
            e("c", Regular, 4),
            e("c2", Regular, 8),
            e("d/x", Regular, 5),
            e("d/y", Executable, 6),
        ];
        let summary = |changes: &[Change]| -> Vec<(ChangeKind, Vec<u8>)> {
            changes
                .iter()
                .map(|c| (c.kind, c.path().to_vec()))
                .collect()
        };
        let full = diff(&old, &new, true);
        let expected_changes: Vec<Change> = full
            .iter()
            .filter(|c| c.kind != ChangeKind::Unchanged)
            .cloned()
            .collect();
        let expected_unchanged: Vec<Vec<u8>> = full
            .iter()
            .filter(|c| c.kind == ChangeKind::Unchanged)
            .map(|c| c.path().to_vec())
            .collect();
        // b/ and d/ identical on both sides, either, or neither.
        let (b, d) = (1..3, 5..7);
        let both = [b.clone(), d.clone()];
        let splits: [&[Range<usize>]; 4] = [
            &[],
            std::slice::from_ref(&b),
            std::slice::from_ref(&d),
            &both,
        ];
        for same in splits {
            let listed: Vec<Entry> = old
                .iter()
                .filter(|o| {
                    !same
                        .iter()
                        .any(|r| new[r.clone()].iter().any(|n| n.path == o.path))
                })
                .cloned()
                .collect();
            let (changes, unchanged) = diff_staged(&listed, &new[..], same);
            assert_eq!(summary(&changes), summary(&expected_changes), "{same:?}");
            let unchanged: Vec<Vec<u8>> = unchanged.iter().map(|&i| new[i].path.clone()).collect();
            assert_eq!(unchanged, expected_unchanged, "{same:?}");
        }
    }
}
