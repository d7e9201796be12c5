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

/// Sign `data` (text with CRs before LF taken out; `crs` says where they
/// were in the file, ascending, as offsets into it) under `shape`, every
/// symbol or the coarse ones only; into `out` (cleared first). Returns
/// the number of LF bytes.
pub(super) fn sign(
    data: &[u8],
    crs: &[usize],
    shape: &Shape,
    coarse_only: bool,
    out: &mut Out,
) -> u64 {
    out.symbols.clear();
    out.owner.clear();
    out.chunks.clear();
    let fine = shape.c - 1;
    let coarse = shape.coarse_c - 1;
    let (step, mask) = if coarse_only {
        (shape.coarse_c, coarse)
    } else {
        (shape.c, fine)
    };
    let mut line = 0u64;
    let mut start = 0;
    let mut cr = 0;
    let ends = memchr::memchr_iter(b'\n', data).map(|nl| nl + 1);
    for end in ends.chain((!data.is_empty()).then_some(data.len())) {
        if end <= start {
            continue;
        }
        let mut piece = start;
        while piece < end {
            let stop = (piece + CHUNK).min(end);
            let len = stop - piece;
            let h = chunk_hash(&data[piece..stop]);
            let phase = (h & 1023) as usize;
            let mut o = (step - (phase & mask)) & mask;
            if o < len {
                // Where the chunk is in the file: every CR taken out
                // before it moves it, one inside it (before its LF) makes
                // it longer. The k-th CR sat just before stripped offset
                // `crs[k] - k`, its LF.
                while cr < crs.len() && crs[cr] - cr < piece {
                    cr += 1;
                }
                let inside = cr < crs.len() && crs[cr] - cr < stop;
                let ends_line = data[stop - 1] == b'\n';
                let index = out.chunks.len() as u32;
                out.chunks.push(Chunk {
                    start: (piece + cr) as u64,
                    line,
                    len: (len + usize::from(inside)) as u8
                        | if ends_line { super::ENDS_LINE } else { 0 },
                    line_start: piece == start,
                });
                let h2 = second(h);
                let first_fine = (shape.c - (phase & fine)) & fine;
                let flags = if piece == start { super::LINE_START } else { 0 };
                while o < len {
                    let k = (o - first_fine) / shape.c;
                    let mut symbol = value(h2, k) | flags;
                    if (o + phase) & coarse == 0 {
                        symbol |= super::COARSE;
                    }
                    out.symbols.push(symbol);
                    out.owner.push(index);
                    o += step;
                }
            }
            piece = stop;
        }
        if data[end - 1] == b'\n' {
            line += 1;
        }
        start = end;
    }
    line
}
