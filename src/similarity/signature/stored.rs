//! What the store keeps of a signature: the symbols alone, and for a
//! large file only its sketch, so that every blob's signature costs a few
//! hundred bytes at most and is made in the fingerprinting read without
//! allocating per symbol.
//!
//! - A file under [`FINE_LIMIT`] bytes keeps its fine symbols (one byte
//!   each: the value, the coarse flag and the lowest selection bit), at
//!   most 512, and the selection bits of its coarse ones (a byte each).
//! - A larger file keeps the keys of its sketch at its level
//!   ([`sketch::level`]): 64 to 128 coarse symbols, each with its
//!   selection bits (12 bits), from which the sketch at that level and
//!   every higher one is read back. Its edit distance to
//!   another file is then estimated at that level, about one symbol per
//!   `16 * 2^level` bytes.
//!
//! Where each symbol's chunk is (byte offset, line) is not kept: it is
//! found again by signing the content ([`Signature::new`]) when the
//! content is at hand, which is when the regions of two files are given.
//!
//! ```text
//! varint size, varint lines, byte form
//! form 0 (fine):  varint count, count x byte (value | 0x40 when coarse
//!                 | 0x80 when its lowest selection bit is set), then a
//!                 byte per coarse symbol: its selection bits (0..64)
//! form 1 (keys):  byte level, varint count, the keys as 12-bit numbers,
//!                 two in three bytes (the last alone in two)
//! ```

use std::borrow::Cow;
use std::cell::RefCell;

use super::sketch::{self, Texts};
use super::{COARSE, FINE_LIMIT, Signature, line_count};
use super::{batch, chunks};
use batch::SELECTED_LOW;

/// A signature as the store keeps it (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    size: u64,
    lines: u64,
    body: Body,
}

/// The symbols of a [`Stored`] signature.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Body {
    /// Fine symbols, values with the coarse flag and [`SELECTED_LOW`];
    /// the selection bits of the coarse ones.
    Fine(Vec<u8>, Vec<u8>),
    /// The keys of the sketch at `level`, and that sketch's symbols (the
    /// keys' values: every key is in it), which an estimate at the file's
    /// own level reads as they are.
    Keys {
        level: u32,
        keys: Vec<u16>,
        values: Vec<u8>,
    },
}

impl Body {
    fn keys(level: u32, keys: Vec<u16>) -> Body {
        let values = keys.iter().map(|&k| (k & 63) as u8).collect();
        Body::Keys {
            level,
            keys,
            values,
        }
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::Fine(Vec::new(), Vec::new())
    }
}

thread_local! {
    /// Each thread's symbol, coarse selection and key buffers, reused
    /// from blob to blob.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>, Vec<u16>)> =
        const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

impl Stored {
    /// Sign `data` (a blob's content as stored) and append the stored
    /// form to `out`: what the fingerprinting read does for every blob.
    /// Returns whether `data` holds a CR byte, which signing learns for
    /// free: without one, the fingerprint need not look for CRLF line
    /// ends ([`crate::similarity::fingerprint::Fingerprinter::fingerprint_knowing_cr`]).
    pub fn encode_of(data: &[u8], out: &mut Vec<u8>) -> bool {
        let size = data.len() as u64;
        SCRATCH.with_borrow_mut(|(symbols, coarse, keys)| {
            if size < FINE_LIMIT {
                let ((lf, n, n_coarse), cr) = chunks::with_body(data, |body, bits, _| {
                    batch::sign_fine_stored(body, bits, symbols, coarse)
                });
                put_header(out, size, line_count(data, lf), 0);
                put_varint(out, n as u64);
                out.extend_from_slice(&symbols[..n]);
                out.extend_from_slice(&coarse[..n_coarse]);
                cr
            } else {
                let level = sketch::level(size);
                let mask = (1u16 << sketch::bits(level)) - 1;
                let ((lf, n), cr) = chunks::with_body(data, |body, bits, _| {
                    batch::sign_keys_stored(body, bits, mask, keys)
                });
                put_header(out, size, line_count(data, lf), 1);
                out.push(level as u8);
                put_varint(out, n as u64);
                put_keys(out, &keys[..n]);
                cr
            }
        })
    }

    /// The stored signature of `data`.
    pub fn of(data: &[u8]) -> Stored {
        let mut bytes = Vec::new();
        Stored::encode_of(data, &mut bytes);
        // What was just encoded decodes.
        Stored::decode(&bytes).unwrap_or_default()
    }

    /// What the store keeps of `sig` (a signature from [`Signature::new`]).
    pub fn from_signature(sig: &Signature) -> Stored {
        let body = if sig.is_fine() {
            let pairs = || sig.symbols().iter().zip(sig.selection());
            Body::Fine(
                pairs()
                    .map(|(&s, &sel)| {
                        s & (63 | COARSE) | if sel & 1 != 0 { SELECTED_LOW } else { 0 }
                    })
                    .collect(),
                pairs()
                    .filter(|&(s, _)| s & COARSE != 0)
                    .map(|(_, &sel)| sel)
                    .collect(),
            )
        } else {
            let level = sketch::level(sig.size());
            let mask = (1u16 << sketch::bits(level)) - 1;
            Body::keys(
                level,
                sig.values()
                    .zip(sig.selection())
                    .map(|(v, &sel)| sketch::key(v, sel))
                    .filter(|&k| sketch::selected(k, mask))
                    .collect(),
            )
        };
        Stored {
            size: sig.size(),
            lines: sig.lines(),
            body,
        }
    }

    /// Write the stored form.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match &self.body {
            Body::Fine(symbols, coarse) => {
                put_header(out, self.size, self.lines, 0);
                put_varint(out, symbols.len() as u64);
                out.extend_from_slice(symbols);
                out.extend_from_slice(coarse);
            }
            Body::Keys { level, keys, .. } => {
                put_header(out, self.size, self.lines, 1);
                out.push(*level as u8);
                put_varint(out, keys.len() as u64);
                put_keys(out, keys);
            }
        }
    }

    /// Read the stored form; `None` if it is not one.
    pub fn decode(bytes: &[u8]) -> Option<Stored> {
        let mut at = 0;
        let size = get_varint(bytes, &mut at)?;
        let lines = get_varint(bytes, &mut at)?;
        let form = *bytes.get(at)?;
        at += 1;
        let body = match form {
            0 if size < FINE_LIMIT => {
                let count = usize::try_from(get_varint(bytes, &mut at)?).ok()?;
                let symbols = bytes.get(at..at.checked_add(count)?)?;
                at += count;
                let coarse_count = symbols.iter().filter(|&&s| s & COARSE != 0).count();
                let coarse = bytes.get(at..at.checked_add(coarse_count)?)?;
                at += coarse_count;
                if coarse.iter().any(|&sel| sel >= 64) {
                    return None;
                }
                Body::Fine(symbols.to_vec(), coarse.to_vec())
            }
            1 if size >= FINE_LIMIT => {
                let level = u32::from(*bytes.get(at)?);
                at += 1;
                if level != sketch::level(size) {
                    return None;
                }
                let count = usize::try_from(get_varint(bytes, &mut at)?).ok()?;
                let keys = get_keys(bytes, &mut at, count)?;
                let mask = (1u16 << sketch::bits(level)) - 1;
                if keys.iter().any(|&k| !sketch::selected(k, mask)) {
                    return None;
                }
                Body::keys(level, keys)
            }
            _ => return None,
        };
        (at == bytes.len()).then_some(Stored { size, lines, body })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file's number of lines (a last line without LF counts).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether the fine symbols are kept (a file under [`FINE_LIMIT`]
    /// bytes); else the sketch's keys.
    pub fn is_fine(&self) -> bool {
        matches!(self.body, Body::Fine(..))
    }

    /// The lowest sketch level these symbols give (0 with the fine
    /// symbols).
    pub fn level(&self) -> u32 {
        match &self.body {
            Body::Fine(..) => 0,
            Body::Keys { level, .. } => *level,
        }
    }

    /// The symbols kept: fine symbols, or the sketch's keys.
    pub fn len(&self) -> usize {
        match &self.body {
            Body::Fine(s, _) => s.len(),
            Body::Keys { keys, .. } => keys.len(),
        }
    }

    /// Whether no symbol is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fine symbols (values with the coarse flag and the lowest
    /// selection bit), when kept.
    pub fn fine(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Fine(s, _) => Some(s),
            Body::Keys { .. } => None,
        }
    }

    /// The sketch's symbols (values 0..64) at level `l`; `None` below
    /// [`Stored::level`].
    pub fn sketch(&self, l: u32) -> Option<Vec<u8>> {
        match &self.body {
            Body::Fine(..) => Some(sketch::at_level(&self.parts(), l)),
            Body::Keys { level, keys, .. } => (l >= *level).then(|| sketch::reduce(keys, l.max(2))),
        }
    }

    /// [`Stored::sketch`] at level `l` (2 or more): the kept values at
    /// the file's own level, else into `buf` when it has room for every
    /// key the sketch is drawn from, else into a new vector. What an
    /// estimate reads, without allocating for the sketches of up to 256
    /// keys.
    pub(crate) fn sketch_in<'a>(&'a self, l: u32, buf: &'a mut [u8; 256]) -> Option<Cow<'a, [u8]>> {
        let l = l.max(2);
        let mask = (1u16 << sketch::bits(l)) - 1;
        let n = match &self.body {
            Body::Keys { level, .. } if l < *level => return None,
            Body::Keys { level, values, .. } if l == *level => {
                return Some(Cow::Borrowed(values));
            }
            Body::Keys { keys, .. } if keys.len() <= buf.len() => {
                sketch::reduce_into(keys.iter().copied(), mask, buf)
            }
            Body::Fine(symbols, coarse) if coarse.len() <= buf.len() => {
                let keys = symbols
                    .iter()
                    .filter(|&&s| s & COARSE != 0)
                    .zip(coarse)
                    .map(|(&s, &sel)| sketch::key(s, sel));
                sketch::reduce_into(keys, mask, buf)
            }
            _ => return self.sketch(l).map(Cow::Owned),
        };
        Some(Cow::Borrowed(&buf[..n]))
    }

    /// What the sketches are drawn from.
    fn parts(&self) -> sketch::Parts {
        match &self.body {
            Body::Fine(symbols, coarse) => {
                let values = symbols.iter().map(|s| s & 63).collect();
                let level_one = symbols
                    .iter()
                    .filter(|&&s| s & SELECTED_LOW == 0)
                    .map(|s| s & 63)
                    .collect();
                let keys = symbols
                    .iter()
                    .filter(|&&s| s & COARSE != 0)
                    .zip(coarse)
                    .map(|(&s, &sel)| sketch::key(s, sel))
                    .collect();
                sketch::Parts {
                    fine: Some((values, level_one)),
                    keys,
                }
            }
            Body::Keys { keys, .. } => sketch::Parts {
                fine: None,
                keys: keys.clone(),
            },
        }
    }

    /// Every text form: fine (small files) and the sketches for SQL
    /// engines ([`sketch`]).
    pub fn texts(&self) -> Texts {
        sketch::texts(self.size, &self.parts())
    }
}

fn put_header(out: &mut Vec<u8>, size: u64, lines: u64, form: u8) {
    put_varint(out, size);
    put_varint(out, lines);
    out.push(form);
}

/// 12-bit keys, two in three bytes, the last one alone in two.
fn put_keys(out: &mut Vec<u8>, keys: &[u16]) {
    let mut pairs = keys.chunks_exact(2);
    for p in &mut pairs {
        let (x, y) = (u32::from(p[0]), u32::from(p[1]));
        let v = x | y << 12;
        out.extend_from_slice(&v.to_le_bytes()[..3]);
    }
    if let [x] = pairs.remainder() {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn get_keys(bytes: &[u8], at: &mut usize, count: usize) -> Option<Vec<u16>> {
    let len = (count / 2).checked_mul(3)?.checked_add(count % 2 * 2)?;
    let body = bytes.get(*at..at.checked_add(len)?)?;
    *at += len;
    let mut keys = Vec::with_capacity(count);
    let mut pairs = body.chunks_exact(3);
    for p in &mut pairs {
        let v = u32::from(p[0]) | u32::from(p[1]) << 8 | u32::from(p[2]) << 16;
        keys.push((v & 0xfff) as u16);
        keys.push((v >> 12) as u16);
    }
    if let [x, y] = pairs.remainder() {
        let k = u16::from_le_bytes([*x, *y]);
        if k > 0xfff {
            return None;
        }
        keys.push(k);
    }
    Some(keys)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}
