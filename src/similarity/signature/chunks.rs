//! Signing: git's chunks of a file, each hashed, each emitting one symbol
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

use super::Shape;

/// git's longest chunk (`diffcore-delta.c`): longer lines are cut into
/// pieces of this many bytes.
pub const CHUNK: usize = 64;

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

/// splitmix64's finaliser.
#[inline(always)]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A 64x64 -> 128-bit multiply folded to 64 bits.
#[inline(always)]
fn fold(x: u64, k: u64) -> u64 {
    let p = u128::from(x).wrapping_mul(u128::from(k));
    (p as u64) ^ ((p >> 64) as u64)
}

/// The multiplier of every word's fold.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// One key per word of a chunk (a chunk has at most eight), so that the
/// same word at another place in the chunk hashes differently.
const KEYS: [u64; CHUNK / 8] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
    0x4528_21e6_38d0_1377,
    0xbe54_66cf_34e9_0c6c,
    0xc0ac_29b7_c97c_50dd,
    0x3f84_d5b5_b547_0917,
];

/// The seed, with the chunk's length folded into the final mix.
const SEED: u64 = 0x636f_6174_6573_7632; // "coatesv2"

/// The hash of one chunk (at most [`CHUNK`] bytes): the chunk
/// zero-padded to 64 bytes, each of its eight words xored with its
/// place's key and folded with one multiply, the folds summed, the sum
/// mixed with the length. The folds are independent of one another and
/// their number does not depend on the chunk, so a processor does them
/// side by side, without a branch on the chunk's length.
#[inline]
#[cfg(test)]
pub(super) fn chunk_hash(bytes: &[u8]) -> u64 {
    let mut padded = [0u8; CHUNK];
    padded[..bytes.len()].copy_from_slice(bytes);
    let mut acc = 0u64;
    for (i, w) in padded.chunks_exact(8).enumerate() {
        acc = acc.wrapping_add(fold(load(w, 0) ^ KEYS[i], K));
    }
    mix(acc ^ SEED ^ bytes.len() as u64)
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
    bits.reserve(data.len() / 64 + 2);
    let mut cr = 0u64;
    let mut blocks = data.chunks_exact(64);
    for block in &mut blocks {
        bits.push(lf_mask(block, &mut cr));
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut block = [0u8; 64];
        block[..rest.len()].copy_from_slice(rest);
        bits.push(lf_mask(&block, &mut cr));
    }
    bits.push(0);
    cr != 0
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
#[inline(always)]
fn load(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(b)
}

/// For `r` bytes of a word (0 to 8), the mask that keeps them.
const KEEP: [u64; 9] = {
    let mut m = [0u64; 9];
    let mut r = 1;
    while r < 8 {
        m[r] = (1u64 << (8 * r)) - 1;
        r += 1;
    }
    m[8] = u64::MAX;
    m
};

/// [`chunk_hash`] of `data[start..end]`, the same number: the 64 bytes
/// from `start` read as eight words, those past `end` masked off; near
/// the end of `data`, from a zero-padded copy.
#[inline(always)]
fn chunk_hash_in(data: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    let words = if start + CHUNK <= data.len() {
        &data[start..start + CHUNK]
    } else {
        return chunk_hash_tail(&data[start..end]);
    };
    let mut acc = 0u64;
    for (i, key) in KEYS.iter().enumerate() {
        let r = len.saturating_sub(8 * i).min(8);
        acc = acc.wrapping_add(fold((load(words, 8 * i) & KEEP[r]) ^ key, K));
    }
    mix(acc ^ SEED ^ len as u64)
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

/// [`chunk_hash_in`] with each word's mask one load from [`KEEP_BYTES`]
/// instead of worked out: fewer instructions, which pays in the batches
/// of [`hash_batch`] (not in the chunk-by-chunk walk of [`sign_chunks`],
/// where the loads wait on the walk).
#[inline(always)]
fn chunk_hash_sliding(data: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    let (Some(words), Some(keep)) = (
        data.get(start..).and_then(<[u8]>::first_chunk::<CHUNK>),
        KEEP_BYTES
            .get(CHUNK.wrapping_sub(len)..)
            .and_then(<[u8]>::first_chunk::<CHUNK>),
    ) else {
        return chunk_hash_tail(&data[start..end]);
    };
    let mut acc = 0u64;
    for (i, key) in KEYS.iter().enumerate() {
        let w = load(words, 8 * i) & load(keep, 8 * i);
        acc = acc.wrapping_add(fold(w ^ key, K));
    }
    mix(acc ^ SEED ^ len as u64)
}

/// [`chunk_hash_in`] of a chunk within 64 bytes of the end of the data.
#[cold]
fn chunk_hash_tail(chunk: &[u8]) -> u64 {
    let mut padded = [0u8; CHUNK];
    padded[..chunk.len()].copy_from_slice(chunk);
    let mut acc = 0u64;
    for (i, key) in KEYS.iter().enumerate() {
        acc = acc.wrapping_add(fold(load(&padded, 8 * i) ^ key, K));
    }
    mix(acc ^ SEED ^ chunk.len() as u64)
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

/// Where the chunk from `piece` ends (exclusive) in a file of `n` bytes
/// with LF bits `bits`, and whether it ends with LF.
#[inline(always)]
fn chunk_end(bits: &[u64], piece: usize, n: usize) -> (usize, bool) {
    let (k, s) = (piece / 64, piece % 64);
    let window = if s == 0 {
        bits[k]
    } else {
        (bits[k] >> s) | (bits[k + 1] << (64 - s))
    };
    // No LF bit lies past the file's end, so an LF found is inside it.
    if window != 0 {
        (piece + window.trailing_zeros() as usize + 1, true)
    } else {
        ((piece + CHUNK).min(n), false)
    }
}

/// Chunks hashed at a time by the stored-form signers, before their
/// symbols are worked out.
const BATCH: usize = 256;

/// Up to [`BATCH`] chunks from `*piece` on (moved past them): their
/// hashes and lengths into `hashes` and `lens`; how many, and how many
/// of them end with LF. Hashing apart from emitting keeps this loop's
/// work per chunk small, so that the processor overlaps the hashes of
/// several chunks with the walk from one chunk's end to the next, and
/// leaves the symbols to a loop without a dependency from chunk to chunk
/// (vectorised where the processor has AVX2).
#[inline(always)]
fn hash_batch(
    data: &[u8],
    bits: &[u64],
    piece: &mut usize,
    hashes: &mut [u64; BATCH],
    lens: &mut [u64; BATCH],
) -> (usize, u64) {
    let n = data.len();
    let (mut count, mut lf) = (0, 0);
    for (h, l) in hashes.iter_mut().zip(lens.iter_mut()) {
        if *piece >= n {
            break;
        }
        let (stop, ends_line) = chunk_end(bits, *piece, n);
        *h = chunk_hash_sliding(data, *piece, stop);
        *l = (stop - *piece) as u64;
        lf += u64::from(ends_line);
        count += 1;
        *piece = stop;
    }
    (count, lf)
}

/// Whether the stored-form signers may use AVX2 and BMI2 (the hashes'
/// multiplies as `mulx`, the symbols four chunks at a time).
#[cfg(target_arch = "x86_64")]
fn wide() -> bool {
    #[cfg(test)]
    if PORTABLE.get() {
        return false;
    }
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("bmi2")
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
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the processor has AVX2 and BMI2, checked just above.
        return unsafe { sign_fine_stored_wide(data, bits, out, coarse) };
    }
    sign_fine_stored_in(data, bits, out, coarse)
}

/// [`sign_fine_stored`] compiled for AVX2 and BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
fn sign_fine_stored_wide(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
) -> (u64, usize, usize) {
    sign_fine_stored_in(data, bits, out, coarse)
}

#[inline(always)]
fn sign_fine_stored_in(
    data: &[u8],
    bits: &[u64],
    out: &mut Vec<u8>,
    coarse: &mut Vec<u8>,
) -> (u64, usize, usize) {
    const C: usize = super::C;
    const CC: usize = super::COARSE_C;
    const _: () = assert!(CHUNK / C == 4 && C == 16 && CHUNK == CC);
    const COARSE: u32 = super::COARSE as u32;
    let n = data.len();
    let mut hashes = [0u64; BATCH];
    let mut lens = [0u64; BATCH];
    // Per chunk: its four possible symbols (byte j the symbol of rank
    // j), how many it emits, its coarse symbol's selection bits, and
    // whether it emits that one.
    let mut fours = [0u32; BATCH];
    let mut counts = [0u8; BATCH];
    let mut selections = [0u8; BATCH];
    let mut coarse_counts = [0u8; BATCH];
    let (mut kept, mut kept_coarse) = (0, 0);
    let mut lf = 0;
    let mut piece = 0;
    while piece < n {
        let (count, ends) = hash_batch(data, bits, &mut piece, &mut hashes, &mut lens);
        lf += ends;
        for i in 0..BATCH {
            let (h, len) = (hashes[i], lens[i]);
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
            fours[i] = values | lows | COARSE << (8 * j);
            counts[i] = (len.saturating_sub(first).div_ceil(C as u64)) as u8;
            selections[i] = ((h >> (34 + j)) & 63) as u8;
            coarse_counts[i] = u8::from(o_coarse < len);
        }
        // Room for every symbol the batch can emit, written in place.
        if out.len() < kept + 4 * BATCH {
            out.resize(kept + 4 * BATCH + out.len(), 0);
        }
        if coarse.len() < kept_coarse + BATCH {
            coarse.resize(kept_coarse + BATCH + coarse.len(), 0);
        }
        for i in 0..count {
            out[kept..kept + 4].copy_from_slice(&fours[i].to_le_bytes());
            kept += usize::from(counts[i]);
            coarse[kept_coarse] = selections[i];
            kept_coarse += usize::from(coarse_counts[i]);
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
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: the processor has AVX2 and BMI2, checked just above.
        return unsafe { sign_keys_stored_wide(data, bits, mask, out) };
    }
    sign_keys_stored_in(data, bits, mask, out)
}

/// [`sign_keys_stored`] compiled for AVX2 and BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
fn sign_keys_stored_wide(data: &[u8], bits: &[u64], mask: u16, out: &mut Vec<u16>) -> (u64, usize) {
    sign_keys_stored_in(data, bits, mask, out)
}

#[inline(always)]
fn sign_keys_stored_in(data: &[u8], bits: &[u64], mask: u16, out: &mut Vec<u16>) -> (u64, usize) {
    const CC: u64 = super::COARSE_C as u64;
    const _: () = assert!(CHUNK == super::COARSE_C && super::C == 16);
    let n = data.len();
    let mut hashes = [0u64; BATCH];
    let mut lens = [0u64; BATCH];
    let mut keys = [0u16; BATCH];
    let mut keep = [0u8; BATCH];
    let mut kept = 0;
    let mut lf = 0;
    let mut piece = 0;
    while piece < n {
        let (count, ends) = hash_batch(data, bits, &mut piece, &mut hashes, &mut lens);
        lf += ends;
        for i in 0..BATCH {
            let h = hashes[i];
            // The coarse offset, (CC - phase mod CC) mod CC, and its rank
            // j among the fine ones (those from (C - phase mod C) mod C,
            // every C bytes); the value and selection bits of rank j
            // (`value`, `selection`, whose ranks past 3 never occur here).
            let o = h.wrapping_neg() & (CC - 1);
            let j = o >> 4;
            let value = ((h >> (10 + 6 * j)) & 63) as u8;
            let selection = ((h >> (34 + j)) & 63) as u8;
            let key = super::sketch::key(value, selection);
            keys[i] = key;
            keep[i] = u8::from((o < lens[i]) & super::sketch::selected(key, mask));
        }
        if out.len() < kept + BATCH {
            out.resize(kept + BATCH + out.len(), 0);
        }
        for i in 0..count {
            out[kept] = keys[i];
            kept += usize::from(keep[i]);
        }
    }
    (lf, kept)
}

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
        let h = chunk_hash_in(data, piece, stop);
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
