//! LF bits: one bit per byte of a blob, set where it is LF, 64 bytes to
//! a word. git cuts its chunks at each LF and every 64 bytes, so the
//! chunk ends read off these words with a trailing-zero count: the
//! signers (`signature/chunks.rs`) and the AVX-512 chunk hash of the
//! histograms (`score/chunks_avx512.rs`) both walk them.

/// How wide a path [`lf_bits`] may take; it takes the widest the
/// processor also has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Width {
    /// A word at a time (SSE2 on x86-64).
    Portable,
    /// 32 bytes to a compare.
    Avx2,
    /// 64 bytes to a compare.
    Avx512,
}

/// A bit per byte of `data`, set where it is LF, 64 bytes to a word,
/// into the front of `bits`, with one more zero word at the end so that a
/// window of 64 bits from any offset of `data` reads two words; how many
/// words that is, and whether `data` holds a CR, from the same pass.
///
/// `bits` only grows, and what it held is overwritten, not cleared first:
/// zeroing it wrote an eighth of every blob's size again, about 8% of the
/// signer's time.
pub(crate) fn lf_bits(data: &[u8], bits: &mut Vec<u64>, width: Width) -> (usize, bool) {
    let whole = data.len() / 64;
    let len = data.len().div_ceil(64) + 1;
    if bits.len() < len {
        bits.resize(len, 0);
    }
    let bits = &mut bits[..len];
    #[cfg(target_arch = "x86_64")]
    let mut cr = if width == Width::Avx512 && crate::similarity::simd::avx512() {
        // SAFETY: the processor has AVX-512 BW, checked just above.
        unsafe { lf_words_avx512(data, &mut bits[..whole]) }
    } else if width >= Width::Avx2 && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above.
        unsafe { lf_words_avx2(data, &mut bits[..whole]) }
    } else {
        lf_words(data, &mut bits[..whole])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let mut cr = {
        let _ = width;
        lf_words(data, &mut bits[..whole])
    };
    let rest = &data[64 * whole..];
    // The last word (zero) and the one before, of the bytes past the
    // whole blocks (none when there are none).
    bits[len - 1] = 0;
    if !rest.is_empty() {
        let mut block = [0u8; 64];
        block[..rest.len()].copy_from_slice(rest);
        let mut crs = 0;
        bits[whole] = lf_mask(&block, &mut crs);
        cr |= crs != 0;
    }
    (len, cr)
}

/// The LF bits of the whole 64-byte blocks of `data` into `words`;
/// whether they hold a CR.
fn lf_words(data: &[u8], words: &mut [u64]) -> bool {
    let mut cr = 0u64;
    for (block, word) in data.chunks_exact(64).zip(words) {
        *word = lf_mask(block, &mut cr);
    }
    cr != 0
}

/// [`lf_words`] with AVX2: 32 bytes to a compare, the CR compares only
/// or-ed together.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lf_words_avx2(data: &[u8], words: &mut [u64]) -> bool {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8, _mm256_setzero_si256, _mm256_testz_si256,
    };
    let lf = _mm256_set1_epi8(b'\n' as i8);
    let cr = _mm256_set1_epi8(b'\r' as i8);
    let mut crs = _mm256_setzero_si256();
    for (block, word) in data.chunks_exact(64).zip(words) {
        // SAFETY: a block is 64 bytes, read as two 32-byte vectors;
        // loadu has no alignment requirement.
        let (a, b) = unsafe {
            let at = block.as_ptr().cast::<__m256i>();
            (_mm256_loadu_si256(at), _mm256_loadu_si256(at.add(1)))
        };
        let low = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, lf)) as u32;
        let high = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, lf)) as u32;
        *word = u64::from(low) | u64::from(high) << 32;
        crs = _mm256_or_si256(
            crs,
            _mm256_or_si256(_mm256_cmpeq_epi8(a, cr), _mm256_cmpeq_epi8(b, cr)),
        );
    }
    _mm256_testz_si256(crs, crs) == 0
}

/// [`lf_words`] with AVX-512 BW: a compare of 64 bytes is the word.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn lf_words_avx512(data: &[u8], words: &mut [u64]) -> bool {
    use std::arch::x86_64::{
        __m512i, _mm512_cmpeq_epi8_mask, _mm512_loadu_si512, _mm512_set1_epi8,
    };
    let lf = _mm512_set1_epi8(b'\n' as i8);
    let cr = _mm512_set1_epi8(b'\r' as i8);
    let mut crs = 0u64;
    for (block, word) in data.chunks_exact(64).zip(words) {
        // SAFETY: a block is 64 bytes; loadu has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast::<__m512i>()) };
        *word = _mm512_cmpeq_epi8_mask(v, lf);
        crs |= _mm512_cmpeq_epi8_mask(v, cr);
    }
    crs != 0
}

/// The high bit of each byte of `x` that is zero, exactly (no carry
/// crosses a byte).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LO7) + LO7) | x) & !LO7
}

/// The LF bits of 64 bytes, with SSE2 (every x86-64 has it): sixteen
/// bytes compared at once, their bits gathered with one instruction. CR
/// bytes are or-ed into `cr`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lf_mask(block: &[u8], cr: &mut u64) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    assert!(block.len() >= 64);
    let mut mask = 0u64;
    let mut crs = 0i32;
    // SAFETY: SSE2 is part of every x86-64 processor (the target's
    // baseline), and the assert above keeps each 16-byte load at 16 * i
    // inside `block` (loadu has no alignment requirement).
    unsafe {
        let lf = _mm_set1_epi8(b'\n' as i8);
        let cr_byte = _mm_set1_epi8(b'\r' as i8);
        for i in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * i).cast::<__m128i>());
            mask |= u64::from(_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf)) as u16) << (16 * i);
            crs |= _mm_movemask_epi8(_mm_cmpeq_epi8(v, cr_byte));
        }
    }
    *cr |= crs as u64;
    mask
}

/// The LF bits of 64 bytes without SIMD: eight words at a time, each
/// byte's bit found without a branch (a byte is zero after the XOR
/// exactly when it was LF; the multiply gathers the eight high bits into
/// the top byte). CR bytes are or-ed into `cr`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn lf_mask(block: &[u8], cr: &mut u64) -> u64 {
    let mut mask = 0u64;
    for (i, w) in block.chunks_exact(8).enumerate() {
        let w = load(w, 0);
        let zero = zero_bytes(w ^ 0x0a0a_0a0a_0a0a_0a0a);
        *cr |= zero_bytes(w ^ 0x0d0d_0d0d_0d0d_0d0d);
        let byte = (zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= byte << (8 * i);
    }
    mask
}

/// Eight bytes of `data` from `at`, little-endian.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn load(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(b)
}
