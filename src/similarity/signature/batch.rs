//! The stored-form signers (`Stored::encode_of`, in the fingerprinting
//! read): git's chunks cut a batch at a time off the LF bits
//! ([`super::chunks::with_body`]), hashed back to back, then the fine
//! symbols or a large file's sketch keys emitted without a branch on a
//! hash. What they emit is what [`super::chunks::sign`] emits for the
//! stored shape (`stored_tests.rs` builds it from the definition).

use super::CHUNK;
use super::hash::chunk_hash_at;
#[cfg(target_arch = "x86_64")]
use super::hash::{hash_chunks_avx2, hash_chunks_avx512};

/// Chunks the stored-form signers hash at a time, before their symbols
/// are worked out: a batch takes whole words of LF bits while it has room
/// for one more (a word of 64 bytes ends at most 64 chunks).
const BATCH: usize = 512;

/// The chunks of a batch: where each ends, its hash; and the stored-form
/// signers' scratch per chunk. One per thread, kept from file to file
/// ([`BATCHES`]): clearing it for every file would cost a small file more
/// than signing it.
struct Batch {
    /// Chunk `i` is `ends[i]..ends[i + 1]`; room past the last chunk for
    /// the ends a word's LF bits write whatever their number.
    ends: [usize; BATCH + 1 + CHUNK + 4],
    hashes: [u64; BATCH],
    /// Per chunk, for [`sign_fine_stored`]: its four possible symbols
    /// (byte j the symbol of rank j), how many it emits, its coarse
    /// symbol's selection bits, and whether it emits that one.
    fours: [u32; BATCH],
    counts: [u8; BATCH],
    selections: [u8; BATCH],
    coarse_counts: [u8; BATCH],
}

thread_local! {
    /// Each thread's [`Batch`].
    static BATCHES: std::cell::RefCell<Box<Batch>> = std::cell::RefCell::new(Box::new(Batch::new()));
}

impl Batch {
    fn new() -> Batch {
        Batch {
            ends: [0; BATCH + 1 + CHUNK + 4],
            hashes: [0; BATCH],
            fours: [0; BATCH],
            counts: [0; BATCH],
            selections: [0; BATCH],
            coarse_counts: [0; BATCH],
        }
    }

    /// The length of chunk `i` of the last [`Batch::fill`].
    #[inline(always)]
    fn len(&self, i: usize) -> usize {
        self.ends[i + 1] - self.ends[i]
    }

    /// The chunks from `*piece` on (moved past them), whole words of LF
    /// bits of `data` while there is room, hashed; how many, and how many
    /// of them end with LF.
    ///
    /// A chunk ends after each LF, or 64 bytes after its start when no
    /// LF comes first. A word needs at most one cut before its first LF
    /// (or before its end, when it has none), and none after: the lines
    /// after its first LF are shorter than the word. So each word writes
    /// one candidate cut and keeps it or not, then the ends of its LFs,
    /// read off its bits four at a time whatever their number (with
    /// AVX-512, by one compress), so that no branch depends on how many
    /// lines a word holds or on how long they are. The hashes, one chunk
    /// independent of the next, then run back to back.
    ///
    /// # Safety
    /// `WIDE` only where the processor has AVX2 ([`chunk_hash_at`]).
    #[inline(always)]
    unsafe fn fill<const WIDE: bool, const W512: bool>(
        &mut self,
        data: &[u8],
        bits: &[u64],
        piece: &mut usize,
    ) -> (usize, u64) {
        let n = data.len();
        let words = n.div_ceil(64);
        let ends = &mut self.ends;
        // The chunk being cut starts at `p`; `count` chunks are cut.
        let mut p = *piece;
        ends[0] = p;
        let (mut count, mut lf) = (0, 0u64);
        let mut k = p / 64;
        // The LFs before `p` in its word are taken.
        let mut w = bits.get(k).map_or(0, |&word| word & (u64::MAX << (p % 64)));
        while k < words && count + CHUNK <= BATCH {
            let base = 64 * k + 1;
            // Past the word (`base + 64`) when it has no LF.
            let first = base + w.trailing_zeros() as usize;
            // Every word the same way, nothing branching on its bits (a
            // quarter of the words of vim's sources hold a line longer
            // than 64 bytes, which a branch on them mispredicted): at most
            // one cut, then the LFs. At most one, since `p` is past the
            // previous word's start (its last LF, or its cuts, are), so
            // the first LF of this one, or its end, is less than 128
            // bytes on. The cut is needed before the first LF, or, in a
            // word without one, anywhere up to the word's end and the
            // data's.
            let cut = p + CHUNK;
            let needs_cut = (cut < first) & (cut <= n);
            debug_assert!(w == 0 || first - p < 2 * CHUNK);
            ends[count + 1] = cut;
            count += usize::from(needs_cut);
            p = std::hint::select_unpredictable(needs_cut, cut, p);
            #[cfg(target_arch = "x86_64")]
            let lfs = if W512 {
                // SAFETY: passed on from this function's contract.
                unsafe { ends_avx512(w, base, &mut ends[count + 1..]) }
            } else {
                ends_of(w, base, &mut ends[count + 1..])
            };
            #[cfg(not(target_arch = "x86_64"))]
            let lfs = ends_of(w, base, &mut ends[count + 1..]);
            count += lfs;
            lf += lfs as u64;
            // The chunk being cut now starts after the word's last LF.
            let last = (base + 63).wrapping_sub(w.leading_zeros() as usize);
            p = std::hint::select_unpredictable(w != 0, last, p);
            k += 1;
            w = bits.get(k).copied().unwrap_or(0);
        }
        // A word ends at most CHUNK chunks (a cut is only needed before a
        // first LF at bit 1 or later), so the batch never overflows.
        debug_assert!(count <= BATCH);
        // The last chunk, shorter than 64 bytes, ends with the data.
        if k >= words && p < n {
            p = n;
            count += 1;
            ends[count] = p;
        }
        *piece = p;
        #[cfg(target_arch = "x86_64")]
        if W512 {
            // SAFETY: the processor is passed on from this function's
            // contract; the ends were cut just above, in order, a chunk at
            // most CHUNK bytes, the last at most `n`.
            unsafe { hash_chunks_avx512(data, &self.ends[..=count], &mut self.hashes[..count]) };
            return (count, lf);
        }
        #[cfg(target_arch = "x86_64")]
        if WIDE {
            // SAFETY: passed on from this function's contract.
            unsafe { hash_chunks_avx2(data, &self.ends[..=count], &mut self.hashes[..count]) };
            return (count, lf);
        }
        for i in 0..count {
            // SAFETY: passed on from this function's contract.
            self.hashes[i] = unsafe { chunk_hash_at::<WIDE>(data, self.ends[i], self.len(i)) };
        }
        (count, lf)
    }
}

/// The ends of the chunks that the LFs of one word of LF bits `w` end,
/// `base` plus each LF's place, into the front of `ends`, in order; how
/// many. Four are written whatever their number (those past it are
/// overwritten or ignored; `ends` has room for them): most words of text
/// hold fewer lines, more in a word of short lines.
#[inline(always)]
fn ends_of(mut w: u64, base: usize, ends: &mut [usize]) -> usize {
    let lfs = w.count_ones() as usize;
    for end in &mut ends[..4] {
        *end = base + w.trailing_zeros() as usize;
        w &= w.wrapping_sub(1);
    }
    let mut more = 4;
    while w != 0 {
        ends[more] = base + w.trailing_zeros() as usize;
        w &= w.wrapping_sub(1);
        more += 1;
    }
    lfs
}

/// The ends of the chunks that the LFs of one word of LF bits `w` end,
/// `base` plus each LF's place, into the front of `ends`, in order, eight
/// at a time (`ends` has room for eight past the last); how many. One
/// compress brings the places of all of them to the front of a vector,
/// so nothing branches on how many lines the word holds, unless it holds
/// more than eight.
///
/// # Safety
/// The processor has what [`wide512`] checks.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
#[inline]
unsafe fn ends_avx512(w: u64, base: usize, ends: &mut [usize]) -> usize {
    use std::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_castsi512_si128, _mm512_cvtepu8_epi64,
        _mm512_loadu_si512, _mm512_maskz_compress_epi8, _mm512_permutexvar_epi64,
        _mm512_set1_epi64, _mm512_storeu_si512,
    };
    const _: () = assert!(size_of::<usize>() == 8);
    let lfs = w.count_ones() as usize;
    // SAFETY: PLACES is 64 bytes; loadu has no alignment requirement.
    let places = unsafe { _mm512_loadu_si512(PLACES.as_ptr().cast::<__m512i>()) };
    let packed = _mm512_maskz_compress_epi8(w, places);
    let base = _mm512_set1_epi64(base as i64);
    // The first eight whatever their number (none, most often one to
    // eight), so that nothing branches on whether the word holds a line
    // end; more in a word of short lines.
    let first = _mm512_add_epi64(_mm512_cvtepu8_epi64(_mm512_castsi512_si128(packed)), base);
    assert!(ends.len() >= 8);
    // SAFETY: eight usize, inside `ends` (asserted above); storeu has no
    // alignment requirement.
    unsafe { _mm512_storeu_si512(ends.as_mut_ptr().cast::<__m512i>(), first) };
    let mut at = 8;
    while at < lfs {
        // The places at..at + 8, a byte each, are qword at / 8 of `packed`.
        let eight = _mm512_permutexvar_epi64(_mm512_set1_epi64((at / 8) as i64), packed);
        let out = _mm512_add_epi64(_mm512_cvtepu8_epi64(_mm512_castsi512_si128(eight)), base);
        assert!(at + 8 <= ends.len());
        // SAFETY: eight usize from `at`, inside `ends` (asserted above);
        // storeu has no alignment requirement.
        unsafe { _mm512_storeu_si512(ends[at..].as_mut_ptr().cast::<__m512i>(), out) };
        at += 8;
    }
    lfs
}

/// The bytes 0 to 63: a byte's place in a word of LF bits.
#[cfg(target_arch = "x86_64")]
static PLACES: [u8; 64] = {
    let mut p = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        p[i] = i as u8;
        i += 1;
    }
    p
};

/// Whether the stored-form signers may also use AVX-512 (the chunk
/// hashes eight at a time, chunk ends off LF bits by compress) on top of
/// what [`wide`] checks ([`crate::similarity::simd::avx512`]).
#[cfg(target_arch = "x86_64")]
pub(super) fn wide512() -> bool {
    #[cfg(test)]
    if NO_512.get() {
        return false;
    }
    wide() && crate::similarity::simd::avx512()
}

#[cfg(test)]
thread_local! {
    /// Set by tests: this thread's stored-form signers take the AVX2 path
    /// (or the portable one, with [`PORTABLE`]) whatever the processor.
    pub(super) static NO_512: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the stored-form signers may use AVX2 (the chunk hashes, the
/// symbols four chunks at a time), BMI1, BMI2 and POPCNT (reading chunk
/// ends off LF bits: `tzcnt`, `blsr`, `popcnt`).
#[cfg(target_arch = "x86_64")]
pub(super) fn wide() -> bool {
    #[cfg(test)]
    if PORTABLE.get() {
        return false;
    }
    std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
        && std::is_x86_feature_detected!("bmi2")
        && std::is_x86_feature_detected!("popcnt")
}

#[cfg(test)]
thread_local! {
    /// Set by tests: this thread's stored-form signers take the portable
    /// path whatever the processor.
    pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The fine symbols of [`Shape::STORED`] of `data` with LF bits `bits`
/// into the front of `out`, each a value with the coarse flag and
/// [`SELECTED_LOW`] set from its selection bits' lowest; and the selection
/// bits of the coarse ones, in order, into the front of `coarse`. The
/// number of LF bytes, of symbols and of coarse ones; the buffers are
/// longer (scratch past those counts, kept from call to call so that
/// they are not cleared for every file). What [`sign_chunks`] emits,
/// without a branch on the hash: every chunk writes its four possible
/// symbols and keeps as many as it emits.
pub(super) fn sign_fine_stored(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
) -> (u64, usize, usize) {
    BATCHES.with_borrow_mut(|batch| {
        #[cfg(target_arch = "x86_64")]
        if wide512() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_fine_stored_wide512(data, bits, out, coarse, batch) };
        }
        #[cfg(target_arch = "x86_64")]
        if wide() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_fine_stored_wide(data, bits, out, coarse, batch) };
        }
        // SAFETY: the portable form has no requirement.
        unsafe { sign_fine_stored_in::<false, false>(data, bits, out, coarse, batch) }
    })
}

/// [`sign_fine_stored`] compiled for AVX2, BMI1, BMI2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
fn sign_fine_stored_wide(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
    batch: &mut Batch,
) -> (u64, usize, usize) {
    // SAFETY: this function runs only where the processor has AVX2.
    unsafe { sign_fine_stored_in::<true, false>(data, bits, out, coarse, batch) }
}

/// [`sign_fine_stored`] compiled for AVX-512 as well ([`wide512`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,lzcnt,avx512f,avx512bw,avx512dq,avx512vbmi2")]
fn sign_fine_stored_wide512(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
    batch: &mut Batch,
) -> (u64, usize, usize) {
    // SAFETY: this function runs only where the processor has AVX-512.
    unsafe { sign_fine_stored_in::<true, true>(data, bits, out, coarse, batch) }
}

/// [`sign_fine_stored`], the hashes on AVX2 with `WIDE`.
///
/// # Safety
/// `WIDE` only where the processor has AVX2.
#[inline(always)]
unsafe fn sign_fine_stored_in<const WIDE: bool, const W512: bool>(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
    batch: &mut Batch,
) -> (u64, usize, usize) {
    const C: usize = super::C;
    const CC: usize = super::COARSE_C;
    const _: () = assert!(CHUNK / C == 4 && C == 16 && CHUNK == CC);
    const COARSE: u32 = super::COARSE as u32;
    let n = data.len();
    let (mut kept, mut kept_coarse) = (0, 0);
    let mut lf = 0;
    let mut piece = 0;
    while piece < n {
        // SAFETY: passed on from this function's contract.
        let (count, ends) = unsafe { batch.fill::<WIDE, W512>(data, bits, &mut piece) };
        lf += ends;
        for i in 0..count {
            let (h, len) = (batch.hashes[i], batch.len(i) as u64);
            // The first fine offset, (C - phase mod C) mod C; the coarse
            // one, (CC - phase mod CC) mod CC, and its rank j among the
            // fine ones.
            let first = h.wrapping_neg() & (C as u64 - 1);
            let o_coarse = h.wrapping_neg() & (CC as u64 - 1);
            let j = o_coarse >> 4;
            // The four values (six bits each from bit 10: `value`), each
            // with its lowest selection bit (bits 34 to 37: `selection`)
            // and the coarse flag on rank j.
            let v = (h >> 10) as u32;
            let low = (h >> 34) as u32;
            let values = (v & 0x3f) | (v & 0xfc0) << 2 | (v & 0x3_f000) << 4 | (v & 0xfc_0000) << 6;
            let lows = (low & 1) << 7 | (low & 2) << 14 | (low & 4) << 21 | (low & 8) << 28;
            batch.fours[i] = values | lows | COARSE << (8 * j);
            batch.counts[i] = (len.saturating_sub(first).div_ceil(C as u64)) as u8;
            batch.selections[i] = ((h >> (34 + j)) & 63) as u8;
            batch.coarse_counts[i] = u8::from(o_coarse < len);
        }
        // Room for every symbol the batch can emit, written in place.
        if out.len() < kept + 4 * BATCH {
            out.resize(kept + 4 * BATCH + out.len(), 0);
        }
        if coarse.len() < kept_coarse + BATCH {
            coarse.resize(kept_coarse + BATCH + coarse.len(), 0);
        }
        for i in 0..count {
            out[kept..kept + 4].copy_from_slice(&batch.fours[i].to_le_bytes());
            kept += usize::from(batch.counts[i]);
            coarse[kept_coarse] = batch.selections[i];
            kept_coarse += usize::from(batch.coarse_counts[i]);
        }
    }
    (lf, kept, kept_coarse)
}

/// A stored fine symbol's flag: the lowest of its selection bits.
pub(super) const SELECTED_LOW: u8 = 0x80;

/// The keys ([`super::sketch::key`]) of the coarse symbols of
/// [`Shape::STORED`] that a sketch with `mask` keeps
/// ([`super::sketch::selected`]) of `data` with LF bits `bits`, into
/// the front of `out`; the number of LF bytes and of keys (`out` is
/// longer: scratch past them, as in [`sign_fine_stored`]). A chunk emits at most
/// one coarse symbol; whether it does, and whether its key is kept, are
/// taken without a branch on the hash.
pub(super) fn sign_keys_stored(
    data: &[u8],
    bits: &[u64],
    mask: u16,
    out: &mut Vec<u16>,
) -> (u64, usize) {
    BATCHES.with_borrow_mut(|batch| {
        #[cfg(target_arch = "x86_64")]
        if wide512() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_keys_stored_wide512(data, bits, mask, out, batch) };
        }
        #[cfg(target_arch = "x86_64")]
        if wide() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_keys_stored_wide(data, bits, mask, out, batch) };
        }
        // SAFETY: the portable form has no requirement.
        unsafe { sign_keys_stored_in::<false, false>(data, bits, mask, out, batch) }
    })
}

/// [`sign_keys_stored`] compiled for AVX2, BMI1, BMI2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt")]
fn sign_keys_stored_wide(
    data: &[u8],
    bits: &[u64],
    mask: u16,
    out: &mut Vec<u16>,
    batch: &mut Batch,
) -> (u64, usize) {
    // SAFETY: this function runs only where the processor has AVX2.
    unsafe { sign_keys_stored_in::<true, false>(data, bits, mask, out, batch) }
}

/// [`sign_keys_stored`] compiled for AVX-512 as well ([`wide512`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1,bmi2,popcnt,lzcnt,avx512f,avx512bw,avx512dq,avx512vbmi2")]
fn sign_keys_stored_wide512(
    data: &[u8],
    bits: &[u64],
    mask: u16,
    out: &mut Vec<u16>,
    batch: &mut Batch,
) -> (u64, usize) {
    // SAFETY: this function runs only where the processor has AVX-512.
    unsafe { sign_keys_stored_in::<true, true>(data, bits, mask, out, batch) }
}

/// [`sign_keys_stored`], the hashes on AVX2 with `WIDE`.
///
/// # Safety
/// `WIDE` only where the processor has AVX2.
#[inline(always)]
unsafe fn sign_keys_stored_in<const WIDE: bool, const W512: bool>(
    data: &[u8],
    bits: &[u64],
    mask: u16,
    out: &mut Vec<u16>,
    batch: &mut Batch,
) -> (u64, usize) {
    const CC: u64 = super::COARSE_C as u64;
    const _: () = assert!(CHUNK == super::COARSE_C && super::C == 16);
    let n = data.len();
    let mut kept = 0;
    let mut lf = 0;
    let mut piece = 0;
    while piece < n {
        // SAFETY: passed on from this function's contract.
        let (count, ends) = unsafe { batch.fill::<WIDE, W512>(data, bits, &mut piece) };
        lf += ends;
        if out.len() < kept + BATCH + 8 {
            out.resize(kept + BATCH + 8 + out.len(), 0);
        }
        #[cfg(target_arch = "x86_64")]
        let done = if W512 {
            // SAFETY: passed on from this function's contract; `out` has
            // room for eight keys past every chunk of the batch.
            let (done, now_kept) = unsafe { keys_avx512(batch, count, mask, out, kept) };
            kept = now_kept;
            done
        } else if WIDE {
            // SAFETY: passed on from this function's contract; `out` has
            // room for four keys past every chunk of the batch.
            let (done, now_kept) = unsafe { keys_avx2(batch, count, mask, out, kept) };
            kept = now_kept;
            done
        } else {
            0
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = 0;
        for i in done..count {
            let h = batch.hashes[i];
            // The coarse offset, (CC - phase mod CC) mod CC, and its rank
            // j among the fine ones (those from (C - phase mod C) mod C,
            // every C bytes); the value and selection bits of rank j
            // (`value`, `selection`, whose ranks past 3 never occur here).
            let o = h.wrapping_neg() & (CC - 1);
            let j = o >> 4;
            let value = ((h >> (10 + 6 * j)) & 63) as u8;
            let selection = ((h >> (34 + j)) & 63) as u8;
            let key = super::sketch::key(value, selection);
            out[kept] = key;
            kept += usize::from((o < batch.len(i) as u64) & super::sketch::selected(key, mask));
        }
    }
    (lf, kept)
}

/// The keys [`sign_keys_stored_in`] keeps of the first chunks of
/// `batch` (a multiple of four, at most `count`), four chunks to a
/// vector, written into `out` from `kept` on; how many chunks were done,
/// and `kept` after them. The same arithmetic as the portable loop, each
/// step on four lanes; the kept keys of four chunks go to the front of a
/// vector by one permutation ([`COMPRESS`]) and are written together, four
/// at a time whatever their number, so that no branch depends on a hash.
///
/// # Safety
/// The processor has AVX2, and `out` has room for four keys past `kept`
/// plus every key kept.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn keys_avx2(
    batch: &Batch,
    count: usize,
    mask: u16,
    out: &mut [u16],
    mut kept: usize,
) -> (usize, usize) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_packus_epi32, _mm_storel_epi64, _mm256_add_epi64, _mm256_and_si256,
        _mm256_castsi256_pd, _mm256_castsi256_si128, _mm256_cmpeq_epi64, _mm256_cmpgt_epi64,
        _mm256_loadu_si256, _mm256_movemask_pd, _mm256_or_si256, _mm256_permutevar8x32_epi32,
        _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_slli_epi64, _mm256_srli_epi64,
        _mm256_srlv_epi64, _mm256_sub_epi64,
    };
    const _: () = assert!(size_of::<usize>() == 8);
    let six = _mm256_set1_epi64x(63);
    let zero = _mm256_setzero_si256();
    let ten = _mm256_set1_epi64x(10);
    let above = _mm256_set1_epi64x(34);
    let mask = _mm256_set1_epi64x(i64::from(mask));
    let mut i = 0;
    while i + 4 <= count {
        // SAFETY: chunks i to i + 3 are in the batch (`count` is at most
        // BATCH), and their ends i to i + 4 in `ends`; loadu has no
        // alignment requirement.
        let (h, lengths) = unsafe {
            let at = batch.ends[i..i + 5].as_ptr();
            (
                _mm256_loadu_si256(batch.hashes[i..i + 4].as_ptr().cast::<__m256i>()),
                _mm256_sub_epi64(
                    _mm256_loadu_si256(at.add(1).cast::<__m256i>()),
                    _mm256_loadu_si256(at.cast::<__m256i>()),
                ),
            )
        };
        let o = _mm256_and_si256(_mm256_sub_epi64(zero, h), six);
        let j = _mm256_srli_epi64::<4>(o);
        let six_j = _mm256_add_epi64(_mm256_slli_epi64::<2>(j), _mm256_slli_epi64::<1>(j));
        let value = _mm256_and_si256(_mm256_srlv_epi64(h, _mm256_add_epi64(ten, six_j)), six);
        let selection = _mm256_and_si256(_mm256_srlv_epi64(h, _mm256_add_epi64(above, j)), six);
        let key = _mm256_or_si256(_mm256_slli_epi64::<6>(selection), value);
        // `sketch::selected`: the selection bits, then the value's, under
        // the mask.
        let order = _mm256_or_si256(selection, _mm256_slli_epi64::<6>(value));
        let selected = _mm256_cmpeq_epi64(_mm256_and_si256(order, mask), zero);
        let emits = _mm256_cmpgt_epi64(lengths, o);
        let keep = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_and_si256(selected, emits)));
        // SAFETY: a row of COMPRESS is eight i32, 32 bytes; loadu has no
        // alignment requirement.
        let perm =
            unsafe { _mm256_loadu_si256(COMPRESS[keep as usize].as_ptr().cast::<__m256i>()) };
        let front = _mm256_permutevar8x32_epi32(key, perm);
        let four: __m128i =
            _mm_packus_epi32(_mm256_castsi256_si128(front), _mm256_castsi256_si128(front));
        // SAFETY: `out` has room for four keys from `kept` (this
        // function's contract); storel writes eight bytes unaligned.
        unsafe { _mm_storel_epi64(out[kept..kept + 4].as_mut_ptr().cast::<__m128i>(), four) };
        kept += keep.count_ones() as usize;
        i += 4;
    }
    (i, kept)
}

/// [`keys_avx2`] eight chunks to a vector with AVX-512: the kept keys
/// brought to the front by one compress, narrowed to 16 bits and written
/// eight at a time whatever their number.
///
/// # Safety
/// The processor has what [`wide512`] checks, and `out` has room for
/// eight keys past `kept` plus every key kept.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,popcnt")]
unsafe fn keys_avx512(
    batch: &Batch,
    count: usize,
    mask: u16,
    out: &mut [u16],
    mut kept: usize,
) -> (usize, usize) {
    use std::arch::x86_64::{
        __m128i, __m512i, _mm_storeu_si128, _mm512_add_epi64, _mm512_and_si512,
        _mm512_cmpgt_epu64_mask, _mm512_cvtepi64_epi16, _mm512_loadu_si512,
        _mm512_maskz_compress_epi64, _mm512_or_si512, _mm512_set1_epi64, _mm512_slli_epi64,
        _mm512_srli_epi64, _mm512_srlv_epi64, _mm512_sub_epi64, _mm512_testn_epi64_mask,
    };
    const _: () = assert!(size_of::<usize>() == 8);
    let six = _mm512_set1_epi64(63);
    let ten = _mm512_set1_epi64(10);
    let above = _mm512_set1_epi64(34);
    let mask = _mm512_set1_epi64(i64::from(mask));
    let mut i = 0;
    while i + 8 <= count {
        // SAFETY: chunks i to i + 7 are in the batch (`count` is at most
        // BATCH), and their ends i to i + 8 in `ends`; loadu has no
        // alignment requirement.
        let (h, lengths) = unsafe {
            let at = batch.ends[i..i + 9].as_ptr();
            (
                _mm512_loadu_si512(batch.hashes[i..i + 8].as_ptr().cast::<__m512i>()),
                _mm512_sub_epi64(
                    _mm512_loadu_si512(at.add(1).cast::<__m512i>()),
                    _mm512_loadu_si512(at.cast::<__m512i>()),
                ),
            )
        };
        let o = _mm512_and_si512(_mm512_sub_epi64(_mm512_set1_epi64(0), h), six);
        let j = _mm512_srli_epi64::<4>(o);
        let six_j = _mm512_add_epi64(_mm512_slli_epi64::<2>(j), _mm512_slli_epi64::<1>(j));
        let value = _mm512_and_si512(_mm512_srlv_epi64(h, _mm512_add_epi64(ten, six_j)), six);
        let selection = _mm512_and_si512(_mm512_srlv_epi64(h, _mm512_add_epi64(above, j)), six);
        let key = _mm512_or_si512(_mm512_slli_epi64::<6>(selection), value);
        // `sketch::selected`: the selection bits, then the value's, under
        // the mask.
        let order = _mm512_or_si512(selection, _mm512_slli_epi64::<6>(value));
        let keep = _mm512_testn_epi64_mask(order, mask) & _mm512_cmpgt_epu64_mask(lengths, o);
        let eight: __m128i = _mm512_cvtepi64_epi16(_mm512_maskz_compress_epi64(keep, key));
        assert!(kept + 8 <= out.len());
        // SAFETY: eight u16 from `kept`, inside `out` (asserted above);
        // storeu has no alignment requirement.
        unsafe { _mm_storeu_si128(out[kept..].as_mut_ptr().cast::<__m128i>(), eight) };
        kept += keep.count_ones() as usize;
        i += 8;
    }
    (i, kept)
}

/// For each set of lanes kept among four 64-bit lanes (bit `l` for lane
/// `l`), the 32-bit permutation that brings their low halves, in order,
/// to the front of a vector.
#[cfg(target_arch = "x86_64")]
static COMPRESS: [[i32; 8]; 16] = {
    let mut table = [[0i32; 8]; 16];
    let mut m = 0;
    while m < 16 {
        let (mut lane, mut at) = (0, 0);
        while lane < 4 {
            if m & (1 << lane) != 0 {
                table[m][at] = 2 * lane;
                at += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    table
};
