//! Coates signatures: a few bytes per file from which the edit distance
//! of two files is estimated, and where they differ found.
//!
//! From Peter Coates, "A Fast Metric of Document Similarity" (2011,
//! `shared/seeds/coates-fast-ld-estimate.tex`): a file is compressed into
//! a string of symbols, about one per [`C`] bytes, each a function of a
//! small neighbourhood of the file, so that an edit changes only the
//! symbols of the neighbourhoods it touches and a text compresses to the
//! same symbols alone or inside a larger one. The Levenshtein distance of
//! two signatures, times `C`, then estimates the edit distance of the
//! files ([`estimate`]); one signature aligned inside the other estimates
//! containment; and the aligned symbols, each remembering where its
//! neighbourhood is, say where the files differ ([`estimate::regions`]).
//!
//! ### The definition (all of it part of [`SIGNATURE_VERSION`])
//! - The neighbourhoods are git's chunks (`chunks.rs`): lines, cut every
//!   64 bytes, as git's rename score counts them (text with CR before LF
//!   is signed without those CRs, as git scores it and as fingerprints are
//!   made; positions are still offsets into the file as stored; text
//!   versus binary is git's NUL rule).
//! - A chunk of `L` bytes emits one symbol every [`C`] of its bytes, from
//!   a phase its hash (`hash.rs`: NH, then splitmix64's finaliser)
//!   decides: `⌊L/C⌋` symbols and one more with
//!   probability `(L mod C)/C`. Each is a function of the chunk's bytes
//!   and its offset: one of 64 values ([`ALPHABET`]).
//! - One symbol in four (those every [`COARSE_C`] bytes of a chunk, from
//!   the same phase) is also coarse: the coarse signature, the same
//!   construction at `c = 64`, nested in the fine one.
//! - Files of [`FINE_LIMIT`] bytes or more keep only their coarse
//!   symbols ([`Signature::new`]): their estimates are as precise at
//!   `c = 64`, and the fine level would cost four times the space.
//!
//! ### Why these numbers
//! Chosen by calibration (docs/signatures.md; `benches/signature/tables.rs`):
//! Coates's rolling sum over `n`-byte windows tracks the byte edit
//! distance of scattered substitutions better, but not git's score, which
//! counts whole chunks. On 500 pairs of git.git's history, git's chunks as
//! neighbourhoods correlate with git's score at 0.995 (`c = 16`) and
//! 0.981 (`c = 64`), Coates's window (`n = 16`) at 0.937 and 0.867; the
//! threshold that keeps 99% of the pairs at 80% lets 0 and 2 of 26 pairs
//! under 80% through, the window 7 and 11. Large files are nearly as
//! precise at 64, so only small ones keep `c = 16`.

pub mod align;
mod batch;
mod chunks;
pub mod estimate;
mod hash;
mod lcs;
pub mod sketch;
mod stored;
#[cfg(test)]
mod stored_tests;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cell::RefCell;

use chunks::{Chunk, Out};
pub use sketch::Texts;
pub use stored::Stored;

/// Version of the signature definition (chunking, hash, phases, symbols,
/// `C`, `COARSE_C`, `FINE_LIMIT`, CR handling, sketches) and of its stored
/// form ([`Stored`]). Stored beside every signature; tables of another
/// version are ignored.
pub const SIGNATURE_VERSION: u32 = 4;

/// git's longest chunk (`diffcore-delta.c`): longer lines are cut into
/// pieces of this many bytes.
pub const CHUNK: usize = 64;

/// Bytes per symbol of the fine signature.
pub const C: usize = 16;

/// Bytes per symbol of the coarse signature.
pub const COARSE_C: usize = 64;

/// Files of this many bytes or more keep only their coarse symbols.
pub const FINE_LIMIT: u64 = 8192;

/// The 64 symbols as text: the URL-safe base64 digits, so that a
/// signature is a plain ASCII string every SQL engine's `levenshtein`
/// measures in symbols.
pub const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A symbol's flag: it is also a symbol of the coarse signature.
const COARSE: u8 = 0x40;
/// A symbol's flag: its chunk starts a line.
const LINE_START: u8 = 0x80;
/// A chunk length's flag: the chunk ends with LF.
const ENDS_LINE: u8 = 0x80;

/// The parameters of a signature: [`C`] and [`COARSE_C`] for stored
/// signatures, others for calibration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Bytes per fine symbol: a power of two up to 1024.
    pub c: usize,
    /// Bytes per coarse symbol: a power of two, at least `c`, up to 1024.
    pub coarse_c: usize,
}

impl Shape {
    /// The shape of stored signatures.
    pub const STORED: Shape = Shape {
        c: C,
        coarse_c: COARSE_C,
    };
}

/// One file's signature: its symbols, where each chunk that emitted one
/// is, and the file's size and line count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    size: u64,
    lines: u64,
    /// Whether the fine symbols are here (else only coarse ones).
    fine: bool,
    /// Symbol values (0..64) with the [`COARSE`] and [`LINE_START`] flags.
    symbols: Vec<u8>,
    /// Per symbol: its selection bits, which decide the sketches it is in
    /// ([`sketch`]).
    selection: Vec<u8>,
    /// Per symbol: its chunk, an index into `chunks`.
    owner: Vec<u32>,
    /// The chunks that emitted the symbols, in file order.
    chunks: Vec<Chunk>,
}

/// Where a symbol's chunk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The offset of the chunk's first byte.
    pub chunk: u64,
    /// The chunk's length in bytes (a CR before its LF, in text,
    /// included: up to [`CHUNK`] + 1).
    pub len: u64,
    /// Its line (from 0).
    pub line: u64,
    /// Whether the chunk starts its line.
    pub line_start: bool,
    /// Whether it ends its line (with LF).
    pub line_end: bool,
}

impl Signature {
    /// The signature of `data` (a blob's content as stored), as the store
    /// keeps it: fine and coarse symbols, or coarse ones only from
    /// [`FINE_LIMIT`] bytes on.
    pub fn new(data: &[u8]) -> Signature {
        sign(data, &Shape::STORED, data.len() as u64 >= FINE_LIMIT)
    }

    /// The full signature of `data` under `shape`, fine and coarse,
    /// whatever its size (calibration).
    pub fn with_shape(data: &[u8], shape: &Shape) -> Signature {
        sign(data, shape, false)
    }

    /// The coarse signature: the coarse symbols only.
    pub fn coarse(&self) -> Signature {
        let mut out = Signature {
            size: self.size,
            lines: self.lines,
            fine: false,
            ..Signature::default()
        };
        for ((&symbol, &owner), &selection) in
            self.symbols.iter().zip(&self.owner).zip(&self.selection)
        {
            if symbol & COARSE == 0 {
                continue;
            }
            let chunk = self.chunks[owner as usize];
            if out.chunks.last() != Some(&chunk) {
                out.chunks.push(chunk);
            }
            out.symbols.push(symbol);
            out.selection.push(selection);
            out.owner.push(out.chunks.len() as u32 - 1);
        }
        out
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file's number of lines (a last line without LF counts).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether the fine symbols are here (a file under [`FINE_LIMIT`]
    /// bytes, or one signed with [`Signature::with_shape`]).
    pub fn is_fine(&self) -> bool {
        self.fine
    }

    /// Bytes per symbol of this signature's level: [`C`] or [`COARSE_C`]
    /// (for stored signatures).
    pub fn c(&self) -> usize {
        if self.fine { C } else { COARSE_C }
    }

    /// The number of symbols.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether there are no symbols (an empty file, or a small one none
    /// of whose chunks reached an emission).
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbols' values (0..64), in file order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = u8> + '_ {
        self.symbols.iter().map(|s| s & 63)
    }

    /// Where symbol `i`'s chunk is.
    pub fn mark(&self, i: usize) -> Mark {
        let c = self.chunks[self.owner[i] as usize];
        Mark {
            chunk: c.start,
            len: u64::from(c.len & !ENDS_LINE),
            line: c.line,
            line_start: c.line_start,
            line_end: c.len & ENDS_LINE != 0,
        }
    }

    /// The symbols with their flags (the values in the low 6 bits), for
    /// [`align`].
    pub fn symbols(&self) -> &[u8] {
        &self.symbols
    }

    /// Per symbol: its selection bits ([`sketch`]).
    fn selection(&self) -> &[u8] {
        &self.selection
    }

    /// The signature as text, one [`ALPHABET`] character per symbol;
    /// `None` when only the coarse symbols are here.
    pub fn text(&self) -> Option<String> {
        self.fine.then(|| text_of(&self.symbols, false))
    }

    /// The coarse signature as text: the coarse symbols only.
    pub fn coarse_text(&self) -> String {
        text_of(&self.symbols, true)
    }

    /// Every text form: fine, coarse and the sketches for SQL engines
    /// ([`sketch`]).
    pub fn texts(&self) -> Texts {
        sketch::texts(self.size, &self.parts())
    }

    /// What this signature's sketches are drawn from.
    fn parts(&self) -> sketch::Parts {
        let fine = self.fine.then(|| {
            let values = self.values().collect();
            let level_one = self
                .values()
                .zip(&self.selection)
                .filter(|&(_, s)| s & 1 == 0)
                .map(|(v, _)| v)
                .collect();
            (values, level_one)
        });
        let keys = self
            .symbols
            .iter()
            .zip(&self.selection)
            .filter(|&(s, _)| s & COARSE != 0)
            .map(|(&s, &sel)| sketch::key(s, sel))
            .collect();
        sketch::Parts { fine, keys }
    }
}

fn text_of(symbols: &[u8], coarse_only: bool) -> String {
    symbols
        .iter()
        .filter(|&&s| !coarse_only || s & COARSE != 0)
        .map(|&s| ALPHABET[(s & 63) as usize] as char)
        .collect()
}

thread_local! {
    /// Each thread's output buffers, reused from blob to blob.
    static OUT: RefCell<Out> = RefCell::new(Out::default());
}

/// `data` as it is signed: text with CRLF line ends without the CRs, as
/// git scores it, and where the CRs were (to map positions back).
fn without_crs(data: &[u8]) -> (Cow<'_, [u8]>, Vec<usize>) {
    let mut crs = Vec::new();
    let body = crate::similarity::score::without_crlf_crs(data, Some(&mut crs));
    (body, crs)
}

/// Lines of a file of `data` with `lf` LF bytes: a last line without LF
/// counts.
fn line_count(data: &[u8], lf: u64) -> u64 {
    lf + u64::from(data.last().is_some_and(|&b| b != b'\n'))
}

fn sign(data: &[u8], shape: &Shape, coarse_only: bool) -> Signature {
    OUT.with_borrow_mut(|out| {
        out.symbols.clear();
        out.selection.clear();
        out.owner.clear();
        out.chunks.clear();
        let lf = chunks::sign(data, shape, coarse_only, out);
        Signature {
            size: data.len() as u64,
            lines: line_count(data, lf),
            fine: !coarse_only,
            symbols: out.symbols.clone(),
            selection: out.selection.clone(),
            owner: out.owner.clone(),
            chunks: out.chunks.clone(),
        }
    })
}
