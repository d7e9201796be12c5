//! Exact git similarity scoring.
//!
//! Fingerprints ([`crate::similarity::fingerprint`]) are only an estimate, good for throwing
//! away pairs that cannot be similar. The pairs that survive are scored here
//! exactly the way git scores a rename or copy candidate
//! (`diffcore-delta.c` and `estimate_similarity()` in `diffcore-rename.c`), so
//! that a threshold such as `-M50%` and a printed percentage such as `R087`
//! mean precisely what a git user expects: the same pair gets the same number
//! from `git diff -M -l0 --name-status` and from this crate.
//!
//! The model: each file is cut into chunks (at every LF, or every 64 bytes),
//! each chunk is hashed into one of 107927 buckets, and a bucket's weight is the
//! number of bytes that fell into it ([`Spans`]). The bytes of the destination
//! that were "copied" from the source are the overlap of the two histograms
//! ([`copied`]), and the score is that overlap relative to the larger file
//! ([`score`]).
//!
//! Text versus binary matters for one thing only: in text, a CR before a LF
//! is not counted. git decides it per path, not per blob
//! (`diff_filespec_is_binary()` in diff.c): the path's `diff` attribute
//! first ([`Binary`], read by [`crate::repo::DiffAttributes`]), the NUL rule
//! ([`is_binary`]) when the attribute leaves it open. So the same blob can
//! have two histograms, one per decision; callers key them by
//! `(blob, Binary)`.
//!
//! `core.bigFileThreshold` plays no part in rename scores: git loads both
//! blobs whole before it chunks them (`estimate_similarity()`), and with the
//! data loaded `diff_filespec_is_binary()` applies the NUL rule whatever the
//! size. Nor does `diff.<driver>.textconv`: rename detection scores the
//! blobs' own bytes and never runs a textconv filter.
//!
//! ### Deviations from git
//!
//! - git never scores blobs with the same object id: it pairs them first as
//!   exact renames with a score of 100%. For identical inputs [`score`] returns
//!   [`MAX_SCORE`] on its own unless the file is text with CRLF line endings
//!   (the CRs are not counted as copied but do count in the size), so callers
//!   must short-cut identical blobs the way git does.
//! - git keeps chunk weights and the chunking length in 32-bit integers, so its
//!   numbers for blobs of 4 GiB or more are not meaningful; here sizes are
//!   64-bit and weights wrap like git's.
//!
//! Reference: git `diffcore-delta.c` and `diffcore-rename.c` at v2.47.3.
//!
//! The stage is split by topic: the histograms and how files are cut
//! into chunks ([`spans`](self::Spans)), the score of two histograms (here),
//! git's `-M<n>` syntax and git-simm's own thresholds (`parse`).

mod chunk_hash;
#[cfg(target_arch = "x86_64")]
mod chunks_avx512;
mod coarse;
mod parse;
pub mod simhash;
mod spans;

use chunk_hash::HASH_BASE;
pub use coarse::Coarse;
pub use parse::{ScoreParseError, ThresholdError, parse_rename_score, parse_threshold};
pub use spans::{Binary, Buckets, Spans, for_each_chunk, is_binary, without_crlf_crs};

/// The score of a perfect match; scores are fractions of it.
///
/// git uses this unit internally, and `-M`, `-C` and `-B` arguments are
/// converted into it ([`parse_rename_score`]).
pub const MAX_SCORE: u32 = 60000;

/// The minimum score git uses when `-M` or `-C` is given without a number: 50%.
pub const DEFAULT_MIN_SCORE: u32 = 30000;

/// The number of bytes of `dst` that were copied from `src`: the sum over all
/// buckets of the smaller of the two weights.
///
/// Like git, this is a bag-of-chunks measure: it ignores the order of chunks,
/// so reordering the lines of a file copies every byte.
pub fn copied(src: &Spans, dst: &Spans) -> u64 {
    let (s, d) = (&src.buckets, &dst.buckets);
    let (mut i, mut j) = (0, 0);
    let mut total: u64 = 0;
    while i < s.len() && j < d.len() {
        let (sb, sw) = s[i];
        let (db, dw) = d[j];
        match sb.cmp(&db) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                total += u64::from(sw.min(dw));
                i += 1;
                j += 1;
            }
        }
    }
    total
}

/// One file's histogram spread over every bucket, for scoring that file
/// against many others.
///
/// Why: [`copied`] merges two sorted lists, a branch per step that the CPU
/// mispredicts about half the time. A destination is scored against tens of
/// candidate sources; with its weights in a flat array indexed by bucket,
/// each source costs one load per bucket of its own and no branch on the
/// other file. The array (107,927 weights, 420 KiB) is reused: only the
/// buckets of the loaded file are written and cleared again, and it stays in
/// the core's L2 cache.
#[derive(Debug, Clone)]
pub struct Dense {
    weights: Vec<u32>,
}

impl Default for Dense {
    fn default() -> Self {
        Dense {
            weights: vec![0; HASH_BASE as usize],
        }
    }
}

impl Dense {
    /// Load `spans`, run `f` with it loaded, and clear the array again.
    pub fn with<R>(&mut self, spans: &Spans, f: impl FnOnce(&Loaded<'_>) -> R) -> R {
        for &(b, w) in &spans.buckets {
            self.weights[b as usize] = w;
        }
        let r = f(&Loaded {
            weights: &self.weights,
            spans,
        });
        for &(b, _) in &spans.buckets {
            self.weights[b as usize] = 0;
        }
        r
    }
}

/// A file loaded into a [`Dense`] array.
pub struct Loaded<'a> {
    weights: &'a [u32],
    spans: &'a Spans,
}

impl Loaded<'_> {
    /// [`copied`] between the loaded file and `other` (it is symmetric).
    pub fn copied(&self, other: &Spans) -> u64 {
        other
            .buckets
            .iter()
            .map(|&(b, w)| {
                // Buckets are below HASH_BASE by construction (`pack`).
                let mine = self.weights.get(b as usize).copied().unwrap_or(0);
                u64::from(w.min(mine))
            })
            .sum()
    }

    /// [`score`] of `src` against the loaded destination.
    pub fn score(&self, src: &Spans, min_score: u32) -> u32 {
        score_with(src, self.spans, min_score, || self.copied(src))
    }

    /// [`Loaded::score`] if it is at least `need`, else `None`, found out
    /// as soon as the bytes of `src` not yet compared could no longer lift
    /// the copied bytes to `need`: a search that only wants pairs at
    /// `need` and up rejects most others after reading part of them.
    pub fn score_at_least(&self, src: &Spans, min_score: u32, need: u32) -> Option<u32> {
        let dst = self.spans;
        if need == 0 {
            return Some(self.score(src, min_score));
        }
        if dst.size == 0 || !sizes_compatible(src.size, dst.size, min_score) {
            return None;
        }
        let max_size = u128::from(src.size.max(dst.size));
        let need_copied = copied_needed(need, src.size, dst.size);
        if src.counted.min(dst.counted) < need_copied {
            return None;
        }
        let mut copied: u64 = 0;
        let mut rest = src.counted;
        for chunk in src.buckets.chunks(16) {
            for &(b, w) in chunk {
                // Buckets are below HASH_BASE by construction (`pack`).
                let mine = self.weights.get(b as usize).copied().unwrap_or(0);
                copied += u64::from(w.min(mine));
                rest -= u64::from(w);
            }
            if copied + rest < need_copied {
                return None;
            }
        }
        let s = u128::from(copied) * u128::from(MAX_SCORE) / max_size;
        let s = u32::try_from(s).unwrap_or(MAX_SCORE);
        (s >= need).then_some(s)
    }
}

/// The fewest copied bytes ([`copied`]) with which a pair of files of
/// these sizes scores `need` or more: `score >= need` exactly when
/// `copied * MAX_SCORE >= need * max(size)`.
pub fn copied_needed(need: u32, src_size: u64, dst_size: u64) -> u64 {
    let max_size = u128::from(src_size.max(dst_size));
    u64::try_from((u128::from(need) * max_size).div_ceil(u128::from(MAX_SCORE))).unwrap_or(u64::MAX)
}

/// True if and only if git's size pre-filter lets a pair with these file
/// sizes through at `min_score`: the smaller file must be at least
/// `min_score / MAX_SCORE` of the larger one.
///
/// Since at most the smaller file can be copied, a pair that fails this test
/// could never reach `min_score` anyway; the filter only saves git (and us)
/// the work of chunking.
pub fn sizes_compatible(src_size: u64, dst_size: u64, min_score: u32) -> bool {
    let max_size = u128::from(src_size.max(dst_size));
    let delta = max_size - u128::from(src_size.min(dst_size));
    let keep = u128::from(MAX_SCORE.saturating_sub(min_score));
    max_size * keep >= delta * u128::from(MAX_SCORE)
}

/// git's similarity score of the pair, in [`MAX_SCORE`] units: the bytes of
/// `dst` copied from `src` divided by the size of the larger file, truncated.
///
/// Returns 0 when `dst` is empty or when [`sizes_compatible`] rejects the
/// pair at `min_score`, exactly as git does. A pair is a rename or copy in git
/// when the result is at least `min_score`; that is the caller's comparison.
/// Note that git treats blobs with equal object ids as 100% without scoring
/// them (see the module documentation).
pub fn score(src: &Spans, dst: &Spans, min_score: u32) -> u32 {
    score_with(src, dst, min_score, || copied(src, dst))
}

fn score_with(src: &Spans, dst: &Spans, min_score: u32, copied: impl FnOnce() -> u64) -> u32 {
    if dst.size == 0 || !sizes_compatible(src.size, dst.size, min_score) {
        return 0;
    }
    let max_size = u128::from(src.size.max(dst.size));
    let s = u128::from(copied()) * u128::from(MAX_SCORE) / max_size;
    // `copied` never exceeds the size of `dst`, so `s <= MAX_SCORE`.
    u32::try_from(s).unwrap_or(MAX_SCORE)
}

/// The percentage git prints for a score (`R087`): `score * 100 / MAX_SCORE`,
/// truncated.
pub fn percent(score: u32) -> u32 {
    (u64::from(score) * 100 / u64::from(MAX_SCORE)) as u32
}

#[cfg(test)]
mod tests;
