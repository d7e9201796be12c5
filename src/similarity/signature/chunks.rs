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
/// that a window of 64 bits from any offset of `data` reads two words.
fn lf_bits(data: &[u8], bits: &mut Vec<u64>) {
    bits.clear();
    bits.reserve(data.len() / 64 + 2);
    let mut blocks = data.chunks_exact(64);
    for block in &mut blocks {
        bits.push(lf_mask(block));
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut block = [0u8; 64];
        block[..rest.len()].copy_from_slice(rest);
        bits.push(lf_mask(&block));
    }
    bits.push(0);
}

/// The LF bits of 64 bytes: eight words at a time, each byte's bit found
/// without a branch (a byte is zero after the XOR exactly when it was
/// LF; the multiply gathers the eight high bits into the top byte).
#[inline(always)]
fn lf_mask(block: &[u8]) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut mask = 0u64;
    for (i, w) in block.chunks_exact(8).enumerate() {
        let x = load(w, 0) ^ 0x0a0a_0a0a_0a0a_0a0a;
        let zero = !(((x & LO7) + LO7) | x) & !LO7;
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

/// Sign `data` (text with CRs before LF taken out; `crs` says where they
/// were in the file, ascending, as offsets into it) under `shape`, every
/// symbol or the coarse ones only; into `out`. Returns the number of LF
/// bytes.
///
/// git's chunks are cut at each LF and after 64 bytes without one; the
/// LF bits of the file ([`lf_bits`]) give each chunk's end with one
/// trailing-zero count.
pub(super) fn sign<S: Sink>(
    data: &[u8],
    crs: &[usize],
    shape: &Shape,
    coarse_only: bool,
    out: &mut S,
) -> u64 {
    LF.with_borrow_mut(|bits| {
        lf_bits(data, bits);
        sign_chunks(data, bits, crs, shape, coarse_only, out)
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
                let k = (o - first_fine) / shape.c;
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
