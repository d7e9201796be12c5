//! A cheap upper bound of git's copied bytes, so that a search can rule
//! pairs out without scoring them.
//!
//! git's copied bytes are `Σ_b min(s_b, d_b)` over its 107927 buckets. Sum
//! the weights of each file into [`BINS`] bins (a bin is a fixed set of
//! buckets); then for every bin `g`, `Σ_{b∈g} min(s_b, d_b) ≤ min(Σ_{b∈g}
//! s_b, Σ_{b∈g} d_b)`, because each term on the left is at most `s_b` and
//! at most `d_b`. Summed over the bins: `copied ≤ Σ_g min(S_g, D_g)`, for
//! every pair of files, whatever the hash does. So a pair whose bound is
//! below the copied bytes a score needs cannot reach that score, and is
//! left out without the exact score ([`super::Loaded::score_at_least`]),
//! which reads every bucket of the source through a table too large for
//! the processor's nearest caches. The bound reads 64 numbers.
//!
//! How tight it is depends on where two files differ: bytes only the
//! source has and bytes only the destination has cancel out in the bound
//! only when they fall into one bin. Near-duplicates differ in few chunks,
//! so few do.

use super::Spans;

/// Bins per file: 64 numbers, 256 bytes, one pass of vector instructions.
pub const BINS: usize = 64;

/// A file's chunk weights summed by bin ([`Coarse::of`]).
#[derive(Clone, Debug)]
pub struct Coarse {
    bins: [u32; BINS],
    /// The weights overflowed a bin (a file of 4 GiB or more): no bound.
    unbounded: bool,
}

impl Coarse {
    /// The bins of `spans`' histogram.
    pub fn of(spans: &Spans) -> Coarse {
        let mut bins = [0u32; BINS];
        let mut unbounded = false;
        for &(b, w) in &spans.buckets {
            let bin = &mut bins[b as usize % BINS];
            match bin.checked_add(w) {
                Some(sum) => *bin = sum,
                None => unbounded = true,
            }
        }
        Coarse { bins, unbounded }
    }

    /// An upper bound of [`super::copied`] between the two files.
    pub fn copied_ceiling(&self, other: &Coarse) -> u64 {
        if self.unbounded || other.unbounded {
            return u64::MAX;
        }
        self.bins
            .iter()
            .zip(&other.bins)
            .map(|(&a, &b)| u64::from(a.min(b)))
            .sum()
    }
}
