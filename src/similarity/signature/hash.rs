//! The hash of a chunk, which decides its phase, its symbols and their
//! selection bits (part of [`super::SIGNATURE_VERSION`]).
//!
//! NH, the inner hash of UMAC (Black, Halevi, Krawczyk, Krovetz and
//! Rogaway, 1999), over the chunk zero-padded to [`CHUNK`] bytes: sixteen
//! little-endian 32-bit words `x`, each added to a key of its place mod
//! 2^32, multiplied in pairs into 64 bits, the eight products summed mod
//! 2^64; then the sum, xored with a seed and the chunk's length, goes
//! through splitmix64's finaliser so that every bit of the result depends
//! on every byte (NH's own low bits depend only on the words' low bits).
//!
//! Why NH: its eight 32x32-bit products are the four-lane `vpmuludq` of
//! AVX2 twice, so four chunks hash in a few dozen vector instructions,
//! the finaliser included; a hash built on 64x64-bit multiplies, which
//! AVX2 lacks, takes eight scalar multiplies a chunk, and a chunk averages
//! about 30 bytes of text. The words past a chunk's end are zero, so the
//! hash never branches on the chunk's length: the 64 bytes from its start
//! are read and those past its end masked off.

use super::CHUNK;

use crate::similarity::mix::mix;

/// One key per 32-bit word of a chunk: the fraction of pi's hexadecimal
/// digits (nothing up the sleeve).
static KEYS: [u32; CHUNK / 4] = [
    0x243f_6a88,
    0x85a3_08d3,
    0x1319_8a2e,
    0x0370_7344,
    0xa409_3822,
    0x299f_31d0,
    0x082e_fa98,
    0xec4e_6c89,
    0x4528_21e6,
    0x38d0_1377,
    0xbe54_66cf,
    0x34e9_0c6c,
    0xc0ac_29b7,
    0xc97c_50dd,
    0x3f84_d5b5,
    0xb547_0917,
];

/// The seed, xored into the sum with the chunk's length.
const SEED: u64 = 0x636f_6174_6573_7634; // "coatesv4"

/// The hash of one chunk (at most [`CHUNK`] bytes), from the definition
/// (the module documentation) as written: what every faster form must
/// equal.
#[cfg(test)]
pub(super) fn chunk_hash(bytes: &[u8]) -> u64 {
    let mut padded = [0u8; CHUNK];
    padded[..bytes.len()].copy_from_slice(bytes);
    let word = |i: usize| {
        let w = u32::from_le_bytes([
            padded[4 * i],
            padded[4 * i + 1],
            padded[4 * i + 2],
            padded[4 * i + 3],
        ]);
        u64::from(w.wrapping_add(KEYS[i]))
    };
    let mut sum = 0u64;
    for pair in 0..CHUNK / 8 {
        sum = sum.wrapping_add(word(2 * pair) * word(2 * pair + 1));
    }
    mix(sum ^ SEED ^ bytes.len() as u64)
}

/// NH of 64 bytes, those where `keep` is zero taken as zero: a pair of
/// words at a time, read as one 64-bit word and its mask.
#[inline(always)]
fn nh(words: &[u8; CHUNK], keep: &[u8; CHUNK]) -> u64 {
    let mut sum = 0u64;
    for pair in 0..CHUNK / 8 {
        let at = 8 * pair;
        let w = u64::from_le_bytes(words[at..at + 8].try_into().unwrap_or_default())
            & u64::from_le_bytes(keep[at..at + 8].try_into().unwrap_or_default());
        let low = u64::from((w as u32).wrapping_add(KEYS[2 * pair]));
        let high = u64::from(((w >> 32) as u32).wrapping_add(KEYS[2 * pair + 1]));
        sum = sum.wrapping_add(low * high);
    }
    sum
}

/// [`nh`] with AVX2: the four lanes of [`nh_lanes`] added.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn nh_avx2(words: &[u8; CHUNK], keep: &[u8; CHUNK]) -> u64 {
    use std::arch::x86_64::{
        _mm_add_epi64, _mm_cvtsi128_si64, _mm_unpackhi_epi64, _mm256_castsi256_si128,
        _mm256_extracti128_si256,
    };
    let lanes = nh_lanes(words, keep);
    let half = _mm_add_epi64(
        _mm256_castsi256_si128(lanes),
        _mm256_extracti128_si256::<1>(lanes),
    );
    _mm_cvtsi128_si64(_mm_add_epi64(half, _mm_unpackhi_epi64(half, half))) as u64
}

/// The hashes of the chunks of `data` between consecutive `ends`
/// (chunk `i` is `ends[i]..ends[i + 1]`, at most [`CHUNK`] bytes) into
/// `hashes` (one fewer than `ends`), with AVX2 throughout: NH four chunks
/// at a time, their sums added across lanes together and the finaliser
/// run on the four at once (its 64-bit multiplies from three 32-bit ones
/// each), where a chunk-by-chunk hash spends as much on the sum of one
/// chunk's lanes and a scalar finaliser as on NH itself. `ends` ascend.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn hash_chunks_avx2(data: &[u8], ends: &[usize], hashes: &mut [u64]) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_loadu_si256, _mm256_permute2x128_si256,
        _mm256_set1_epi64x, _mm256_storeu_si256, _mm256_sub_epi64, _mm256_unpackhi_epi64,
        _mm256_unpacklo_epi64, _mm256_xor_si256,
    };
    // The lengths are read as 64-bit lanes of `ends`.
    const _: () = assert!(size_of::<usize>() == 8);
    let n = data.len();
    let count = ends.len().saturating_sub(1).min(hashes.len());
    // The chunks whose 64 bytes from their start are all in `data`.
    let inside = ends[..count].partition_point(|&s| s + CHUNK <= n);
    let seed = _mm256_set1_epi64x(SEED as i64);
    let mut i = 0;
    while i + 4 <= inside {
        // Written out, not a closure: a closure would not be compiled
        // for AVX2 and would hand the vectors over through memory.
        let mut lanes = [_mm256_set1_epi64x(0); 4];
        for (j, lane) in lanes.iter_mut().enumerate() {
            let (start, end) = (ends[i + j], ends[i + j + 1]);
            if let (Some(words), Some(keep)) = (
                data[start..start + CHUNK].first_chunk::<CHUNK>(),
                KEEP_BYTES[CHUNK - (end - start)..].first_chunk::<CHUNK>(),
            ) {
                *lane = nh_lanes(words, keep);
            }
        }
        // Lane sums of the four chunks, chunk j in lane j.
        let ab = _mm256_add_epi64(
            _mm256_unpacklo_epi64(lanes[0], lanes[1]),
            _mm256_unpackhi_epi64(lanes[0], lanes[1]),
        );
        let cd = _mm256_add_epi64(
            _mm256_unpacklo_epi64(lanes[2], lanes[3]),
            _mm256_unpackhi_epi64(lanes[2], lanes[3]),
        );
        let sums = _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(ab, cd),
            _mm256_permute2x128_si256::<0x31>(ab, cd),
        );
        // SAFETY: `ends` has entries i to i + 4 (i + 4 <= count <
        // ends.len()), read as four usize (u64 on x86-64) from i and from
        // i + 1; loadu has no alignment requirement.
        let lengths = unsafe {
            let at = ends[i..i + 5].as_ptr();
            _mm256_sub_epi64(
                _mm256_loadu_si256(at.add(1).cast::<__m256i>()),
                _mm256_loadu_si256(at.cast::<__m256i>()),
            )
        };
        let h = mix_avx2(_mm256_xor_si256(sums, _mm256_xor_si256(seed, lengths)));
        // SAFETY: `hashes` has room for chunks i to i + 3 (`inside` is at
        // most its length); storeu has no alignment requirement.
        unsafe { _mm256_storeu_si256(hashes[i..i + 4].as_mut_ptr().cast::<__m256i>(), h) };
        i += 4;
    }
    for j in i..count {
        // SAFETY: this function runs only where the processor has AVX2.
        hashes[j] = unsafe { chunk_hash_at::<true>(data, ends[j], ends[j + 1] - ends[j]) };
    }
}

/// [`hash_chunks_avx2`] with AVX-512, eight chunks at a time: a chunk's
/// 64 bytes are one vector, loaded under a mask of its length (so the
/// bytes past its end are zeros, and are not read: a masked-off byte is
/// never accessed, even past the end of `data`), NH's eight products one
/// multiply, the eight chunks' sums added across lanes by one
/// transposition, and the finaliser's 64-bit multiplies native.
///
/// # Safety
/// The processor has AVX-512 F, BW and DQ and BMI2, and `ends` ascend,
/// a chunk at most [`CHUNK`] bytes apart, the last at most `data.len()`
/// (as the walk of LF bits writes them): the masked loads rely on it to
/// stay inside `data`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,bmi2")]
pub(super) unsafe fn hash_chunks_avx512(data: &[u8], ends: &[usize], hashes: &mut [u64]) {
    use std::arch::x86_64::{__m512i, _mm512_mask_storeu_epi64, _mm512_storeu_si512};
    let count = ends.len().saturating_sub(1).min(hashes.len());
    let mut i = 0;
    while i + 8 <= count {
        // One bounds check for the nine ends of the eight chunks.
        let Some(at) = ends[i..].first_chunk::<9>() else {
            break;
        };
        // SAFETY: passed on from this function's contract.
        let z = unsafe { eight_hashes(data, at) };
        // SAFETY: `hashes` has room for chunks i to i + 7 (`count` is at
        // most its length); storeu has no alignment requirement.
        unsafe { _mm512_storeu_si512(hashes[i..i + 8].as_mut_ptr().cast::<__m512i>(), z) };
        i += 8;
    }
    // The last few chunks (a small file's are most of it) as eight too,
    // those past the last empty: one vector, not a chunk at a time.
    let rest = count - i;
    debug_assert!(rest < 8);
    if rest > 0 {
        let mut at = [ends[count]; 9];
        at[..=rest].copy_from_slice(&ends[i..=count]);
        // SAFETY: passed on from this function's contract; the added
        // chunks are empty, at the last end.
        let z = unsafe { eight_hashes(data, &at) };
        // SAFETY: `hashes` has room for chunks i to count - 1; the lanes
        // past them are masked off, and a masked store does not touch
        // them.
        unsafe {
            _mm512_mask_storeu_epi64(hashes.as_mut_ptr().add(i).cast(), (1u8 << rest) - 1, z)
        };
    }
}

/// The hashes of the eight chunks between consecutive ends of `at`, in
/// the lanes of a vector ([`hash_chunks_avx512`]).
///
/// # Safety
/// As [`hash_chunks_avx512`], for the ends `at`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,bmi2")]
#[inline]
unsafe fn eight_hashes(data: &[u8], at: &[usize; 9]) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{
        __m512i, _bzhi_u64, _mm512_add_epi32, _mm512_loadu_si512, _mm512_maskz_loadu_epi8,
        _mm512_mul_epu32, _mm512_set1_epi64, _mm512_srli_epi64, _mm512_sub_epi64, _mm512_xor_si512,
    };
    const _: () = assert!(size_of::<usize>() == 8);
    debug_assert!(
        at[8] <= data.len() && at.windows(2).all(|e| e[0] <= e[1] && e[1] - e[0] <= CHUNK)
    );
    // SAFETY: KEYS is sixteen u32, 64 bytes; loadu has no alignment
    // requirement.
    let keys = unsafe { _mm512_loadu_si512(KEYS.as_ptr().cast::<__m512i>()) };
    let seed = _mm512_set1_epi64(SEED as i64);
    let mut products = [seed; 8];
    for (j, product) in products.iter_mut().enumerate() {
        let (start, end) = (at[j], at[j + 1]);
        let keep = _bzhi_u64(u64::MAX, (end - start) as u32);
        // SAFETY: the bytes read are those of the chunk, `data[start..end]`
        // (the mask keeps the first `end - start` of the 64, and `end` is
        // inside `data`: this function's contract); a masked load does not
        // touch the others.
        let words = unsafe { _mm512_maskz_loadu_epi8(keep, data.as_ptr().add(start).cast()) };
        let x = _mm512_add_epi32(words, keys);
        *product = _mm512_mul_epu32(x, _mm512_srli_epi64::<32>(x));
    }
    // Lane sums of the eight chunks, chunk j in lane j: pairs of lanes,
    // then pairs of 128-bit lanes, twice.
    let (p01, p23) = (
        pairs(products[0], products[1]),
        pairs(products[2], products[3]),
    );
    let (p45, p67) = (
        pairs(products[4], products[5]),
        pairs(products[6], products[7]),
    );
    let sums = halves(halves(p01, p23), halves(p45, p67));
    // SAFETY: `at` is nine usize (u64 on x86-64), read as eight from 0 and
    // from 1; loadu has no alignment requirement.
    let lengths = unsafe {
        let at = at.as_ptr();
        _mm512_sub_epi64(
            _mm512_loadu_si512(at.add(1).cast::<__m512i>()),
            _mm512_loadu_si512(at.cast::<__m512i>()),
        )
    };
    crate::similarity::mix::mix_lanes(_mm512_xor_si512(sums, _mm512_xor_si512(seed, lengths)))
}

/// Two vectors' lanes added in pairs: lanes 2k and 2k + 1 of `a` into
/// lane 2k, of `b` into lane 2k + 1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn pairs(
    a: std::arch::x86_64::__m512i,
    b: std::arch::x86_64::__m512i,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{_mm512_add_epi64, _mm512_unpackhi_epi64, _mm512_unpacklo_epi64};
    _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b))
}

/// Two vectors' 128-bit lanes added in pairs: lanes 2k and 2k + 1 of `a`
/// into lane k, of `b` into lane k + 2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn halves(
    a: std::arch::x86_64::__m512i,
    b: std::arch::x86_64::__m512i,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{_mm512_add_epi64, _mm512_shuffle_i64x2};
    _mm512_add_epi64(
        _mm512_shuffle_i64x2::<0b10_00_10_00>(a, b),
        _mm512_shuffle_i64x2::<0b11_01_11_01>(a, b),
    )
}

/// NH of 64 bytes (those where `keep` is zero taken as zero) as four
/// 64-bit lanes still to be added.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn nh_lanes(words: &[u8; CHUNK], keep: &[u8; CHUNK]) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_add_epi64, _mm256_and_si256, _mm256_loadu_si256,
        _mm256_mul_epu32, _mm256_srli_epi64,
    };
    // SAFETY: each pointer is to 64 bytes (the arrays' and KEYS' sizes),
    // read as two 32-byte vectors; loadu has no alignment requirement.
    let (w, k, m) = unsafe {
        let w = words.as_ptr().cast::<__m256i>();
        let m = keep.as_ptr().cast::<__m256i>();
        let k = KEYS.as_ptr().cast::<__m256i>();
        (
            [_mm256_loadu_si256(w), _mm256_loadu_si256(w.add(1))],
            [_mm256_loadu_si256(k), _mm256_loadu_si256(k.add(1))],
            [_mm256_loadu_si256(m), _mm256_loadu_si256(m.add(1))],
        )
    };
    let a = _mm256_add_epi32(_mm256_and_si256(w[0], m[0]), k[0]);
    let b = _mm256_add_epi32(_mm256_and_si256(w[1], m[1]), k[1]);
    // Each 64-bit lane holds a pair (x_2i, x_2i+1): its low word times
    // its high one.
    _mm256_add_epi64(
        _mm256_mul_epu32(a, _mm256_srli_epi64::<32>(a)),
        _mm256_mul_epu32(b, _mm256_srli_epi64::<32>(b)),
    )
}

/// [`mix`] on four lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn mix_avx2(z: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::{_mm256_srli_epi64, _mm256_xor_si256};
    let z = _mm256_xor_si256(z, _mm256_srli_epi64::<30>(z));
    let z = mul_avx2(z, 0xbf58_476d_1ce4_e5b9);
    let z = _mm256_xor_si256(z, _mm256_srli_epi64::<27>(z));
    let z = mul_avx2(z, 0x94d0_49bb_1331_11eb);
    _mm256_xor_si256(z, _mm256_srli_epi64::<31>(z))
}

/// Four 64-bit products mod 2^64 by `k`, from 32-bit multiplies:
/// `lo(z) lo(k) + (hi(z) lo(k) + lo(z) hi(k)) << 32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn mul_avx2(z: std::arch::x86_64::__m256i, k: u64) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::{
        _mm256_add_epi64, _mm256_mul_epu32, _mm256_set1_epi64x, _mm256_slli_epi64,
        _mm256_srli_epi64,
    };
    let low = _mm256_set1_epi64x((k & 0xffff_ffff) as i64);
    let high = _mm256_set1_epi64x((k >> 32) as i64);
    let cross = _mm256_add_epi64(
        _mm256_mul_epu32(_mm256_srli_epi64::<32>(z), low),
        _mm256_mul_epu32(z, high),
    );
    _mm256_add_epi64(_mm256_mul_epu32(z, low), _mm256_slli_epi64::<32>(cross))
}

/// Sixty-four bytes of `0xff`, then sixty-four zeros: the 64 bytes from
/// `CHUNK - len` keep the first `len` bytes of a 64-byte window and clear
/// the rest.
static KEEP_BYTES: [u8; 2 * CHUNK] = {
    let mut m = [0u8; 2 * CHUNK];
    let mut i = 0;
    while i < CHUNK {
        m[i] = 0xff;
        i += 1;
    }
    m
};

/// The hash of the chunk of `len` bytes (1 to [`CHUNK`]) at `start` of
/// `data`: the 64 bytes from `start` with those past the chunk masked
/// off by one load of [`KEEP_BYTES`]; near the end of `data`, from a
/// zero-padded copy. With `WIDE`, NH runs on AVX2.
///
/// # Safety
/// `WIDE` only where the processor has AVX2.
#[inline(always)]
pub(super) unsafe fn chunk_hash_at<const WIDE: bool>(data: &[u8], start: usize, len: usize) -> u64 {
    let (Some(words), Some(keep)) = (
        data.get(start..).and_then(<[u8]>::first_chunk::<CHUNK>),
        KEEP_BYTES
            .get(CHUNK.wrapping_sub(len)..)
            .and_then(<[u8]>::first_chunk::<CHUNK>),
    ) else {
        return chunk_hash_tail(&data[start..start + len]);
    };
    #[cfg(target_arch = "x86_64")]
    if WIDE {
        // SAFETY: the caller has checked AVX2 (this function's contract).
        return mix(unsafe { nh_avx2(words, keep) } ^ SEED ^ len as u64);
    }
    mix(nh(words, keep) ^ SEED ^ len as u64)
}

/// The hash of a chunk within 64 bytes of the end of the data.
#[cold]
fn chunk_hash_tail(chunk: &[u8]) -> u64 {
    let mut padded = [0u8; CHUNK];
    padded[..chunk.len()].copy_from_slice(chunk);
    let len = chunk.len();
    let keep = KEEP_BYTES[CHUNK - len..]
        .first_chunk::<CHUNK>()
        .unwrap_or(&[0xff; CHUNK]);
    mix(nh(&padded, keep) ^ SEED ^ len as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length at every offset of real text, with and without AVX2,
    /// near the end of the data and away from it: the fast forms equal
    /// the definition.
    #[test]
    fn fast_forms_hash_as_the_definition() {
        let text: Vec<u8> = crate::testing::real_text().concat()[..4096].to_vec();
        for start in (0..text.len()).step_by(7) {
            for len in 1..=CHUNK.min(text.len() - start) {
                let want = chunk_hash(&text[start..start + len]);
                // SAFETY: the portable form has no requirement.
                assert_eq!(unsafe { chunk_hash_at::<false>(&text, start, len) }, want);
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 checked just above.
                    assert_eq!(unsafe { chunk_hash_at::<true>(&text, start, len) }, want);
                }
            }
        }
    }

    /// Checks a batch hasher against the definition on runs of chunks of
    /// every length, back to back, the last ending at the end of the data
    /// or up to `after` bytes before it.
    #[cfg(target_arch = "x86_64")]
    fn batches_hash_as_the_definition(
        seed: u64,
        after: usize,
        hash: impl Fn(&[u8], &[usize], &mut [u64]),
    ) {
        let text: Vec<u8> = crate::testing::real_text().concat()[..20_000].to_vec();
        let mut rng = crate::testing::Rng(seed);
        for _ in 0..300 {
            let count = rng.below(60) + 1;
            let mut at = rng.below(text.len() - 200);
            let mut ends = vec![at];
            for _ in 0..count {
                let len = (rng.below(CHUNK) + 1).min(text.len() - at);
                if len == 0 {
                    break;
                }
                at += len;
                ends.push(at);
            }
            let data = &text[..(at + rng.below(after)).min(text.len())];
            let mut hashes = vec![0; ends.len() - 1];
            hash(data, &ends, &mut hashes);
            for (pair, &h) in ends.windows(2).zip(&hashes) {
                assert_eq!(
                    h,
                    chunk_hash(&data[pair[0]..pair[1]]),
                    "chunk {}..{}",
                    pair[0],
                    pair[1]
                );
            }
        }
    }

    /// Four chunks at a time as one at a time.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn chunks_hashed_four_at_a_time_hash_as_the_definition() {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 checked just above.
            batches_hash_as_the_definition(7, 70, |d, e, h| unsafe { hash_chunks_avx2(d, e, h) });
        }
    }

    /// Eight chunks at a time as one at a time, the data ending right at
    /// the last chunk or a byte or two after it: the masked loads must not
    /// read past a chunk.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn chunks_hashed_eight_at_a_time_hash_as_the_definition() {
        if super::super::batch::wide512() {
            // SAFETY: AVX-512 checked just above; the ends ascend, chunks
            // of 1 to CHUNK bytes inside the data.
            batches_hash_as_the_definition(11, 3, |d, e, h| unsafe {
                super::hash_chunks_avx512(d, e, h)
            });
        }
    }

    /// The hash depends on every byte and on the length: chunks that
    /// differ in one byte, or only in trailing zeros, hash apart.
    #[test]
    fn every_byte_and_the_length_count() {
        let text = &crate::testing::real_text()[0];
        let chunk = &text[..CHUNK];
        let h = chunk_hash(chunk);
        for i in 0..CHUNK {
            let mut other = chunk.to_vec();
            other[i] ^= 1;
            assert_ne!(chunk_hash(&other), h, "byte {i}");
        }
        assert_ne!(chunk_hash(b"abc"), chunk_hash(b"abc\0"));
    }
}
