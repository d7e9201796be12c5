//! git's break detection (`-B[<n>][/<m>]`, diffcore-break.c at v2.47.3):
//! a modification that rewrote its file is split into a deletion and an
//! addition before rename detection, so that either half can pair with
//! another path, and the halves nobody paired are joined again afterwards
//! (`diffcore_merge_broken`), reported as a rewrite (`M` with a score) when
//! enough of the old content went.
//!
//! What is broken, as `should_break()` decides it:
//! - only in-place changes between two blobs (a submodule is never broken);
//! - a change between a regular file and something else (a symlink)
//!   always, with a rewrite score of 100%, whatever the sizes;
//! - otherwise nothing when the larger side is under
//!   [`MINIMUM_BREAK_SIZE`] bytes or the old side is empty; then the sides
//!   are counted as the rename score counts them (git's chunk histograms:
//!   `copied` bytes of the old side kept, `added` bytes of the new side
//!   new), and the pair breaks when the removed share of the old side
//!   (`1 - copied / old size`, the rewrite score) exceeds `n`, or when the
//!   edit (`removed + added`) reaches `n` of the larger side; but not
//!   when the removed share is over `n` by less than one unit of the
//!   score (so that its truncated score is not) and the added bytes are
//!   under a twentieth of both the removed and the kept ones: git's last
//!   exception, "removed a lot without adding new material", which the
//!   first rule leaves only that sliver to decide.
//!
//! A broken pair whose rewrite score is under `m` gets score 0: its halves
//! are only there for rename and copy detection to take, and if nobody
//! does they come back as a plain `M`. The rest of `-B` lives where git
//! has it: the halves' part in rename detection in `super::detect`, the
//! joining and git's letters in `write_back`.

use gix::ObjectId;

use super::{Content, DetectError, Pair, SpanKey, Src, is_regular};
use crate::repo::EntryKind;
use crate::repo::changes::{Change, ChangeKind};
use crate::similarity::score::{self, MAX_SCORE, Spans};

/// git's `MINIMUM_BREAK_SIZE`: a pair whose larger side is smaller than
/// this is never broken (unless its type changed).
pub const MINIMUM_BREAK_SIZE: u64 = 400;

/// git's `DEFAULT_BREAK_SCORE`: `-B` breaks at 50% of edit.
pub const DEFAULT_BREAK_SCORE: u32 = 30000;

/// git's `DEFAULT_MERGE_SCORE`: halves nobody paired are joined back into
/// a plain modification unless 60% of the old side went.
pub const DEFAULT_MERGE_SCORE: u32 = 36000;

/// The two numbers of `-B<n>/<m>`, in [`MAX_SCORE`] units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Breaks {
    /// `n`: how much edit breaks a modification.
    pub break_score: u32,
    /// `m`: how much of the old side must be gone for unpaired halves to
    /// be reported as a rewrite rather than a plain modification.
    pub merge_score: u32,
}

impl Default for Breaks {
    fn default() -> Self {
        Breaks {
            break_score: DEFAULT_BREAK_SCORE,
            merge_score: DEFAULT_MERGE_SCORE,
        }
    }
}

impl Breaks {
    /// Parse the value of `-B` / `--break-rewrites=` as git does
    /// (`diff_opt_break_rewrites`): `[<n>][/<m>]`, each number in `-M`'s
    /// syntax ([`score::parse_rename_score`]), a missing or zero one
    /// meaning its default. `-B100%` can never be exceeded, so it breaks
    /// only by the edit rule.
    ///
    /// # Errors
    ///
    /// [`BreakParseError`] when anything but `/<m>` follows `<n>`, or
    /// anything follows `<m>`: git's "break-rewrites expects `<n>/<m>` form".
    pub fn parse(arg: &str) -> Result<Breaks, BreakParseError> {
        let bad = || BreakParseError {
            input: arg.to_owned(),
        };
        let (n, m) = match arg.split_once('/') {
            Some((n, m)) => (n, Some(m)),
            None => (arg, None),
        };
        let number = |s: &str| score::parse_rename_score(s).map_err(|_| bad());
        let n = number(n)?;
        let m = match m {
            Some(m) => number(m)?,
            None => 0,
        };
        let or = |v: u32, default: u32| if v == 0 { default } else { v };
        Ok(Breaks {
            break_score: or(n, DEFAULT_BREAK_SCORE),
            merge_score: or(m, DEFAULT_MERGE_SCORE),
        })
    }
}

/// The error of [`Breaks::parse`].
#[derive(Debug, thiserror::Error)]
#[error("break-rewrites expects <n>/<m> form, not '{input}'")]
pub struct BreakParseError {
    /// The value as given.
    pub input: String,
}

/// What git's `should_break()` decides for one pair, given the sizes of
/// its two sides and git's counts of them (`diffcore_count_changes`: the
/// old side's bytes kept, the new side's bytes added): `Some(score)` to
/// break it, the score being the share of the old side removed (before
/// [`Breaks::merge_score`] is applied), `None` to keep it whole.
///
/// git computes with `MAX_SCORE` as a double; every comparison here is
/// the same one in exact integers, and the score the same truncation.
pub fn should_break(
    src_size: u64,
    dst_size: u64,
    copied: u64,
    added: u64,
    break_score: u32,
) -> Option<u32> {
    let max_size = src_size.max(dst_size);
    if max_size < MINIMUM_BREAK_SIZE || src_size == 0 {
        return None;
    }
    // git's sanity clamps.
    let src_copied = copied.min(src_size);
    let literal_added = if dst_size < added.saturating_add(src_copied) {
        dst_size.saturating_sub(src_copied)
    } else {
        added
    };
    let src_removed = u128::from(src_size - src_copied);
    let (max, src, brk) = (
        u128::from(MAX_SCORE),
        u128::from(src_size),
        u128::from(break_score),
    );
    // src_removed <= src_size, so this is at most MAX_SCORE.
    let merge_score = u32::try_from(src_removed * max / src).unwrap_or(MAX_SCORE);
    if merge_score > break_score {
        return Some(merge_score);
    }
    let delta = src_removed + u128::from(literal_added);
    if delta * max < brk * u128::from(max_size) {
        return None;
    }
    let added20 = u128::from(literal_added) * 20;
    if src * brk < src_removed * max && added20 < src_removed && added20 < u128::from(src_copied) {
        return None;
    }
    Some(merge_score)
}

/// git's `diffcore_break()` over `changes`: for each change, `Some(score)`
/// when it is broken (the score 0 when under [`Breaks::merge_score`]),
/// `None` otherwise; empty when nothing was.
///
/// In a partial clone git fetches, the first time a pair it must count
/// lacks a blob, every blob of the whole diff in one batch
/// (`diff_queued_diff_prefetch`); so does this, through the provider.
pub(super) fn find(
    changes: &[Change],
    breaks: &Breaks,
    content: &mut impl Content,
) -> Result<Vec<Option<u32>>, DetectError> {
    let mut broken: Vec<Option<u32>> = vec![None; changes.len()];
    let mut counted: Vec<usize> = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let (Some(old), Some(new)) = (&c.old, &c.new) else {
            continue;
        };
        let blob = |k: EntryKind| k != EntryKind::Submodule;
        if !matches!(c.kind, ChangeKind::Modified | ChangeKind::TypeChanged)
            || !blob(old.kind)
            || !blob(new.kind)
        {
            continue;
        }
        if is_regular(old.kind) != is_regular(new.kind) {
            broken[i] = Some(MAX_SCORE);
        } else if old.id != new.id {
            counted.push(i);
        }
    }
    if !counted.is_empty() {
        let needed: Vec<ObjectId> = counted
            .iter()
            .flat_map(|&i| [&changes[i].old, &changes[i].new])
            .filter_map(|e| e.as_ref().map(|e| e.id))
            .collect();
        if content.lacks_any(&needed)? {
            content.prefetch(&queue_blobs(changes))?;
        }
        let sizes = content.sizes(&needed)?;
        let counted: Vec<(usize, u64, u64)> = counted
            .iter()
            .zip(sizes.chunks(2))
            .filter_map(|(&i, s)| match *s {
                [a, b] if a.max(b) >= MINIMUM_BREAK_SIZE && a > 0 => Some((i, a, b)),
                _ => None,
            })
            .collect();
        let entries: Vec<&crate::repo::Entry> = counted
            .iter()
            .flat_map(|&(i, _, _)| [&changes[i].old, &changes[i].new])
            .filter_map(Option::as_ref)
            .collect();
        let binary = content.binary(&entries)?;
        let keys: Vec<SpanKey> = entries
            .iter()
            .zip(&binary)
            .map(|(e, b)| (e.id, *b))
            .collect();
        let spans = content.spans(&keys)?;
        for (&(i, src_size, dst_size), pair) in counted.iter().zip(spans.chunks(2)) {
            let [src, dst] = pair else { continue };
            let (copied, added) = counts(src, dst);
            broken[i] = should_break(src_size, dst_size, copied, added, breaks.break_score);
        }
    }
    for score in broken.iter_mut().flatten() {
        if *score < breaks.merge_score {
            *score = 0;
        }
    }
    if broken.iter().all(Option::is_none) {
        broken.clear();
    }
    Ok(broken)
}

/// git's `diffcore_count_changes()`: the bytes of `src` kept in `dst`
/// (the rename score's `copied`) and the bytes of `dst` that are new (its
/// weight beyond what it shares with `src`).
pub fn counts(src: &Spans, dst: &Spans) -> (u64, u64) {
    let copied = score::copied(src, dst);
    let total: u64 = dst.weights().map(|(_, w)| u64::from(w)).sum();
    (copied, total - copied)
}

/// Every blob of the diff, as `diff_queued_diff_prefetch` lists them:
/// both sides of each change, but submodules' commits and the side a
/// conflict has no blob for.
fn queue_blobs(changes: &[Change]) -> Vec<ObjectId> {
    changes
        .iter()
        .flat_map(|c| {
            let new = if c.kind == ChangeKind::Unmerged {
                None
            } else {
                c.new.as_ref()
            };
            [c.old.as_ref(), new]
        })
        .flatten()
        .filter(|e| e.kind != EntryKind::Submodule)
        .map(|e| e.id)
        .collect()
}

/// The changes with each broken one split into its two halves in git's
/// order (the deletion, then the addition, where the change was), and
/// the score of each entry of the result (`None` for those not broken).
pub(super) fn split(changes: &[Change], broken: &[Option<u32>]) -> (Vec<Change>, Vec<Option<u32>>) {
    let mut queue = Vec::with_capacity(changes.len() + broken.len());
    let mut scores = Vec::with_capacity(queue.capacity());
    for (c, b) in changes.iter().zip(broken) {
        match b {
            Some(score) => {
                queue.push(Change {
                    kind: ChangeKind::Deleted,
                    old: c.old.clone(),
                    new: None,
                    stat_dirty: false,
                });
                queue.push(Change {
                    kind: ChangeKind::Added,
                    old: None,
                    new: c.new.clone(),
                    stat_dirty: c.stat_dirty,
                });
                scores.push(Some(*score));
                scores.push(Some(*score));
            }
            None => {
                queue.push(c.clone());
                scores.push(None);
            }
        }
    }
    (queue, scores)
}

/// git's `diffcore_merge_broken()`: each broken deletion whose addition
/// half survived too is joined with it, where the deletion was, into one
/// modification with the pair's rewrite score; the old side counts one
/// more use (`rename_used`), so paths that copied it print as copies.
/// Halves whose partner went (paired elsewhere) stay as they are.
pub(super) fn merge(pairs: Vec<Pair>, srcs: &mut [Src]) -> Vec<Pair> {
    fn path(p: &Pair) -> Option<&[u8]> {
        p.old.as_ref().or(p.new.as_ref()).map(|e| e.path.as_slice())
    }
    // git considers only pairs whose two sides have one path: the halves,
    // and a destination paired with its own old side.
    let joinable = |p: &Pair| {
        p.broken
            && match (&p.renamed_from, &p.old, &p.new) {
                (None, _, _) => true,
                (Some(_), Some(a), Some(b)) => a.path == b.path,
                _ => false,
            }
    };
    // Without -B nothing is broken, and the queue stays as it is (moving
    // every pair through the slots below costs a large move milliseconds).
    if !pairs.iter().any(|p| p.broken) {
        return pairs;
    }
    let mut slots: Vec<Option<Pair>> = pairs.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        let Some(p) = slots[i].take() else {
            continue;
        };
        // A deletion half comes before its addition half in the queue.
        let peer = (joinable(&p) && p.kind == ChangeKind::Deleted)
            .then(|| {
                (i + 1..slots.len()).find(|&j| {
                    slots[j].as_ref().is_some_and(|q| {
                        joinable(q) && q.kind == ChangeKind::Added && path(q) == path(&p)
                    })
                })
            })
            .flatten();
        let Some(j) = peer else {
            out.push(p);
            continue;
        };
        let Some(c) = slots[j].take() else {
            out.push(p);
            continue;
        };
        if let Some(s) = p.src {
            srcs[s].used += 1;
        }
        let kind = match (&p.old, &c.new) {
            (Some(a), Some(b)) if is_regular(a.kind) != is_regular(b.kind) => {
                ChangeKind::TypeChanged
            }
            _ => ChangeKind::Modified,
        };
        out.push(Pair {
            kind,
            old: p.old,
            new: c.new,
            score: p.score,
            broken: false,
            renamed_from: None,
            src: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_git() {
        let b = |s: &str| {
            Breaks::parse(s)
                .map(|b| (b.break_score, b.merge_score))
                .ok()
        };
        assert_eq!(b(""), Some((30000, 36000)));
        assert_eq!(b("0"), Some((30000, 36000)));
        assert_eq!(b("20%"), Some((12000, 36000)));
        assert_eq!(b("/70%"), Some((30000, 42000)));
        assert_eq!(b("5/9"), Some((30000, 54000)));
        assert_eq!(b("/"), Some((30000, 36000)));
        assert_eq!(b("100%/100%"), Some((60000, 60000)));
        assert_eq!(b("50x"), None);
        assert_eq!(b("50/60/70"), None);
        assert_eq!(b("50%%"), None);
    }

    #[test]
    fn should_break_follows_gits_rules() {
        // Too small, or an empty source.
        assert_eq!(should_break(399, 300, 0, 300, 30000), None);
        assert_eq!(should_break(0, 1000, 0, 1000, 30000), None);
        // All replaced: removed 100%.
        assert_eq!(should_break(1000, 1000, 0, 1000, 30000), Some(60000));
        // Half kept exactly: not over 50%, and the edit (500 + 500 of
        // 1000) reaches 50%: broken by the second rule.
        assert_eq!(should_break(1000, 1000, 500, 500, 30000), Some(30000));
        // 40% removed, nothing added: the edit is 40%, under 50%.
        assert_eq!(should_break(1000, 600, 600, 0, 30000), None);
        // 40% removed, 200 added: edit 60% of 1000, broken.
        assert_eq!(should_break(1000, 800, 600, 200, 30000), Some(24000));
        // Much appended: 10% removed, 2000 added: edit 2100 of 2900.
        assert_eq!(should_break(1000, 2900, 900, 2000, 30000), Some(6000));
        // The last exception: the removed share is over n, but its
        // truncated score is not (15001 of 30001 removed is 30000.99),
        // and hardly anything was added: not broken. With more added, it
        // is.
        assert_eq!(should_break(30001, 15000, 15000, 0, 30000), None);
        assert_eq!(should_break(30001, 16000, 15000, 1000, 30000), Some(30000));
        // Clamps: more copied than the source has.
        assert_eq!(should_break(500, 500, 900, 0, 30000), None);
    }
}
