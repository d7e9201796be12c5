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
//! offsets and the symbols (`mix(hash ^ o)`, top 6 bits) are functions of
//! the chunk's bytes. Offsets with `(o + φ) mod c' = 0` for a larger
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

/// The hash of one chunk (at most [`CHUNK`] bytes): eight bytes at a
/// time, each word folded in with a multiply, the length in the seed.
#[inline]
#[cfg(test)]
pub(super) fn chunk_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0x636f_6174_6573_7631 ^ bytes.len() as u64; // "coatesv1"
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = fold(h ^ u64::from_le_bytes(b), K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = fold(h ^ u64::from_le_bytes(b), K ^ 0xff);
    }
    mix(h)
}

/// The symbol of rank `k` (from 0) among a chunk's emissions at the fine
/// level, from the chunk's second hash `h2`.
#[inline(always)]
pub(super) fn value(h2: u64, k: usize) -> u8 {
    if k < 10 {
        ((h2 >> (6 * k)) & 63) as u8
    } else {
        (mix(h2 ^ k as u64) >> 58) as u8
    }
}

/// The second hash of a chunk, from its first.
#[inline(always)]
pub(super) fn second(h: u64) -> u64 {
    mix(h ^ 0x5349_474e_4154_5552) // "SIGNATUR"
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
    /// A symbol (value with the coarse and line-start flags).
    fn symbol(&mut self, symbol: u8);
}

impl Sink for Out {
    const MARKS: bool = true;
    fn chunk(&mut self, chunk: Chunk) {
        self.chunks.push(chunk);
    }
    fn symbol(&mut self, symbol: u8) {
        self.symbols.push(symbol);
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
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LO7) + LO7) | x) & !LO7
}

/// The LF bits of 64 bytes: eight words at a time, each byte's bit found
/// without a branch (a byte is zero after the XOR exactly when it was
/// LF; the multiply gathers the eight high bits into the top byte). CR
/// bytes are or-ed into `cr`.
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

/// [`chunk_hash`] of `data[start..end]`, the same number, reading whole
/// words where `data` has them around the chunk (a short tail is the
/// last eight bytes shifted, not a copy).
#[inline(always)]
fn chunk_hash_in(data: &[u8], start: usize, end: usize) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let len = end - start;
    let mut h = 0x636f_6174_6573_7631 ^ len as u64; // "coatesv1"
    let mut at = start;
    while at + 8 <= end {
        h = fold(h ^ load(data, at), K);
        at += 8;
    }
    let rest = end - at;
    if rest > 0 {
        let w = if len >= 8 {
            load(data, end - 8) >> (8 * (8 - rest))
        } else if start + 8 <= data.len() {
            load(data, start) & ((1u64 << (8 * rest)) - 1)
        } else {
            let mut b = [0u8; 8];
            b[..rest].copy_from_slice(&data[at..end]);
            u64::from_le_bytes(b)
        };
        h = fold(h ^ w, K ^ 0xff);
    }
    mix(h)
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

/// The fine symbols of [`Shape::STORED`] (values with the coarse flag,
/// no line-start flag) of `data` with LF bits `bits`, into `out`
/// (cleared first); the number of LF bytes. What [`sign_chunks`] emits,
/// without a branch on the hash: every chunk writes its four possible
/// symbols and keeps as many as it emits.
pub(super) fn sign_fine_stored(data: &[u8], bits: &[u64], out: &mut Vec<u8>) -> u64 {
    const C: usize = super::C;
    const COARSE_MASK: usize = super::COARSE_C - 1;
    const _: () = assert!(CHUNK / C == 4 && C == 16);
    let n = data.len();
    out.clear();
    out.resize(n / 16 + 64, 0);
    let mut kept = 0;
    let mut line = 0u64;
    let mut piece = 0;
    while piece < n {
        let (stop, ends_line) = chunk_end(bits, piece, n);
        let len = stop - piece;
        let h = chunk_hash_in(data, piece, stop);
        let phase = (h & 1023) as usize;
        let first = (C - (phase & (C - 1))) & (C - 1);
        let h2 = second(h);
        if kept + 4 > out.len() {
            out.resize(out.len() * 2, 0);
        }
        for (j, slot) in out[kept..kept + 4].iter_mut().enumerate() {
            let o = first + C * j;
            let coarse = if (o + phase) & COARSE_MASK == 0 {
                super::COARSE
            } else {
                0
            };
            *slot = value(h2, j) | coarse;
        }
        kept += len.saturating_sub(first).div_ceil(C);
        line += u64::from(ends_line);
        piece = stop;
    }
    out.truncate(kept);
    line
}

/// The keys of the coarse symbols of [`Shape::STORED`] that are a
/// multiple of `mask + 1` (a sketch's, [`super::sketch::keys`]) of `data`
/// with LF bits `bits`, into `out` (cleared first); the number of LF
/// bytes. A chunk emits at most one coarse symbol; whether it does, and
/// whether its key is kept, are taken without a branch on the hash.
pub(super) fn sign_keys_stored(data: &[u8], bits: &[u64], mask: u16, out: &mut Vec<u16>) -> u64 {
    const C: usize = super::C;
    const CC: usize = super::COARSE_C;
    const _: () = assert!(CHUNK == CC);
    const NONE: u16 = 0xffff;
    let n = data.len();
    out.clear();
    out.resize(n / 512 + 64, 0);
    let mut kept = 0;
    let mut prev = NONE;
    let mut line = 0u64;
    let mut piece = 0;
    while piece < n {
        let (stop, ends_line) = chunk_end(bits, piece, n);
        let len = stop - piece;
        let h = chunk_hash_in(data, piece, stop);
        let phase = (h & 1023) as usize;
        let o = (CC - (phase & (CC - 1))) & (CC - 1);
        let first = (C - (phase & (C - 1))) & (C - 1);
        // The coarse offset is a fine one: its rank among them.
        let v = u16::from(value(second(h), (o - first) / C));
        let emits = o < len;
        let key = v << 6 | (prev & 63);
        let keep = emits && prev != NONE && key & mask == 0;
        if kept + 1 > out.len() {
            out.resize(out.len() * 2, 0);
        }
        out[kept] = key;
        kept += usize::from(keep);
        prev = if emits { v } else { prev };
        line += u64::from(ends_line);
        piece = stop;
    }
    out.truncate(kept);
    if prev != NONE {
        let key = 64 << 6 | prev;
        if key & mask == 0 {
            out.push(key);
        }
    }
    line
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
            let h2 = second(h);
            let first_fine = (shape.c - (phase & fine)) & fine;
            let flags = if line_start { super::LINE_START } else { 0 };
            while o < len {
                // c is a power of two: a shift, not a division.
                let k = (o - first_fine) >> c_shift;
                let mut symbol = value(h2, k) | flags;
                if (o + phase) & coarse == 0 {
                    symbol |= super::COARSE;
                }
                out.symbol(symbol);
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
