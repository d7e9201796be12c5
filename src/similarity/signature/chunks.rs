//! Signing: git's chunks of a file, each hashed (`hash.rs`), each emitting one symbol
//! every `c` of its bytes from a phase its hash decides.
//!
//! The chunks are the ones git's rename score counts (`diffcore-delta.c`):
//! a line, cut every [`CHUNK`] bytes. A chunk of `L` bytes with phase
//! `φ` (the low 10 bits of its hash) emits at its offsets `o` where
//! `(o + φ) mod c = 0`: `⌊L/c⌋` symbols, and one more with probability
//! `(L mod c)/c`, so a file has about one symbol per `c` bytes and each
//! chunk is represented in proportion to its bytes, as in git's score.
//! Every emission of the same chunk content is the same: the phase, the
//! offsets and the symbols (the `k`-th emission takes the `k`-th six bits
//! of the hash above the phase's ten) are functions of the chunk's bytes. Offsets with `(o + φ) mod c' = 0` for a larger
//! `c'` (a multiple of `c`) are a subset of them: the coarse symbols.

#[cfg(target_arch = "x86_64")]
use super::hash::hash_chunks_avx2;
use super::hash::{chunk_hash_at, mix};
use super::{CHUNK, Shape};

/// A chunk that emitted at least one symbol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Chunk {
    /// The offset of its first byte in the file (CRs counted).
    pub start: u64,
    /// Its line (from 0).
    pub line: u64,
    /// Its length in the file, with [`super::ENDS_LINE`] set when it ends
    /// with LF.
    pub len: u8,
    /// Whether it starts its line.
    pub line_start: bool,
}

/// What [`sign`] fills: the symbols, each one's chunk, and the chunks.
#[derive(Debug, Default)]
pub(super) struct Out {
    /// Symbol values with the coarse and line-start flags.
    pub symbols: Vec<u8>,
    /// Per symbol: its [`selection`] bits.
    pub selection: Vec<u8>,
    /// Per symbol: its index in `chunks`.
    pub owner: Vec<u32>,
    /// The chunks that emitted.
    pub chunks: Vec<Chunk>,
}

/// The symbol of rank `k` (from 0) among a chunk's emissions at the fine
/// level, from the chunk's hash `h`: six bits of it above the ten of the
/// phase, as long as it has them.
#[inline(always)]
pub(super) fn value(h: u64, k: usize) -> u8 {
    if k < 9 {
        ((h >> (10 + 6 * k)) & 63) as u8
    } else {
        (mix(h ^ k as u64) >> 58) as u8
    }
}

/// The selection bits of the symbol of rank `k` of a chunk with hash
/// `h`: six bits above the values' (a stored signature's symbols have
/// ranks 0 to 3, values in bits 10 to 33), which decide in which
/// sketches the symbol is ([`super::sketch`]). Independent of the value,
/// so that the symbols a sketch keeps have every value.
#[inline(always)]
pub(super) fn selection(h: u64, k: usize) -> u8 {
    if k < 25 {
        ((h >> (34 + k)) & 63) as u8
    } else {
        (mix(h ^ !(k as u64)) >> 58) as u8
    }
}

/// Where a signer's symbols go: with their chunks' positions
/// ([`Out`], for regions) or the symbols alone (the stored form, made in
/// the fingerprinting read, where nothing per symbol may allocate).
pub(super) trait Sink {
    /// Whether [`Sink::chunk`] is wanted (positions are worked out only
    /// then).
    const MARKS: bool;
    /// A chunk that emits at least one symbol, before its symbols.
    fn chunk(&mut self, chunk: Chunk);
    /// A symbol (value with the coarse and line-start flags) and its
    /// [`selection`] bits.
    fn symbol(&mut self, symbol: u8, selection: u8);
}

impl Sink for Out {
    const MARKS: bool = true;
    fn chunk(&mut self, chunk: Chunk) {
        self.chunks.push(chunk);
    }
    fn symbol(&mut self, symbol: u8, selection: u8) {
        self.symbols.push(symbol);
        self.selection.push(selection);
        self.owner.push(self.chunks.len() as u32 - 1);
    }
}

/// A bit per byte of `data`, set where it is LF, 64 bytes to a word,
/// into `bits` (cleared first), with one more zero word at the end so
/// that a window of 64 bits from any offset of `data` reads two words;
/// whether `data` holds a CR, from the same pass.
fn lf_bits(data: &[u8], bits: &mut Vec<u64>) -> bool {
    bits.clear();
    bits.resize(data.len().div_ceil(64) + 1, 0);
    let whole = data.len() / 64;
    #[cfg(target_arch = "x86_64")]
    let mut cr = if wide() {
        // SAFETY: the processor has AVX2, checked just above.
        unsafe { lf_words_avx2(data, &mut bits[..whole]) }
    } else {
        lf_words(data, &mut bits[..whole])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let mut cr = lf_words(data, &mut bits[..whole]);
    let rest = &data[64 * whole..];
    if !rest.is_empty() {
        let mut block = [0u8; 64];
        block[..rest.len()].copy_from_slice(rest);
        let mut crs = 0;
        bits[whole] = lf_mask(&block, &mut crs);
        cr |= crs != 0;
    }
    cr
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

thread_local! {
    /// Each thread's LF bits, reused from blob to blob.
    static LF: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sign `data`, a file's content as stored, under `shape`, every symbol
/// or the coarse ones only; into `out`. Returns the number of LF bytes.
/// Text with CRLF line ends is signed without the CRs before LF, as git
/// scores it ([`super::without_crs`]; chunk positions stay offsets into
/// `data`).
///
/// git's chunks are cut at each LF and after 64 bytes without one; the
/// LF bits of the file ([`lf_bits`]) give each chunk's end with one
/// trailing-zero count.
pub(super) fn sign<S: Sink>(data: &[u8], shape: &Shape, coarse_only: bool, out: &mut S) -> u64 {
    with_body(data, |body, bits, crs| {
        sign_chunks(body, bits, crs, shape, coarse_only, out)
    })
}

/// Call `f` with what is signed of `data` (without the CRs before LF of
/// CRLF text), its LF bits, and where the CRs were.
pub(super) fn with_body<R>(data: &[u8], f: impl FnOnce(&[u8], &[u64], &[usize]) -> R) -> R {
    LF.with_borrow_mut(|bits| {
        // Most files have no CR at all, which the LF pass tells.
        if lf_bits(data, bits) {
            let (body, crs) = super::without_crs(data);
            if let std::borrow::Cow::Owned(body) = body {
                lf_bits(&body, bits);
                return f(&body, bits, &crs);
            }
        }
        f(data, bits, &[])
    })
}

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
    /// LF comes first. Most words of text need no cut: their first LF
    /// is at most 64 bytes after the chunk being cut starts, and the
    /// lines after it in the word are shorter than the word. Their chunk
    /// ends are read off the word's bits four at a time whatever their
    /// number (so that no branch depends on how many lines a word holds),
    /// with one branch per word, not per chunk; a word that needs a cut
    /// (a line longer than 64 bytes) is walked LF by LF. The hashes, one
    /// chunk independent of the next, then run back to back.
    ///
    /// # Safety
    /// `WIDE` only where the processor has AVX2 ([`chunk_hash_at`]).
    #[inline(always)]
    unsafe fn fill<const WIDE: bool>(
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
            let first = base + w.trailing_zeros() as usize;
            if w != 0 && first - p <= CHUNK {
                let lfs = w.count_ones() as usize;
                // Four ends written whatever `lfs` (those past it are
                // overwritten or ignored): most words of text hold fewer
                // lines; more in a word of short lines.
                for end in &mut ends[count + 1..count + 5] {
                    *end = base + w.trailing_zeros() as usize;
                    w &= w.wrapping_sub(1);
                }
                let mut more = count + 5;
                while w != 0 {
                    ends[more] = base + w.trailing_zeros() as usize;
                    w &= w.wrapping_sub(1);
                    more += 1;
                }
                count += lfs;
                lf += lfs as u64;
                p = ends[count];
            } else {
                // A cut 64 bytes after the chunk's start wherever the
                // bytes before the next LF, or before the end of what
                // this word tells, are more than 64.
                while w != 0 {
                    let end = base + w.trailing_zeros() as usize;
                    w &= w.wrapping_sub(1);
                    while end - p > CHUNK {
                        p += CHUNK;
                        count += 1;
                        ends[count] = p;
                    }
                    p = end;
                    count += 1;
                    ends[count] = p;
                    lf += 1;
                }
                let known = (64 * k + 64).min(n);
                while p + CHUNK <= known {
                    p += CHUNK;
                    count += 1;
                    ends[count] = p;
                }
            }
            k += 1;
            w = bits.get(k).copied().unwrap_or(0);
        }
        // The last chunk, shorter than 64 bytes, ends with the data.
        if k >= words && p < n {
            p = n;
            count += 1;
            ends[count] = p;
        }
        *piece = p;
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

/// Whether the stored-form signers may use AVX2 (the chunk hashes, the
/// symbols four chunks at a time), BMI1, BMI2 and POPCNT (reading chunk
/// ends off LF bits: `tzcnt`, `blsr`, `popcnt`).
#[cfg(target_arch = "x86_64")]
fn wide() -> bool {
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
        if wide() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_fine_stored_wide(data, bits, out, coarse, batch) };
        }
        // SAFETY: the portable form has no requirement.
        unsafe { sign_fine_stored_in::<false>(data, bits, out, coarse, batch) }
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
    unsafe { sign_fine_stored_in::<true>(data, bits, out, coarse, batch) }
}

/// [`sign_fine_stored`], the hashes on AVX2 with `WIDE`.
///
/// # Safety
/// `WIDE` only where the processor has AVX2.
#[inline(always)]
unsafe fn sign_fine_stored_in<const WIDE: bool>(
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
        let (count, ends) = unsafe { batch.fill::<WIDE>(data, bits, &mut piece) };
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
        if wide() {
            // SAFETY: the processor has what the function is compiled
            // for, checked just above.
            return unsafe { sign_keys_stored_wide(data, bits, mask, out, batch) };
        }
        // SAFETY: the portable form has no requirement.
        unsafe { sign_keys_stored_in::<false>(data, bits, mask, out, batch) }
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
    unsafe { sign_keys_stored_in::<true>(data, bits, mask, out, batch) }
}

/// [`sign_keys_stored`], the hashes on AVX2 with `WIDE`.
///
/// # Safety
/// `WIDE` only where the processor has AVX2.
#[inline(always)]
unsafe fn sign_keys_stored_in<const WIDE: bool>(
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
        let (count, ends) = unsafe { batch.fill::<WIDE>(data, bits, &mut piece) };
        lf += ends;
        if out.len() < kept + BATCH + 4 {
            out.resize(kept + BATCH + 4 + out.len(), 0);
        }
        #[cfg(target_arch = "x86_64")]
        let done = if WIDE {
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

fn sign_chunks<S: Sink>(
    data: &[u8],
    bits: &[u64],
    crs: &[usize],
    shape: &Shape,
    coarse_only: bool,
    out: &mut S,
) -> u64 {
    let fine = shape.c - 1;
    let coarse = shape.coarse_c - 1;
    let (step, mask) = if coarse_only {
        (shape.coarse_c, coarse)
    } else {
        (shape.c, fine)
    };
    debug_assert!(shape.c.is_power_of_two() && shape.coarse_c.is_power_of_two());
    let c_shift = shape.c.trailing_zeros();
    let n = data.len();
    let mut line = 0u64;
    let mut line_start = true;
    let mut piece = 0;
    let mut cr = 0;
    while piece < n {
        let (k, s) = (piece / 64, piece % 64);
        let window = if s == 0 {
            bits[k]
        } else {
            (bits[k] >> s) | (bits[k + 1] << (64 - s))
        };
        let ends_line = window != 0;
        let stop = if ends_line {
            piece + window.trailing_zeros() as usize + 1
        } else {
            piece + CHUNK
        }
        .min(n);
        let ends_line = ends_line && data[stop - 1] == b'\n';
        let len = stop - piece;
        // SAFETY: the portable form has no requirement.
        let h = unsafe { chunk_hash_at::<false>(data, piece, len) };
        let phase = (h & 1023) as usize;
        let mut o = (step - (phase & mask)) & mask;
        if o < len {
            if S::MARKS {
                // Where the chunk is in the file: every CR taken out
                // before it moves it, one inside it (before its LF)
                // makes it longer. The k-th CR sat just before stripped
                // offset `crs[k] - k`, its LF.
                while cr < crs.len() && crs[cr] - cr < piece {
                    cr += 1;
                }
                let inside = cr < crs.len() && crs[cr] - cr < stop;
                out.chunk(Chunk {
                    start: (piece + cr) as u64,
                    line,
                    len: (len + usize::from(inside)) as u8
                        | if ends_line { super::ENDS_LINE } else { 0 },
                    line_start,
                });
            }
            let first_fine = (shape.c - (phase & fine)) & fine;
            let flags = if line_start { super::LINE_START } else { 0 };
            while o < len {
                // c is a power of two: a shift, not a division.
                let k = (o - first_fine) >> c_shift;
                let mut symbol = value(h, k) | flags;
                if (o + phase) & coarse == 0 {
                    symbol |= super::COARSE;
                }
                out.symbol(symbol, selection(h, k));
                o += step;
            }
        }
        if ends_line {
            line += 1;
        }
        line_start = ends_line;
        piece = stop;
    }
    line
}
