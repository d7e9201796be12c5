//! gsimm fingerprints: 256 bits per blob whose Hamming distance estimates
//! how much content two blobs share.
//!
//! Written from the mathematics of Geert Bosch's 2006 proposal
//! (`shared/seeds/gsimm-bosch-2006.txt`), not from its GPL code. Every
//! 48-byte window of a blob is hashed; each window hash votes +1/-1 on the 32
//! counters of one of 8 blocks; a fingerprint bit is set when its counter
//! ends positive. Two blobs sharing most windows push most counters the same
//! way, so their bits agree; unrelated blobs agree on about half (distance
//! ~128). This is SimHash over the set of windows: the chance that one bit
//! differs is the angle between the two window-count vectors divided by pi.
//!
//! Fingerprints are cached on disk by blob id, so the exact bit pattern is a
//! file format: every constant below is part of [`FINGERPRINT_VERSION`], and
//! the code uses only integer arithmetic with explicit widths so the result
//! is the same on every platform. Changing anything that alters output means
//! bumping the version, which invalidates existing stores.
//!
//! ### Design choices and why
//! - **Rolling hash**: a cyclic-polynomial ("buzhash") hash over exactly 48
//!   bytes. It is GF(2)-linear, like the Rabin polynomial of the original, so
//!   each window hash is passed through a folded 128-bit multiply (as in
//!   wyhash) before its bits are used as votes; without that, votes of
//!   overlapping windows would be correlated.
//! - **Repeat suppression**: a 256-slot direct-mapped cache of recent window
//!   hashes, as in gsimm. Runs of identical windows (padding, tables of
//!   zeros, repeated lines) vote once, so they do not drown the rest.
//! - **Counting**: touching 32 counters per window is what made a plain port
//!   slow (about 190 MB/s). With AVX2, one window's 32 votes are one vector
//!   add into 8-bit accumulators, widened every 127 windows (with AVX-512,
//!   the votes themselves are one blend under the window's bits as a mask,
//!   where AVX2 spreads the bits over the lanes in four). Without it, each
//!   window bumps 4 byte-pattern histograms of its block (the nibble trick of
//!   the original, with bytes) and the counters are recovered once per blob.
//!   Both are exact integer counts, so they give identical bits (tested).
//! - **Too small to fingerprint**: blobs under [`MIN_SIZE`] bytes have too few
//!   windows for the counters to mean anything, and all such fingerprints
//!   would look alike. They get no fingerprint ([`fingerprint`] returns
//!   `None`); callers compare them exactly, which costs nothing at that size.
//!   Blobs over [`MAX_SIZE`] would overflow the 32-bit histograms and get
//!   none either.
//! - **Binary blobs** are fingerprinted like text: windows are bytes either
//!   way, and git also scores binary renames (with 64-byte chunks).
//! - **CR before LF in text is left out** (version 2), as git's score leaves
//!   it out: a CRLF copy of an LF file scores near 100% in git, but every
//!   one of its windows differs, which put the two at chance distance and
//!   hid such copies from every fingerprint search (`groups` missed a CRLF
//!   license file against its LF twins). Text versus binary is git's NUL
//!   rule ([`crate::similarity::score::is_binary`]).

use std::fmt;

use crate::similarity::mix::mix;

/// Version of the fingerprint definition (window, hash, tables, bit layout,
/// size limits). Stored beside every cached fingerprint; a mismatch makes the
/// cache invalid.
pub const FINGERPRINT_VERSION: u32 = 2;

/// Bytes per window, as in gsimm.
pub const WINDOW: usize = 48;

/// Smallest blob that gets a fingerprint. At 192 bytes a blob has 145
/// windows, so each of the 256 counters sees about 18 votes: enough for
/// the sign to be stable under a small edit. gsimm used 190.
pub const MIN_SIZE: usize = 192;

/// Largest blob that gets a fingerprint: the histograms count in `u32`.
pub const MAX_SIZE: u64 = u32::MAX as u64;

/// Number of bits in a fingerprint.
pub const BITS: u32 = 256;

/// A 256-bit gsimm fingerprint. Bit `i` lives in `words[i / 64]` at position
/// `i % 64`; bits 32*b .. 32*b+31 are the counters of block `b`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fingerprint {
    /// The 256 bits, least significant word first.
    pub words: [u64; 4],
}

impl Fingerprint {
    /// Hamming distance: the number of differing bits, 0..=256.
    #[inline]
    pub fn distance(&self, other: &Fingerprint) -> u32 {
        (self.words[0] ^ other.words[0]).count_ones()
            + (self.words[1] ^ other.words[1]).count_ones()
            + (self.words[2] ^ other.words[2]).count_ones()
            + (self.words[3] ^ other.words[3]).count_ones()
    }

    /// The 32 bytes in storage and display order: byte `n` holds bits
    /// 8n..8n+7, least significant bit first.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, w) in self.words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Inverse of [`Fingerprint::to_bytes`].
    pub fn from_bytes(bytes: &[u8; 32]) -> Fingerprint {
        let mut words = [0u64; 4];
        for (i, w) in words.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            *w = u64::from_le_bytes(b);
        }
        Fingerprint { words }
    }

    /// The fingerprint whose bit `i` is `bit(i)`. The bits are gathered
    /// without a branch on each: they are random, and a branch per bit
    /// mispredicted half the time.
    #[inline]
    pub fn from_fn(bit: impl Fn(usize) -> bool) -> Fingerprint {
        let mut words = [0u64; 4];
        for (k, word) in words.iter_mut().enumerate() {
            *word = (0..64).fold(0, |w, i| w | u64::from(bit(64 * k + i)) << i);
        }
        Fingerprint { words }
    }

    /// Parse the 64-digit hex form printed by [`fmt::Display`].
    pub fn from_hex(hex: &str) -> Option<Fingerprint> {
        let hex = hex.as_bytes();
        if hex.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            let hi = (hex[2 * i] as char).to_digit(16)?;
            let lo = (hex[2 * i + 1] as char).to_digit(16)?;
            *b = (hi * 16 + lo) as u8;
        }
        Some(Fingerprint::from_bytes(&bytes))
    }
}

/// What the similarity pipeline knows of a blob without reading it again:
/// its size and fingerprint. The store keeps one per blob id; candidate
/// search works on them alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sketch {
    /// The blob's size in bytes.
    pub size: u64,
    /// Its fingerprint, or `None` when the blob is outside the sizes that
    /// get one (see [`MIN_SIZE`] and [`MAX_SIZE`]).
    pub fingerprint: Option<Fingerprint>,
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.to_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Estimated similarity, 0.0..=1.0, from a Hamming distance.
///
/// SimHash gives P(bit differs) = theta / pi, where theta is the angle
/// between the two blobs' window-count vectors, so `cos(pi * d / 256)`
/// estimates their cosine similarity; distances of 128 and more (no better
/// than chance) map to 0. For two blobs that share a fraction of their
/// windows this tracks git's byte-weighted score; `cargo bench --bench
/// quality` tabulates how closely on real code. Use it to rank, never to
/// decide: survivors are always scored exactly.
pub fn estimate_similarity(distance: u32) -> f64 {
    if distance >= BITS / 2 {
        return 0.0;
    }
    (std::f64::consts::PI * f64::from(distance) / f64::from(BITS)).cos()
}

/// The 256 random 64-bit values the rolling hash mixes in, one per byte
/// value. Generated at compile time by splitmix64 from a fixed seed, so they
/// are part of the format without a 2 KiB literal table.
const TABLE: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut state: u64 = 0x6773_696d_6d5f_7631; // "gsimm_v1"
    let mut i = 0;
    while i < 256 {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        t[i] = mix(state);
        i += 1;
    }
    t
};

/// TABLE rotated by the window length: what to XOR out when a byte leaves
/// the window, since by then its contribution has been rotated 48 times.
const TABLE_OUT: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = TABLE[i].rotate_left(WINDOW as u32);
        i += 1;
    }
    t
};

/// The per-window mix: a 64x64->128-bit multiply folded to 64 bits (as in
/// wyhash). One multiply instead of splitmix's two; every output bit depends
/// non-linearly on every input bit, which the GF(2)-linear rolling hash needs.
#[inline(always)]
fn mum(h: u64) -> u64 {
    let p = u128::from(h ^ 0x2d35_8dcc_aa6c_78a5).wrapping_mul(0x8bb8_4b93_962e_acc9);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Per-thread scratch space, reused across blobs so the histograms are
/// allocated once per thread rather than once per blob.
pub struct Fingerprinter {
    /// hist[block][byte lane][byte value]: how many counted windows of the
    /// block had that value in that byte of their vote bits. Portable path.
    hist: Box<[[[u32; 256]; 4]; 8]>,
    /// The counting path this CPU can run.
    simd: Simd,
}

/// The counting paths: portable, AVX2, AVX2 with AVX-512's masked blend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Simd {
    None,
    Avx2,
    Avx512,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Self::new()
    }
}

/// Sums of votes per counter: +1 for each counted window with the bit
/// clear, -1 with it set; a fingerprint bit is set when its sum is negative
/// (more windows voted "set" than "clear").
type Sums = [i32; 256];

impl Fingerprinter {
    /// Fresh scratch space.
    pub fn new() -> Fingerprinter {
        Fingerprinter {
            hist: Box::new([[[0u32; 256]; 4]; 8]),
            simd: simd_available(),
        }
    }

    /// The fingerprint of `data`, or `None` when it is shorter than
    /// [`MIN_SIZE`] or longer than [`MAX_SIZE`].
    pub fn fingerprint(&mut self, data: &[u8]) -> Option<Fingerprint> {
        self.fingerprint_knowing_cr(data, true)
    }

    /// [`Fingerprinter::fingerprint`] where the caller knows whether
    /// `data` holds a CR byte at all (signing learns it from its pass over
    /// the LFs): without one there are no CRLF line ends to search for,
    /// a pass over every byte of the blob saved.
    pub fn fingerprint_knowing_cr(&mut self, data: &[u8], has_cr: bool) -> Option<Fingerprint> {
        if has_cr {
            let text = crate::similarity::score::without_crlf_crs(data, None);
            return self.fingerprint_bytes(&text);
        }
        self.fingerprint_bytes(data)
    }

    /// [`Fingerprinter::fingerprint`] of the bytes as they are.
    fn fingerprint_bytes(&mut self, data: &[u8]) -> Option<Fingerprint> {
        if data.len() < MIN_SIZE || data.len() as u64 > MAX_SIZE {
            return None;
        }
        // The vector paths sum in 32-bit lanes, which a counter could
        // overflow past 2^31 windows (blobs over 2 GiB): those take the
        // portable path, whose 64-bit sums are clamped, as the definition
        // wants (only the signs matter).
        let sums = match self.simd {
            Simd::None => self.count_portable(data),
            _ if data.len() - WINDOW >= i32::MAX as usize => self.count_portable(data),
            simd => count_simd(simd, data),
        };
        Some(Fingerprint::from_fn(|i| sums[i] < 0))
    }

    /// Counting without SIMD: each window bumps 4 byte-pattern histograms of
    /// its block, and the per-bit sums are recovered once per blob.
    fn count_portable(&mut self, data: &[u8]) -> Sums {
        for block in self.hist.iter_mut() {
            for lane in block.iter_mut() {
                lane.fill(0);
            }
        }
        struct Histograms<'a>(&'a mut [[[u32; 256]; 4]; 8]);
        impl Votes for Histograms<'_> {
            #[inline(always)]
            fn count(&mut self, m: u64) {
                let block = &mut self.0[((m >> 32) & 7) as usize];
                let v = m as u32;
                block[0][(v & 0xff) as usize] += 1;
                block[1][((v >> 8) & 0xff) as usize] += 1;
                block[2][((v >> 16) & 0xff) as usize] += 1;
                block[3][(v >> 24) as usize] += 1;
            }
            fn round_done(&mut self) {}
        }
        for_each_window(data, usize::MAX, &mut Histograms(&mut self.hist));
        // The upper half of a 2^k-entry histogram is exactly the values with
        // bit k-1 set; folding the halves together repeats that one bit down.
        let mut sums = [0i32; 256];
        for (b, block) in self.hist.iter_mut().enumerate() {
            for (lane, hist) in block.iter_mut().enumerate() {
                let mut with = [0i64; 8];
                let mut len = 256;
                for bit in (0..8).rev() {
                    let half = len / 2;
                    let (lo, hi) = hist[..len].split_at_mut(half);
                    let mut sum: i64 = 0;
                    for (l, h) in lo.iter_mut().zip(hi.iter()) {
                        sum += i64::from(*h);
                        *l += *h;
                    }
                    with[bit] = sum;
                    len = half;
                }
                let total = i64::from(hist[0]);
                for (bit, &w) in with.iter().enumerate() {
                    // |total| < 2^32 windows; the sum's sign is all that is
                    // used, so clamp rather than wrap.
                    let s = (total - 2 * w).clamp(i64::from(i32::MIN), i64::from(i32::MAX));
                    sums[b * 32 + lane * 8 + bit] = s as i32;
                }
            }
        }
        sums
    }
}

/// Where the windows that the repeat cache lets through go: each one's
/// mixed hash to [`Votes::count`], and [`Votes::round_done`] after every
/// round of windows (counted or not) and at the end, so that a counter
/// can keep narrow accumulators without a check per window.
trait Votes {
    fn count(&mut self, m: u64);
    fn round_done(&mut self);
}

/// Run `votes` over every window of `data`, rounds of `round` windows
/// (the first window is counted before the first round). Shared by both
/// counting paths so they cannot disagree on which windows count.
#[inline(always)]
fn for_each_window(data: &[u8], round: usize, votes: &mut impl Votes) {
    let mut cache = [0u64; 256];
    let mut h: u64 = 0;
    for &b in &data[..WINDOW] {
        h = h.rotate_left(1) ^ TABLE[b as usize];
    }
    let mut window = |h: u64, votes: &mut _| {
        let m = mum(h);
        let slot = (m >> 56) as usize;
        if cache[slot] != m {
            cache[slot] = m;
            Votes::count(votes, m);
        }
    };
    window(h, votes);
    // Byte `b_in` enters as `b_out`, 48 bytes earlier, leaves: by now
    // `b_out` has been rotated 48 times, which TABLE_OUT accounts for.
    let incoming = &data[WINDOW..];
    let outgoing = &data[..data.len() - WINDOW];
    for (ins, outs) in incoming.chunks(round).zip(outgoing.chunks(round)) {
        // Four windows a step: the loop is bound by how many instructions
        // a core issues, not by the hash's chain, and one step for four
        // windows spends a quarter of the loop's own (count, compare,
        // jump back) on each: 15-18% faster on Zen 5 text.
        let (mut ins4, mut outs4) = (ins.chunks_exact(4), outs.chunks_exact(4));
        for (i4, o4) in (&mut ins4).zip(&mut outs4) {
            for (&b_in, &b_out) in i4.iter().zip(o4) {
                h = h.rotate_left(1) ^ (TABLE[b_in as usize] ^ TABLE_OUT[b_out as usize]);
                window(h, votes);
            }
        }
        for (&b_in, &b_out) in ins4.remainder().iter().zip(outs4.remainder()) {
            h = h.rotate_left(1) ^ (TABLE[b_in as usize] ^ TABLE_OUT[b_out as usize]);
            window(h, votes);
        }
        votes.round_done();
    }
    votes.round_done();
}

#[cfg(target_arch = "x86_64")]
fn simd_available() -> Simd {
    if !std::is_x86_feature_detected!("avx2") {
        Simd::None
    } else if crate::similarity::simd::avx512() {
        Simd::Avx512
    } else {
        Simd::Avx2
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_available() -> Simd {
    Simd::None
}

#[cfg(target_arch = "x86_64")]
fn count_simd(simd: Simd, data: &[u8]) -> Sums {
    if simd == Simd::Avx512 {
        // SAFETY: `simd_available()` said the CPU has AVX2 and AVX-512 BW
        // and VL.
        unsafe { avx2::count512(data) }
    } else {
        // SAFETY: only called when `simd_available()` said the CPU has
        // AVX2.
        unsafe { avx2::count(data) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn count_simd(_simd: Simd, _data: &[u8]) -> Sums {
    unreachable!("SIMD counting is never detected off x86_64")
}

/// Counting with AVX2: one window's 32 votes become 32 byte lanes of +1/-1
/// and are added to its block's 8-bit accumulators in one instruction; the
/// 8-bit sums are widened before they can overflow. Integer arithmetic
/// throughout, so the sums equal the portable path's exactly (tested).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Sums, Votes, for_each_window};
    use std::arch::x86_64::{
        __m256i, _mm_srli_si128, _mm256_add_epi8, _mm256_add_epi32, _mm256_and_si256,
        _mm256_castsi256_si128, _mm256_cmpeq_epi8, _mm256_cvtepi8_epi32, _mm256_extracti128_si256,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_set1_epi32, _mm256_set1_epi64x, _mm256_setr_epi8,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_storeu_si256,
    };

    /// Windows between widenings: an i8 lane moves by at most 1 per
    /// window, and a round is at most this many windows plus the first one
    /// (counted before the first round), so 124 + 1 can never overflow
    /// (127 could not either; a multiple of four leaves
    /// [`for_each_window`] no remainder but at a blob's end).
    const FLUSH_EVERY: usize = 124;

    /// The 8-bit accumulators of the eight blocks, widened into `wide`
    /// every round; with `W512`, a window's votes are one blend under a
    /// mask of its bits (AVX-512 BW and VL) instead of four operations
    /// that spread its bits over the lanes.
    struct Acc<const W512: bool> {
        acc: [__m256i; 8],
        wide: [__m256i; 32],
        ones: __m256i,
    }

    impl<const W512: bool> Votes for Acc<W512> {
        #[inline(always)]
        fn count(&mut self, m: u64) {
            let vote = if W512 {
                // SAFETY: `W512` only from `count512`, whose callers check
                // for AVX-512 BW and VL.
                unsafe { votes512(m, self.ones) }
            } else {
                // SAFETY: only built from `count` and `count512`, whose
                // callers check for AVX2.
                unsafe { votes(m, self.ones) }
            };
            // Block `(m >> 32) & 7`'s accumulator, as a byte offset into
            // `acc` (32 bytes a block): two operations, where indexing
            // by the block took three.
            let at = ((m >> 27) & 0xe0) as usize;
            // SAFETY: as above; `at` is at most 7 * 32, so the vector at
            // `at` bytes is one of `acc`'s eight.
            unsafe {
                let acc = self.acc.as_mut_ptr().cast::<u8>().add(at).cast::<__m256i>();
                acc.write(add(acc.read(), vote));
            }
        }

        #[inline(always)]
        fn round_done(&mut self) {
            // SAFETY: as above.
            unsafe { widen(&mut self.acc, &mut self.wide) }
        }
    }

    /// A window's 32 votes, lane j for bit j of `m`: -1 where it is set,
    /// +1 (`ones`) where it is clear.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn votes(m: u64, ones: __m256i) -> __m256i {
        // Lane j of the 32 takes byte j/8 of the vote word and tests bit j%8.
        let shuffle = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
            3, 3, 3,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(m as u32 as i32), shuffle);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
        // set lanes are -1 (0xff), clear lanes 0; OR 1 gives -1 / +1.
        _mm256_or_si256(set, ones)
    }

    /// [`votes`] with the window's bits as a mask.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
    #[inline]
    fn votes512(m: u64, ones: __m256i) -> __m256i {
        use std::arch::x86_64::_mm256_mask_blend_epi8;
        _mm256_mask_blend_epi8(m as u32, ones, _mm256_set1_epi8(-1))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn add(a: __m256i, b: __m256i) -> __m256i {
        _mm256_add_epi8(a, b)
    }

    /// Add the 8-bit accumulators into `wide` (block b's 32 sums in
    /// `wide[4 * b..4 * b + 4]`, eight to a vector) and clear them.
    #[target_feature(enable = "avx2")]
    fn widen(acc: &mut [__m256i; 8], wide: &mut [__m256i; 32]) {
        for (a, wide) in acc.iter_mut().zip(wide.chunks_exact_mut(4)) {
            let low = _mm256_castsi256_si128(*a);
            let high = _mm256_extracti128_si256::<1>(*a);
            for (w, part) in wide.iter_mut().zip([
                low,
                _mm_srli_si128::<8>(low),
                high,
                _mm_srli_si128::<8>(high),
            ]) {
                *w = _mm256_add_epi32(*w, _mm256_cvtepi8_epi32(part));
            }
            *a = _mm256_setzero_si256();
        }
    }

    impl<const W512: bool> Acc<W512> {
        /// Fresh accumulators. Only where the processor has AVX2 (and
        /// AVX-512 BW and VL with `W512`).
        #[inline(always)]
        fn new() -> Self {
            // SAFETY: built from `count` and `count512` only (and tests
            // that check), whose callers check for AVX2.
            let (zero, ones) = unsafe { (_mm256_setzero_si256(), _mm256_set1_epi8(1)) };
            Acc {
                acc: [zero; 8],
                wide: [zero; 32],
                ones,
            }
        }

        /// The widened sums, counter by counter.
        #[target_feature(enable = "avx2")]
        fn sums(&self) -> Sums {
            let mut sums = [0i32; 256];
            for (eight, w) in sums.chunks_exact_mut(8).zip(&self.wide) {
                // SAFETY: eight i32 are 32 bytes, one vector; the store is
                // unaligned-tolerant.
                unsafe { _mm256_storeu_si256(eight.as_mut_ptr().cast(), *w) };
            }
            sums
        }
    }

    #[inline(always)]
    fn run<const W512: bool>(data: &[u8]) -> Sums {
        let mut acc = Acc::<W512>::new();
        for_each_window(data, FLUSH_EVERY, &mut acc);
        // SAFETY: as in `Acc::new`.
        unsafe { acc.sums() }
    }

    /// The signed vote sums of `data`'s windows. Only where the processor
    /// has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) fn count(data: &[u8]) -> Sums {
        run::<false>(data)
    }

    /// [`count`], only where the processor also has AVX-512 BW and VL.
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
    pub(super) fn count512(data: &[u8]) -> Sums {
        run::<true>(data)
    }

    #[cfg(test)]
    mod tests {
        use super::super::Votes;
        use super::{Acc, FLUSH_EVERY};

        /// The most windows a round holds (the first window and a round),
        /// all voting alike, fit the 8-bit accumulators: each counter sums
        /// to exactly their number.
        #[test]
        fn a_full_round_of_like_votes_fits_the_accumulators() {
            if !std::is_x86_feature_detected!("avx2") {
                return;
            }
            // Block 5; vote bits 0-7 and 31 set.
            let m = 0x0000_0005_8000_00ffu64;
            let n = (FLUSH_EVERY + 1) as i32;
            let want: Vec<i32> = (0..256)
                .map(|i| match (i / 32, i % 32) {
                    (5, j) if j < 8 || j == 31 => -n,
                    (5, _) => n,
                    _ => 0,
                })
                .collect();
            assert_eq!(round_of::<false>(m, n), want);
            if crate::similarity::simd::avx512() {
                assert_eq!(round_of::<true>(m, n), want);
            }
        }

        /// The sums after `n` windows voting `m` and the end of a round.
        /// Only where the processor has AVX2 (and AVX-512 BW and VL with
        /// `W512`).
        fn round_of<const W512: bool>(m: u64, n: i32) -> Vec<i32> {
            let mut acc = Acc::<W512>::new();
            for _ in 0..n {
                acc.count(m);
            }
            acc.round_done();
            // SAFETY: the callers check the processor.
            unsafe { acc.sums() }.to_vec()
        }
    }
}

/// Fingerprint one blob with fresh scratch space. Prefer a reused
/// [`Fingerprinter`] in loops.
pub fn fingerprint(data: &[u8]) -> Option<Fingerprint> {
    Fingerprinter::new().fingerprint(data)
}

#[cfg(test)]
#[path = "fingerprint_tests.rs"]
mod tests;
