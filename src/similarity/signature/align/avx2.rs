//! [`super::distances`] for two strings of up to 256 symbols with AVX2:
//! the same results as [`word::triple`](super::word::triple) on `u64`,
//! `u128` or wider columns, with the three Levenshtein columns side by
//! side in 64-bit lanes (up to 128 symbols here, longer strings in
//! `avx2/wide.rs`).
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
//! Myers' step is written so that its chain is short: with
//! `S = (Eq & Pv) + Pv`, `Xh | Pv = S | Pv | Eq` and
//! `Pv & Xh = Pv & (!S | Eq)`, and the shifted `Ph` kept as its
//! complement, which both new deltas read with one `andnot`. Seven operations from `Pv` to the next `Pv`,
//! against twelve as Myers writes it; the values are the same bits.
//!
//! The common subsequence stays in general-purpose registers (a `u128`),
//! a fourth chain beside them. The results are bit for bit those of the
//! portable walk (tested against it and against the dynamic programme).

use std::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_blend_epi32,
    _mm256_blendv_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
    _mm256_set_epi64x, _mm256_setzero_si256, _mm256_slli_epi16, _mm256_slli_epi64,
    _mm256_srli_epi64, _mm256_storeu_si256, _mm256_unpackhi_epi64, _mm256_unpacklo_epi64,
};

mod wide;

use super::Distances;
use super::word::Column;

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

/// The match masks of both strings, side by side: entry `v` holds, in
/// its low 128 bits, bit `i` set where `a[i] & 63 == v`, and in its high
/// 128 bits the same for `b`. Aligned so that an entry is one load.
#[repr(C, align(32))]
struct Table([[u128; 2]; 64]);

impl Table {
    /// The masks of `a` and `b` (1 to 128 symbols each), built from the
    /// strings' six bit planes: a tree that splits the pattern's
    /// positions by one bit of the value per level, 126 operations on
    /// both strings at once and one store per entry, where setting one bit
    /// per symbol would clear the table first and wait on each entry's
    /// last store.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new(a: &[u8], b: &[u8]) -> Table {
        let mut planes = [[0u32; 8]; 6];
        bit_planes(a, &mut planes, 0);
        bit_planes(b, &mut planes, 4);
        let planes = planes.map(|p| {
            // SAFETY: `p` is 32 readable bytes; the load is
            // unaligned-tolerant.
            unsafe { _mm256_loadu_si256(p.as_ptr().cast::<__m256i>()) }
        });
        let (a_lo, a_hi) = ones(a.len());
        let (b_lo, b_hi) = ones(b.len());
        let mut t = [_mm256_setzero_si256(); 64];
        // The root holds every position; level `k` splits each node on
        // bit `5 - k` of the value, the node of values with the bit set
        // after the one without, so that the leaves are in value order.
        t[0] = _mm256_set_epi64x(b_hi as i64, b_lo as i64, a_hi as i64, a_lo as i64);
        let mut nodes = 1;
        for bit in (0..6).rev() {
            let plane = planes[bit];
            for i in (0..nodes).rev() {
                let x = t[i];
                t[2 * i + 1] = _mm256_and_si256(x, plane);
                t[2 * i] = _mm256_andnot_si256(plane, x);
            }
            nodes *= 2;
        }
        let mut table = Table([[0; 2]; 64]);
        for (entry, v) in table.0.iter_mut().zip(t) {
            // SAFETY: an entry is 32 writable bytes; the store is
            // unaligned-tolerant.
            unsafe { _mm256_storeu_si256(std::ptr::from_mut(entry).cast::<__m256i>(), v) };
        }
        table
    }

    /// `a`'s mask of symbol `s`.
    #[inline(always)]
    fn a(&self, s: u8) -> u128 {
        self.0[usize::from(s & 63)][0]
    }

    /// Entry `s` whole: `a`'s mask of `s` in the low half, `b`'s in the
    /// high half.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn entry(&self, s: u8) -> __m256i {
        let e = &self.0[usize::from(s & 63)];
        // SAFETY: an entry is 32 readable bytes; the load is
        // unaligned-tolerant.
        unsafe { _mm256_loadu_si256(std::ptr::from_ref(e).cast::<__m256i>()) }
    }

    /// One text step of both walks: `a`'s mask of `y` (a symbol of `b`)
    /// in the low half, `b`'s mask of `x` (a symbol of `a`) in the high.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn pair(&self, y: u8, x: u8) -> __m256i {
        _mm256_blend_epi32::<0b1111_0000>(self.entry(y), self.entry(x))
    }
}

/// The bit planes of `p` (1 to 128 symbols): word `at + c` of plane `k`
/// has bit `i` set where bit `k` of `p[32 * c + i]` is. One shift and one
/// `movemask` per plane and 32 symbols.
#[target_feature(enable = "avx2")]
#[inline]
fn bit_planes(p: &[u8], planes: &mut [[u32; 8]; 6], at: usize) {
    let mut buf = [0u8; 128];
    buf[..p.len()].copy_from_slice(p);
    for (c, chunk) in buf.chunks_exact(32).take(p.len().div_ceil(32)).enumerate() {
        // SAFETY: `chunk` is 32 readable bytes; the load is
        // unaligned-tolerant.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()) };
        // Bit `k` of each byte to its top (16-bit shifts: what crosses
        // into a byte from the one below stays under its top bit).
        let top = |x: __m256i| _mm256_movemask_epi8(x) as u32;
        planes[0][at + c] = top(_mm256_slli_epi16::<7>(v));
        planes[1][at + c] = top(_mm256_slli_epi16::<6>(v));
        planes[2][at + c] = top(_mm256_slli_epi16::<5>(v));
        planes[3][at + c] = top(_mm256_slli_epi16::<4>(v));
        planes[4][at + c] = top(_mm256_slli_epi16::<3>(v));
        planes[5][at + c] = top(_mm256_slli_epi16::<2>(v));
    }
}

/// The low `n` bits (0 to 128) as two words, low first.
fn ones(n: usize) -> (u64, u64) {
    match n {
        128.. => (!0, !0),
        64.. => (!0, (1 << (n - 64)) - 1),
        _ => ((1 << n) - 1, 0),
    }
}

/// The low block's masks of a text step ([`Table::pair`]): `a`'s low
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

/// The columns' two blocks, the high one a text symbol behind: after
/// [`Walk::next`] with text symbol `j`, the low block has taken `j` and
/// the high one `j - 1`, with the deltas the low one passed down then
/// (`carry`). `TWO`: whether a pattern has more than 64 symbols (else the
/// high block is not walked).
struct Walk<const TWO: bool> {
    lo: Block,
    hi: Block,
    carry: Carry,
    prev: __m256i,
}

impl<const TWO: bool> Walk<TWO> {
    /// The first columns (lane 0's global, deltas +1, the others' free,
    /// zeros), advanced by the masks `v` of the first text symbol.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new(v: __m256i) -> Walk<TWO> {
        let first = Block {
            pv: _mm256_set_epi64x(0, 0, 0, -1),
            mv: _mm256_setzero_si256(),
        };
        let mut lo = first;
        let carry = step(&mut lo, low(v), TOP);
        Walk {
            lo,
            hi: first,
            carry,
            prev: v,
        }
    }

    /// The next text symbol, whose masks are `v`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn next(&mut self, v: __m256i) {
        if TWO {
            step(&mut self.hi, high(self.prev), self.carry);
        }
        self.carry = step(&mut self.lo, low(v), TOP);
        self.prev = v;
    }

    /// The high block's last step.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn finish(&mut self) {
        if TWO {
            step(&mut self.hi, high(self.prev), self.carry);
        }
    }
}

/// The delta entering every lane's low block: the top row grows by one
/// per column.
const TOP: Carry = Carry {
    // SAFETY: an all-zero bit pattern is a valid `__m256i`.
    minus: unsafe { std::mem::zeroed() },
    not_plus: unsafe { std::mem::zeroed() },
};

/// [`super::distances`] of `a` and `b`, 1 to 256 symbols each.
#[target_feature(enable = "avx2")]
pub(super) fn triple(a: &[u8], b: &[u8]) -> Distances {
    match a.len().max(b.len()) {
        ..=64 => walk::<false>(&Table::new(a, b), a, b),
        65..=128 => walk::<true>(&Table::new(a, b), a, b),
        129..=192 => wide::walk::<3, 2>(a, b),
        _ => wide::walk::<4, 2>(a, b),
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn walk<const TWO: bool>(t: &Table, a: &[u8], b: &[u8]) -> Distances {
    // The common subsequence (Allison and Dix, Hyyrö): a zero bit where
    // `a`'s symbol is matched.
    let mut common = u128::MAX;
    let lcs_step = |common: &mut u128, ea: u128| {
        let u = *common & ea;
        *common = common.wrapping_add(u) | (*common & !ea);
    };
    let short = a.len().min(b.len());
    let mut w = Walk::<TWO>::new(t.pair(b[0], a[0]));
    lcs_step(&mut common, t.a(b[0]));
    for j in 1..short {
        w.next(t.pair(b[j], a[j]));
        lcs_step(&mut common, t.a(b[j]));
    }
    // The lanes over the shorter text end here: the low block now, the
    // high one a step later. Past it they take any masks.
    let lo_short = w.lo;
    let hi_short;
    if b.len() > short {
        w.next(t.entry(b[short]));
        lcs_step(&mut common, t.a(b[short]));
        hi_short = w.hi;
        for &y in &b[short + 1..] {
            w.next(t.entry(y));
            lcs_step(&mut common, t.a(y));
        }
    } else if a.len() > short {
        w.next(t.entry(a[short]));
        hi_short = w.hi;
        for &x in &a[short + 1..] {
            w.next(t.entry(x));
        }
    } else {
        hi_short = w.hi;
    }
    w.finish();
    let shorter = if b.len() < a.len() {
        _mm256_set_epi64x(0, 0, -1, -1)
    } else if a.len() < b.len() {
        _mm256_set_epi64x(-1, -1, 0, 0)
    } else {
        _mm256_setzero_si256()
    };
    let pick = |now: __m256i, then: __m256i| lanes(_mm256_blendv_epi8(now, then, shorter));
    let (lp, lm) = (pick(w.lo.pv, lo_short.pv), pick(w.lo.mv, lo_short.mv));
    let (hp, hm) = if TWO {
        (pick(w.hi.pv, hi_short.pv), pick(w.hi.mv, hi_short.mv))
    } else {
        ([0; 4], [0; 4])
    };
    let column = |k: usize| {
        Column::with(
            u128::from(lp[k]) | u128::from(hp[k]) << 64,
            u128::from(lm[k]) | u128::from(hm[k]) << 64,
        )
    };
    let (a_lo, a_hi) = ones(a.len());
    let (b_lo, b_hi) = ones(b.len());
    let a_low = u128::from(a_lo) | u128::from(a_hi) << 64;
    let b_low = u128::from(b_lo) | u128::from(b_hi) << 64;
    Distances {
        distance: column(0).bottom(b.len(), a_low),
        a_in_b: column(2).least(a.len(), b.len(), b_low),
        b_in_a: column(1).least(b.len(), a.len(), a_low),
        common: a.len() - (common & a_low).count_ones() as usize,
    }
}
