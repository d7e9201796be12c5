//! [`super::distances`] for two strings of up to 128 symbols with AVX2:
//! the same recurrences as [`word::triple`](super::word::triple) on
//! `u128` columns, two columns to a 256-bit register.
//!
//! On general-purpose registers the three `u128` Levenshtein columns and
//! the common subsequence need more registers than there are, and the
//! processor spends the walk moving them to and from the stack. Here a
//! register holds the global column and the free one of `a` over `b` (the
//! same match mask, broadcast to both halves), another `b` over `a`, and
//! the common subsequence stays in general-purpose registers: three
//! independent chains of the same integer operations, with the carries
//! and one-bit shifts from the low word of each 128-bit half to its high
//! word done inside the halves. The results are bit for bit those of
//! the portable walk (tested against it and the dynamic programme).

use std::arch::x86_64::{
    __m128i, __m256i, _mm_loadu_si128, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256,
    _mm256_broadcastsi128_si256, _mm256_cmpgt_epi64, _mm256_extract_epi64, _mm256_or_si256,
    _mm256_set_epi64x, _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_slli_epi64,
    _mm256_slli_si256, _mm256_srli_epi64, _mm256_sub_epi64, _mm256_xor_si256,
};

use super::Distances;
use super::word::{Column, Masks};

/// The match mask of `s` in both 128-bit halves.
#[target_feature(enable = "avx2")]
#[inline]
fn mask(m: &Masks<u128>, s: u8) -> __m256i {
    let eq: &u128 = &m.eq[usize::from(s & 63)];
    // SAFETY: `eq` is a reference to 16 readable bytes; the load is
    // unaligned-tolerant.
    let half = unsafe { _mm_loadu_si128(std::ptr::from_ref(eq).cast::<__m128i>()) };
    _mm256_broadcastsi128_si256(half)
}

/// Each 128-bit half plus the other's, modulo 2^128: the carry out of its
/// low word into its high word. A word's sum carried exactly when it is
/// below `x` unsigned; AVX2 compares signed only, so both sides have their
/// top bit flipped first. The compare gives -1 where it carried, which,
/// moved to the high word, is subtracted.
#[target_feature(enable = "avx2")]
#[inline]
fn add(x: __m256i, y: __m256i) -> __m256i {
    let sum = _mm256_add_epi64(x, y);
    let flip = _mm256_set1_epi64x(i64::MIN);
    let carried = _mm256_cmpgt_epi64(_mm256_xor_si256(x, flip), _mm256_xor_si256(sum, flip));
    _mm256_sub_epi64(sum, _mm256_slli_si256::<8>(carried))
}

/// Each 128-bit half shifted left by one bit.
#[target_feature(enable = "avx2")]
#[inline]
fn shl1(x: __m256i) -> __m256i {
    _mm256_or_si256(
        _mm256_slli_epi64::<1>(x),
        _mm256_slli_si256::<8>(_mm256_srli_epi64::<63>(x)),
    )
}

/// Two columns' vertical deltas, one per 128-bit half.
#[derive(Clone, Copy)]
struct Columns {
    pv: __m256i,
    mv: __m256i,
}

impl Columns {
    /// `Column::step::<true>` in both halves (the top row growing by one
    /// per column: `one` is 1 in each half's low word).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn step(&mut self, eq: __m256i, one: __m256i) {
        let ones = _mm256_set1_epi64x(-1);
        let (pv, mv) = (self.pv, self.mv);
        let xv = _mm256_or_si256(eq, mv);
        let xh = _mm256_or_si256(_mm256_xor_si256(add(_mm256_and_si256(eq, pv), pv), pv), eq);
        let ph = _mm256_or_si256(mv, _mm256_andnot_si256(_mm256_or_si256(xh, pv), ones));
        let mh = _mm256_and_si256(pv, xh);
        let ph = _mm256_or_si256(shl1(ph), one);
        let mh = shl1(mh);
        self.pv = _mm256_or_si256(mh, _mm256_andnot_si256(_mm256_or_si256(xv, ph), ones));
        self.mv = _mm256_and_si256(ph, xv);
    }

    /// The column in half `k` (0 or 1).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn half(&self, k: usize) -> Column<u128> {
        Column::with(lane(self.pv, k), lane(self.mv, k))
    }
}

/// Half `k` (0 or 1) of `v` as one number.
#[target_feature(enable = "avx2")]
#[inline]
fn lane(v: __m256i, k: usize) -> u128 {
    let (lo, hi) = if k == 0 {
        (_mm256_extract_epi64::<0>(v), _mm256_extract_epi64::<1>(v))
    } else {
        (_mm256_extract_epi64::<2>(v), _mm256_extract_epi64::<3>(v))
    };
    u128::from(lo as u64) | u128::from(hi as u64) << 64
}

/// [`super::distances`] of `a` and `b`, 1 to 128 symbols each.
#[target_feature(enable = "avx2")]
pub(super) fn triple(a: &[u8], b: &[u8]) -> Distances {
    let (ma, mb) = (Masks::<u128>::new(a), Masks::<u128>::new(b));
    let one = _mm256_set_epi64x(0, 1, 0, 1);
    // The low half `a` over `b` globally (a first column of deltas +1),
    // the high half with a free first column (`Column::free`): `b` inside
    // `a`.
    let mut over_b = Columns {
        pv: _mm256_set_epi64x(0, 0, -1, -1),
        mv: _mm256_setzero_si256(),
    };
    // `b` over `a` with a free first column, in both halves: `a` inside
    // `b`.
    let mut over_a = Columns {
        pv: _mm256_setzero_si256(),
        mv: _mm256_setzero_si256(),
    };
    let mut common = u128::MAX;
    let lcs_step = |common: &mut u128, ea: u128| {
        let u = *common & ea;
        *common = common.wrapping_add(u) | (*common & !ea);
    };
    for (&x, &y) in a.iter().zip(b) {
        over_b.step(mask(&ma, y), one);
        lcs_step(&mut common, ma.of(y));
        over_a.step(mask(&mb, x), one);
    }
    let n = a.len().min(b.len());
    for &y in &b[n..] {
        over_b.step(mask(&ma, y), one);
        lcs_step(&mut common, ma.of(y));
    }
    for &x in &a[n..] {
        over_a.step(mask(&mb, x), one);
    }
    Distances {
        distance: over_b.half(0).bottom(b.len(), ma.low),
        a_in_b: over_a.half(0).least(a.len(), b.len(), mb.low),
        b_in_a: over_b.half(1).least(b.len(), a.len(), ma.low),
        common: a.len() - (common & ma.low).count_ones() as usize,
    }
}
