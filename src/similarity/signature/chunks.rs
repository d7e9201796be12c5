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
use super::batch::{wide, wide512};
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
/// into the front of `bits`, with one more zero word at the end so that a
/// window of 64 bits from any offset of `data` reads two words; how many
/// words that is, and whether `data` holds a CR, from the same pass.
///
/// `bits` only grows, and what it held is overwritten, not cleared first:
/// zeroing it wrote an eighth of every blob's size again, about 8% of the
/// signer's time.
fn lf_bits(data: &[u8], bits: &mut Vec<u64>) -> (usize, bool) {
    let whole = data.len() / 64;
    let len = data.len().div_ceil(64) + 1;
    if bits.len() < len {
        bits.resize(len, 0);
    }
    let bits = &mut bits[..len];
    #[cfg(target_arch = "x86_64")]
    let mut cr = if wide512() {
        // SAFETY: the processor has AVX-512 BW, checked just above.
        unsafe { lf_words_avx512(data, &mut bits[..whole]) }
    } else if wide() {
        // SAFETY: the processor has AVX2, checked just above.
        unsafe { lf_words_avx2(data, &mut bits[..whole]) }
    } else {
        lf_words(data, &mut bits[..whole])
    };
    #[cfg(not(target_arch = "x86_64"))]
    let mut cr = lf_words(data, &mut bits[..whole]);
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
    .0
}

/// Call `f` with what is signed of `data` (without the CRs before LF of
/// CRLF text), its LF bits, and where the CRs were; also whether `data`
/// holds a CR at all, which the LF pass tells for free.
pub(super) fn with_body<R>(data: &[u8], f: impl FnOnce(&[u8], &[u64], &[usize]) -> R) -> (R, bool) {
    LF.with_borrow_mut(|bits| {
        // Most files have no CR at all, which the LF pass tells.
        let (len, cr) = lf_bits(data, bits);
        if cr {
            let (body, crs) = super::without_crs(data);
            if let std::borrow::Cow::Owned(body) = body {
                let (len, _) = lf_bits(&body, bits);
                return (f(&body, &bits[..len], &crs), cr);
            }
        }
        (f(data, &bits[..len], &[]), cr)
    })
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
