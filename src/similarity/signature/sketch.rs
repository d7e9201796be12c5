//! A signature's text forms for SQL engines: the fine and coarse levels
//! as they are, and a sketch of about 128 symbols whatever the file's
//! size, at two adjacent levels, so that an engine's quadratic
//! `levenshtein` compares any two files within git's size window in
//! microseconds.
//!
//! Level 0 is the fine signature (one symbol per [`C`](super::C) bytes),
//! level 1 its symbols of even value, level `l >= 2` the coarse symbols
//! whose value is a multiple of `2^(l-2)` (from level 9 on, zero and the
//! next symbol's value a multiple of `2^(l-8)`; levels stop at 14, files
//! over 32 MiB): about one symbol per `16 * 2^l` bytes, chosen by the
//! symbols' own values, so that the same chunk keeps or drops its symbol
//! in every file. A kept symbol is written
//! as one character mixing its value with the next symbol's of the level
//! it was drawn from (its successor in the file), which restores an
//! alphabet of 64 and makes chance matches between unrelated files as rare
//! as at level 0. A file of `s` bytes is sketched at level
//! `max(0, ceil(log2(s / 2048)))` and the next one: two files within git's
//! size window (the smaller at least 4/5 of the larger) are at the same or
//! adjacent levels, and have a sketch at one level in common.

use super::{ALPHABET, COARSE, FINE_LIMIT};

/// Bytes per symbol of level 0 times the symbols a sketch aims at: the
/// level of a file of `s` bytes is the least `l` with `s <= SPAN * 2^l`.
const SPAN: u64 = 2048;

/// The text forms of one signature ([`super::Signature::texts`],
/// [`super::Stored::texts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Texts {
    /// The fine signature, one character per symbol; `None` for a file of
    /// [`FINE_LIMIT`] bytes or more.
    pub fine: Option<String>,
    /// The sketch's level ([`level`]).
    pub level: u32,
    /// The sketch at `level`.
    pub sketch: String,
    /// The sketch at `level + 1`.
    pub sketch_next: String,
}

/// The sketch level of a file of `size` bytes.
pub fn level(size: u64) -> u32 {
    let mut l = 0;
    while size > SPAN << l && l < 40 {
        l += 1;
    }
    l
}

/// The bits of a coarse symbol's key that must be zero for it to be in
/// the sketch at level `l` (2 or more).
pub(super) fn bits(l: u32) -> u32 {
    l.saturating_sub(2).min(12)
}

/// The sketch level of a file of `size` bytes whose signature has its
/// fine symbols (`fine`) or only its coarse ones.
pub(super) fn level_of(size: u64, fine: bool) -> u32 {
    // A file under FINE_LIMIT has its fine symbols; one over it is at
    // level 2 or more (FINE_LIMIT is SPAN << 2).
    const _: () = assert!(FINE_LIMIT == SPAN << 2);
    level(size).max(if fine { 0 } else { 2 })
}

/// The text forms of a signature of a file of `size` bytes, from its
/// symbols (values with their flags; fine and coarse, or coarse only).
pub(super) fn texts(size: u64, fine: bool, symbols: &[u8]) -> Texts {
    let level = level_of(size, fine);
    Texts {
        fine: fine.then(|| plain(symbols)),
        level,
        sketch: text(&at_level(fine, symbols, level)),
        sketch_next: text(&at_level(fine, symbols, level + 1)),
    }
}

/// The text forms from the keys of a sketch at `level` (what the store
/// keeps of a file of [`FINE_LIMIT`] bytes or more).
pub(super) fn texts_of_keys(level: u32, keys: &[u16]) -> Texts {
    Texts {
        fine: None,
        level,
        sketch: text(&reduce(keys, level)),
        sketch_next: text(&reduce(keys, level + 1)),
    }
}

/// The symbols (values 0..64) of the sketch at level `l` from a
/// signature's symbols (with their flags; `fine` when the fine ones are
/// there: levels 0 and 1 need them).
pub(super) fn at_level(fine: bool, symbols: &[u8], l: u32) -> Vec<u8> {
    match l {
        0 if fine => symbols.iter().map(|s| s & 63).collect(),
        1 if fine => {
            let all: Vec<u8> = symbols.iter().map(|s| s & 63).collect();
            keys(&all, 1).map(symbol_of_key).collect()
        }
        l => {
            // Sized at once, as in `reduce`.
            let mut coarse = Vec::with_capacity(symbols.len());
            coarse.extend(symbols.iter().filter(|&&s| s & COARSE != 0).map(|s| s & 63));
            let mut out = Vec::with_capacity(coarse.len());
            out.extend(keys(&coarse, bits(l.max(2))).map(symbol_of_key));
            out
        }
    }
}

/// The symbols of the sketch at level `l` from the keys of a sketch at a
/// level no higher.
pub(super) fn reduce(keys: &[u16], l: u32) -> Vec<u8> {
    let mask = (1u16 << bits(l)) - 1;
    // Every key written, the kept ones advancing: no branch to mispredict
    // on a coin-flip filter, no growth (this runs for every estimate).
    let mut out = vec![0; keys.len()];
    let mut n = 0;
    for &k in keys {
        out[n] = symbol_of_key(k);
        n += usize::from(k & mask == 0);
    }
    out.truncate(n);
    out
}

fn plain(symbols: &[u8]) -> String {
    text(&symbols.iter().map(|s| s & 63).collect::<Vec<u8>>())
}

fn text(values: &[u8]) -> String {
    values
        .iter()
        .map(|&v| ALPHABET[usize::from(v)] as char)
        .collect()
}

/// The keys of `values` (each value, then the next value above it:
/// `next << 6 | value`, the last symbol's next being 64) that are a
/// multiple of `2^bits` (`bits` up to 12): the value alone decides up to
/// 6 bits, so levels nest.
pub(super) fn keys(values: &[u8], bits: u32) -> impl Iterator<Item = u16> + '_ {
    let mask = (1u16 << bits) - 1;
    values.iter().enumerate().filter_map(move |(i, &v)| {
        let next = values.get(i + 1).map_or(64, |&n| u16::from(n));
        let key = next << 6 | u16::from(v);
        (key & mask == 0).then_some(key)
    })
}

/// The symbol a sketch writes for a key: a mix of it, which restores an
/// alphabet of 64.
pub(super) fn symbol_of_key(key: u16) -> u8 {
    ((u32::from(key).wrapping_add(1)).wrapping_mul(0x9e37_79b1) >> 26) as u8
}
