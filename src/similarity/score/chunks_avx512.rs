//! git's chunks of a file in which every byte counts
//! ([`super::spans::chunk_plain`]) with AVX-512: the chunk ends read off
//! LF bits, then eight chunks hashed at once, one chunk a 64-bit lane.
//!
//! git's chunk hash is a serial fold, `x = rotl(x, 7) + (byte << 32)`,
//! two instructions deep per byte; one chunk at a time, with a branch per
//! byte for the chunk's end that mispredicts about once a line, the fold
//! ran at 1.2 GB/s. Leading zero bytes leave the fold at zero, so each
//! chunk is loaded right-aligned into 64 bytes, zeros before it; the
//! eight rows are transposed (three rounds of unpacks), and each column,
//! the bytes of all eight chunks at one position, is spread to the lanes
//! by one byte permutation and folded in: no branch on a chunk's length
//! or content.

use std::arch::x86_64::{
    _mm512_add_epi64, _mm512_loadu_si512, _mm512_maskz_loadu_epi8, _mm512_maskz_permutexvar_epi8,
    _mm512_rol_epi64, _mm512_setzero_si512, _mm512_storeu_si512, _mm512_unpackhi_epi8,
    _mm512_unpackhi_epi16, _mm512_unpackhi_epi32, _mm512_unpacklo_epi8, _mm512_unpacklo_epi16,
    _mm512_unpacklo_epi32,
};

use super::chunk_hash::{MAX_CHUNK, chunk, finish};
use crate::similarity::lf_bits::{Width, lf_bits};

/// Whether [`chunk_plain`] may run: the AVX-512 paths are allowed
/// ([`crate::similarity::simd::avx512`]) and the processor also has VBMI
/// (the byte permutation). Asked once per process.
pub(super) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        crate::similarity::simd::avx512() && std::is_x86_feature_detected!("avx512vbmi")
    })
}

/// For each position `t` of a 64-byte row, the permutation that takes
/// column `t` of the transposed rows (`c[t % 16 / 2]`, see [`eight`]) to
/// byte 4 of each 64-bit lane: row `k`'s byte to lane `k`, shifted left
/// by 32 as the fold adds it.
static COLUMNS: [[u8; 64]; 64] = {
    let mut table = [[0u8; 64]; 64];
    let mut t = 0;
    while t < 64 {
        let (lane, q) = (t / 16, t % 2);
        let mut k = 0;
        while k < 8 {
            table[t][8 * k + 4] = (16 * lane + 8 * q + k) as u8;
            k += 1;
        }
        t += 1;
    }
    table
};

/// Chunks a batch holds before they are hashed.
const BATCH: usize = 64;

thread_local! {
    /// Each thread's LF bits ([`lf_bits`]), reused from file to file.
    static LF: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`super::spans::chunk_plain`]: every chunk of `data` (cut after each
/// LF and every 64 bytes), packed as `finish` packs it, appended to
/// `chunks` in order.
///
/// # Safety
/// Only where [`available`] says so.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi1")]
pub(super) unsafe fn chunk_plain(data: &[u8], chunks: &mut Vec<u64>) {
    LF.with_borrow_mut(|lf| {
        lf_bits(data, lf, Width::Avx512);
        let n = data.len();
        let mut batch = [(0usize, 0u32); BATCH];
        let mut p = 0;
        while p < n {
            let mut count = 0;
            while count < BATCH && p < n {
                // The 64 bits from `p` on: the word holding `p`, and the
                // next one's low bits (the zero word past the last one
                // stands in for it at the end).
                let (k, s) = (p / 64, p % 64);
                let high = if s == 0 { 0 } else { lf[k + 1] << (64 - s) };
                let ahead = (lf[k] >> s) | high;
                // After the first LF, or 64 bytes on, or at the end.
                let len = if ahead == 0 {
                    MAX_CHUNK as usize
                } else {
                    ahead.trailing_zeros() as usize + 1
                }
                .min(n - p);
                batch[count] = (p, len as u32);
                count += 1;
                p += len;
            }
            let mut i = 0;
            while i + 8 <= count {
                let Some(eight_chunks) = batch[i..].first_chunk::<8>() else {
                    break;
                };
                // SAFETY: passed on from this function's contract; each
                // chunk is 1 to 64 bytes inside `data`.
                let hashes = unsafe { eight(data, eight_chunks) };
                for (&h, &(_, len)) in hashes.iter().zip(eight_chunks) {
                    chunks.push(finish(h, len));
                }
                i += 8;
            }
            for &(start, len) in &batch[i..count] {
                chunks.push(chunk(&data[start..start + len as usize]));
            }
        }
    });
}

/// git's fold over each of eight chunks `(start, length)` of `data`.
///
/// # Safety
/// The processor has AVX-512 F, BW and VBMI; each chunk is 1 to 64 bytes
/// inside `data`.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn eight(data: &[u8], at: &[(usize, u32); 8]) -> [u64; 8] {
    let mut rows = [_mm512_setzero_si512(); 8];
    let mut longest = 0;
    for (row, &(start, len)) in rows.iter_mut().zip(at) {
        debug_assert!((1..=64).contains(&len) && start + len as usize <= data.len());
        // Right-aligned: the chunk's bytes last, zeros before them. The
        // address may lie before `data`; only the kept bytes are read.
        let keep = u64::MAX << (64 - len);
        let from = data
            .as_ptr()
            .wrapping_add(start + len as usize)
            .wrapping_sub(64);
        // SAFETY: the bytes the mask keeps are the chunk's, inside `data`
        // (this function's contract); a masked load does not touch the
        // others.
        *row = unsafe { _mm512_maskz_loadu_epi8(keep, from.cast()) };
        longest = longest.max(len as usize);
    }
    // Three rounds of unpacks, within each 128-bit lane: c[j] holds the
    // columns 2j and 2j + 1 of each lane's 16, the eight rows' bytes of a
    // column in one 64-bit word.
    let a = [
        _mm512_unpacklo_epi8(rows[0], rows[1]),
        _mm512_unpackhi_epi8(rows[0], rows[1]),
        _mm512_unpacklo_epi8(rows[2], rows[3]),
        _mm512_unpackhi_epi8(rows[2], rows[3]),
        _mm512_unpacklo_epi8(rows[4], rows[5]),
        _mm512_unpackhi_epi8(rows[4], rows[5]),
        _mm512_unpacklo_epi8(rows[6], rows[7]),
        _mm512_unpackhi_epi8(rows[6], rows[7]),
    ];
    let b = [
        _mm512_unpacklo_epi16(a[0], a[2]),
        _mm512_unpackhi_epi16(a[0], a[2]),
        _mm512_unpacklo_epi16(a[1], a[3]),
        _mm512_unpackhi_epi16(a[1], a[3]),
        _mm512_unpacklo_epi16(a[4], a[6]),
        _mm512_unpackhi_epi16(a[4], a[6]),
        _mm512_unpacklo_epi16(a[5], a[7]),
        _mm512_unpackhi_epi16(a[5], a[7]),
    ];
    let c = [
        _mm512_unpacklo_epi32(b[0], b[4]),
        _mm512_unpackhi_epi32(b[0], b[4]),
        _mm512_unpacklo_epi32(b[1], b[5]),
        _mm512_unpackhi_epi32(b[1], b[5]),
        _mm512_unpacklo_epi32(b[2], b[6]),
        _mm512_unpackhi_epi32(b[2], b[6]),
        _mm512_unpacklo_epi32(b[3], b[7]),
        _mm512_unpackhi_epi32(b[3], b[7]),
    ];
    // Before the longest chunk starts every row is zero, and so is the
    // fold.
    let mut x = _mm512_setzero_si512();
    for (t, columns) in COLUMNS.iter().enumerate().skip(64 - longest) {
        // SAFETY: a row of COLUMNS is 64 bytes; loadu has no alignment
        // requirement.
        let index = unsafe { _mm512_loadu_si512(columns.as_ptr().cast()) };
        let bytes = _mm512_maskz_permutexvar_epi8(0x1010_1010_1010_1010, index, c[t % 16 / 2]);
        x = _mm512_add_epi64(_mm512_rol_epi64::<7>(x), bytes);
    }
    let mut out = [0u64; 8];
    // SAFETY: eight u64 are 64 bytes; storeu has no alignment requirement.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), x) };
    out
}

#[cfg(test)]
mod tests {
    use super::super::chunk_hash::chunk_plain_scalar;

    fn both(data: &[u8]) {
        if !super::available() {
            return;
        }
        let (mut scalar, mut wide) = (Vec::new(), vec![7]);
        chunk_plain_scalar(data, &mut scalar);
        wide.clear();
        // SAFETY: checked just above.
        unsafe { super::chunk_plain(data, &mut wide) };
        assert_eq!(
            wide,
            scalar,
            "{} bytes: {:?}",
            data.len(),
            String::from_utf8_lossy(&data[..data.len().min(80)])
        );
    }

    /// Every chunk of real text, binary bytes, lines of every length
    /// around 64 and runs of LFs, at every length of a prefix: the same
    /// chunks, in the same order, as the byte-at-a-time fold.
    #[test]
    fn eight_at_a_time_chunks_as_one_at_a_time() {
        let texts = crate::testing::real_text();
        for text in &texts {
            both(text);
        }
        let text = texts.concat();
        for len in 0..700 {
            both(&text[..len.min(text.len())]);
        }
        for line in 60..=130 {
            let mut data = Vec::new();
            for i in 0..40 {
                data.extend((0..line).map(|j| b'a' + ((i + j) % 26) as u8));
                data.push(b'\n');
            }
            both(&data);
            both(&data[1..]);
        }
        let binary: Vec<u8> = (0u32..20_000)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [1, 63, 64, 65, 511, 512, 513, 4096, 20_000] {
            both(&binary[..len]);
        }
        both(&[b'\n'; 300]);
        both(&[0; 300]);
        both(&[0xff; 300]);
    }
}
