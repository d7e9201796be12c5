//! Edit distances of symbol strings: bit-parallel Levenshtein (Myers
//! 1999, in Hyyrö's block form), global and semi-global (one string
//! anywhere inside the other), and the alignment behind a distance as
//! matched symbol pairs (Myers' O(ND) difference algorithm, linear space).
//!
//! Symbols are values 0..64: a column of the dynamic programme is one bit
//! per symbol of the first string (the pattern), and each symbol of the
//! second advances the whole column in a few word operations. Patterns of
//! up to 256 symbols (signatures of files up to about 16 KiB, every
//! sketch) are one machine word, a `u128` or an array of words with
//! carries (`align/word.rs`), whose match masks are built on the stack: no
//! allocation per pair. Longer ones go word by word (Hyyrö's blocks).

#[cfg(target_arch = "x86_64")]
mod avx2;
mod word;

use word::{Masks, Wide};

/// Symbols per word.
const W: usize = 64;

/// The Levenshtein distance of `a` and `b` (symbol values 0..64; bits 6
/// and 7 are ignored).
pub fn distance(a: &[u8], b: &[u8]) -> usize {
    // The shorter string is the pattern: fewer words per column.
    let (p, t) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if p.is_empty() {
        return t.len();
    }
    match p.len() {
        ..=64 => word::scan::<u64, true>(&Masks::new(p), t).0,
        65..=128 => word::scan::<u128, true>(&Masks::new(p), t).0,
        129..=192 => word::scan::<Wide<3>, true>(&Masks::new(p), t).0,
        193..=256 => word::scan::<Wide<4>, true>(&Masks::new(p), t).0,
        _ => run::<64>(p, t, true).0,
    }
}

/// The Levenshtein distance of two byte strings, every byte value a
/// symbol: the exact edit distance of two files (for measuring the
/// estimate; quadratic, if 64 times faster than the plain programme).
pub fn byte_distance(a: &[u8], b: &[u8]) -> usize {
    let (p, t) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if p.is_empty() {
        return t.len();
    }
    run::<256>(p, t, true).0
}

/// The fewest edits that turn `a` into some substring of `b` (`a`
/// aligned anywhere inside `b`), and where in `b` that substring ends
/// (exclusive; the first such end).
pub fn distance_inside(a: &[u8], b: &[u8]) -> (usize, usize) {
    if a.is_empty() {
        return (0, 0);
    }
    match a.len() {
        ..=64 => word::scan::<u64, false>(&Masks::new(a), b),
        65..=128 => word::scan::<u128, false>(&Masks::new(a), b),
        129..=192 => word::scan::<Wide<3>, false>(&Masks::new(a), b),
        193..=256 => word::scan::<Wide<4>, false>(&Masks::new(a), b),
        _ => run::<64>(a, b, false),
    }
}

/// What an estimate needs of two symbol strings, from [`distances`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distances {
    /// [`distance`]`(a, b)`.
    pub distance: usize,
    /// [`distance_inside`]`(a, b).0`: 0 when `a` is empty.
    pub a_in_b: usize,
    /// [`distance_inside`]`(b, a).0`: 0 when `b` is empty.
    pub b_in_a: usize,
    /// The length of their longest common subsequence.
    pub common: usize,
}

/// The distance of `a` and `b` and each one's distance inside the other,
/// exactly as [`distance`] and [`distance_inside`] give them, and their
/// longest common subsequence, in one walk when both have up to 256
/// symbols: the four columns advance side by side, independent chains of
/// word operations the processor overlaps.
pub fn distances(a: &[u8], b: &[u8]) -> Distances {
    if a.is_empty() || b.is_empty() {
        return Distances {
            distance: a.len().max(b.len()),
            a_in_b: a.len(),
            b_in_a: b.len(),
            common: 0,
        };
    }
    match a.len().max(b.len()) {
        ..=256 => triple_256(a, b),
        _ => Distances {
            distance: distance(a, b),
            a_in_b: distance_inside(a, b).0,
            b_in_a: distance_inside(b, a).0,
            common: super::lcs::lcs(a, b),
        },
    }
}

/// [`distances`] of two strings of 1 to 256 symbols: with AVX2 when the
/// processor has it (`align/avx2.rs`, detected at run time), else on
/// words.
fn triple_256(a: &[u8], b: &[u8]) -> Distances {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above.
        return unsafe { avx2::triple(a, b) };
    }
    portable_256(a, b)
}

/// [`distances`] of two strings of 1 to 256 symbols on words.
fn portable_256(a: &[u8], b: &[u8]) -> Distances {
    match a.len().max(b.len()) {
        ..=64 => word::triple::<u64>(a, b),
        65..=128 => word::triple::<u128>(a, b),
        129..=192 => word::triple::<Wide<3>>(a, b),
        _ => word::triple::<Wide<4>>(a, b),
    }
}

/// [`distances`] without the AVX2 walk, for its tests.
#[cfg(test)]
pub(super) fn distances_portable(a: &[u8], b: &[u8]) -> Distances {
    if a.is_empty() || b.is_empty() || a.len().max(b.len()) > 256 {
        return distances(a, b);
    }
    portable_256(a, b)
}

/// For each symbol value (`SIGMA` of them, a power of two; symbols are
/// taken modulo it) and each block of 64 symbols of the pattern, the bit
/// mask of where in the block that value is: `masks[v * blocks + k]`, so
/// that one text symbol reads its blocks' masks side by side.
struct Peq {
    masks: Vec<u64>,
    blocks: usize,
    len: usize,
}

impl Peq {
    fn new<const SIGMA: usize>(pattern: &[u8]) -> Peq {
        let blocks = pattern.len().div_ceil(W).max(1);
        let mut masks = vec![0u64; SIGMA * blocks];
        for (i, &s) in pattern.iter().enumerate() {
            masks[(s as usize & (SIGMA - 1)) * blocks + i / W] |= 1 << (i % W);
        }
        Peq {
            masks,
            blocks,
            len: pattern.len(),
        }
    }
}

/// One block's vertical deltas: `pv` (+1) and `mv` (-1) bits.
#[derive(Clone, Copy)]
struct Block {
    pv: u64,
    mv: u64,
}

/// Advance one block by one text symbol whose match mask in the block is
/// `eq`, the horizontal delta entering at its top being `hin` (-1, 0, +1);
/// returns the delta leaving at bit `last`.
#[inline(always)]
fn advance(b: &mut Block, mut eq: u64, hin: i32, last: u32) -> i32 {
    let (pv, mv) = (b.pv, b.mv);
    let xv = eq | mv;
    if hin < 0 {
        eq |= 1;
    }
    let xh = (((eq & pv).wrapping_add(pv)) ^ pv) | eq;
    let mut ph = mv | !(xh | pv);
    let mut mh = pv & xh;
    let hout = ((ph >> last) & 1) as i32 - ((mh >> last) & 1) as i32;
    ph <<= 1;
    mh <<= 1;
    if hin < 0 {
        mh |= 1;
    } else if hin > 0 {
        ph |= 1;
    }
    b.pv = mh | !(xv | ph);
    b.mv = ph & xv;
    hout
}

/// Myers' column walk of pattern `p` over text `t`. Global: the
/// distance of `p` and `t`; otherwise the least distance of `p` to a
/// substring of `t`, and where it ends.
fn run<const SIGMA: usize>(p: &[u8], t: &[u8], global: bool) -> (usize, usize) {
    let peq = Peq::new::<SIGMA>(p);
    // Up to 256 symbols (signatures of files up to about 16 KiB) the
    // blocks are an array the compiler unrolls.
    match peq.blocks {
        1 => walk::<1, SIGMA>(&peq, t, global),
        2 => walk::<2, SIGMA>(&peq, t, global),
        3 => walk::<3, SIGMA>(&peq, t, global),
        4 => walk::<4, SIGMA>(&peq, t, global),
        _ => walk_any::<SIGMA>(&peq, t, global),
    }
}

/// The score's running minimum (semi-global) or final value (global).
struct Tally {
    score: usize,
    best: usize,
    best_at: usize,
}

impl Tally {
    fn new(len: usize) -> Tally {
        Tally {
            score: len,
            best: len,
            best_at: 0,
        }
    }

    #[inline(always)]
    fn step(&mut self, h: i32, j: usize) {
        self.score = self.score.wrapping_add_signed(h as isize);
        if self.score < self.best {
            self.best = self.score;
            self.best_at = j + 1;
        }
    }

    fn result(&self, global: bool, t: usize) -> (usize, usize) {
        if global {
            (self.score, t)
        } else {
            (self.best, self.best_at)
        }
    }
}

fn walk<const B: usize, const SIGMA: usize>(peq: &Peq, t: &[u8], global: bool) -> (usize, usize) {
    let last_bits = ((peq.len - 1) % W) as u32;
    let mut col = [Block {
        pv: u64::MAX,
        mv: 0,
    }; B];
    // Without the global top row's +1 per column, the pattern may start
    // anywhere; D[m][0] = m either way.
    let top = i32::from(global);
    let mut tally = Tally::new(peq.len);
    for (j, &s) in t.iter().enumerate() {
        let v = s as usize & (SIGMA - 1);
        let eq = &peq.masks[v * B..v * B + B];
        let mut h = top;
        for k in 0..B {
            let last = if k + 1 == B { last_bits } else { 63 };
            h = advance(&mut col[k], eq[k], h, last);
        }
        tally.step(h, j);
    }
    tally.result(global, t.len())
}

fn walk_any<const SIGMA: usize>(peq: &Peq, t: &[u8], global: bool) -> (usize, usize) {
    let blocks = peq.blocks;
    let last_bits = ((peq.len - 1) % W) as u32;
    let mut col = vec![
        Block {
            pv: u64::MAX,
            mv: 0,
        };
        blocks
    ];
    let top = i32::from(global);
    let mut tally = Tally::new(peq.len);
    for (j, &s) in t.iter().enumerate() {
        let v = s as usize & (SIGMA - 1);
        let eq = &peq.masks[v * blocks..(v + 1) * blocks];
        let mut h = top;
        for (k, (b, &e)) in col.iter_mut().zip(eq).enumerate() {
            let last = if k + 1 == blocks { last_bits } else { 63 };
            h = advance(b, e, h, last);
        }
        tally.step(h, j);
    }
    tally.result(global, t.len())
}

/// The pairs `(i, j)` of a longest common subsequence of `a` and `b`:
/// `a[i] == b[j]`, both ascending. What is not in a pair was inserted or
/// deleted; this is the alignment `git diff` would show of the two
/// symbol strings (Myers' difference algorithm, splitting at the middle
/// of a shortest edit path, so linear space).
pub fn matches<T: Eq>(a: &[T], b: &[T]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    lcs(a, 0, b, 0, &mut out);
    out
}

/// Common prefix and suffix first, then a split of the rest in two at a
/// point of a shortest edit path, each half done the same way.
fn lcs<T: Eq>(a: &[T], a0: usize, b: &[T], b0: usize, out: &mut Vec<(usize, usize)>) {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    out.extend((0..pre).map(|k| (a0 + k, b0 + k)));
    let (a, b) = (&a[pre..], &b[pre..]);
    let (a0, b0) = (a0 + pre, b0 + pre);
    let suf = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[..a.len() - suf], &b[..b.len() - suf]);
    if !am.is_empty() && !bm.is_empty() {
        // A split at either end would not shrink the problem; with the
        // common ends removed it does not occur, but nothing is matched
        // rather than loop if it did.
        if let Some((x, y)) =
            split(am, bm).filter(|&(x, y)| (x, y) != (0, 0) && (x, y) != (am.len(), bm.len()))
        {
            lcs(&am[..x], a0, &bm[..y], b0, out);
            lcs(&am[x..], a0 + x, &bm[y..], b0 + y, out);
        }
    }
    let (sa, sb) = (a0 + a.len() - suf, b0 + b.len() - suf);
    out.extend((0..suf).map(|k| (sa + k, sb + k)));
}

/// Edit costs [`split`] searches before it settles for the furthest point
/// either search reached: at least this many, as git's xdiff
/// (`XDL_MAX_COST_MIN`).
const MIN_COST: isize = 256;

/// Where the forward and backward searches of Myers' algorithm meet: a
/// point `(x, y)` on a shortest edit path from `(0, 0)` to the end. `None`
/// when the strings share no symbol.
///
/// As in git's xdiff, the search stops after about the square root of
/// `n + m` edits (at least [`MIN_COST`]) and splits at the furthest point
/// either direction reached: two long strings with little in common then
/// cost time in proportion to `(n + m)` times that root, not to `n` times
/// `m` (minutes for a few megabytes of shuffled lines), and the alignment
/// is one `git diff` could show, if not the shortest.
fn split<T: Eq>(a: &[T], b: &[T]) -> Option<(usize, usize)> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max_cost = ((n + m + 3) as f64).sqrt() as isize;
    let max_cost = max_cost.max(MIN_COST);
    let max_d = (n + m + 1) / 2;
    let off = max_d;
    let len = 2 * max_d + 2;
    let mut v1 = vec![-1isize; len as usize];
    let mut v2 = vec![-1isize; len as usize];
    v1[(off + 1) as usize] = 0;
    v2[(off + 1) as usize] = 0;
    let delta = n - m;
    let front = delta % 2 != 0;
    let (mut k1start, mut k1end, mut k2start, mut k2end) = (0, 0, 0, 0);
    for d in 0..max_d {
        let mut k1 = -d + k1start;
        while k1 <= d - k1end {
            let i = (off + k1) as usize;
            let mut x1 = if k1 == -d || (k1 != d && v1[i - 1] < v1[i + 1]) {
                v1[i + 1]
            } else {
                v1[i - 1] + 1
            };
            let mut y1 = x1 - k1;
            while x1 < n && y1 < m && a[x1 as usize] == b[y1 as usize] {
                x1 += 1;
                y1 += 1;
            }
            v1[i] = x1;
            if x1 > n {
                k1end += 2;
            } else if y1 > m {
                k1start += 2;
            } else if front {
                let j = off + delta - k1;
                if j >= 0 && j < len && v2[j as usize] != -1 && x1 >= n - v2[j as usize] {
                    return Some((x1 as usize, y1 as usize));
                }
            }
            k1 += 2;
        }
        let mut k2 = -d + k2start;
        while k2 <= d - k2end {
            let i = (off + k2) as usize;
            let mut x2 = if k2 == -d || (k2 != d && v2[i - 1] < v2[i + 1]) {
                v2[i + 1]
            } else {
                v2[i - 1] + 1
            };
            let mut y2 = x2 - k2;
            while x2 < n && y2 < m && a[(n - x2 - 1) as usize] == b[(m - y2 - 1) as usize] {
                x2 += 1;
                y2 += 1;
            }
            v2[i] = x2;
            if x2 > n {
                k2end += 2;
            } else if y2 > m {
                k2start += 2;
            } else if !front {
                let j = off + delta - k2;
                if j >= 0 && j < len && v1[j as usize] != -1 {
                    let x1 = v1[j as usize];
                    let y1 = off + x1 - j;
                    if x1 >= n - x2 {
                        return Some((x1 as usize, y1 as usize));
                    }
                }
            }
            k2 += 2;
        }
        if d >= max_cost {
            return furthest(&v1, &v2, off, d, (k1start, k1end, k2start, k2end), (n, m));
        }
    }
    None
}

/// The point furthest from its start (in `x + y`) that the forward search
/// (`v1`) or the backward one (`v2`, from the end) has reached after `d`
/// edits, on the diagonals still in play: where [`split`] splits when a
/// shortest path would cost too much to find. `None` if it is an end.
fn furthest(
    v1: &[isize],
    v2: &[isize],
    off: isize,
    d: isize,
    (k1start, k1end, k2start, k2end): (isize, isize, isize, isize),
    (n, m): (isize, isize),
) -> Option<(usize, usize)> {
    let reach = |v: &[isize], start: isize, end: isize| {
        let mut best: Option<(isize, isize)> = None;
        let mut k = -d + start;
        while k <= d - end {
            let x = v[(off + k) as usize];
            let y = x - k;
            if (0..=n).contains(&x)
                && (0..=m).contains(&y)
                && best.is_none_or(|(bx, by)| x + y > bx + by)
            {
                best = Some((x, y));
            }
            k += 2;
        }
        best
    };
    let forward = reach(v1, k1start, k1end);
    let backward = reach(v2, k2start, k2end).map(|(x, y)| (n - x, m - y));
    let progress = |p: Option<(isize, isize)>, from_end: bool| {
        p.map_or(-1, |(x, y)| if from_end { n + m - x - y } else { x + y })
    };
    let (x, y) = if progress(forward, false) >= progress(backward, true) {
        forward?
    } else {
        backward?
    };
    ((x, y) != (0, 0) && (x, y) != (n, m)).then_some((x as usize, y as usize))
}
