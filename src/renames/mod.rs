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
//!
//! ### Break detection
//! With [`Options::breaks`] (git's `-B`), [`breaks`] splits rewritten
//! files into a deletion and an addition before the steps above, as
//! `diffcore_break()` does, and the halves take part in them as git lets
//! them: a deletion half is a source (already used when its rewrite score
//! is under the merge score, so only a copy can take it), an addition
//! half a destination, and once any half is a source git neither culls
//! used sources nor runs the basename pass (`break_idx` in
//! diffcore-rename.c). A deletion half disappears when its addition half
//! was paired; halves nobody paired are joined again
//! (`diffcore_merge_broken()`), and a destination paired with the old
//! side of its own path is a modification, both carrying the rewrite
//! score, which git prints after `M` or `T` (`M100`).
//!
//! git finds a broken deletion's addition half by the number of
//! destinations registered before it, so where that half is no
//! destination (a file emptied, without `--rename-empty`) git looks at the
//! next destination instead: when that one was paired the deletion
//! disappears and the addition prints alone with its score (`A100`). That
//! is reproduced. Where no destination follows, git 2.47 stops with "BUG:
//! tracking failed somehow" or reads past its table; here the deletion
//! stays and the halves are joined again (`M100`). git stops the same way
//! when the deletion half is the empty one (an empty file turned into a
//! symlink), which is no source; here it goes when its own addition half
//! was paired, as git's comment there says it should and as git does with
//! `--rename-empty`.

pub mod breaks;
mod content;
mod matrix;
mod pairing;
mod sides;
pub mod splits;
#[cfg(test)]
mod tests;
mod ties;

use gix::ObjectId;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted, is_interrupted};
use crate::repo::RepoError;
use crate::repo::changes::{Change, ChangeKind};
use crate::repo::{Entry, EntryKind};
use crate::similarity::compute::ComputeError;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Binary, Spans};
use crate::similarity::store::StoreError;

pub use breaks::Breaks;
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
    /// Break rewritten files first (git's `-B`); `None` for none.
    pub breaks: Option<Breaks>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            detect: Detect::Renames,
            min_score: score::DEFAULT_MIN_SCORE,
            rename_empty: false,
            limit: 0,
            breaks: None,
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
    /// git's score in [`MAX_SCORE`](score::MAX_SCORE) units: for R and C
    /// the similarity; with break detection, for a rewrite (M or T, rarely
    /// A) the share of the old content removed; 0 when git prints none.
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
    /// Pairs proposed because fingerprints put the source among a
    /// destination's nearest.
    pub fingerprint_pairs: usize,
    /// Pairs proposed because the bound could not rule them out: the
    /// source might score as high as the destination's best (or, once
    /// its row is widened, its 4th best).
    pub bound_pairs: usize,
    /// Pairs of the two above that the bins' ceiling
    /// ([`crate::similarity::score::Coarse`]) ruled out without scoring.
    pub ceiling_ruled_out: usize,
    /// Pairs scored by the inexact step: the proposed ones not ruled out.
    pub scored_pairs: usize,
    /// Destinations searched again for git's 4 slots because the
    /// assignment passed over every source of their best score (or a tie
    /// for it decided their pairing).
    pub widened_destinations: usize,
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
    /// Modifications broken into a deletion and an addition (`-B`).
    pub broken: usize,
}

/// Access to file contents that detection needs: sizes and fingerprints for
/// every file considered, and exact chunk histograms for the few it scores.
pub trait Content {
    /// Size and fingerprint of each blob.
    fn items(&mut self, ids: &[ObjectId]) -> Result<Vec<Sketch>, ContentError>;
    /// Size of each blob and a fingerprint that orders the candidate
    /// search nearest first. Any 256-bit fingerprint whose distance
    /// tracks git's score serves: the bound makes the answer exact
    /// whatever it says. [`Content::items`] unless implemented.
    fn search_items(&mut self, ids: &[ObjectId]) -> Result<Vec<Sketch>, ContentError> {
        self.items(ids)
    }
    /// Size of each blob: [`Content::items`] when only sizes are wanted,
    /// which an implementation may answer more cheaply.
    fn sizes(&mut self, ids: &[ObjectId]) -> Result<Vec<u64>, ContentError> {
        Ok(self.items(ids)?.into_iter().map(|i| i.size).collect())
    }
    /// Size of each blob without reading its content where that can be
    /// avoided (from the store, or the object's header): for sources that
    /// may never need reading. [`Content::sizes`] unless implemented.
    fn header_sizes(&mut self, ids: &[ObjectId]) -> Result<Vec<u64>, ContentError> {
        self.sizes(ids)
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
    /// Whether reading any of `ids` needs a fetch first (a partial clone
    /// lacking it): git fetches a batch of its own choosing on the first
    /// such read. `false` unless implemented.
    fn lacks_any(&mut self, ids: &[ObjectId]) -> Result<bool, ContentError> {
        let _ = ids;
        Ok(false)
    }
}

/// A chunk histogram's key: the blob, and what its path's attributes
/// decided ([`Content::binary`]).
pub type SpanKey = (ObjectId, Binary);

/// A map by [`SpanKey`]: a blob id is already uniformly random, so its
/// first bytes are the hash ([`KeyHasher`]); SipHash over all of it was a
/// few percent of a warm run after a large move.
pub type SpanMap<V> = std::collections::HashMap<SpanKey, V, BuildHasherDefault<KeyHasher>>;

/// A set of [`SpanKey`]s, hashed as [`SpanMap`] hashes them.
pub type SpanSet = std::collections::HashSet<SpanKey, BuildHasherDefault<KeyHasher>>;

/// A map keyed by a position in the sources or destinations, hashed as
/// [`SpanMap`] is (SipHash over every row was a tenth of the tie step
/// after a large move).
pub(super) type RowMap<V> = std::collections::HashMap<usize, V, BuildHasherDefault<KeyHasher>>;

/// The hasher of [`SpanMap`] and of the maps keyed by a position in the
/// sources or destinations: each write (the id's bytes, then the
/// decision's discriminant; or a position) folds its first eight bytes in
/// and mixes with a multiply. The table indexes by the low bits, which
/// the multiply leaves a function of the key's low bits alone: an id's
/// first bytes (random: an id is a hash), or a position (distinct low
/// bits for consecutive positions). Not for keys an adversary picks bit
/// by bit: object ids are hashes, positions are ours.
#[derive(Default)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut word = [0u8; 8];
        let n = bytes.len().min(8);
        word[..n].copy_from_slice(&bytes[..n]);
        self.write_u64(u64::from_le_bytes(word));
    }

    // Integers as their value, not as bytes in the machine's order: on a
    // big-endian machine a small position's bytes would put it in the top
    // bits, and every position in one bucket.
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

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

struct Src<'q> {
    /// Its entry in the queue: borrowed, since a large move registers
    /// tens of thousands of paths that a copy would allocate again.
    entry: &'q Entry,
    /// What its path's attributes say ([`Content::binary`]).
    binary: Binary,
    /// Index of its change (its place in the output).
    change: usize,
    /// git's `rename_used`: uses so far, plus one if the path survives.
    used: u32,
    unchanged: bool,
    /// For the deletion half of a broken pair: the destination git takes
    /// for its addition half, the number of destinations registered
    /// before it (git's `break_idx`).
    break_dst: Option<usize>,
    /// git's `rename_src[].score`: the rewrite score of a broken pair's
    /// deletion half, which a destination at the same path takes.
    break_score: u32,
}

struct Dst<'q> {
    entry: &'q Entry,
    /// What its path's attributes say ([`Content::binary`]).
    binary: Binary,
    change: usize,
    pair: Option<(usize, u32)>,
}

impl Src<'_> {
    fn key(&self) -> SpanKey {
        (self.entry.id, self.binary)
    }
}

impl Dst<'_> {
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
    // git's diffcore_break, then rename detection over its queue.
    let broken = match &opts.breaks {
        Some(b) => breaks::find(changes, b, content).map_err(unify_interrupt)?,
        None => Vec::new(),
    };
    outcome.broken = broken.iter().flatten().count();
    let (split, scores) = if broken.is_empty() {
        (None, Vec::new())
    } else {
        let (queue, scores) = breaks::split(changes, &broken);
        (Some(queue), scores)
    };
    let queue: &[Change] = split.as_deref().unwrap_or(changes);
    let (mut srcs, mut dsts) = register(queue, &scores, opts);
    outcome.sources = srcs.len();
    outcome.destinations = dsts.len();
    if !srcs.is_empty() && !dsts.is_empty() {
        let break_mode = srcs.iter().any(|s| s.break_dst.is_some());
        pair_up(
            &mut srcs,
            &mut dsts,
            opts,
            break_mode,
            content,
            feedback,
            &mut outcome,
        )
        .map_err(unify_interrupt)?;
    }
    Ok((write_back(queue, &scores, &mut srcs, &dsts), outcome))
}

/// An interruption the provider noticed, said one way.
fn unify_interrupt(e: DetectError) -> DetectError {
    match e {
        DetectError::Content(c) if is_interrupted(&c) => Interrupted.into(),
        e => e,
    }
}

/// Sources and destinations as git registers them from its queue
/// (`diffcore_rename_extended`'s setup): additions are destinations;
/// deletions are sources, a broken one already used when its score is 0
/// (it "did not really want to get broken"); with copies, every other
/// path of the old side is a source that stays, an unmerged one from the
/// tree side (`do_oneway_diff` fills only that side). Empty files take
/// no part unless `rename_empty`, but for a work-tree file git knows by
/// content only ([`Change::stat_dirty`]), whose id git has not computed.
fn register<'q>(
    queue: &'q [Change],
    scores: &[Option<u32>],
    opts: &Options,
) -> (Vec<Src<'q>>, Vec<Dst<'q>>) {
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    if opts.detect == Detect::Off {
        return (Vec::new(), Vec::new());
    }
    // Sized for the queue: grown in steps, a large move's lists are
    // copied again and again into fresh memory.
    let additions = queue.iter().filter(|c| c.kind == ChangeKind::Added).count();
    let mut srcs: Vec<Src> = Vec::with_capacity(if want_copies {
        queue.len()
    } else {
        queue.len() - additions
    });
    let mut dsts: Vec<Dst> = Vec::with_capacity(additions);
    let src = |entry: &'q Entry, change: usize| Src {
        entry,
        binary: Binary::Auto,
        change,
        used: 0,
        unchanged: false,
        break_dst: None,
        break_score: 0,
    };
    for (i, c) in queue.iter().enumerate() {
        let broken = scores.get(i).copied().flatten();
        match (c.kind, &c.old, &c.new) {
            (ChangeKind::Added, _, Some(new))
                if opts.rename_empty || c.stat_dirty || !is_empty_blob(&new.id) =>
            {
                dsts.push(Dst {
                    entry: new,
                    binary: Binary::Auto,
                    change: i,
                    pair: None,
                });
            }
            // Additions left out, and conflicts without a tree side.
            (_, None, _) => {}
            (_, Some(old), _) if !opts.rename_empty && is_empty_blob(&old.id) => {}
            (ChangeKind::Deleted, Some(old), _) => srcs.push(Src {
                used: u32::from(broken == Some(0)),
                break_dst: broken.map(|_| dsts.len()),
                break_score: broken.unwrap_or(0),
                ..src(old, i)
            }),
            (kind, Some(old), _) if want_copies => srcs.push(Src {
                used: 1,
                unchanged: kind == ChangeKind::Unchanged,
                ..src(old, i)
            }),
            _ => {}
        }
    }
    (srcs, dsts)
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
        .map(|s| s.entry)
        .chain(dsts.iter().filter(|d| wanted_dst(d)).map(|d| d.entry))
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

/// git's `record_rename_pair()`: a destination paired with the old side
/// of its own path (a broken pair's halves) takes the break score.
fn record(srcs: &mut [Src], dsts: &mut [Dst], d: usize, s: usize, score: u32) {
    srcs[s].used += 1;
    let score = if srcs[s].entry.path == dsts[d].entry.path {
        srcs[s].break_score
    } else {
        score
    };
    dsts[d].pair = Some((s, score));
}

/// One pair of git's queue after rename detection has written back
/// (`diffcore_rename_extended`'s cleanup), before broken halves are joined
/// and letters decided.
#[derive(Debug)]
struct Pair {
    kind: ChangeKind,
    old: Option<Entry>,
    new: Option<Entry>,
    /// git's `score`: a pairing's similarity, a broken half's rewrite.
    score: u32,
    /// One half of a broken pair (git's `broken_pair`).
    broken: bool,
    /// For a destination paired: its source.
    renamed_from: Option<usize>,
    /// For a deletion registered as a source: that source.
    src: Option<usize>,
}

/// Changes from which [`write_back`] builds its pairs on every thread.
const WRITE_BACK_SPLIT_FROM: usize = 4096;

/// Build the output in git's queue order: rename detection's write-back,
/// broken halves joined again ([`breaks::merge`]), and the letters as
/// git's `diff_resolve_rename_copy()` decides them.
fn write_back(
    queue: &[Change],
    scores: &[Option<u32>],
    srcs: &mut [Src],
    dsts: &[Dst],
) -> Vec<Record> {
    let mut src_of_change: Vec<Option<usize>> = vec![None; queue.len()];
    for (i, s) in srcs.iter().enumerate() {
        src_of_change[s.change] = Some(i);
    }
    let mut dst_of_change: Vec<Option<usize>> = vec![None; queue.len()];
    for (i, d) in dsts.iter().enumerate() {
        dst_of_change[d.change] = Some(i);
    }
    // Deletions swallowed by a rename are decided before any use is counted
    // down, as in git (diffcore_rename writes back before
    // diff_resolve_rename_copy runs).
    let swallowed: Vec<bool> = srcs.iter().map(|s| s.used > 0).collect();
    let shared: &[Src] = srcs;
    let one = |(i, c): (usize, &Change)| -> Option<Pair> {
        let broken = scores.get(i).copied().flatten();
        match c.kind {
            ChangeKind::Unchanged => return None,
            // A deletion a rename swallowed leaves the queue: most of a
            // large move's, not worth copying first.
            ChangeKind::Deleted => {
                let gone = match src_of_change[i] {
                    // A broken deletion goes when the destination git
                    // tracks it by was paired.
                    Some(s) if broken.is_some() => shared[s]
                        .break_dst
                        .and_then(|d| dsts.get(d))
                        .is_some_and(|d| d.pair.is_some()),
                    Some(s) => swallowed[s],
                    // A broken deletion that is no source (its old side
                    // empty, without --rename-empty) has no destination
                    // git tracks it by, and git 2.47 stops ("BUG: tracking
                    // failed somehow"); what git means to do, and does with
                    // --rename-empty, is to drop it when its addition half
                    // (next in the queue) was paired.
                    None if broken.is_some() => dst_of_change
                        .get(i + 1)
                        .copied()
                        .flatten()
                        .is_some_and(|d| dsts[d].pair.is_some()),
                    None => false,
                };
                if gone {
                    return None;
                }
            }
            _ => {}
        }
        let pair = Pair {
            kind: c.kind,
            old: c.old.clone(),
            new: c.new.clone(),
            score: broken.unwrap_or(0),
            broken: broken.is_some(),
            renamed_from: None,
            src: src_of_change[i],
        };
        Some(match dst_of_change[i].and_then(|d| dsts[d].pair) {
            Some((s, score)) if c.kind == ChangeKind::Added => Pair {
                old: Some(shared[s].entry.clone()),
                score,
                renamed_from: Some(s),
                ..pair
            },
            _ => pair,
        })
    };
    // Copying the entries that stay, each path allocated anew, is most of
    // the work: after a large move, milliseconds on one thread.
    let pairs: Vec<Pair> = if queue.len() >= WRITE_BACK_SPLIT_FROM {
        queue.par_iter().enumerate().filter_map(one).collect()
    } else {
        queue.iter().enumerate().filter_map(one).collect()
    };
    let pairs = breaks::merge(pairs, srcs);
    let mut out = Vec::with_capacity(pairs.len());
    for p in pairs {
        let status = match (p.kind, p.renamed_from) {
            (_, Some(s)) => {
                let same_path = matches!((&p.old, &p.new), (Some(a), Some(b)) if a.path == b.path);
                if same_path {
                    Status::Modified
                } else {
                    srcs[s].used -= 1;
                    if srcs[s].used > 0 {
                        Status::Copied
                    } else {
                        Status::Renamed
                    }
                }
            }
            (ChangeKind::Added, None) => Status::Added,
            (ChangeKind::Deleted, None) => Status::Deleted,
            (ChangeKind::Modified, None) => Status::Modified,
            (ChangeKind::TypeChanged, None) => Status::TypeChanged,
            (ChangeKind::Unmerged, None) => Status::Unmerged,
            (ChangeKind::Unchanged, None) => continue,
        };
        let (old, new) = match status {
            Status::Unmerged => (None, p.new),
            _ => (p.old, p.new),
        };
        out.push(Record {
            status,
            score: p.score,
            old,
            new,
        });
    }
    out
}
