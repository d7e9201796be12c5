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
use super::hash::chunk_hash_at;
use super::{CHUNK, Shape};
use crate::similarity::lf_bits::{Width, lf_bits};
use crate::similarity::mix::mix;

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
        let (len, cr) = lf_bits(data, bits, width());
        if cr {
            let (body, crs) = super::without_crs(data);
            if let std::borrow::Cow::Owned(body) = body {
                let (len, _) = lf_bits(&body, bits, width());
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

/// The widest LF-bit path the signers may take: as wide as theirs
/// ([`wide512`], [`wide`]; tests narrow both).
fn width() -> Width {
    #[cfg(target_arch = "x86_64")]
    if wide512() {
        return Width::Avx512;
    } else if wide() {
        return Width::Avx2;
    }
    Width::Portable
}
