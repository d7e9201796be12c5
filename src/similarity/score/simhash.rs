//! A 256-bit fingerprint of git's chunk histogram, for ordering a rename
//! search nearest first from what the search builds anyway.
//!
//! SimHash (Charikar 2002) over the histogram's buckets, each weighted by
//! its bytes up to a cap (4095): every bucket draws 256 pseudo-random bits from its number,
//! and bit `i` of the fingerprint is set when the buckets with bit `i` set
//! hold more than half of the file's counted bytes. The chance that two
//! files differ in one bit is the angle between their weight vectors over
//! pi, and git's score is the overlap of the same vectors, so Hamming
//! distance ranks sources for a destination much as git's score does.
//!
//! It is only an order: the search that uses it proves by a bound that
//! no source it did not score can score what matters
//! ([`crate::similarity::prefix`]), so a poor guess costs time, never an
//! answer. It is built from a histogram in a fraction of the time a gsimm
//! fingerprint takes from the bytes (a bucket is a line, a window is a
//! byte), and is never stored: a run that finds histograms in the store
//! builds it from them.

use super::Spans;
use crate::similarity::fingerprint::Fingerprint;
use crate::similarity::mix::mix;

/// The fingerprint of `spans`; `None` for a histogram without buckets
/// (an empty file).
pub fn fingerprint(spans: &Spans) -> Option<Fingerprint> {
    let buckets = spans.buckets();
    if buckets.is_empty() {
        return None;
    }
    let (set, total) = weights_set(buckets);
    // More than half the weight on "set"; a tie stays clear.
    Some(Fingerprint::from_fn(|i| 2 * set[i] > total))
}

/// The most a bucket weighs in the fingerprint: a line repeated all
/// over a file (a blank line, a brace) weighs less than its bytes, as a
/// word does in a damped term frequency, and the vector path's 16-bit
/// lanes take [`WIDEN_EVERY`] buckets at this weight.
const CAP: u32 = 4095;

/// Buckets the vector path adds into 16-bit lanes before widening them.
const WIDEN_EVERY: usize = 16;

const _: () = assert!(CAP as usize * WIDEN_EVERY <= u16::MAX as usize);
const _: () = assert!(CAP as u64 * super::HASH_BASE as u64 <= u32::MAX as u64);

#[inline(always)]
fn capped(w: u32) -> u32 {
    w.min(CAP)
}

/// Per bit, the (capped) weight of the buckets that set it, and the
/// weight of all of them.
fn weights_set(buckets: &[(u32, u32)]) -> ([u64; 256], u64) {
    #[cfg(target_arch = "x86_64")]
    if crate::similarity::simd::avx512() {
        // SAFETY: the processor has AVX-512 F, BW and DQ, checked just
        // above.
        return unsafe { weights_set_avx512(buckets) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above.
        return unsafe { weights_set_avx2(buckets) };
    }
    weights_set_portable(buckets)
}

/// A bucket's 256 bits: four rounds of splitmix64's finaliser on its
/// number, each from its own offset.
#[inline(always)]
fn bits_of(bucket: u32) -> [u64; 4] {
    let mut words = [0u64; 4];
    for (j, w) in words.iter_mut().enumerate() {
        *w = mix(u64::from(bucket) ^ offset(j));
    }
    words
}

/// What word `j` of a bucket's bits mixes its number with.
#[inline(always)]
const fn offset(j: usize) -> u64 {
    0x9e37_79b9_7f4a_7c15u64.wrapping_mul(j as u64 + 1)
}

fn weights_set_portable(buckets: &[(u32, u32)]) -> ([u64; 256], u64) {
    let mut set = [0u64; 256];
    let mut total = 0;
    for &(bucket, w) in buckets {
        let bits = bits_of(bucket);
        let w = u64::from(capped(w));
        total += w;
        for (i, s) in set.iter_mut().enumerate() {
            *s += ((bits[i / 64] >> (i % 64)) & 1) * w;
        }
    }
    (set, total)
}

/// [`weights_set_portable`] with 32 counters to a vector of 16-bit lanes,
/// a bucket's bits as the masks of eight adds, and eight buckets' bits
/// mixed at a time; the lanes are widened into 32-bit sums every
/// [`WIDEN_EVERY`] buckets, before they can overflow. Only where the
/// processor has AVX-512 F, BW and DQ. The 32-bit sums cannot overflow:
/// a histogram has at most [`HASH_BASE`](super::HASH_BASE) buckets, each
/// weighing at most [`CAP`] here.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq")]
fn weights_set_avx512(buckets: &[(u32, u32)]) -> ([u64; 256], u64) {
    use crate::similarity::mix::mix_lanes;
    use std::arch::x86_64::{
        __m512i, _load_mask32, _mm512_add_epi32, _mm512_castsi512_si256, _mm512_cvtepu16_epi32,
        _mm512_extracti64x4_epi64, _mm512_mask_add_epi16, _mm512_set_epi64, _mm512_set1_epi16,
        _mm512_set1_epi64, _mm512_setzero_si512, _mm512_storeu_si512, _mm512_xor_si512,
    };
    let mut narrow: [__m512i; 8] = [_mm512_setzero_si512(); 8];
    let mut wide: [__m512i; 16] = [_mm512_setzero_si512(); 16];
    let mut widen = |narrow: &mut [__m512i; 8]| {
        for (n, w) in narrow.iter_mut().zip(wide.chunks_exact_mut(2)) {
            w[0] = _mm512_add_epi32(w[0], _mm512_cvtepu16_epi32(_mm512_castsi512_si256(*n)));
            w[1] = _mm512_add_epi32(
                w[1],
                _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(*n)),
            );
            *n = _mm512_setzero_si512();
        }
    };
    let add = |narrow: &mut [__m512i; 8], bits: &[u64; 4], w: u32| {
        let wv = _mm512_set1_epi16(capped(w) as i16);
        for (q, n) in narrow.iter_mut().enumerate() {
            let k = (bits[q / 2] >> (32 * (q % 2))) as u32;
            *n = _mm512_mask_add_epi16(*n, k, *n, wv);
        }
    };
    // Eight buckets' 256 bits each: word j of bucket i at `bits[j][i]`.
    let mut bits = [[0u64; 8]; 4];
    let mut since = 0;
    let mut total = 0;
    let mut eights = buckets.chunks_exact(8);
    for eight in &mut eights {
        // Put together in registers: eight numbers stored and loaded back
        // as one vector wait for the stores to drain.
        let id = |i: usize| i64::from(eight[i].0);
        let bucket = _mm512_set_epi64(id(7), id(6), id(5), id(4), id(3), id(2), id(1), id(0));
        for (j, word) in bits.iter_mut().enumerate() {
            let z = mix_lanes(_mm512_xor_si512(
                bucket,
                _mm512_set1_epi64(offset(j) as i64),
            ));
            // SAFETY: eight u64 are one vector.
            unsafe { _mm512_storeu_si512(word.as_mut_ptr().cast(), z) };
        }
        for (i, &(_, w)) in eight.iter().enumerate() {
            total += u64::from(capped(w));
            let wv = _mm512_set1_epi16(capped(w) as i16);
            for (q, n) in narrow.iter_mut().enumerate() {
                // The mask straight from memory: a load, where taking it
                // out of a word took a shift and a move.
                let at = std::ptr::from_ref(&bits[q / 2][i]).cast::<u32>();
                // SAFETY: `at` is the u64 bits[q / 2][i], read as two
                // u32 (little-endian: the low half first).
                let k = unsafe { _load_mask32(at.add(q % 2)) };
                *n = _mm512_mask_add_epi16(*n, k, *n, wv);
            }
        }
        since += 8;
        if since == WIDEN_EVERY {
            widen(&mut narrow);
            since = 0;
        }
    }
    for &(bucket, w) in eights.remainder() {
        total += u64::from(capped(w));
        add(&mut narrow, &bits_of(bucket), w);
    }
    widen(&mut narrow);
    let mut lanes = [0u32; 256];
    for (sixteen, w) in lanes.chunks_exact_mut(16).zip(&wide) {
        // SAFETY: sixteen u32 are one 64-byte vector; the store is
        // unaligned-tolerant.
        unsafe { _mm512_storeu_si512(sixteen.as_mut_ptr().cast(), *w) };
    }
    (lanes.map(u64::from), total)
}

/// [`weights_set_portable`] with sixteen counters to a vector of 16-bit
/// lanes, each lane picking its bit out of the bucket's sixteen by a
/// compare, widened as in [`weights_set_avx512`]. Only where the
/// processor has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn weights_set_avx2(buckets: &[(u32, u32)]) -> ([u64; 256], u64) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi16, _mm256_and_si256, _mm256_cmpeq_epi16, _mm256_set1_epi16,
        _mm256_setr_epi16, _mm256_setzero_si256,
    };
    let lane_bits = _mm256_setr_epi16(
        1,
        2,
        4,
        8,
        16,
        32,
        64,
        128,
        256,
        512,
        1024,
        2048,
        4096,
        8192,
        16384,
        i16::MIN,
    );
    let mut narrow: [__m256i; 16] = [_mm256_setzero_si256(); 16];
    let mut wide = [0u64; 256];
    let mut total = 0;
    let widen = |narrow: &mut [__m256i; 16], wide: &mut [u64; 256]| {
        for (n, w) in narrow.iter_mut().zip(wide.chunks_exact_mut(16)) {
            let mut lanes = [0u16; 16];
            // SAFETY: sixteen u16 are one 32-byte vector; the store is
            // unaligned-tolerant.
            unsafe { std::arch::x86_64::_mm256_storeu_si256(lanes.as_mut_ptr().cast(), *n) };
            for (w, l) in w.iter_mut().zip(lanes) {
                *w += u64::from(l);
            }
            *n = _mm256_setzero_si256();
        }
    };
    for (at, &(bucket, w)) in buckets.iter().enumerate() {
        let bits = bits_of(bucket);
        let w = capped(w);
        total += u64::from(w);
        let wv = _mm256_set1_epi16(w as i16);
        for (q, n) in narrow.iter_mut().enumerate() {
            let sixteen = _mm256_set1_epi16((bits[q / 4] >> (16 * (q % 4))) as u16 as i16);
            let set = _mm256_cmpeq_epi16(_mm256_and_si256(sixteen, lane_bits), lane_bits);
            *n = _mm256_add_epi16(*n, _mm256_and_si256(set, wv));
        }
        if at % WIDEN_EVERY == WIDEN_EVERY - 1 {
            widen(&mut narrow, &mut wide);
        }
    }
    widen(&mut narrow, &mut wide);
    (wide, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(seed: u64, lines: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut x = seed;
        for i in 0..lines {
            x = mix(x.wrapping_add(i as u64));
            out.extend_from_slice(format!("let v{} = f({}, {});\n", x % 997, x % 31, i).as_bytes());
        }
        out
    }

    #[test]
    fn every_path_gives_the_same_bits() {
        // Heavy buckets (a line repeated past the cap) and counts past a
        // widening, on every path this processor has.
        let mut repeated = text(9, 300);
        repeated.extend(b"same line again\n".repeat(600));
        let inputs = [1, 3, 15, 16, 17, 40, 700]
            .map(|lines| text(lines as u64, lines))
            .into_iter()
            .chain([repeated]);
        for data in inputs {
            let spans = Spans::new(&data);
            let want = weights_set_portable(spans.buckets());
            assert_eq!(weights_set(spans.buckets()), want);
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: checked just above.
                assert_eq!(unsafe { weights_set_avx2(spans.buckets()) }, want);
            }
        }
    }

    #[test]
    fn an_edited_copy_is_nearer_than_another_file() {
        let a = text(1, 400);
        let mut edited = a.clone();
        edited.splice(2000..2000, b"an inserted line\n".iter().copied());
        edited.truncate(edited.len() - 300);
        let other = text(2, 400);
        let fp = |d: &[u8]| fingerprint(&Spans::new(d)).expect("not empty");
        let (fa, fe, fo) = (fp(&a), fp(&edited), fp(&other));
        assert!(fa.distance(&fe) < 40, "{}", fa.distance(&fe));
        assert!(fa.distance(&fo) > 90, "{}", fa.distance(&fo));
        assert_eq!(fingerprint(&Spans::new(b"")), None);
    }
}
