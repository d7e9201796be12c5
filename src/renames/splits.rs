//! Splits and merges, found after git's pairing and never changing it.
//!
//! A file split into parts scores under 50% against each part (git's score
//! divides by the larger file), so git reports a delete and adds; merged
//! files likewise. Containment ([`crate::similarity::containment`]) sees
//! them: a **split** is a source (a deleted path, or one renamed away) whose
//! bytes are found, together, in two or more new paths (added, or the new
//! side of a rename or copy) to at least [`Options::min`] of its size while
//! no one of them holds that much (that would be a rename); a **merge** is
//! a new path made that way of two or more sources.
//!
//! A split also happens out of a file that stays (git 2.43 moved the
//! low-level half of `hex.c` into `hex-ll.c`; `hex.c` remained): with
//! [`Options::stays`], a modified file's old version is a whole too, its new
//! version the first part, and the new paths the others. It is reported
//! when the new version alone holds less than [`Options::min`] of the old
//! one (else little moved out) and, with at least one new path, the parts
//! hold that much together.
//!
//! A file git paired (a rename or copy) with another is a part only if more
//! of it is in the whole than in its partner. A part must come mostly from the whole ([`Options::min_part`]: a large
//! file sharing a tenth of its lines with the whole is not one of its
//! parts). Parts are chosen greedily, the one adding most first, while each adds at
//! least [`Options::min_gain`] of the whole: a license header or a common
//! import line shared with an unrelated new file adds nothing once a real
//! part has it. Containments are exact (the chunk histograms git's score
//! uses), and the pairs to consider come from an index of the histograms'
//! buckets: bounds on the bytes two files share rule out, without
//! comparing them, every pair that could not pass.

use std::collections::HashMap;
use std::sync::Arc;

use crate::renames::{Content, ContentError, Record, SpanKey, Status};
use crate::repo::{Entry, EntryKind};
use crate::similarity::containment::{Cover, Sample, SampleIndex, contained};
use crate::similarity::score::{MAX_SCORE, Spans};

/// Chunks held by more files than this are bounded rather than walked when
/// looking for parts.
const MAX_HOLDERS: usize = 50;

/// Options of [`find`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Share of the whole (a split's source, a merge's destination) its
    /// parts must hold together, in [`MAX_SCORE`] units (80% by default).
    pub min: u32,
    /// Share of the whole each part must add, in [`MAX_SCORE`] units (5%).
    pub min_gain: u32,
    /// Share of each part that must come from the whole, in [`MAX_SCORE`]
    /// units (70%): a part is a file made mostly of the whole, not a file
    /// that happens to share its license header or boilerplate.
    pub min_part: u32,
    /// Also splits out of a modified file (see the module documentation).
    pub stays: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min: MAX_SCORE / 5 * 4,
            min_gain: MAX_SCORE / 20,
            min_part: MAX_SCORE / 10 * 7,
            stays: true,
        }
    }
}

/// One part of a split or merge.
#[derive(Clone, Debug)]
pub struct Part {
    /// The part's path and blob.
    pub entry: Entry,
    /// How much of the whole is in this part ([`MAX_SCORE`] units).
    pub whole_in_part: u32,
    /// How much of this part is in the whole.
    pub part_in_whole: u32,
}

/// A split (one source, several new paths) or a merge (several sources,
/// one new path).
#[derive(Clone, Debug)]
pub struct Spread {
    /// The source split, or the destination merged into.
    pub whole: Entry,
    /// The destinations of a split, the sources of a merge, the part adding
    /// most first.
    pub parts: Vec<Part>,
    /// How much of the whole the parts hold together ([`MAX_SCORE`] units).
    pub covered: u32,
    /// A split out of a file that stays: `whole` is its old version and
    /// the first part its new version, at the same path.
    pub stays: bool,
}

/// Splits and merges among `records` (git's pairing, already made): see
/// the module documentation.
pub fn find(
    records: &[Record],
    opts: &Options,
    content: &mut dyn Content,
) -> Result<(Vec<Spread>, Vec<Spread>), ContentError> {
    let is_file = |e: &&Entry| matches!(e.kind, EntryKind::Regular | EntryKind::Executable);
    // A pair git scored at `min` or more is a rename or copy, not a split
    // or merge: its source holds that much of the destination's larger
    // size, so a single file holds `min` of the whole. Leaving such pairs
    // out of both sides keeps a large move (thousands of exact renames)
    // from costing anything here.
    let records: Vec<&Record> = records
        .iter()
        .filter(|r| !(matches!(r.status, Status::Renamed | Status::Copied) && r.score >= opts.min))
        .collect();
    // Each side's files, with the file git paired them with, if any.
    let (sources, src_partner): (Vec<&Entry>, Vec<Option<&[u8]>>) = records
        .iter()
        .filter(|r| matches!(r.status, Status::Deleted | Status::Renamed))
        .filter_map(|r| Some((r.old.as_ref().filter(is_file)?, partner(&r.new))))
        .unzip();
    let (dests, dst_partner): (Vec<&Entry>, Vec<Option<&[u8]>>) = records
        .iter()
        .filter(|r| matches!(r.status, Status::Added | Status::Renamed | Status::Copied))
        .filter_map(|r| Some((r.new.as_ref().filter(is_file)?, partner(&r.old))))
        .unzip();
    // Modified files: the old version a whole, the new one its first part.
    let (olds, news): (Vec<&Entry>, Vec<&Entry>) = if opts.stays {
        records
            .iter()
            .filter(|r| r.status == Status::Modified)
            .filter_map(|r| {
                Some((
                    r.old.as_ref().filter(is_file)?,
                    r.new.as_ref().filter(is_file)?,
                ))
            })
            .unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    if dests.is_empty() || (sources.is_empty() && olds.is_empty()) {
        return Ok((Vec::new(), Vec::new()));
    }
    let src_spans = spans_of(&sources, content)?;
    let dst_spans = spans_of(&dests, content)?;
    let dst_samples = samples(&dst_spans);
    let to_dests = Side {
        entries: &dests,
        paired: &dst_partner,
        spans: &dst_spans,
        index: SampleIndex::new(&dst_samples),
    };
    let mut splits = spreads(
        &sources,
        &src_spans,
        &to_dests,
        &partners(&sources, &src_spans),
        opts,
    );
    if !olds.is_empty() {
        splits.extend(stayed(
            &olds, &news, &to_dests, &sources, &src_spans, opts, content,
        )?);
    }
    let merges = if sources.is_empty() {
        Vec::new()
    } else {
        let src_samples = samples(&src_spans);
        let to_sources = Side {
            entries: &sources,
            paired: &src_partner,
            spans: &src_spans,
            index: SampleIndex::new(&src_samples),
        };
        spreads(
            &dests,
            &dst_spans,
            &to_sources,
            &partners(&dests, &dst_spans),
            opts,
        )
    };
    Ok((splits, merges))
}

/// Splits out of modified files: each old version a whole, its new version
/// the part that stays. Only old versions some new path could be a part of
/// have their new version read.
fn stayed(
    olds: &[&Entry],
    news: &[&Entry],
    others: &Side<'_>,
    sources: &[&Entry],
    src_spans: &[Arc<Spans>],
    opts: &Options,
    content: &mut dyn Content,
) -> Result<Vec<Spread>, ContentError> {
    let old_spans = spans_of(olds, content)?;
    let partner_spans = partners(sources, src_spans);
    let hopeful: Vec<usize> = (0..olds.len())
        .filter(|&i| !candidates(olds[i], &old_spans[i], others, &partner_spans, opts).is_empty())
        .collect();
    if hopeful.is_empty() {
        return Ok(Vec::new());
    }
    let kept: Vec<&Entry> = hopeful.iter().map(|&i| news[i]).collect();
    let new_spans = spans_of(&kept, content)?;
    let mut found = Vec::new();
    for (&i, (new, new_spans)) in hopeful.iter().zip(kept.iter().zip(&new_spans)) {
        if let Some(s) = spread_of(
            olds[i],
            &old_spans[i],
            Some((new, new_spans)),
            others,
            &partner_spans,
            opts,
        ) {
            found.push(s);
        }
    }
    Ok(found)
}

/// The files parts are taken from: entries, the path git paired each with
/// (if any), histograms, and an index of their buckets.
struct Side<'a> {
    entries: &'a [&'a Entry],
    paired: &'a [Option<&'a [u8]>],
    spans: &'a [Arc<Spans>],
    index: SampleIndex<'a>,
}

/// Samples at rate 1: no part is missed for an unlucky sample, and the
/// histograms are in memory anyway.
fn samples(spans: &[Arc<Spans>]) -> Vec<Sample> {
    spans.iter().map(|s| Sample::with_rate(s, 1)).collect()
}

/// Histograms by path, of the side a part's partner is on.
fn partners<'a>(entries: &[&'a Entry], spans: &'a [Arc<Spans>]) -> HashMap<&'a [u8], &'a Spans> {
    entries
        .iter()
        .zip(spans)
        .map(|(e, s)| (e.path.as_slice(), s.as_ref()))
        .collect()
}

fn partner(other: &Option<Entry>) -> Option<&[u8]> {
    other.as_ref().map(|e| e.path.as_slice())
}

fn spans_of(
    entries: &[&Entry],
    content: &mut dyn Content,
) -> Result<Vec<Arc<Spans>>, ContentError> {
    let binary = content.binary(entries)?;
    let keys: Vec<SpanKey> = entries.iter().zip(binary).map(|(e, b)| (e.id, b)).collect();
    content.spans(&keys)
}

/// Each whole whose bytes the others hold together (see the module
/// documentation).
fn spreads(
    wholes: &[&Entry],
    whole_spans: &[Arc<Spans>],
    others: &Side<'_>,
    partner_spans: &HashMap<&[u8], &Spans>,
    opts: &Options,
) -> Vec<Spread> {
    wholes
        .iter()
        .zip(whole_spans)
        .filter_map(|(whole, spans)| spread_of(whole, spans, None, others, partner_spans, opts))
        .collect()
}

/// The files of `others` that could be parts of `whole`: enough of the
/// whole in each, each mostly made of the whole, and more of it in this
/// whole than in the file git paired it with.
fn candidates(
    whole: &Entry,
    spans: &Spans,
    others: &Side<'_>,
    partner_spans: &HashMap<&[u8], &Spans>,
    opts: &Options,
) -> Vec<usize> {
    if spans.size() == 0 {
        return Vec::new();
    }
    let other_spans = others.spans;
    let query = Sample::with_rate(spans, 1);
    // The bounds are on the bytes shared, exact at rate 1: only pairs that
    // could pass both thresholds are compared exactly.
    let need = |share: u32, size: u64| {
        u64::try_from(u128::from(share) * u128::from(size) / u128::from(MAX_SCORE))
            .unwrap_or(u64::MAX)
    };
    let mut found: Vec<usize> = others
        .index
        .bounds(&query, MAX_HOLDERS)
        .into_iter()
        .filter(|&(i, _, most)| {
            most > 0
                && most >= need(opts.min_gain, spans.size())
                && most >= need(opts.min_part, other_spans[i].size())
        })
        .map(|(i, _, _)| i)
        .filter(|&i| other_spans[i].size() > 0 && others.entries[i].id != whole.id)
        .filter(|&i| contained(spans, &other_spans[i]) >= opts.min_gain)
        .filter(|&i| contained(&other_spans[i], spans) >= opts.min_part)
        .collect();
    // A file git paired with another file is a part only if more of it is
    // in this whole than in its partner: a renamed file that shares
    // boilerplate with the whole came from its own source.
    found.retain(|&i| {
        let Some(partner) = others.paired[i].filter(|&p| p != whole.path.as_slice()) else {
            return true;
        };
        let Some(at) = partner_spans.get(partner) else {
            return true;
        };
        contained(&other_spans[i], spans) > contained(&other_spans[i], at)
    });
    found
}

/// `whole` as a split or merge of `others`, if it is one; `stays` is the
/// new version of a modified whole, its first part.
fn spread_of(
    whole: &Entry,
    spans: &Spans,
    stays: Option<(&Entry, &Spans)>,
    others: &Side<'_>,
    partner_spans: &HashMap<&[u8], &Spans>,
    opts: &Options,
) -> Option<Spread> {
    let other_spans = others.spans;
    let mut candidates = candidates(whole, spans, others, partner_spans, opts);
    if candidates.len() + usize::from(stays.is_some()) < 2
        || candidates
            .iter()
            .map(|&i| other_spans[i].as_ref())
            .chain(stays.map(|(_, s)| s))
            .any(|part| contained(spans, part) >= opts.min)
    {
        return None;
    }
    let mut cover = Cover::new(spans);
    let mut parts = Vec::new();
    if let Some((entry, part)) = stays {
        cover.add(part);
        parts.push(Part {
            entry: entry.clone(),
            whole_in_part: contained(spans, part),
            part_in_whole: contained(part, spans),
        });
    }
    let min_gain = u128::from(opts.min_gain) * u128::from(spans.size()) / u128::from(MAX_SCORE);
    while !candidates.is_empty() {
        let Some((at, gain)) = candidates
            .iter()
            .enumerate()
            .map(|(at, &i)| (at, cover.gain(&other_spans[i])))
            .max_by_key(|&(at, gain)| (gain, std::cmp::Reverse(at)))
        else {
            break;
        };
        if u128::from(gain) < min_gain.max(1) {
            break;
        }
        let i = candidates.swap_remove(at);
        cover.add(&other_spans[i]);
        parts.push(Part {
            entry: others.entries[i].clone(),
            whole_in_part: contained(spans, &other_spans[i]),
            part_in_whole: contained(&other_spans[i], spans),
        });
    }
    (parts.len() >= 2 && cover.containment() >= opts.min).then(|| Spread {
        whole: whole.clone(),
        parts,
        covered: cover.containment(),
        stays: stays.is_some(),
    })
}
