//! [`super::distances`] for two strings of up to 128 symbols with AVX2:
//! the same results as [`word::triple`](super::word::triple) on `u128`
//! columns, with the three Levenshtein columns side by side in 64-bit
//! lanes.
//!
//! A 256-bit register holds one 64-row block of each column: `a` over
//! `b` globally (lane 0), `a` over `b` with a free first column (lane 1:
//! `b` inside `a`), and `b` over `a` the same way (lanes 2 and 3, the
//! same column twice: `a` inside `b`). A pattern of up to 128 symbols is
//! two blocks (Hyyrö's blocks: the horizontal delta leaving the low
//! block's last row enters the high block's first, with no carry across
//! a 128-bit addition), and the high block runs one text symbol behind
//! the low one: the two blocks of a step do not wait for each other, and
//! each is a chain of 64-bit operations that take one cycle.
//!
//! Myers' step is written so that its chain is short: with `S = (Eq & Pv)
//! + Pv`, `Xh | Pv = S | Pv | Eq` and `Pv & Xh = Pv & (!S | Eq)`, and the
//! shifted `Ph` is kept as its complement, which both new deltas read
//! with one `andnot`. Seven operations from `Pv` to the next `Pv`,
//! against twelve as Myers writes it; the values are the same bits.
//!
//! The common subsequence stays in general-purpose registers (a `u128`),
//! a fourth chain beside them. The results are bit for bit those of the
//! portable walk (tested against it and against the dynamic programme).

use std::arch::x86_64::{
    __m128i, __m256i, _mm_loadu_si128, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256,
    _mm256_blendv_epi8, _mm256_inserti128_si256, _mm256_or_si256, _mm256_set_epi64x,
    _mm256_setzero_si256, _mm256_slli_epi64, _mm256_srli_epi64, _mm256_storeu_si256,
    _mm256_unpackhi_epi64, _mm256_unpacklo_epi64, _mm256_zextsi128_si256,
};

use super::Distances;
use super::word::{Column, Masks};

/// One 64-row block of the four lanes' columns: vertical deltas `+1`
/// (`pv`) and `-1` (`mv`).
#[derive(Clone, Copy)]
struct Block {
    pv: __m256i,
    mv: __m256i,
}

/// The horizontal delta entering a block's first row, per lane in bit 0:
/// `minus` set where it is -1, `not_plus` set where it is not +1.
#[derive(Clone, Copy)]
struct Carry {
    minus: __m256i,
    not_plus: __m256i,
}

/// Advance `b` by one text symbol whose match masks are `eq`, the
/// horizontal deltas `cin` entering at its top; returns those leaving at
/// its bottom (bit 63).
///
/// Myers' step (as [`Column`] takes it, with Hyyrö's delta entering the
/// block) rewritten with `S = (e & Pv) + Pv`, `e` the masks with bit 0
/// set where the delta entering is -1:
///
/// - `Xh | Pv = ((S ^ Pv) | e) | Pv = S | Pv | e = Q`, so `Ph = Mv | !Q`,
///   whose complement is `R = Q & !Mv`;
/// - `Mh = Pv & ((S ^ Pv) | e) = (Pv & !S) | (Pv & e)`;
/// - the shifted `Ph`, whose bit 0 is the delta entering (+1 or not), has
///   the complement `T = (R << 1) | not_plus`;
/// - `Pv' = Mh' | !(Xv | Ph') = Mh' | (T & !Xv)` and `Mv' = Ph' & Xv = Xv
///   & !T`.
#[target_feature(enable = "avx2")]
#[inline]
fn step(b: &mut Block, eq: __m256i, cin: Carry) -> Carry {
    let (pv, mv) = (b.pv, b.mv);
    let xv = _mm256_or_si256(eq, mv);
    let e = _mm256_or_si256(eq, cin.minus);
    let s = _mm256_add_epi64(_mm256_and_si256(e, pv), pv);
    let q = _mm256_or_si256(s, _mm256_or_si256(pv, e));
    let r = _mm256_andnot_si256(mv, q);
    let mh = _mm256_or_si256(_mm256_andnot_si256(s, pv), _mm256_and_si256(pv, e));
    let t = _mm256_or_si256(_mm256_slli_epi64::<1>(r), cin.not_plus);
    let mh_in = _mm256_or_si256(_mm256_slli_epi64::<1>(mh), cin.minus);
    b.pv = _mm256_or_si256(mh_in, _mm256_andnot_si256(xv, t));
    b.mv = _mm256_andnot_si256(t, xv);
    Carry {
        minus: _mm256_srli_epi64::<63>(mh),
        not_plus: _mm256_srli_epi64::<63>(r),
    }
}

/// `x`'s 128 bits in the low half of a register, `y`'s in the high half.
#[target_feature(enable = "avx2")]
#[inline]
fn pair(x: &u128, y: &u128) -> __m256i {
    // SAFETY: `x` and `y` are references to 16 readable bytes each; the
    // loads are unaligned-tolerant.
    unsafe {
        let lo = _mm_loadu_si128(std::ptr::from_ref(x).cast::<__m128i>());
        let hi = _mm_loadu_si128(std::ptr::from_ref(y).cast::<__m128i>());
        _mm256_inserti128_si256::<1>(_mm256_zextsi128_si256(lo), hi)
    }
}

/// The low block's masks of a text step loaded by [`pair`]: `a`'s low
/// word in lanes 0 and 1, `b`'s in lanes 2 and 3.
#[target_feature(enable = "avx2")]
#[inline]
fn low(v: __m256i) -> __m256i {
    _mm256_unpacklo_epi64(v, v)
}

/// The high block's masks of the same step.
#[target_feature(enable = "avx2")]
#[inline]
fn high(v: __m256i) -> __m256i {
    _mm256_unpackhi_epi64(v, v)
}

/// The four lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn lanes(v: __m256i) -> [u64; 4] {
    let mut out = [0u64; 4];
    // SAFETY: `out` is 32 writable bytes; the store is unaligned-tolerant.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast::<__m256i>(), v) };
    out
}

/// [`super::distances`] of `a` and `b`, 1 to 128 symbols each.
#[target_feature(enable = "avx2")]
pub(super) fn triple(a: &[u8], b: &[u8]) -> Distances {
    let (ma, mb) = (Masks::<u128>::new(a), Masks::<u128>::new(b));
    let zero = _mm256_setzero_si256();
    // Lane 0's first column is the global one (deltas +1), the others'
    // free (zeros).
    let first = _mm256_set_epi64x(0, 0, 0, -1);
    let mut lo = Block {
        pv: first,
        mv: zero,
    };
    let mut hi = lo;
    // The top row grows by one per column in every lane.
    let top = Carry {
        minus: zero,
        not_plus: zero,
    };
    let mut common = u128::MAX;
    let lcs_step = |common: &mut u128, ea: u128| {
        let u = *common & ea;
        *common = common.wrapping_add(u) | (*common & !ea);
    };
    let short = a.len().min(b.len());
    let both = |j: usize| {
        pair(
            &ma.eq[usize::from(sym(b, j))],
            &mb.eq[usize::from(sym(a, j))],
        )
    };

    // The low block takes text symbol `j` while the high one takes `j - 1`
    // with what the low one passed down at `j - 1`.
    let mut prev = both(0);
    lcs_step(&mut common, ma.of(b[0]));
    let mut carry = step(&mut lo, low(prev), top);
    for j in 1..short {
        let v = both(j);
        lcs_step(&mut common, ma.of(b[j]));
        step(&mut hi, high(prev), carry);
        carry = step(&mut lo, low(v), top);
        prev = v;
    }
    // The columns over the shorter text end here.
    let lo_short = lo;
    step(&mut hi, high(prev), carry);
    let hi_short = hi;
    if b.len() > a.len() {
        let text = |j: usize| _mm256_zextsi128_si256(load(&ma.eq[usize::from(sym(b, j))]));
        let mut prev = text(short);
        lcs_step(&mut common, ma.of(b[short]));
        let mut carry = step(&mut lo, low(prev), top);
        for j in short + 1..b.len() {
            let v = text(j);
            lcs_step(&mut common, ma.of(b[j]));
            step(&mut hi, high(prev), carry);
            carry = step(&mut lo, low(v), top);
            prev = v;
        }
        step(&mut hi, high(prev), carry);
    } else if a.len() > b.len() {
        let text =
            |j: usize| _mm256_inserti128_si256::<1>(zero, load(&mb.eq[usize::from(sym(a, j))]));
        let mut prev = text(short);
        let mut carry = step(&mut lo, low(prev), top);
        for j in short + 1..a.len() {
            let v = text(j);
            step(&mut hi, high(prev), carry);
            carry = step(&mut lo, low(v), top);
            prev = v;
        }
        step(&mut hi, high(prev), carry);
    }
    // The lanes over the shorter text take their columns at its end.
    let shorter = if b.len() < a.len() {
        _mm256_set_epi64x(0, 0, -1, -1)
    } else if a.len() < b.len() {
        _mm256_set_epi64x(-1, -1, 0, 0)
    } else {
        zero
    };
    let pick = |now: __m256i, then: __m256i| lanes(_mm256_blendv_epi8(now, then, shorter));
    let (lp, lm) = (pick(lo.pv, lo_short.pv), pick(lo.mv, lo_short.mv));
    let (hp, hm) = (pick(hi.pv, hi_short.pv), pick(hi.mv, hi_short.mv));
    let column = |k: usize| {
        Column::with(
            u128::from(lp[k]) | u128::from(hp[k]) << 64,
            u128::from(lm[k]) | u128::from(hm[k]) << 64,
        )
    };
    Distances {
        distance: column(0).bottom(b.len(), ma.low),
        a_in_b: column(2).least(a.len(), b.len(), mb.low),
        b_in_a: column(1).least(b.len(), a.len(), ma.low),
        common: a.len() - (common & ma.low).count_ones() as usize,
    }
}

/// Symbol `j` of `s` as an index of the match masks.
#[inline(always)]
fn sym(s: &[u8], j: usize) -> u8 {
    s[j] & 63
}

/// `x`'s 128 bits.
#[target_feature(enable = "avx2")]
#[inline]
fn load(x: &u128) -> __m128i {
    // SAFETY: `x` is a reference to 16 readable bytes; the load is
    // unaligned-tolerant.
    unsafe { _mm_loadu_si128(std::ptr::from_ref(x).cast::<__m128i>()) }
}
