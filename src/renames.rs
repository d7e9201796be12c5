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
//! destination against every source; here [`crate::candidates`] picks the
//! sources worth scoring from sizes and fingerprints, and only those are
//! scored, exactly as git scores them ([`crate::score`]). A destination that
//! none of its candidates pairs is then scored against every size-compatible
//! source, within a budget ([`Options::exhaustive_budget`]), because
//! scattered edits can hide a pair from window fingerprints. One whose best
//! candidate scores no more than a source left out plausibly could
//! ([`candidates::Candidates::left_out_score`]) is scored against the
//! sources that plausibly could: heavy edits put a file at noise distance
//! from its relatives, and the best of them may be among those left out. A
//! pair can still be missed where a destination was paired with a lesser
//! candidate while its best partner hid beyond what is plausible, or where
//! a destination's best is taken and git falls back to its second; the
//! agreement tests measure how often.
//!
//! git keeps a destination's best 4 in slots whose order depends on every
//! source it scored, including hopeless ones, and that order breaks ties
//! between equally scored sources. When a destination has such a tie among
//! its candidates, it is re-scored against every source to replay git's
//! slots exactly.
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

use std::collections::HashMap;

use gix::ObjectId;
use rayon::prelude::*;

use crate::candidates::{self, Item};
use crate::changes::{Change, ChangeKind};
use crate::progress::trace;
use crate::repo::{Entry, EntryKind};
use crate::score::{self, MAX_SCORE, Spans};

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
    /// Minimum score in [`MAX_SCORE`] units (git's -M<n>).
    pub min_score: u32,
    /// Pair empty files too (git's `--rename-empty`).
    pub rename_empty: bool,
    /// git's rename limit; 0 means none.
    pub limit: usize,
    /// How candidates are chosen.
    pub candidates: candidates::Options,
    /// At most this many extra pairs are scored for destinations that no
    /// fingerprint candidate paired (see [`detect`]).
    pub exhaustive_budget: usize,
    /// At most this many extra pairs are scored to replay git's slot order
    /// for destinations whose best candidates tie.
    pub replay_budget: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            detect: Detect::Renames,
            min_score: score::DEFAULT_MIN_SCORE,
            rename_empty: false,
            limit: 0,
            candidates: candidates::Options::default(),
            exhaustive_budget: DEFAULT_EXHAUSTIVE_BUDGET,
            replay_budget: std::env::var("GIT_SIMM_REPLAY_BUDGET")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_REPLAY_BUDGET),
        }
    }
}

/// Pairs scored exhaustively for unpaired destinations, at most: about a
/// second of exact scoring on two cores.
pub const DEFAULT_EXHAUSTIVE_BUDGET: usize = 2_000_000;

/// Source-destination pairs walked to replay tie-breaking, at most. A
/// replay reads every size-compatible source but scores only those that
/// could still enter a slot ([`replay_row`]): at 100,000 moved files, 243
/// rows of about 10,000 sources each replayed in 1.3 s.
pub const DEFAULT_REPLAY_BUDGET: usize = 4_000_000;

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
    /// R<score>
    Renamed,
    /// C<score>
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
    /// For R and C: git's score in [`MAX_SCORE`] units.
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
    /// Candidate pairs proposed by fingerprints and sizes.
    pub candidate_pairs: usize,
    /// Pairs scored exactly.
    pub scored_pairs: usize,
    /// Destinations whose row of git's matrix was replayed against every
    /// source because their pairing hinged on a tie.
    pub full_rescans: usize,
    /// Destinations whose pairing hinged on a tie that could not be
    /// replayed within the budget (ties then break by source order, which
    /// may differ from git).
    pub ties_unreplayed: usize,
    /// Destinations that their candidates did not pair (then scored
    /// against every size-compatible source), or paired no better than a
    /// source left out might (then against those that plausibly could).
    pub exhaustive_destinations: usize,
    /// Such destinations left unsearched because the exhaustive budget
    /// ran out (git would have searched them).
    pub exhaustive_skipped: usize,
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
    fn items(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<Item>>;
    /// Size of each blob: [`Content::items`] when only sizes are wanted,
    /// which an implementation may answer more cheaply.
    fn sizes(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<u64>> {
        Ok(self.items(ids)?.into_iter().map(|i| i.size).collect())
    }
    /// git's chunk histogram of each blob.
    fn spans(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<std::sync::Arc<Spans>>>;
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
    /// Index of its change (its place in the output).
    change: usize,
    /// git's `rename_used`: uses so far, plus one if the path survives.
    used: u32,
    unchanged: bool,
}

struct Dst {
    entry: Entry,
    change: usize,
    pair: Option<(usize, u32)>,
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
pub fn detect(
    changes: &[Change],
    opts: &Options,
    content: &mut impl Content,
) -> anyhow::Result<(Vec<Record>, Outcome)> {
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
                            change: i,
                            used: 0,
                            unchanged: false,
                        });
                    } else if want_copies {
                        srcs.push(Src {
                            entry: old.clone(),
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
            &mut outcome,
        )?;
    }
    Ok((write_back(changes, &mut srcs, &dsts), outcome))
}

fn record(srcs: &mut [Src], dsts: &mut [Dst], d: usize, s: usize, score: u32) {
    srcs[s].used += 1;
    dsts[d].pair = Some((s, score));
}

fn pair_up(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    opts: &Options,
    want_copies: bool,
    content: &mut impl Content,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
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
    if !want_copies {
        let min_basename = opts.min_score + (MAX_SCORE - opts.min_score) / 2;
        outcome.basename = basename_pass(srcs, dsts, &active, min_basename, content)?;
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
    trace("exact and basename passes");
    let matrix = inexact_matrix(srcs, dsts, &active, &remaining, opts, content, outcome)?;
    trace("matrix with tie replays");
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
fn basename_pass(
    srcs: &mut [Src],
    dsts: &mut [Dst],
    active: &[usize],
    min_score: u32,
    content: &mut impl Content,
) -> anyhow::Result<usize> {
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
    let scores = score_pairs(srcs, dsts, &pairs, min_score, content)?;
    let mut found = 0;
    for (&(s, d), score) in pairs.iter().zip(scores) {
        if score >= min_score && dsts[d].pair.is_none() {
            record(srcs, dsts, d, s, score);
            found += 1;
        }
    }
    Ok(found)
}

/// Sizes and fingerprints of regular files; a zero-sized placeholder for
/// anything else.
fn regular_items<'e>(
    entries: impl Iterator<Item = &'e Entry>,
    content: &mut impl Content,
) -> anyhow::Result<Vec<Item>> {
    let entries: Vec<&Entry> = entries.collect();
    let ids: Vec<ObjectId> = entries
        .iter()
        .filter(|e| is_regular(e.kind))
        .map(|e| e.id)
        .collect();
    let mut found = content.items(&ids)?.into_iter();
    Ok(entries
        .iter()
        .map(|e| {
            let none = Item {
                size: 0,
                fingerprint: None,
            };
            if is_regular(e.kind) {
                found.next().unwrap_or(none)
            } else {
                none
            }
        })
        .collect())
}

/// git's score of each (source, destination) pair, reading each blob once.
fn score_pairs(
    srcs: &[Src],
    dsts: &[Dst],
    pairs: &[(usize, usize)],
    min_score: u32,
    content: &mut impl Content,
) -> anyhow::Result<Vec<u32>> {
    let mut scores = vec![0; pairs.len()];
    // A blob takes part in many pairs: each is looked up and read once (at
    // 10,000 moved files, 213,000 ids were 6,600 blobs; sorting them to
    // drop repeats cost more than hashing).
    let mut wanted: gix::hashtable::HashSet<ObjectId> = Default::default();
    let mut todo = Vec::new();
    for (i, &(s, d)) in pairs.iter().enumerate() {
        let (a, b) = (&srcs[s].entry, &dsts[d].entry);
        if is_regular(a.kind) && is_regular(b.kind) {
            wanted.insert(a.id);
            wanted.insert(b.id);
            todo.push(i);
        }
    }
    if todo.is_empty() {
        return Ok(scores);
    }
    let mut wanted: Vec<ObjectId> = wanted.into_iter().collect();
    // The store answers sorted ids with one walk of its tables.
    wanted.sort_unstable();
    let items = content.items(&wanted)?;
    let size_of: gix::hashtable::HashMap<ObjectId, u64> = wanted
        .iter()
        .zip(&items)
        .map(|(id, item)| (*id, item.size))
        .collect();
    let size = |id: &ObjectId| size_of.get(id).copied().unwrap_or(0);
    // Size filter first: it needs no content.
    let mut need: gix::hashtable::HashSet<ObjectId> = Default::default();
    let mut keep = Vec::new();
    for &i in &todo {
        let (s, d) = pairs[i];
        let (a, b) = (size(&srcs[s].entry.id), size(&dsts[d].entry.id));
        if score::sizes_compatible(a, b, min_score) && b > 0 {
            keep.push(i);
            need.insert(srcs[s].entry.id);
            need.insert(dsts[d].entry.id);
        }
    }
    let need: Vec<ObjectId> = need.into_iter().collect();
    let spans = content.spans(&need)?;
    let index: gix::hashtable::HashMap<ObjectId, usize> =
        need.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    // One destination against all its sources at a time, its histogram
    // spread out once (`score::Dense`).
    keep.sort_by_key(|&i| (pairs[i].1, i));
    let groups: Vec<&[usize]> = keep.chunk_by(|&a, &b| pairs[a].1 == pairs[b].1).collect();
    let computed: Vec<Vec<(usize, u32)>> = groups
        .par_iter()
        .map_init(score::Dense::default, |dense, group| {
            let dst = &spans[index[&dsts[pairs[group[0]].1].entry.id]];
            dense.with(dst, |loaded| {
                group
                    .iter()
                    .map(|&i| {
                        let src = &spans[index[&srcs[pairs[i].0].entry.id]];
                        (i, loaded.score(src, min_score))
                    })
                    .collect()
            })
        })
        .collect();
    for (i, score) in computed.into_iter().flatten() {
        scores[i] = score;
    }
    Ok(scores)
}

/// What a destination's fingerprint candidates found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// No candidate reached the minimum score.
    Nothing,
    /// Some did, but no better than a source left out might.
    Unsure,
    /// Its best partner.
    Best,
}

/// The kept entries of git's matrix, in the order git's stable sort leaves
/// them: (score, same basename) descending, then destination order, then
/// slot order.
fn inexact_matrix(
    srcs: &[Src],
    dsts: &[Dst],
    active: &[usize],
    remaining: &[usize],
    opts: &Options,
    content: &mut impl Content,
    outcome: &mut Outcome,
) -> anyhow::Result<Vec<(usize, Scored)>> {
    let want_copies = matches!(opts.detect, Detect::Copies | Detect::CopiesHarder);
    // Only regular files are scored inexactly, and only their blobs may be
    // read: a submodule's commit is usually not in this repository at all.
    // Others get a zero size, which keeps them out of every size window.
    let src_items = regular_items(active.iter().map(|&s| &srcs[s].entry), content)?;
    let dst_items = regular_items(remaining.iter().map(|&d| &dsts[d].entry), content)?;
    let copts = candidates::Options {
        min_score: opts.min_score,
        ..opts.candidates
    };
    trace("fingerprints of sources and destinations");
    let search = candidates::Search::new(&src_items);
    let cands = search.nearest(&dst_items, &copts);
    trace("candidate search");
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (k, c) in cands.iter().enumerate() {
        pairs.extend(c.sources.iter().map(|&a| (active[a], remaining[k])));
    }
    outcome.candidate_pairs = pairs.len();
    let mut scores = score_pairs(srcs, dsts, &pairs, opts.min_score, content)?;
    trace("exact scores of candidates");

    // Destinations that no candidate paired may still have a partner whose
    // edits are scattered enough to hide it from the fingerprints (every
    // other line changed keeps half the lines but few 48-byte windows). So
    // may destinations whose best candidate scores no more than a source
    // left out plausibly could (`Candidates::left_out_score`): a heavily
    // edited file is about as far from its relatives as from unrelated
    // files, which of them made the nearest 32 is luck, and a better one
    // may be among the rest (a real miss: a 53% pair kept, git's 55% one
    // never scored). Score the unpaired against every size-compatible
    // source, then the unsettled against the sources that could plausibly
    // beat their best (`Search::plausibly_scoring`), within a budget so a
    // commit adding thousands of unrelated files stays fast.
    let mut best = vec![None::<u32>; remaining.len()];
    let mut next = scores.iter();
    for (k, c) in cands.iter().enumerate() {
        for &score in next.by_ref().take(c.sources.len()) {
            if score >= opts.min_score {
                best[k] = best[k].max(Some(score));
            }
        }
    }
    let found: Vec<Found> = best
        .iter()
        .zip(&cands)
        .map(|(best, c)| match best {
            None => Found::Nothing,
            Some(b) if *b <= c.left_out_score() => Found::Unsure,
            Some(_) => Found::Best,
        })
        .collect();
    let mut budget = opts.exhaustive_budget;
    let mut extra: Vec<(usize, usize)> = Vec::new();
    for pass in [Found::Nothing, Found::Unsure] {
        for (k, &d) in remaining.iter().enumerate() {
            if found[k] != pass || dst_items[k].size == 0 {
                continue;
            }
            let tried: std::collections::HashSet<usize> =
                cands[k].sources.iter().copied().collect();
            // A paired destination needs only the sources that could beat
            // or tie its best: far fewer than the whole size window.
            let all = match best[k] {
                Some(b) => search.plausibly_scoring(&dst_items[k], b),
                None => search.all_compatible(&dst_items[k], opts.min_score),
            };
            let untried: Vec<usize> = all.into_iter().filter(|a| !tried.contains(a)).collect();
            if untried.len() > budget {
                outcome.exhaustive_skipped += 1;
                continue;
            }
            budget -= untried.len();
            outcome.exhaustive_destinations += 1;
            extra.extend(untried.into_iter().map(|a| (active[a], d)));
        }
    }
    if !extra.is_empty() {
        scores.extend(score_pairs(srcs, dsts, &extra, opts.min_score, content)?);
        pairs.extend(extra);
    }
    outcome.scored_pairs = pairs.len();

    // Every pair at the minimum score and up, per destination, best first
    // and equals by source order. git keeps only the best 4 of each
    // destination; the rest are kept here to tell when that cut splits
    // equally scored sources.
    let mut full: HashMap<usize, Vec<Scored>> = HashMap::new();
    for (&(s, d), &score) in pairs.iter().zip(&scores) {
        if score >= opts.min_score {
            full.entry(d).or_default().push(Scored {
                score,
                same_name: basename_same(&srcs[s].entry.path, &dsts[d].entry.path),
                src: s,
            });
        }
    }
    for kept in full.values_mut() {
        kept.sort_by(|a, b| better(a, b).then(a.src.cmp(&b.src)));
    }
    trace("exhaustive search of unpaired destinations");

    // Ties. Among equally scored sources, git's choice follows the order of
    // its 4 candidate slots, which depends on every source it scored
    // before, in source order: only a replay of the whole row reproduces
    // it. A tie matters only where it decides something, which the
    // assignment itself shows, so: assign on a trial basis, replay the
    // destinations whose pairing hinged on a tie, assign again (a replayed
    // destination may take another source and so change what others get),
    // until none is left or the replay budget is spent. Replays of one
    // round are scored in one batch, so each blob is read and chunked once.
    let k_of: HashMap<usize, usize> = remaining.iter().enumerate().map(|(k, &d)| (d, k)).collect();
    let mut replayed: HashMap<usize, Vec<Scored>> = HashMap::new();
    let mut replay_budget = opts.replay_budget;
    let mut refused: std::collections::HashSet<usize> = std::collections::HashSet::new();
    loop {
        let matrix = sorted_matrix(remaining, &full, &replayed);
        let hinged = hinged_on_ties(
            &matrix,
            &full,
            &replayed,
            srcs,
            dsts,
            opts.min_score,
            want_copies,
        );
        let mut chosen = Vec::new();
        let mut window: Vec<usize> = Vec::new();
        for &d in &hinged {
            if refused.contains(&d) {
                continue;
            }
            let row = search.all_compatible(&dst_items[k_of[&d]], opts.min_score);
            if row.len() <= replay_budget {
                replay_budget -= row.len();
                window.extend(row);
                chosen.push(d);
            } else {
                // Asked once: the budget only shrinks.
                refused.insert(d);
            }
        }
        if chosen.is_empty() {
            outcome.ties_unreplayed = hinged.len();
            return Ok(matrix);
        }
        outcome.full_rescans += chosen.len();
        window.sort_unstable();
        window.dedup();
        let mut ids: Vec<ObjectId> = window.iter().map(|&a| srcs[active[a]].entry.id).collect();
        ids.extend(chosen.iter().map(|&d| dsts[d].entry.id));
        let spans: HashMap<ObjectId, std::sync::Arc<score::Spans>> =
            ids.iter().copied().zip(content.spans(&ids)?).collect();
        let rows: Vec<Vec<Scored>> = chosen
            .par_iter()
            .map_init(score::Dense::default, |dense, &d| {
                let Some(dst) = spans.get(&dsts[d].entry.id) else {
                    return Vec::new();
                };
                dense.with(dst, |loaded| {
                    let row = Row {
                        d,
                        item: &dst_items[k_of[&d]],
                        loaded,
                        known: full.get(&d).map_or(&[][..], |v| &v[..]),
                    };
                    replay_row(srcs, dsts, active, &src_items, &row, opts.min_score, |a| {
                        spans.get(&srcs[active[a]].entry.id).map(|s| &**s)
                    })
                })
            })
            .collect();
        replayed.extend(chosen.into_iter().zip(rows));
    }
}

/// git's matrix: each destination's 4 slots (its best 4, or the replayed
/// slots), sorted best first. The sort is stable, so equals keep
/// destination order, then slot order, as git's merge sort leaves them.
fn sorted_matrix(
    remaining: &[usize],
    full: &HashMap<usize, Vec<Scored>>,
    replayed: &HashMap<usize, Vec<Scored>>,
) -> Vec<(usize, Scored)> {
    let mut matrix: Vec<(usize, Scored)> = Vec::new();
    for &d in remaining {
        let slots = match (replayed.get(&d), full.get(&d)) {
            (Some(slots), _) => &slots[..],
            (None, Some(kept)) => &kept[..kept.len().min(4)],
            (None, None) => continue,
        };
        matrix.extend(slots.iter().map(|&sc| (d, sc)));
    }
    matrix.sort_by(|a, b| better(&a.1, &b.1));
    matrix
}

/// The destinations, not yet replayed, whose pairing under `matrix` may
/// differ from git's because of how equal scores were ordered, in the
/// order the assignment reached them. Walking the matrix as
/// [`find_renames`] does, a destination takes its first entry whose source
/// is free; that choice hinges on a tie when another entry of the same
/// score (and basename match) had a free source too (git may list that one
/// first), or when equal entries straddle the cut at 4 (git may have kept
/// a different one). A destination left unpaired hinges on a tie when
/// equal entries straddle the cut and one of them is free. With copies,
/// an unpaired destination then takes its first entry whatever its use,
/// so a tie for first place decides.
fn hinged_on_ties(
    matrix: &[(usize, Scored)],
    full: &HashMap<usize, Vec<Scored>>,
    replayed: &HashMap<usize, Vec<Scored>>,
    srcs: &[Src],
    dsts: &[Dst],
    min_score: u32,
    copies: bool,
) -> Vec<usize> {
    let mut used: Vec<bool> = srcs.iter().map(|s| s.used > 0).collect();
    let mut paired: Vec<bool> = dsts.iter().map(|d| d.pair.is_some()).collect();
    let mut flagged: Vec<bool> = vec![false; dsts.len()];
    let mut hinged: Vec<usize> = Vec::new();
    let same = |a: &Scored, b: &Scored| better(a, b).is_eq();
    // Equal entries straddle the cut at 4 when the 4th and 5th are equal.
    let straddles = |kept: &[Scored], at: &Scored| {
        kept.len() > 4 && same(&kept[3], &kept[4]) && same(&kept[3], at)
    };
    for &(d, sc) in matrix {
        if sc.score < min_score {
            break;
        }
        if paired[d] {
            continue;
        }
        let open = full
            .get(&d)
            .filter(|_| !replayed.contains_key(&d) && !flagged[d]);
        if used[sc.src] {
            // Passed over; but if equals straddle the cut here and one of
            // them is still free, git's 4 may hold that one instead. This
            // must be asked now: a later, weaker pair may take it.
            if let Some(kept) = open
                && straddles(kept, &sc)
                && kept.iter().any(|e| same(e, &sc) && !used[e.src])
            {
                flagged[d] = true;
                hinged.push(d);
            }
            continue;
        }
        if let Some(kept) = open {
            let free_equals = kept.iter().filter(|e| same(e, &sc) && !used[e.src]).count();
            if free_equals > 1 || straddles(kept, &sc) {
                flagged[d] = true;
                hinged.push(d);
            }
        }
        used[sc.src] = true;
        paired[d] = true;
    }
    if copies {
        let mut unpaired: Vec<(&usize, &Vec<Scored>)> = full
            .iter()
            .filter(|(d, _)| !paired[**d] && !flagged[**d] && !replayed.contains_key(*d))
            .collect();
        unpaired.sort_unstable_by_key(|(d, _)| **d);
        for (&d, kept) in unpaired {
            if kept.len() > 1 && same(&kept[0], &kept[1]) {
                hinged.push(d);
            }
        }
    }
    hinged
}

/// The destination a row of git's matrix is replayed for.
struct Row<'a> {
    d: usize,
    item: &'a Item,
    /// Its chunk histogram, loaded for scoring against many sources.
    loaded: &'a score::Loaded<'a>,
    /// Sources already scored at the minimum and up (its `full` list).
    known: &'a [Scored],
}

/// Replay git's `record_if_better()` for one destination against every
/// active source, in source order, and return its four slots in slot order
/// (only those at or above the minimum score matter afterwards).
///
/// git scores every source; so must a replay, since a source's exact score
/// decides which slot it takes or frees. But a source whose score cannot
/// beat the worst slot changes nothing: once the slots hold the
/// destination's relatives, a source is skipped when its score's ceiling
/// ([`score_ceiling`]) is no better than the worst slot. Scores known from
/// the candidate search are used as they are. Sources outside git's size
/// window score 0 without reading, as in git. `spans_of` gives the chunk
/// histogram of the source at a position of `active`.
fn replay_row<'s>(
    srcs: &[Src],
    dsts: &[Dst],
    active: &[usize],
    src_items: &[Item],
    row: &Row<'_>,
    min_score: u32,
    spans_of: impl Fn(usize) -> Option<&'s score::Spans>,
) -> Vec<Scored> {
    let mut slots: [Option<Scored>; 4] = [None; 4];
    // git's score_compare with empty slots sinking to the bottom: true when
    // `a` is worse than `b`.
    let worse = |a: &Option<Scored>, b: &Option<Scored>| match (a, b) {
        (None, Some(_)) => true,
        (None, None) | (Some(_), None) => false,
        (Some(a), Some(b)) => better(a, b).is_gt(),
    };
    let dst = row.item;
    let dst_path = &dsts[row.d].entry.path;
    let mut known: Vec<(usize, u32)> = row.known.iter().map(|k| (k.src, k.score)).collect();
    known.sort_unstable();
    let mut next_known = 0;
    for (a, &s) in active.iter().enumerate() {
        let src = &src_items[a];
        let same_name = basename_same(&srcs[s].entry.path, dst_path);
        let mut worst = 0;
        for i in 1..4 {
            if worse(&slots[i], &slots[worst]) {
                worst = i;
            }
        }
        let compatible =
            src.size > 0 && dst.size > 0 && score::sizes_compatible(src.size, dst.size, min_score);
        // `active` is in source order, so a cursor finds known scores.
        while known.get(next_known).is_some_and(|&(k, _)| k < s) {
            next_known += 1;
        }
        let known = known
            .get(next_known)
            .filter(|&&(k, _)| k == s)
            .map(|&(_, score)| score);
        let score = if !compatible {
            0
        } else if let Some(score) = known {
            score
        } else {
            if let Some(w) = &slots[worst] {
                let ceiling = Scored {
                    score: score_ceiling(src, dst),
                    same_name,
                    src: s,
                };
                if !better(&ceiling, w).is_lt() {
                    continue;
                }
            }
            spans_of(a).map_or(0, |spans| row.loaded.score(spans, min_score))
        };
        let candidate = Some(Scored {
            score,
            same_name,
            src: s,
        });
        if worse(&slots[worst], &candidate) {
            slots[worst] = candidate;
        }
    }
    slots
        .into_iter()
        .flatten()
        .filter(|s| s.score >= min_score)
        .collect()
}

/// An upper bound of the score of two files, for [`replay_row`]: at most
/// the smaller file is copied, and the score divides by the larger. Exact,
/// unlike anything a fingerprint could say (git counts lines as a bag, so
/// a file with its lines shuffled is a 100% copy at any distance); and in
/// rows full of near-duplicates, where replays happen, the slots soon hold
/// scores that rule out most sizes (a bound from the fingerprint distance
/// skipped no more at 100,000 files).
fn score_ceiling(a: &Item, b: &Item) -> u32 {
    let (small, large) = (a.size.min(b.size), a.size.max(b.size));
    let ceiling = u64::from(MAX_SCORE) * small / large.max(1);
    u32::try_from(ceiling).unwrap_or(MAX_SCORE)
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
