//! The AVX2 walk of [`super`] for strings of 129 to 256 symbols: three
//! or four blocks per column, block `k` running `k` text symbols behind
//! block 0, and match masks in tables of two 256-bit halves per value.

use std::arch::x86_64::{
    __m256i, _mm256_and_si256, _mm256_andnot_si256, _mm256_blend_epi32, _mm256_blendv_epi8,
    _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set_epi64x, _mm256_set1_epi64x,
    _mm256_setzero_si256, _mm256_slli_epi16,
};

use super::super::Distances;
use super::super::word::{Column, Wide};
use super::{Block, Carry, lanes, step};

/// The match masks of both strings, `H` halves of 256 bits per symbol
/// value: half `h` of entry `v` holds words `2h` and `2h + 1` of `a`'s
/// mask of `v` (bit `i` of the mask set where `a[i] & 63 == v`), then the
/// same words of `b`'s.
struct Table<const H: usize>([[__m256i; H]; 64]);

impl<const H: usize> Table<H> {
    /// The masks of `a` and `b` (1 to `128 * H` symbols each, copied
    /// into `ta` and `tb`, zeros after), built from the strings' six bit
    /// planes: a tree that splits the pattern's positions by one bit of
    /// the value per level, 126 operations per half on both strings at
    /// once and one store per entry, where setting one bit per symbol
    /// would clear the table first and wait on each entry's last store.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn new(ta: &[u8], na: usize, tb: &[u8], nb: usize) -> Table<H> {
        let mut planes = [[[0u32; 8]; 6]; H];
        bit_planes(ta, na, &mut planes, 0);
        bit_planes(tb, nb, &mut planes, 4);
        let planes = planes.map(|half| {
            half.map(|p| {
                // SAFETY: `p` is 32 readable bytes; the load is
                // unaligned-tolerant.
                unsafe { _mm256_loadu_si256(p.as_ptr().cast::<__m256i>()) }
            })
        });
        let mut t = Table([[_mm256_setzero_si256(); H]; 64]);
        // The root holds every position; level `k` splits each node on
        // bit `5 - k` of the value, the node of values with the bit set
        // after the one without, so that the leaves are in value order.
        for (h, root) in t.0[0].iter_mut().enumerate() {
            let (a, b) = (2 * h, 2 * h + 1);
            *root = _mm256_set_epi64x(
                ones(nb, b) as i64,
                ones(nb, a) as i64,
                ones(na, b) as i64,
                ones(na, a) as i64,
            );
        }
        let mut nodes = 1;
        for bit in (0..6).rev() {
            for i in (0..nodes).rev() {
                let x = t.0[i];
                for h in 0..H {
                    let plane = planes[h][bit];
                    t.0[2 * i + 1][h] = _mm256_and_si256(x[h], plane);
                    t.0[2 * i][h] = _mm256_andnot_si256(plane, x[h]);
                }
            }
            nodes *= 2;
        }
        t
    }

    /// 64-bit word `k` (0 to `4H - 1`) of entry `s`.
    #[inline(always)]
    fn word(&self, s: u8, k: usize) -> u64 {
        let e = &self.0[usize::from(s & 63)];
        assert!(k < 4 * H);
        // SAFETY: `e` is `H` 32-byte vectors, read as `4H` words, `k`
        // one of them (checked just above, and known at compile time).
        unsafe { std::ptr::from_ref(e).cast::<u64>().add(k).read() }
    }

    /// Word `k` of `a`'s mask of `s`.
    #[inline(always)]
    fn a(&self, s: u8, k: usize) -> u64 {
        self.word(s, k / 2 * 4 + k % 2)
    }

    /// Word `k` of `b`'s mask of `s`.
    #[inline(always)]
    fn b(&self, s: u8, k: usize) -> u64 {
        self.word(s, k / 2 * 4 + 2 + k % 2)
    }

    /// Block `k`'s masks of one text step: word `k` of `a`'s mask of `y`
    /// (a symbol of `b`) in lanes 0 and 1, of `b`'s mask of `x` (a symbol
    /// of `a`) in lanes 2 and 3.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn masks(&self, k: usize, y: u8, x: u8) -> __m256i {
        _mm256_blend_epi32::<0b1111_0000>(
            _mm256_set1_epi64x(self.a(y, k) as i64),
            _mm256_set1_epi64x(self.b(x, k) as i64),
        )
    }
}

/// The bit planes of `p` (its first `n` symbols, zeros to a multiple of
/// 32 after them): word `at + c % 4` of plane `k` of half `c / 4` has bit
/// `i` set where bit `k` of `p[32 * c + i]` is. One shift and one
/// `movemask` per plane and 32 symbols.
#[target_feature(enable = "avx2")]
#[inline]
fn bit_planes<const H: usize>(p: &[u8], n: usize, planes: &mut [[[u32; 8]; 6]; H], at: usize) {
    for (c, chunk) in p.chunks_exact(32).take(n.div_ceil(32)).enumerate() {
        // SAFETY: `chunk` is 32 readable bytes; the load is
        // unaligned-tolerant.
        let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()) };
        // Bit `k` of each byte to its top (16-bit shifts: what crosses
        // into a byte from the one below stays under its top bit).
        let top = |x: __m256i| _mm256_movemask_epi8(x) as u32;
        let (half, w) = (&mut planes[c / 4], at + c % 4);
        half[0][w] = top(_mm256_slli_epi16::<7>(v));
        half[1][w] = top(_mm256_slli_epi16::<6>(v));
        half[2][w] = top(_mm256_slli_epi16::<5>(v));
        half[3][w] = top(_mm256_slli_epi16::<4>(v));
        half[4][w] = top(_mm256_slli_epi16::<3>(v));
        half[5][w] = top(_mm256_slli_epi16::<2>(v));
    }
}

/// Word `k` of the low `n` bits.
fn ones(n: usize, k: usize) -> u64 {
    match n.saturating_sub(64 * k) {
        64.. => !0,
        r => (1 << r) - 1,
    }
}

/// The common subsequence's step (Allison and Dix, Hyyrö) on `B` words:
/// `common` has a zero bit where `a`'s symbol is matched; `ea` is `a`'s
/// mask of the text symbol.
#[inline(always)]
fn lcs_step<const B: usize>(common: &mut [u64; B], ea: [u64; B]) {
    let mut carry = false;
    for (c, e) in common.iter_mut().zip(ea) {
        let (sum, c1) = c.overflowing_add(*c & e);
        let (sum, c2) = sum.overflowing_add(u64::from(carry));
        carry = c1 | c2;
        *c = sum | (*c & !e);
    }
}

/// [`super::triple`] with `B` blocks per column (patterns of up to `64 * B`
/// symbols), block `k` running `k` text symbols behind block 0 with the
/// deltas block `k - 1` passed down then: the blocks of one iteration do
/// not wait for each other. `H`: halves per mask table entry, `B / 2`
/// rounded up.
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn walk<const B: usize, const H: usize>(a: &[u8], b: &[u8]) -> Distances {
    let (na, nb) = (a.len(), b.len());
    // The texts with zeros after them, for the bit planes and for the
    // lanes whose text has ended, which read any masks.
    let (mut ta, mut tb) = ([0u8; 256], [0u8; 256]);
    ta[..na].copy_from_slice(a);
    tb[..nb].copy_from_slice(b);
    let t = Table::<H>::new(&ta, na, &tb, nb);
    let first = Block {
        pv: _mm256_set_epi64x(0, 0, 0, -1),
        mv: _mm256_setzero_si256(),
    };
    let mut blocks = [first; B];
    let mut carries = [top(); B];
    let mut ended = [first; B];
    let mut common = [!0u64; B];
    let (n, short) = (na.max(nb), na.min(nb));
    // Block `k` at iteration `j` takes text symbol `j - k`.
    let go = |k: usize, s: usize, blocks: &mut [Block; B], carries: &mut [Carry; B]| {
        let cin = if k == 0 { top() } else { carries[k - 1] };
        carries[k] = step(&mut blocks[k], t.masks(k, tb[s], ta[s]), cin);
    };
    for j in 0..n + B - 1 {
        if let Some(&y) = b.get(j) {
            lcs_step(&mut common, std::array::from_fn(|k| t.a(y, k)));
        }
        // Highest block first: each reads what the one below passed down
        // at the previous iteration.
        if j >= B - 1 && j < n && j.wrapping_sub(short - 1) >= B {
            for k in (0..B).rev() {
                go(k, j - k, &mut blocks, &mut carries);
            }
        } else {
            // Iterations where a block starts, ends, or passes the end of
            // the shorter text, after which its lanes for that text are
            // kept as they were.
            for k in (0..B).rev() {
                let s = j.wrapping_sub(k);
                if s < n {
                    go(k, s, &mut blocks, &mut carries);
                }
                if s == short - 1 {
                    ended[k] = blocks[k];
                }
            }
        }
    }
    let shorter = if nb < na {
        _mm256_set_epi64x(0, 0, -1, -1)
    } else if na < nb {
        _mm256_set_epi64x(-1, -1, 0, 0)
    } else {
        _mm256_setzero_si256()
    };
    let pick = |now: __m256i, then: __m256i| lanes(_mm256_blendv_epi8(now, then, shorter));
    let pv: [[u64; 4]; B] = std::array::from_fn(|k| pick(blocks[k].pv, ended[k].pv));
    let mv: [[u64; 4]; B] = std::array::from_fn(|k| pick(blocks[k].mv, ended[k].mv));
    let column = |lane: usize| {
        Column::with(
            Wide(std::array::from_fn(|k| pv[k][lane])),
            Wide(std::array::from_fn(|k| mv[k][lane])),
        )
    };
    let low = |n: usize| Wide::<B>(std::array::from_fn(|k| ones(n, k)));
    let (a_low, b_low) = (low(na), low(nb));
    let unmatched: usize = (0..B)
        .map(|k| (common[k] & a_low.0[k]).count_ones() as usize)
        .sum();
    Distances {
        distance: column(0).bottom(nb, a_low),
        a_in_b: column(2).least(na, nb, b_low),
        b_in_a: column(1).least(nb, na, a_low),
        common: na - unmatched,
    }
}

/// The delta entering every lane's block 0: the top row grows by one per
/// column.
#[target_feature(enable = "avx2")]
#[inline]
fn top() -> Carry {
    Carry {
        minus: _mm256_setzero_si256(),
        not_plus: _mm256_setzero_si256(),
    }
}
