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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min: MAX_SCORE / 5 * 4,
            min_gain: MAX_SCORE / 20,
            min_part: MAX_SCORE / 10 * 7,
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
    if sources.is_empty() || dests.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let src_spans = spans_of(&sources, content)?;
    let dst_spans = spans_of(&dests, content)?;
    let splits = spreads(
        &sources,
        &src_spans,
        (&dests, &dst_partner, &dst_spans),
        opts,
    );
    let merges = spreads(
        &dests,
        &dst_spans,
        (&sources, &src_partner, &src_spans),
        opts,
    );
    Ok((splits, merges))
}

fn partner(other: &Option<Entry>) -> Option<&[u8]> {
    other.as_ref().map(|e| e.path.as_slice())
}

/// The files parts are taken from: entries, the path git paired each with
/// (if any), histograms.
type Others<'a> = (
    &'a [&'a Entry],
    &'a [Option<&'a [u8]>],
    &'a [std::sync::Arc<Spans>],
);

fn spans_of(
    entries: &[&Entry],
    content: &mut dyn Content,
) -> Result<Vec<std::sync::Arc<Spans>>, ContentError> {
    let binary = content.binary(entries)?;
    let keys: Vec<SpanKey> = entries.iter().zip(binary).map(|(e, b)| (e.id, b)).collect();
    content.spans(&keys)
}

/// Each whole whose bytes the others hold together (see the module
/// documentation).
fn spreads(
    wholes: &[&Entry],
    whole_spans: &[std::sync::Arc<Spans>],
    (others, paired, other_spans): Others<'_>,
    opts: &Options,
) -> Vec<Spread> {
    // A partner of a file among `others` is on the wholes' side.
    let whole_at: std::collections::HashMap<&[u8], usize> = wholes
        .iter()
        .enumerate()
        .map(|(i, e)| (e.path.as_slice(), i))
        .collect();
    let others_partner_spans = |p: &[u8]| whole_at.get(p).copied();
    // Rate 1: no part is missed for an unlucky sample; the histograms are
    // in memory anyway.
    let samples: Vec<Sample> = other_spans
        .iter()
        .map(|s| Sample::with_rate(s, 1))
        .collect();
    let index = SampleIndex::new(&samples);
    // Chunks held by more files than this are bounded, not walked (see
    // `SampleIndex::bounds`).
    let max_holders = MAX_HOLDERS;
    let mut found = Vec::new();
    for (whole, spans) in wholes.iter().zip(whole_spans) {
        if spans.size() == 0 {
            continue;
        }
        let query = Sample::with_rate(spans, 1);
        // The bounds are on the bytes shared, exact at rate 1: only pairs
        // that could pass both thresholds are compared exactly.
        let need = |share: u32, size: u64| {
            u64::try_from(u128::from(share) * u128::from(size) / u128::from(MAX_SCORE))
                .unwrap_or(u64::MAX)
        };
        let mut candidates: Vec<usize> = index
            .bounds(&query, max_holders)
            .into_iter()
            .filter(|&(i, _, most)| {
                most > 0
                    && most >= need(opts.min_gain, spans.size())
                    && most >= need(opts.min_part, other_spans[i].size())
            })
            .map(|(i, _, _)| i)
            .filter(|&i| other_spans[i].size() > 0 && others[i].id != whole.id)
            .filter(|&i| contained(spans, &other_spans[i]) >= opts.min_gain)
            .filter(|&i| contained(&other_spans[i], spans) >= opts.min_part)
            .collect();
        // A file git paired with another file is a part only if more of it
        // is in this whole than in its partner: a renamed file that shares
        // boilerplate with the whole came from its own source.
        candidates.retain(|&i| {
            let Some(partner) = paired[i].filter(|&p| p != whole.path.as_slice()) else {
                return true;
            };
            let Some(at) = others_partner_spans(partner) else {
                return true;
            };
            contained(&other_spans[i], spans) > contained(&other_spans[i], &whole_spans[at])
        });
        if candidates.len() < 2
            || candidates
                .iter()
                .any(|&i| contained(spans, &other_spans[i]) >= opts.min)
        {
            continue;
        }
        let mut cover = Cover::new(spans);
        let min_gain = u128::from(opts.min_gain) * u128::from(spans.size()) / u128::from(MAX_SCORE);
        let mut parts = Vec::new();
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
                entry: others[i].clone(),
                whole_in_part: contained(spans, &other_spans[i]),
                part_in_whole: contained(&other_spans[i], spans),
            });
        }
        if parts.len() >= 2 && cover.containment() >= opts.min {
            found.push(Spread {
                whole: (*whole).clone(),
                parts,
                covered: cover.containment(),
            });
        }
    }
    found
}
