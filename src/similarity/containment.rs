//! Containment (Broder): how much of file A is inside file B.
//!
//! git's rename score is a resemblance: the bytes two files share over the
//! size of the larger. That is the wrong question for a file split into
//! parts or several files merged into one: each part shares little with the
//! whole relative to the whole's size, so it scores low, yet all of the part
//! is inside the whole. Containment divides by one side only:
//!
//! `c(A in B) = bytes of A's chunks found in B / size of A`
//!
//! **Exactly** ([`contained`], [`Cover`]) it comes from the chunk histograms
//! git's rename score builds ([`Spans`]): the bytes "found" are git's copied
//! bytes ([`score::copied`]), each bucket's weight in A capped by its weight
//! in B, so a chunk A has three times and B once counts once. Like git's
//! score it is a bag of chunks (order is ignored) and, for text, a CR before
//! a LF is not counted as found but counts in the size.
//!
//! **By a sample** ([`Sample`], [`estimate`], [`SampleIndex`]), for finding
//! candidates without reading pairs of files: Broder's `V_m`, every chunk
//! bucket whose mixed hash is 0 modulo the rate `m` (a power of two), kept
//! with its weight. A sample grows with its file (a fixed-size sketch such
//! as the 256-bit fingerprint or a bottom-k cannot say how much of a small
//! file is inside a large one: the large file's few samples rarely land on
//! the small one's chunks), and two samples are comparable because both keep
//! the same buckets. The estimate is the exact formula over the sampled
//! buckets only, scaled back by the share of A's counted bytes that were
//! sampled. Samples of different rates compare at the coarser rate (a bucket
//! kept at rate 16 is kept at rate 8).
//!
//! Cost at [`DEFAULT_RATE`] (4): about a quarter of a file's distinct
//! chunks, 8 bytes each (a 30 KiB source file of about 1,000 distinct lines
//! keeps about 250, 2 KiB); an estimate is a linear merge of two samples.
//! Error against the exact measure, on real files of the pinned corpus cut
//! into parts and merged: the table in docs/design.md, printed by the test
//! `estimate_error_by_band` (`cargo test --lib estimate_error_by_band --
//! --nocapture`). The error is that of a ratio over the few chunks a small
//! file keeps (a 4 KiB file keeps about 30): several points on average,
//! tens for the worst pairs, so the estimate only chooses which pairs to
//! compare exactly ([`CANDIDATE_BAR`]); every containment reported is exact. Files with fewer than about `m` distinct chunks may keep
//! none: then there is no estimate ([`estimate`] gives `None`) and callers
//! compare such (small) files exactly.
//!
//! A bit vector or Bloom filter per file (the musings' proposal) answers
//! set containment; it loses the byte weights the exact measure counts, and
//! with 107,927 buckets a vector large enough to be exact is 13 KiB per
//! file, so a weighted sample is kept instead.

use std::collections::HashMap;

use crate::similarity::score::{self, MAX_SCORE, Spans};

/// One bucket in this many is kept by a [`Sample`] unless told otherwise.
pub const DEFAULT_RATE: u32 = 4;

/// Pairs estimated under this ([`MAX_SCORE`] units, 5%) are not worth
/// comparing exactly when looking for containments of 20% or more: on the
/// corpus 11 of 1,785 such pairs are estimated this low
/// (`estimate_error_by_band`), so callers that cannot afford to miss one
/// compare exactly (a [`SampleIndex`] of rate-1 samples is exact).
pub const CANDIDATE_BAR: u32 = MAX_SCORE / 20;

/// `c(a in b)` in [`MAX_SCORE`] units: the bytes of `a` found in `b` over
/// the size of `a` (0 for an empty `a`). Print with [`score::percent`].
pub fn contained(a: &Spans, b: &Spans) -> u32 {
    ratio(score::copied(a, b), a.size())
}

/// `bytes / size` in [`MAX_SCORE`] units, truncated as git truncates.
pub fn ratio(bytes: u64, size: u64) -> u32 {
    if size == 0 {
        return 0;
    }
    let s = u128::from(bytes) * u128::from(MAX_SCORE) / u128::from(size);
    u32::try_from(s.min(u128::from(MAX_SCORE))).unwrap_or(MAX_SCORE)
}

/// How much of one file several others hold together: each of the file's
/// buckets is capped by the sum of the parts' weights, so a chunk found in
/// two parts is found once (up to the file's own count), and parts can be
/// added one at a time, asking first what each would add ([`Cover::gain`]).
#[derive(Clone, Debug)]
pub struct Cover {
    /// The file's `(bucket, own weight, weight in the parts so far)`, by
    /// bucket.
    buckets: Vec<(u32, u32, u64)>,
    size: u64,
    covered: u64,
}

impl Cover {
    /// `whole` covered by nothing yet.
    pub fn new(whole: &Spans) -> Cover {
        Cover {
            buckets: whole.buckets().iter().map(|&(b, w)| (b, w, 0)).collect(),
            size: whole.size(),
            covered: 0,
        }
    }

    /// Bytes of the file found in the parts added so far.
    pub fn covered(&self) -> u64 {
        self.covered
    }

    /// [`Cover::covered`] over the file's size, in [`MAX_SCORE`] units.
    pub fn containment(&self) -> u32 {
        ratio(self.covered, self.size)
    }

    /// The bytes `part` would add to [`Cover::covered`].
    pub fn gain(&self, part: &Spans) -> u64 {
        self.walk(part, |_, _| {})
    }

    /// Add `part`; returns what it added.
    pub fn add(&mut self, part: &Spans) -> u64 {
        let mut updates = Vec::new();
        let gained = self.walk(part, |i, w| updates.push((i, w)));
        for (i, w) in updates {
            self.buckets[i].2 += u64::from(w);
        }
        self.covered += gained;
        gained
    }

    /// Merge `part` with the file's buckets: the bytes it would add, and
    /// every shared bucket's index and the part's weight there.
    fn walk(&self, part: &Spans, mut shared: impl FnMut(usize, u32)) -> u64 {
        let p = part.buckets();
        let (mut i, mut j, mut gain) = (0, 0, 0u64);
        while i < self.buckets.len() && j < p.len() {
            let (b, own, so_far) = self.buckets[i];
            let (pb, pw) = p[j];
            match b.cmp(&pb) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    let own = u64::from(own);
                    let before = so_far.min(own);
                    let after = (so_far + u64::from(pw)).min(own);
                    gain += after - before;
                    shared(i, pw);
                    i += 1;
                    j += 1;
                }
            }
        }
        gain
    }
}

/// Whether `bucket` is kept at `rate` (a power of two). Buckets are already
/// a hash modulo a prime; the multiply spreads them so that the kept ones
/// are not simply every m-th bucket number, and keeping the low bits of one
/// hash makes the rates nest.
fn kept(bucket: u32, rate: u32) -> bool {
    (bucket.wrapping_mul(0x9E37_79B1) >> 12) & (rate - 1) == 0
}

/// Broder's `V_m` sample of a file's chunk histogram: every bucket kept at
/// the rate, with its weight (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    entries: Vec<(u32, u32)>,
    rate: u32,
    /// Sum of the kept weights.
    sampled: u64,
    /// Sum of all weights: the bytes chunked (CRs before LF in text are not).
    counted: u64,
    size: u64,
}

impl Sample {
    /// The sample of `spans` at [`DEFAULT_RATE`].
    pub fn new(spans: &Spans) -> Sample {
        Sample::with_rate(spans, DEFAULT_RATE)
    }

    /// The sample of `spans` keeping one bucket in `rate` (rounded up to a
    /// power of two; 1 keeps every bucket, and estimates are then exact).
    pub fn with_rate(spans: &Spans, rate: u32) -> Sample {
        let rate = rate.max(1).checked_next_power_of_two().unwrap_or(1 << 31);
        let entries: Vec<(u32, u32)> = spans
            .buckets()
            .iter()
            .copied()
            .filter(|&(b, _)| kept(b, rate))
            .collect();
        Sample {
            sampled: entries.iter().map(|&(_, w)| u64::from(w)).sum(),
            counted: spans.buckets().iter().map(|&(_, w)| u64::from(w)).sum(),
            size: spans.size(),
            rate,
            entries,
        }
    }

    /// The size of the file.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Buckets kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no bucket was kept (a small file, or an empty one).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The sum of the weights kept at `rate` (this sample's or coarser).
    fn sampled_at(&self, rate: u32) -> u64 {
        if rate <= self.rate {
            return self.sampled;
        }
        self.entries
            .iter()
            .filter(|&&(b, _)| kept(b, rate))
            .map(|&(_, w)| u64::from(w))
            .sum()
    }

    /// The estimate of this file's containment in another, in
    /// [`MAX_SCORE`] units, from `shared` (the sum over buckets kept at
    /// `rate` of the smaller weight). `None` when nothing of this file was
    /// kept at that rate.
    fn scaled(&self, shared: u64, rate: u32) -> Option<u32> {
        let sampled = self.sampled_at(rate);
        if sampled == 0 || self.size == 0 {
            return None;
        }
        // shared / sampled estimates copied / counted.
        let bytes = u128::from(shared) * u128::from(self.counted) / u128::from(sampled);
        Some(ratio(u64::try_from(bytes).unwrap_or(u64::MAX), self.size))
    }
}

/// The estimate of `c(a in b)` ([`contained`]) from the two samples, in
/// [`MAX_SCORE`] units; `None` when nothing of `a` was kept at the coarser
/// of the two rates (then compare exactly).
pub fn estimate(a: &Sample, b: &Sample) -> Option<u32> {
    let rate = a.rate.max(b.rate);
    let (x, y) = (&a.entries, &b.entries);
    let (mut i, mut j, mut shared) = (0, 0, 0u64);
    while i < x.len() && j < y.len() {
        let (xb, xw) = x[i];
        let (yb, yw) = y[j];
        match xb.cmp(&yb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if kept(xb, rate) {
                    shared += u64::from(xw.min(yw));
                }
                i += 1;
                j += 1;
            }
        }
    }
    a.scaled(shared, rate)
}

/// Many samples indexed by bucket, to find which of them share anything
/// with a query without comparing the query with each.
#[derive(Debug)]
pub struct SampleIndex<'a> {
    samples: &'a [Sample],
    rate: u32,
    postings: HashMap<u32, Vec<(u32, u32)>>,
    /// Each sample's weight in the buckets more than so many samples hold
    /// ([`SampleIndex::bounds`]), computed once.
    common: std::sync::Mutex<Option<(usize, Vec<u64>)>>,
}

/// What a query shares with one indexed sample, both ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// Position of the sample in the indexed slice.
    pub item: usize,
    /// Estimate of the query's containment in the item ([`MAX_SCORE`] units;
    /// `None` when the query kept nothing).
    pub query_in_item: Option<u32>,
    /// Estimate of the item's containment in the query.
    pub item_in_query: Option<u32>,
}

impl<'a> SampleIndex<'a> {
    /// Index `samples` (compared at the coarsest rate among them).
    pub fn new(samples: &'a [Sample]) -> SampleIndex<'a> {
        let rate = samples.iter().map(|s| s.rate).max().unwrap_or(1);
        let mut postings: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            // Positions beyond u32 are not indexable; four billion files
            // are not compared in memory anyway.
            let Ok(i) = u32::try_from(i) else { break };
            for &(b, w) in s.entries.iter().filter(|&&(b, _)| kept(b, rate)) {
                postings.entry(b).or_default().push((i, w));
            }
        }
        SampleIndex {
            samples,
            rate,
            postings,
            common: std::sync::Mutex::new(None),
        }
    }

    /// Bounds on the weight `query` shares with each indexed sample
    /// (the sum over kept buckets of the smaller weight; with rate-1
    /// samples, [`score::copied`] exactly), without walking the buckets
    /// more than `max_holders` samples hold: `(item, at least, at most)`
    /// for every item, in index order.
    ///
    /// Why: a bucket nearly every file has (a blank line, a lone closing
    /// brace) makes [`SampleIndex::overlaps`] touch every pair of files.
    /// Such common buckets are left out of the walk and bounded instead:
    /// together they add at most the smaller of the two files' weights in
    /// them.
    pub fn bounds(&self, query: &Sample, max_holders: usize) -> Vec<(usize, u64, u64)> {
        let rate = self.rate.max(query.rate);
        let common = |holders: &Vec<(u32, u32)>| holders.len() > max_holders;
        let mut cached = self
            .common
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let item_common = match &*cached {
            Some((max, weights)) if *max == max_holders => weights,
            _ => {
                let mut weights = vec![0u64; self.samples.len()];
                for holders in self.postings.values().filter(|h| common(h)) {
                    for &(i, w) in holders {
                        weights[i as usize] += u64::from(w);
                    }
                }
                &cached.insert((max_holders, weights)).1
            }
        };
        let mut rare = vec![0u64; self.samples.len()];
        let mut query_common = 0u64;
        for &(b, qw) in query.entries.iter().filter(|&&(b, _)| kept(b, rate)) {
            let Some(holders) = self.postings.get(&b) else {
                continue;
            };
            if common(holders) {
                query_common += u64::from(qw);
                continue;
            }
            for &(i, w) in holders {
                rare[i as usize] += u64::from(qw.min(w));
            }
        }
        rare.iter()
            .zip(item_common)
            .enumerate()
            .map(|(i, (&r, &c))| (i, r, r + c.min(query_common)))
            .collect()
    }

    /// Every indexed sample that shares a kept bucket with `query`, with
    /// the estimates both ways, in index order.
    pub fn overlaps(&self, query: &Sample) -> Vec<Overlap> {
        let rate = self.rate.max(query.rate);
        let mut shared: HashMap<u32, u64> = HashMap::new();
        for &(b, qw) in query.entries.iter().filter(|&&(b, _)| kept(b, rate)) {
            for &(i, w) in self.postings.get(&b).into_iter().flatten() {
                if rate > self.rate && !kept(b, rate) {
                    continue;
                }
                *shared.entry(i).or_default() += u64::from(qw.min(w));
            }
        }
        let mut found: Vec<Overlap> = shared
            .into_iter()
            .map(|(i, s)| Overlap {
                item: i as usize,
                query_in_item: query.scaled(s, rate),
                item_in_query: self.samples[i as usize].scaled(s, rate),
            })
            .collect();
        found.sort_unstable_by_key(|o| o.item);
        found
    }
}

#[cfg(test)]
mod tests;
