//! Rename and copy detection that gives git's answers without git's limits.
//!
//! The decisions follow git's `diffcore_rename_extended()` (diffcore-rename.c
//! at v2.47.3) step by step, so that the output of `git-simm renames` can be
//! compared with `git diff -M -l0 --name-status` line by line:
//!
//! 1. sources are deleted paths (plus modified ones with `-C`, plus all
//!    unchanged ones with `--find-copies-harder`), destinations are added
//!    paths;
//! 2. exact renames by object id, preferring unused sources and the same
//!    basename;
//! 3. without copy detection: a source and a destination whose basenames are
//!    unique on both sides pair up if they score halfway between the minimum
//!    and 100%;
//! 4. the inexact matrix: for each destination, the best 4 sources by score
//!    (then same basename); all kept pairs sorted by score, assigned
//!    greedily, a source renamed once (copies may reuse it);
//! 5. a source used several times: all but its last use are copies (C), and
//!    every use is a copy if the source path still exists.
//!
//! The one place where git-simm does less work is step 4: git scores every
//! destination against every source; here each destination is scored
//! against the sources its fingerprint finds nearest, and then against
//! every source that could still score as high as its 4th best (or the
//! minimum score), which a prefix index over git's chunk buckets proposes
//! without loss ([`crate::similarity::prefix`]). Every pair git would keep
//! is therefore scored, exactly as git scores it
//! ([`crate::similarity::score`]); see `matrix.rs`.
//!
//! git keeps a destination's best 4 in slots whose order depends on every
//! source it scored, including hopeless ones, and that order breaks ties
//! between equally scored sources. Where such a tie decides a pairing, the
//! destination's row is replayed in git's order, reading only the sources
//! that could still enter a slot (`ties.rs`).
//!
//! ### Deviations from git
//! - **No rename limit by default.** git gives up on inexact detection when
//!   destinations x sources exceeds `diff.renameLimit`^2 (1000^2 for diff);
//!   that is what this tool exists to avoid. An explicit limit is honoured
//!   the way git honours it.
//! - **Empty files are not paired by default.** git's diff pairs any deleted
//!   empty file with any added one as an exact rename; with many empty files
//!   (`__init__.py`, `.gitkeep`) those pairings are arbitrary. `--rename-empty`
//!   restores git's behaviour.
//! - Break detection (`-B`) is not implemented.

mod content;
mod matrix;
mod pairing;
pub mod splits;
#[cfg(test)]
mod tests;
mod ties;

use gix::ObjectId;

use crate::progress::{Feedback, Interrupted, is_interrupted};
use crate::repo::RepoError;
use crate::repo::changes::{Change, ChangeKind};
use crate::repo::{Entry, EntryKind};
use crate::similarity::compute::ComputeError;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Binary, Spans};
use crate::similarity::store::StoreError;

pub use content::RepoContent;
use matrix::{inexact_matrix, score_pairs};
use pairing::pair_up;

/// Which pairings to look for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detect {
    /// `--no-renames`: report the raw changes.
    Off,
    /// `-M`: renames only.
    Renames,
    /// `-C`: renames and copies from modified or deleted files.
    Copies,
    /// `--find-copies-harder`: copies from any file of the old side.
    CopiesHarder,
}

/// Options of [`detect`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// What to detect.
    pub detect: Detect,
    /// Minimum score in [`MAX_SCORE`](score::MAX_SCORE) units (git's `-M<n>`).
    pub min_score: u32,
    /// Pair empty files too (git's `--rename-empty`).
    pub rename_empty: bool,
    /// git's rename limit; 0 means none.
    pub limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            detect: Detect::Renames,
            min_score: score::DEFAULT_MIN_SCORE,
            rename_empty: false,
            limit: 0,
        }
    }
}

/// A status letter of `git diff --name-status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A
    Added,
    /// D
    Deleted,
    /// M
    Modified,
    /// T
    TypeChanged,
    /// `R<score>`
    Renamed,
    /// `C<score>`
    Copied,
    /// U: in conflict in the index.
    Unmerged,
}

impl Status {
    /// git's letter.
    pub fn letter(self) -> char {
        match self {
            Status::Added => 'A',
            Status::Deleted => 'D',
            Status::Modified => 'M',
            Status::TypeChanged => 'T',
            Status::Renamed => 'R',
            Status::Copied => 'C',
            Status::Unmerged => 'U',
        }
    }
}

/// One output line.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its status.
    pub status: Status,
    /// For R and C: git's score in [`MAX_SCORE`](score::MAX_SCORE) units.
    pub score: u32,
    /// The old side (None for A).
    pub old: Option<Entry>,
    /// The new side (None for D).
    pub new: Option<Entry>,
}

/// Counts of what [`detect`] did, so a partial answer is never silent.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Sources and destinations considered.
    pub sources: usize,
    /// Destinations considered.
    pub destinations: usize,
    /// Pairs found by object id.
    pub exact: usize,
    /// Pairs found by the unique-basename pass.
    pub basename: usize,
    /// Pairs found by the inexact matrix.
    pub inexact: usize,
    /// Pairs scored because fingerprints put the source among a
    /// destination's nearest.
    pub fingerprint_pairs: usize,
    /// Pairs scored because the bound could not rule them out: the
    /// source might score as high as the destination's 4th best.
    pub bound_pairs: usize,
    /// Pairs scored by the inexact step: the two above.
    pub scored_pairs: usize,
    /// Destinations whose row of git's matrix was replayed in git's order
    /// because their pairing hinged on equal scores.
    pub replayed_destinations: usize,
    /// Pairs scored during those replays (sources whose score could
    /// decide a slot).
    pub replay_scored_pairs: usize,
    /// When an explicit rename limit stopped inexact detection: the limit
    /// that would have been needed (git's advice).
    pub limit_needed: Option<usize>,
    /// An explicit limit degraded `--find-copies-harder` to `-C`.
    pub degraded_to_copies: bool,
}

/// Access to file contents that detection needs: sizes and fingerprints for
/// every file considered, and exact chunk histograms for the few it scores.
pub trait Content {
    /// Size and fingerprint of each blob.
    fn items(&mut self, ids: &[ObjectId]) -> Result<Vec<Sketch>, ContentError>;
    /// Size of each blob: [`Content::items`] when only sizes are wanted,
    /// which an implementation may answer more cheaply.
    fn sizes(&mut self, ids: &[ObjectId]) -> Result<Vec<u64>, ContentError> {
        Ok(self.items(ids)?.into_iter().map(|i| i.size).collect())
    }
    /// What the attributes of each entry's path say about text versus
    /// binary (git decides it per path, not per blob); [`Binary::Auto`],
    /// the content deciding, where there are no attributes.
    fn binary(&mut self, entries: &[&Entry]) -> Result<Vec<Binary>, ContentError> {
        Ok(vec![Binary::Auto; entries.len()])
    }
    /// git's chunk histogram of each blob, chunked as text or binary as
    /// its key says: one blob at two paths can have two.
    fn spans(&mut self, keys: &[SpanKey]) -> Result<Vec<std::sync::Arc<Spans>>, ContentError>;
    /// The blobs the next step will read: a provider that has to fetch
    /// blobs (a partial clone) fetches those it lacks now, in one batch,
    /// as git's rename detection prefetches. Detection announces exactly
    /// the blobs git would fetch at the same point. Does nothing unless
    /// implemented.
    fn prefetch(&mut self, ids: &[ObjectId]) -> Result<(), ContentError> {
        let _ = ids;
        Ok(())
    }
}

/// A chunk histogram's key: the blob, and what its path's attributes
/// decided ([`Content::binary`]).
pub type SpanKey = (ObjectId, Binary);

/// The error of a [`Content`] provider: a blob that could not be read
/// (the message names it), or fingerprints that could not be computed or
/// stored.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// A blob could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Fingerprints could not be computed or stored.
    #[error(transparent)]
    Fingerprints(#[from] ComputeError),
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The error returned by [`detect`]: reading the content of the blobs
/// compared failed, or the work was interrupted.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// The content provider failed.
    #[error(transparent)]
    Content(#[from] ContentError),
    /// The work was interrupted (the [`Feedback`] flag was set).
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
}

/// Whether `id` is the empty blob (of either hash kind). Asked for every
/// source, so it compares ids rather than formatting hex.
pub(crate) fn is_empty_blob(id: &ObjectId) -> bool {
    id.is_empty_blob()
}

fn is_regular(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::Regular | EntryKind::Executable)
}

fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// git's `basename_same()`.
fn basename_same(a: &[u8], b: &[u8]) -> bool {
    basename(a) == basename(b)
}

struct Src {
    entry: Entry,
    /// What its path's attributes say ([`Content::binary`]).
    binary: Binary,
    /// Index of its change (its place in the output).
    change: usize,
    /// git's `rename_used`: uses so far, plus one if the path survives.
    used: u32,
    unchanged: bool,
}

struct Dst {
    entry: Entry,
    /// What its path's attributes say ([`Content::binary`]).
    binary: Binary,
    change: usize,
    pair: Option<(usize, u32)>,
}

impl Src {
    fn key(&self) -> SpanKey {
        (self.entry.id, self.binary)
    }
}

impl Dst {
    fn key(&self) -> SpanKey {
        (self.entry.id, self.binary)
    }
}

/// One kept (destination, source) pair of the inexact matrix.
#[derive(Clone, Copy, Debug)]
struct Scored {
    score: u32,
    same_name: bool,
    src: usize,
}

/// git's `score_compare`: higher score first, then same basename.
fn better(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.score.cmp(&a.score).then(b.same_name.cmp(&a.same_name))
}

/// Detect renames (and copies) among `changes` (in path order) and return
/// the output records in git's order.
///
/// `feedback` is told when each step of the inexact search ends (its trace
/// events), and its flag stops the scoring between destinations (the
/// content provider, which reads the blobs, takes its own).
pub fn detect(
    changes: &[Change],
    opts: &Options,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<(Vec<Record>, Outcome), DetectError> {
    let mut outcome = Outcome::default();
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    let mut srcs: Vec<Src> = Vec::new();
    let mut dsts: Vec<Dst> = Vec::new();
    if opts.detect != Detect::Off {
        for (i, c) in changes.iter().enumerate() {
            match (c.kind, &c.old, &c.new) {
                // git leaves paths in conflict out of rename detection.
                (ChangeKind::Unmerged, _, _) => {}
                (ChangeKind::Added, _, Some(new))
                    if opts.rename_empty || !is_empty_blob(&new.id) =>
                {
                    dsts.push(Dst {
                        entry: new.clone(),
                        binary: Binary::Auto,
                        change: i,
                        pair: None,
                    });
                }
                (ChangeKind::Added, _, _) => {}
                (kind, Some(old), _) => {
                    if !opts.rename_empty && is_empty_blob(&old.id) {
                        continue;
                    }
                    if kind == ChangeKind::Deleted {
                        srcs.push(Src {
                            entry: old.clone(),
                            binary: Binary::Auto,
                            change: i,
                            used: 0,
                            unchanged: false,
                        });
                    } else if want_copies {
                        srcs.push(Src {
                            entry: old.clone(),
                            binary: Binary::Auto,
                            change: i,
                            used: 1,
                            unchanged: kind == ChangeKind::Unchanged,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    outcome.sources = srcs.len();
    outcome.destinations = dsts.len();
    if !srcs.is_empty() && !dsts.is_empty() {
        pair_up(
            &mut srcs,
            &mut dsts,
            opts,
            want_copies,
            content,
            feedback,
            &mut outcome,
        )
        .map_err(|e| match e {
            // The provider noticed it: one way to say it.
            DetectError::Content(c) if is_interrupted(&c) => Interrupted.into(),
            e => e,
        })?;
    }
    Ok((write_back(changes, &mut srcs, &dsts), outcome))
}

/// Ask the content provider what the attributes of the paths that may
/// still be scored say: regular files, sources still in play (`active`),
/// destinations not yet paired. After the exact step that is often a
/// small part of them, and each lookup walks the attribute stack.
fn set_binary(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    active: &[usize],
    content: &mut impl Content,
) -> Result<(), DetectError> {
    let wanted_src = |s: &Src| is_regular(s.entry.kind);
    let wanted_dst = |d: &Dst| d.pair.is_none() && is_regular(d.entry.kind);
    let entries: Vec<&Entry> = active
        .iter()
        .map(|&s| &srcs[s])
        .filter(|s| wanted_src(s))
        .map(|s| &s.entry)
        .chain(dsts.iter().filter(|d| wanted_dst(d)).map(|d| &d.entry))
        .collect();
    let mut found = content.binary(&entries)?.into_iter();
    for &s in active {
        if wanted_src(&srcs[s]) {
            srcs[s].binary = found.next().unwrap_or_default();
        }
    }
    for d in dsts.iter_mut().filter(|d| wanted_dst(d)) {
        d.binary = found.next().unwrap_or_default();
    }
    Ok(())
}

fn record(srcs: &mut [Src], dsts: &mut [Dst], d: usize, s: usize, score: u32) {
    srcs[s].used += 1;
    dsts[d].pair = Some((s, score));
}

/// Build the output in git's queue order, deciding R versus C as git's
/// `diff_resolve_rename_copy()` does.
fn write_back(changes: &[Change], srcs: &mut [Src], dsts: &[Dst]) -> Vec<Record> {
    let mut src_of_change: Vec<Option<usize>> = vec![None; changes.len()];
    for (i, s) in srcs.iter().enumerate() {
        src_of_change[s.change] = Some(i);
    }
    let mut dst_of_change: Vec<Option<usize>> = vec![None; changes.len()];
    for (i, d) in dsts.iter().enumerate() {
        dst_of_change[d.change] = Some(i);
    }
    // Deletions swallowed by a rename are decided before any use is counted
    // down, as in git (diffcore_rename writes back before
    // diff_resolve_rename_copy runs).
    let swallowed: Vec<bool> = srcs.iter().map(|s| s.used > 0).collect();
    let mut out = Vec::with_capacity(changes.len());
    for (i, c) in changes.iter().enumerate() {
        match c.kind {
            ChangeKind::Added => {
                if let Some(d) = dst_of_change[i]
                    && let Some((s, score)) = dsts[d].pair
                {
                    srcs[s].used -= 1;
                    let status = if srcs[s].used > 0 {
                        Status::Copied
                    } else {
                        Status::Renamed
                    };
                    out.push(Record {
                        status,
                        score,
                        old: Some(srcs[s].entry.clone()),
                        new: c.new.clone(),
                    });
                    continue;
                }
                out.push(Record {
                    status: Status::Added,
                    score: 0,
                    old: None,
                    new: c.new.clone(),
                });
            }
            ChangeKind::Deleted => {
                let used = src_of_change[i].is_some_and(|s| swallowed[s]);
                if !used {
                    out.push(Record {
                        status: Status::Deleted,
                        score: 0,
                        old: c.old.clone(),
                        new: None,
                    });
                }
            }
            ChangeKind::Modified | ChangeKind::TypeChanged => out.push(Record {
                status: if c.kind == ChangeKind::Modified {
                    Status::Modified
                } else {
                    Status::TypeChanged
                },
                score: 0,
                old: c.old.clone(),
                new: c.new.clone(),
            }),
            ChangeKind::Unmerged => out.push(Record {
                status: Status::Unmerged,
                score: 0,
                old: None,
                new: c.new.clone(),
            }),
            ChangeKind::Unchanged => {}
        }
    }
    out
}
