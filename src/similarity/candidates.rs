//! Candidate search: for each destination, the few sources worth scoring
//! exactly. This is what replaces git's full m x n matrix.
//!
//! Two filters, both cheap and neither reading a blob:
//! 1. **git's size filter**, which is exact (a pair whose sizes differ too
//!    much can never reach the threshold: the score is at most the smaller
//!    size over the larger). Sources are sorted by size, so each destination
//!    scans one contiguous window.
//! 2. **Hamming distance** of fingerprints within that window: only sources
//!    within [`MAX_DISTANCE`] are kept, nearest first, at most
//!    [`Options::per_destination`] of them. The scan is a popcount over four
//!    `u64` arrays (struct of arrays), which runs at hundreds of millions of
//!    pairs per second and core.
//!
//! Files without a fingerprint (too small for a gsimm one; empty, for the
//! histogram fingerprints `renames` uses) are not pruned by distance:
//! after the size filter their partners are small too, so scoring them
//! exactly costs little.

use rayon::prelude::*;

use crate::similarity::fingerprint::{Fingerprint, Sketch};
use crate::similarity::score;

/// Distances at or above chance level (128: half the bits differ) say
/// nothing; anything below may still be a pair. The cut is loose on purpose:
/// git scores by lines, fingerprints by 48-byte windows, and an edit
/// scattered over every other line destroys most windows while keeping half
/// the lines, so true pairs near git's 50% can sit well above the distance
/// their score suggests. Ranking, not the cut, does the pruning.
pub const MAX_DISTANCE: u32 = 127;

/// Options of [`search`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// git's minimum score (in [`score::MAX_SCORE`] units), for the size
    /// filter.
    pub min_score: u32,
    /// Keep at most this many fingerprinted sources per destination, the
    /// nearest. git itself keeps the best 4 by exact score; the fingerprint
    /// ranking is noisier, so keep more.
    pub per_destination: usize,
    /// Also keep every source within this distance of the nearest one, up
    /// to [`Options::max_ties`], so near-identical files (boilerplate, many
    /// copies) are all scored and git's tie-breaking can be reproduced.
    pub tie_margin: u32,
    /// Cap on the sources kept through `tie_margin`.
    pub max_ties: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_score: score::DEFAULT_MIN_SCORE,
            per_destination: 32,
            tie_margin: 6,
            max_ties: 64,
        }
    }
}

/// Sources sorted by size with their fingerprints in struct-of-arrays form.
struct Pool {
    order: Vec<usize>,
    sizes: Vec<u64>,
    w: [Vec<u64>; 4],
    /// Positions without a fingerprint, ascending (few: small files).
    no_fp: Vec<usize>,
}

impl Pool {
    fn new(sources: &[Sketch]) -> Pool {
        let mut order: Vec<usize> = (0..sources.len()).collect();
        order.sort_by_key(|&i| (sources[i].size, i));
        let sizes = order.iter().map(|&i| sources[i].size).collect();
        let word = |k: usize| -> Vec<u64> {
            order
                .iter()
                .map(|&i| sources[i].fingerprint.map_or(0, |f| f.words[k]))
                .collect()
        };
        let w = [word(0), word(1), word(2), word(3)];
        let no_fp = (0..order.len())
            .filter(|&p| sources[order[p]].fingerprint.is_none())
            .collect();
        Pool {
            order,
            sizes,
            w,
            no_fp,
        }
    }

    /// The positions in `range` without a fingerprint.
    fn unfingerprinted(&self, range: std::ops::Range<usize>) -> &[usize] {
        let first = self.no_fp.partition_point(|&p| p < range.start);
        let last = self.no_fp.partition_point(|&p| p < range.end);
        &self.no_fp[first..last.max(first)]
    }

    /// The positions whose sizes pass git's size filter against `size`.
    fn window(&self, size: u64, min_score: u32) -> std::ops::Range<usize> {
        // The filter is monotone in the other size on each side of `size`,
        // so both ends are found by binary search on the filter itself.
        let lo = self
            .sizes
            .partition_point(|&s| s < size && !score::sizes_compatible(s, size, min_score));
        let hi = self
            .sizes
            .partition_point(|&s| s <= size || score::sizes_compatible(s, size, min_score));
        lo..hi.max(lo)
    }
}

/// The sources worth scoring for one destination.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidates {
    /// Source indices (into the searched sources), nearest first, then the
    /// sources too small for a fingerprint. Empty files are never
    /// candidates (git scores them 0).
    pub sources: Vec<usize>,
}

/// For each destination, its [`Candidates`] among `sources`.
pub fn search(sources: &[Sketch], destinations: &[Sketch], opts: &Options) -> Vec<Candidates> {
    Search::new(sources).nearest(destinations, opts)
}

/// Sources prepared once for many searches.
pub struct Search {
    pool: Pool,
}

impl Search {
    /// Index `sources` (sorted by size, fingerprints as arrays).
    pub fn new(sources: &[Sketch]) -> Search {
        Search {
            pool: Pool::new(sources),
        }
    }

    /// The candidates of [`search`] for each destination.
    pub fn nearest(&self, destinations: &[Sketch], opts: &Options) -> Vec<Candidates> {
        destinations
            .par_iter()
            .map(|dst| candidates_for(&self.pool, dst, opts))
            .collect()
    }

    /// The `k` fingerprinted sources nearest to `dst` among those that
    /// pass git's size filter at `min_score` and are nearer than chance
    /// level ([`MAX_DISTANCE`]), nearest first (ties by position in size
    /// order). A first guess at a destination's best partners; the
    /// lossless bound ([`crate::similarity::prefix`]) does the rest.
    pub fn nearest_fingerprinted(&self, dst: &Sketch, min_score: u32, k: usize) -> Vec<usize> {
        let Some(fp) = dst.fingerprint else {
            return Vec::new();
        };
        if dst.size == 0 || k == 0 {
            return Vec::new();
        }
        let pool = &self.pool;
        let range = pool.window(dst.size, min_score);
        let dist = distances(pool, range.clone(), &fp);
        let mut near = within_nearest(&dist, range.start, k);
        near.sort_unstable();
        near.truncate(k);
        near.into_iter().map(|(_, p)| pool.order[p]).collect()
    }
}

/// The `(distance, position)` of every source of `dist` (the distances
/// of the positions from `start` on) up to the distance at which the
/// nearest `enough` are in, chance level at most, in position order.
///
/// About half of all sources fall below chance level, so rather than
/// collect them all, they are counted by distance first: in four tables,
/// one per position mod 4, since distances crowd around a few values and
/// one table's counter would wait on its own last increment. Nearly every
/// distance is then beyond the cut: sixteen are tested at a time, and
/// only those within it looked at.
fn within_nearest(dist: &[u8], start: usize, enough: usize) -> Vec<(u8, usize)> {
    let mut counts = [[0u32; 256]; 4];
    let mut quads = dist.chunks_exact(4);
    for q in &mut quads {
        for (table, &d) in counts.iter_mut().zip(q) {
            table[usize::from(d)] += 1;
        }
    }
    for &d in quads.remainder() {
        counts[0][usize::from(d)] += 1;
    }
    let mut seen = 0;
    let upto = (0..=MAX_DISTANCE as usize)
        .position(|d| {
            seen += counts.iter().map(|t| t[d] as usize).sum::<usize>();
            seen >= enough
        })
        .unwrap_or(MAX_DISTANCE as usize) as u8;
    let mut near: Vec<(u8, usize)> = Vec::with_capacity(enough.min(dist.len()));
    for (g, group) in dist.chunks(16).enumerate() {
        let mut within = at_most(group, upto);
        while within != 0 {
            let i = within.trailing_zeros() as usize;
            within &= within - 1;
            near.push((group[i], start + 16 * g + i));
        }
    }
    near
}

/// A bit for each of `group`'s (at most 16) distances that is at most
/// `limit`, from the lowest bit.
#[inline(always)]
fn at_most(group: &[u8], limit: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(sixteen) = group.first_chunk::<16>() {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86-64 processor, and the load
        // reads the 16 bytes of `sixteen` (loadu has no alignment
        // requirement).
        return unsafe {
            let v = _mm_loadu_si128(sixteen.as_ptr().cast::<__m128i>());
            // Unsigned v <= limit exactly where min(v, limit) is v.
            let within = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(limit as i8)), v);
            _mm_movemask_epi8(within) as u32
        };
    }
    group
        .iter()
        .enumerate()
        .fold(0, |m, (i, &d)| m | u32::from(d <= limit) << i)
}

fn candidates_for(pool: &Pool, dst: &Sketch, opts: &Options) -> Candidates {
    let mut out = Candidates {
        sources: Vec::new(),
    };
    if dst.size == 0 {
        return out;
    }
    let range = pool.window(dst.size, opts.min_score);
    let Some(fp) = dst.fingerprint else {
        // Small destination: every size-compatible source is scored.
        out.sources
            .extend(range.filter(|&p| pool.sizes[p] > 0).map(|p| pool.order[p]));
        return out;
    };
    let dist = distances(pool, range.clone(), &fp);
    // Only the nearest few can be kept; the one after them sets the cut.
    let most = opts.max_ties.max(opts.per_destination);
    let mut near: Vec<(u32, usize)> = within_nearest(&dist, range.start, most.saturating_add(1))
        .into_iter()
        .map(|(d, p)| (u32::from(d), p))
        .collect();
    if near.len() > most {
        near.select_nth_unstable(most);
        near.truncate(most);
    }
    near.sort_unstable();
    if let Some(&(best, _)) = near.first() {
        let ties = near
            .iter()
            .take_while(|&&(d, _)| d <= best + opts.tie_margin)
            .count()
            .min(opts.max_ties);
        let keep = ties.max(opts.per_destination);
        near.truncate(keep);
    }
    out.sources.extend(near.iter().map(|&(_, p)| pool.order[p]));
    // Sources too small for a fingerprint that still pass the size filter.
    out.sources.extend(
        pool.unfingerprinted(range)
            .iter()
            .filter(|&&p| pool.sizes[p] > 0)
            .map(|&p| pool.order[p]),
    );
    out
}

/// The distance [`distances`] gives a source without a fingerprint.
const NO_FINGERPRINT: u8 = u8::MAX;

/// The distance from `fp` of every source in `range`, in order: at most
/// 254 (nothing cares how far beyond chance level a source is), and
/// [`NO_FINGERPRINT`] for a source too small to have one. Bytes, so that
/// the scan writes a sixteenth of what it reads.
fn distances(pool: &Pool, range: std::ops::Range<usize>, fp: &Fingerprint) -> Vec<u8> {
    let mut out = vec![0u8; range.len()];
    let w = [
        &pool.w[0][range.clone()],
        &pool.w[1][range.clone()],
        &pool.w[2][range.clone()],
        &pool.w[3][range.clone()],
    ];
    #[cfg(target_arch = "x86_64")]
    let done = if std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512vpopcntdq")
    {
        // SAFETY: the CPU has both features, checked just above.
        unsafe { distances_avx512(w, fp, &mut out) }
    } else if std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU supports popcnt, checked just above.
        unsafe { distances_popcnt(w, fp, &mut out) };
        out.len()
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    distances_generic(w, fp, &mut out, done);
    // The few sources without a fingerprint (zero words) are marked after
    // the fact, keeping the scan free of branches.
    for &p in pool.unfingerprinted(range.clone()) {
        out[p - range.start] = NO_FINGERPRINT;
    }
    out
}

/// Eight sources a step with AVX-512's 64-bit popcount (1.7x the scalar
/// popcnt loop here); returns how many it filled, a multiple of eight.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn distances_avx512(w: [&[u64]; 4], fp: &Fingerprint, out: &mut [u8]) -> usize {
    use std::arch::x86_64::{
        _mm_storel_epi64, _mm512_add_epi64, _mm512_cvtepi64_epi8, _mm512_loadu_si512,
        _mm512_min_epu64, _mm512_popcnt_epi64, _mm512_set1_epi64, _mm512_xor_si512,
    };
    let n = out.len() / 8 * 8;
    let f = fp.words.map(|x| _mm512_set1_epi64(x as i64));
    let cap = _mm512_set1_epi64(i64::from(NO_FINGERPRINT) - 1);
    let mut i = 0;
    while i < n {
        let word = |k: usize| {
            // SAFETY: i + 8 <= n <= the length of every word array.
            let v = unsafe { _mm512_loadu_si512(w[k].as_ptr().add(i).cast()) };
            _mm512_popcnt_epi64(_mm512_xor_si512(v, f[k]))
        };
        let d = _mm512_add_epi64(
            _mm512_add_epi64(word(0), word(1)),
            _mm512_add_epi64(word(2), word(3)),
        );
        let bytes = _mm512_cvtepi64_epi8(_mm512_min_epu64(d, cap));
        // SAFETY: out has at least i + 8 bytes; an unaligned 8-byte store.
        unsafe { _mm_storel_epi64(out.as_mut_ptr().add(i).cast(), bytes) };
        i += 8;
    }
    n
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn distances_popcnt(w: [&[u64]; 4], fp: &Fingerprint, out: &mut [u8]) {
    distances_generic(w, fp, out, 0)
}

/// The scalar loop, from position `from` on.
#[inline(always)]
fn distances_generic(w: [&[u64]; 4], fp: &Fingerprint, out: &mut [u8], from: usize) {
    let [fa, fb, fc, fd] = fp.words;
    for p in from..out.len() {
        let dist = (w[0][p] ^ fa).count_ones()
            + (w[1][p] ^ fb).count_ones()
            + (w[2][p] ^ fc).count_ones()
            + (w[3][p] ^ fd).count_ones();
        out[p] = dist.min(u32::from(NO_FINGERPRINT) - 1) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_window_is_exactly_git_filter() {
        let sizes = [1u64, 5, 9, 10, 11, 19, 20, 21, 40, 100];
        let items: Vec<Sketch> = sizes
            .iter()
            .map(|&size| Sketch {
                size,
                fingerprint: None,
            })
            .collect();
        let pool = Pool::new(&items);
        for dst in [1u64, 10, 20, 39, 100] {
            for min in [score::DEFAULT_MIN_SCORE, 6000, 54000] {
                let got: Vec<u64> = pool.window(dst, min).map(|p| pool.sizes[p]).collect();
                let want: Vec<u64> = sizes
                    .iter()
                    .copied()
                    .filter(|&s| score::sizes_compatible(s, dst, min))
                    .collect();
                assert_eq!(got, want, "dst {dst} min {min}");
            }
        }
    }

    /// A fingerprint `bits` away from all zeros.
    fn at(bits: u32) -> Option<Fingerprint> {
        let mut f = Fingerprint { words: [0; 4] };
        for i in 0..bits {
            f.words[(i / 64) as usize] |= 1 << (i % 64);
        }
        Some(f)
    }

    #[test]
    fn nearest_fingerprinted_keeps_the_k_nearest_size_compatible() {
        let item = |size, bits| Sketch {
            size,
            fingerprint: at(bits),
        };
        let sources = [
            item(1000, 100),
            item(1000, 120),
            item(1000, 40),
            item(1500, 40),
            item(2100, 40),
            item(1000, 200),
            Sketch {
                size: 1000,
                fingerprint: None,
            },
        ];
        let search = Search::new(&sources);
        let dst = item(1000, 0);
        let s80 = score::MAX_SCORE * 80 / 100;
        // 3 and 4 too large at 80%, 5 beyond chance level, 6 unfingerprinted.
        assert_eq!(search.nearest_fingerprinted(&dst, s80, 8), vec![2, 0, 1]);
        let s50 = score::MAX_SCORE / 2;
        assert_eq!(search.nearest_fingerprinted(&dst, s50, 8), vec![2, 3, 0, 1]);
        assert_eq!(search.nearest_fingerprinted(&dst, s50, 2), vec![2, 3]);
    }

    /// Against sorting every size-compatible fingerprinted source by
    /// (distance, position): many equal distances (fingerprints a few
    /// bits apart), windows longer than a block, `k` from 1 to past the
    /// window, and sources without a fingerprint among them.
    #[test]
    fn nearest_fingerprinted_is_the_k_least_by_distance_then_position() {
        let mut rng = crate::testing::Rng(5);
        let mut sources = Vec::new();
        for i in 0..3000u64 {
            let mut f = Fingerprint { words: [0; 4] };
            // Mostly near the destination (all zeros), a few bits apart.
            for _ in 0..rng.below(if i % 7 == 0 { 200 } else { 24 }) {
                let bit = rng.below(256);
                f.words[bit / 64] |= 1 << (bit % 64);
            }
            sources.push(Sketch {
                size: 900 + rng.below(400) as u64,
                fingerprint: (i % 97 != 5).then_some(f),
            });
        }
        let search = Search::new(&sources);
        let pool = &search.pool;
        for (size, k) in [
            (1000, 1),
            (1000, 8),
            (1100, 8),
            (1000, 50),
            (5000, 8),
            (1000, 5000),
        ] {
            let dst = Sketch {
                size,
                fingerprint: at(0),
            };
            for min in [score::MAX_SCORE / 2, score::MAX_SCORE * 9 / 10] {
                let range = pool.window(size, min);
                let mut all: Vec<(u32, usize)> = range
                    .filter(|&p| sources[pool.order[p]].fingerprint.is_some())
                    .map(|p| {
                        let f = &pool.w;
                        let d = (0..4).map(|w| f[w][p].count_ones()).sum::<u32>();
                        (d, p)
                    })
                    .filter(|&(d, _)| d <= MAX_DISTANCE)
                    .collect();
                all.sort_unstable();
                let want: Vec<usize> = all.iter().take(k).map(|&(_, p)| pool.order[p]).collect();
                let got = search.nearest_fingerprinted(&dst, min, k);
                assert_eq!(got, want, "size {size} k {k} min {min}");
            }
        }
    }

    #[test]
    fn nearest_first_and_far_ones_dropped() {
        let sources = [
            Sketch {
                size: 1000,
                fingerprint: at(30),
            },
            Sketch {
                size: 1000,
                fingerprint: at(5),
            },
            Sketch {
                size: 1000,
                fingerprint: at(130),
            },
            Sketch {
                size: 5000,
                fingerprint: at(0),
            },
        ];
        let dst = [Sketch {
            size: 1000,
            fingerprint: at(0),
        }];
        let got = search(&sources, &dst, &Options::default());
        // 3 is too large for the size filter, 2 is no closer than chance.
        assert_eq!(
            got,
            vec![Candidates {
                sources: vec![1, 0],
            }]
        );
        let one = Options {
            per_destination: 1,
            max_ties: 1,
            ..Options::default()
        };
        let got = search(&sources, &dst, &one);
        assert_eq!(got[0].sources, vec![1]);
    }

    #[test]
    fn simd_distances_equal_the_scalar_loop() {
        // Fingerprints from a simple LCG: every bit pattern matters, not
        // the content. Sizes are distinct so the pool order is known.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            x
        };
        let sources: Vec<Sketch> = (0..203u64)
            .map(|i| Sketch {
                size: 1000 + i,
                fingerprint: (i % 17 != 3).then(|| Fingerprint {
                    words: [next(), next(), next(), next()],
                }),
            })
            .collect();
        let pool = Pool::new(&sources);
        let fp = Fingerprint {
            words: [next(), next(), next(), next()],
        };
        for range in [0..203, 5..200, 13..14, 7..7, 0..8, 1..9] {
            let got = distances(&pool, range.clone(), &fp);
            let want: Vec<u8> = range
                .clone()
                .map(|p| match sources[pool.order[p]].fingerprint {
                    Some(f) => (0..4)
                        .map(|k| (f.words[k] ^ fp.words[k]).count_ones())
                        .sum::<u32>() as u8,
                    None => NO_FINGERPRINT,
                })
                .collect();
            assert_eq!(got, want, "{range:?}");
        }
        // The cap: identical words are 0 apart, complements 256 (shown 254).
        let far = Sketch {
            size: 1,
            fingerprint: Some(Fingerprint {
                words: fp.words.map(|w| !w),
            }),
        };
        let pool = Pool::new(&[far; 9]);
        assert_eq!(distances(&pool, 0..9, &fp), vec![254; 9]);
    }
}
