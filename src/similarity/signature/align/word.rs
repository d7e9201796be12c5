//! Myers' bit-parallel column for patterns of up to 256 symbols: the
//! whole column is one value of a [`Word`] type (`u64`, `u128`, or
//! [`Wide`] words with carries), so each text symbol costs a fixed run of
//! word operations with no loop over blocks and no horizontal delta
//! passed between them. Myers' recurrence on an `m`-bit word is exact for
//! any `m`; the bits above the pattern's only ever receive carries and
//! shifts from below and are never read.

use super::Distances;

/// A bit vector as wide as the longest pattern it holds.
pub(crate) trait Word: Copy {
    const ZERO: Self;
    const ONE: Self;
    const ONES: Self;
    /// Bit `i` alone.
    fn bit(i: usize) -> Self;
    /// The match masks of `p` (at most as many symbols as bits): bit `i`
    /// of entry `v` set where `p[i] & 63 == v`. Built in 64-bit words, so
    /// that each symbol is one 8-byte read-modify-write.
    fn masks(p: &[u8]) -> [Self; 64];
    fn or(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
    /// Addition modulo the width (the carries run across words).
    fn add(self, o: Self) -> Self;
    /// Shift left by one bit (across words).
    fn shl1(self) -> Self;
    /// Whether `self` has a bit of `mask`.
    fn any(self, mask: Self) -> bool;
    /// The number of bits set.
    fn ones(self) -> usize;
    /// 64-bit word `k` (from the least significant).
    fn word(self, k: usize) -> u64;
}

/// The match masks of `p` as `N` words per value.
#[inline(always)]
fn words<const N: usize>(p: &[u8]) -> [[u64; N]; 64] {
    let mut eq = [[0u64; N]; 64];
    for (i, &s) in p.iter().enumerate() {
        eq[usize::from(s & 63)][i / 64] |= 1 << (i % 64);
    }
    eq
}

/// The constants and operations of a primitive integer [`Word`].
macro_rules! native {
    () => {
        const ZERO: Self = 0;
        const ONE: Self = 1;
        const ONES: Self = !0;
        #[inline(always)]
        fn bit(i: usize) -> Self {
            1 << i
        }
        #[inline(always)]
        fn or(self, o: Self) -> Self {
            self | o
        }
        #[inline(always)]
        fn and(self, o: Self) -> Self {
            self & o
        }
        #[inline(always)]
        fn xor(self, o: Self) -> Self {
            self ^ o
        }
        #[inline(always)]
        fn not(self) -> Self {
            !self
        }
        #[inline(always)]
        fn add(self, o: Self) -> Self {
            self.wrapping_add(o)
        }
        #[inline(always)]
        fn shl1(self) -> Self {
            self << 1
        }
        #[inline(always)]
        fn any(self, mask: Self) -> bool {
            self & mask != 0
        }
        #[inline(always)]
        fn ones(self) -> usize {
            self.count_ones() as usize
        }
        #[inline(always)]
        fn word(self, k: usize) -> u64 {
            (self >> (64 * k)) as u64
        }
    };
}

impl Word for u64 {
    #[inline(always)]
    fn masks(p: &[u8]) -> [Self; 64] {
        words::<1>(p).map(|[w]| w)
    }
    native!();
}

impl Word for u128 {
    #[inline(always)]
    fn masks(p: &[u8]) -> [Self; 64] {
        // In place, each half's bits in a loop of its own: no copy of the
        // table, no variable shift of a u128.
        let mut eq = [0u128; 64];
        let (lo, hi) = p.split_at(p.len().min(64));
        for (i, &s) in lo.iter().enumerate() {
            eq[usize::from(s & 63)] |= u128::from(1u64 << i);
        }
        for (i, &s) in hi.iter().enumerate() {
            eq[usize::from(s & 63)] |= u128::from(1u64 << (i % 64)) << 64;
        }
        eq
    }
    native!();
}

/// `N` 64-bit words, least significant first.
#[derive(Clone, Copy)]
pub(crate) struct Wide<const N: usize>(pub(super) [u64; N]);

impl<const N: usize> Word for Wide<N> {
    const ZERO: Self = Wide([0; N]);
    const ONE: Self = {
        let mut w = [0; N];
        w[0] = 1;
        Wide(w)
    };
    const ONES: Self = Wide([!0; N]);
    #[inline(always)]
    fn bit(i: usize) -> Self {
        let mut w = [0; N];
        w[i / 64] = 1 << (i % 64);
        Wide(w)
    }
    #[inline(always)]
    fn masks(p: &[u8]) -> [Self; 64] {
        words::<N>(p).map(Wide)
    }
    #[inline(always)]
    fn or(self, o: Self) -> Self {
        Wide(std::array::from_fn(|k| self.0[k] | o.0[k]))
    }
    #[inline(always)]
    fn and(self, o: Self) -> Self {
        Wide(std::array::from_fn(|k| self.0[k] & o.0[k]))
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        Wide(std::array::from_fn(|k| self.0[k] ^ o.0[k]))
    }
    #[inline(always)]
    fn not(self) -> Self {
        Wide(self.0.map(|x| !x))
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        let mut out = [0; N];
        let mut carry = false;
        for (sum, (x, y)) in out.iter_mut().zip(self.0.iter().zip(o.0)) {
            let (s, c1) = x.overflowing_add(y);
            let (s, c2) = s.overflowing_add(u64::from(carry));
            *sum = s;
            carry = c1 | c2;
        }
        Wide(out)
    }
    #[inline(always)]
    fn shl1(self) -> Self {
        Wide(std::array::from_fn(|k| {
            let below = if k == 0 { 0 } else { self.0[k - 1] >> 63 };
            self.0[k] << 1 | below
        }))
    }
    #[inline(always)]
    fn any(self, mask: Self) -> bool {
        self.0
            .iter()
            .zip(mask.0)
            .fold(0, |acc, (x, m)| acc | (x & m))
            != 0
    }
    #[inline(always)]
    fn ones(self) -> usize {
        self.0.iter().map(|x| x.count_ones() as usize).sum()
    }
    #[inline(always)]
    fn word(self, k: usize) -> u64 {
        self.0[k]
    }
}

/// A pattern's match masks: bit `i` of `eq[v]` is set where symbol `i`
/// has value `v`. On the stack (at most 2 KiB), made per pair in about
/// the time of one column step per symbol.
pub(crate) struct Masks<T> {
    pub(super) eq: [T; 64],
    len: usize,
    /// The pattern's last bit: the column's bottom row.
    high: T,
    /// The pattern's bits.
    pub(super) low: T,
}

impl<T: Word> Masks<T> {
    /// The masks of `p` (1 to the width of `T` symbols; bits 6 and 7 of a
    /// symbol are ignored).
    #[inline(always)]
    pub(crate) fn new(p: &[u8]) -> Masks<T> {
        Masks {
            eq: T::masks(p),
            len: p.len(),
            high: T::bit(p.len() - 1),
            // All bits up to the last, without a shift by the width.
            low: T::bit(p.len() - 1).add(T::bit(p.len() - 1)).add(T::ONES),
        }
    }

    #[inline(always)]
    pub(super) fn of(&self, s: u8) -> T {
        self.eq[usize::from(s & 63)]
    }
}

/// One column of the programme as vertical deltas (`pv` +1, `mv` -1 bits)
/// and its bottom value.
#[derive(Clone, Copy)]
pub(super) struct Column<T> {
    pv: T,
    mv: T,
    score: usize,
}

impl<T: Word> Column<T> {
    fn new(len: usize) -> Column<T> {
        Column {
            pv: T::ONES,
            mv: T::ZERO,
            score: len,
        }
    }

    /// Advance by one text symbol whose match mask is `eq`. `GLOBAL`: the
    /// top row grows by one per column (the whole of both strings), and
    /// the bottom value is left to [`Column::bottom`]; otherwise the top
    /// row stays 0 (the pattern may start anywhere in the text) and the
    /// bottom value follows each column, for its minimum.
    #[inline(always)]
    fn step<const GLOBAL: bool>(&mut self, eq: T, high: T) {
        let (pv, mv) = (self.pv, self.mv);
        let xv = eq.or(mv);
        let xh = eq.and(pv).add(pv).xor(pv).or(eq);
        let ph = mv.or(xh.or(pv).not());
        let mh = pv.and(xh);
        if !GLOBAL {
            self.score = self.score + usize::from(ph.any(high)) - usize::from(mh.any(high));
        }
        let ph = if GLOBAL {
            ph.shl1().or(T::ONE)
        } else {
            ph.shl1()
        };
        let mh = mh.shl1();
        self.pv = mh.or(xv.or(ph).not());
        self.mv = ph.and(xv);
    }

    /// The bottom value of a global column after `n` text symbols: the
    /// top row's `n` plus the vertical deltas down the pattern's bits.
    pub(super) fn bottom(&self, n: usize, low: T) -> usize {
        n + self.pv.and(low).ones() - self.mv.and(low).ones()
    }

    /// A column of these vertical deltas (its bottom value unused).
    // Only the AVX2 walk builds columns from their parts.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn with(pv: T, mv: T) -> Column<T> {
        Column { pv, mv, score: 0 }
    }

    /// A first column of zeros: the text may be aligned with any stretch
    /// of the pattern, its rows before and after that stretch free.
    fn free() -> Column<T> {
        Column {
            pv: T::ZERO,
            mv: T::ZERO,
            score: 0,
        }
    }

    /// The least value of a column after `n` text symbols (the top row's
    /// `n`, then the vertical deltas down the pattern's `len` bits),
    /// summed four rows at a time.
    pub(super) fn least(&self, n: usize, len: usize, low: T) -> usize {
        let (pv, mv) = (self.pv.and(low), self.mv.and(low));
        let mut value = n as isize;
        let mut least = value;
        for k in 0..len.div_ceil(64) {
            let (mut p, mut m) = (pv.word(k), mv.word(k));
            while p | m != 0 {
                let (sum, low) = NIBBLES[(p & 15 | (m & 15) << 4) as usize];
                least = least.min(value + isize::from(low));
                value += isize::from(sum);
                p >>= 4;
                m >>= 4;
            }
        }
        least as usize
    }
}

/// For four rows' vertical deltas (`+1` bits in the low nibble of the
/// index, `-1` bits in the high one): their sum, and the least of their
/// partial sums.
const NIBBLES: [(i8, i8); 256] = {
    let mut table = [(0i8, 0i8); 256];
    let mut i = 0;
    while i < 256 {
        let (mut sum, mut least) = (0i8, i8::MAX);
        let mut bit = 0;
        while bit < 4 {
            sum += ((i >> bit) & 1) as i8 - ((i >> (bit + 4)) & 1) as i8;
            if sum < least {
                least = sum;
            }
            bit += 1;
        }
        table[i] = (sum, least);
        i += 1;
    }
    table
};

/// The pattern of `m` over text `t`. `GLOBAL`: their distance (and
/// `t.len()`); otherwise the least distance of the pattern to a substring
/// of `t` and the first end of one.
pub(crate) fn scan<T: Word, const GLOBAL: bool>(m: &Masks<T>, t: &[u8]) -> (usize, usize) {
    let mut col = Column::<T>::new(m.len);
    let (mut best, mut best_at) = (m.len, 0);
    for (j, &s) in t.iter().enumerate() {
        col.step::<GLOBAL>(m.of(s), m.high);
        if !GLOBAL && col.score < best {
            best = col.score;
            best_at = j + 1;
        }
    }
    if GLOBAL {
        (col.bottom(t.len(), m.low), t.len())
    } else {
        (best, best_at)
    }
}

/// [`super::distances`] for `a` and `b` (1 to the width of `T` symbols
/// each), in one loop of three columns and no per-column bookkeeping:
///
/// - `a` over `b` globally: the distance, read off the last column;
/// - `a` over `b` with a first column of zeros ([`Column::free`]): all of
///   `b` against any stretch of `a`, the least value of the last column
///   being `b`'s distance inside `a` (the same masks per text symbol as
///   the first);
/// - `b` over `a` the same way: `a`'s distance inside `b`.
pub(crate) fn triple<T: Word>(a: &[u8], b: &[u8]) -> Distances {
    let (ma, mb) = (Masks::<T>::new(a), Masks::<T>::new(b));
    let mut whole = Column::<T>::new(a.len());
    let mut b_in_a = Column::<T>::free();
    let mut a_in_b = Column::<T>::free();
    // The common subsequence (Allison and Dix, Hyyrö): a zero bit where
    // `a`'s symbol is matched.
    let mut common = T::ONES;
    let lcs_step = |common: &mut T, ea: T| {
        let u = common.and(ea);
        *common = common.add(u).or(common.and(ea.not()));
    };
    for (&x, &y) in a.iter().zip(b) {
        let ea = ma.of(y);
        whole.step::<true>(ea, ma.high);
        b_in_a.step::<true>(ea, ma.high);
        lcs_step(&mut common, ea);
        a_in_b.step::<true>(mb.of(x), mb.high);
    }
    let n = a.len().min(b.len());
    for &y in &b[n..] {
        let ea = ma.of(y);
        whole.step::<true>(ea, ma.high);
        b_in_a.step::<true>(ea, ma.high);
        lcs_step(&mut common, ea);
    }
    for &x in &a[n..] {
        a_in_b.step::<true>(mb.of(x), mb.high);
    }
    Distances {
        distance: whole.bottom(b.len(), ma.low),
        a_in_b: a_in_b.least(a.len(), b.len(), mb.low),
        b_in_a: b_in_a.least(b.len(), a.len(), ma.low),
        common: a.len() - common.and(ma.low).ones(),
    }
}
