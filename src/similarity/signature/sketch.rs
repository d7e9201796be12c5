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

/// The text forms of one signature ([`super::Signature::texts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Texts {
    /// The fine signature, one character per symbol; `None` for a file of
    /// [`FINE_LIMIT`] bytes or more.
    pub fine: Option<String>,
    /// The coarse signature.
    pub coarse: String,
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

/// The text forms of a signature of a file of `size` bytes, from its
/// symbols (values with their flags; fine and coarse, or coarse only).
pub(super) fn texts(size: u64, fine: bool, symbols: &[u8]) -> Texts {
    let coarse: Vec<u8> = symbols
        .iter()
        .filter(|&&s| s & COARSE != 0)
        .map(|s| s & 63)
        .collect();
    let all: Vec<u8> = symbols.iter().map(|s| s & 63).collect();
    let level = self::level(size).max(if fine { 0 } else { 2 });
    // A file under FINE_LIMIT has its fine symbols; one over it is at
    // level 2 or more (FINE_LIMIT is SPAN << 2).
    const _: () = assert!(FINE_LIMIT == SPAN << 2);
    let at = |l: u32| match l {
        0 => plain(&all),
        1 => sampled(&all, 1),
        l => sampled(&coarse, (l - 2).min(12)),
    };
    Texts {
        fine: fine.then(|| plain(&all)),
        coarse: plain(&coarse),
        level,
        sketch: at(level),
        sketch_next: at(level + 1),
    }
}

fn plain(values: &[u8]) -> String {
    values
        .iter()
        .map(|&v| ALPHABET[usize::from(v)] as char)
        .collect()
}

/// The symbols of `values` whose key (the value, then the next value
/// above it: `next << 6 | value`, the last symbol's next being 64) is a
/// multiple of `2^bits` (`bits` up to 12), each written as a mix of its
/// key: the value alone decides up to 6 bits, so levels nest.
fn sampled(values: &[u8], bits: u32) -> String {
    let mask = (1u32 << bits) - 1;
    values
        .iter()
        .enumerate()
        .filter_map(|(i, &v)| {
            let next = values.get(i + 1).map_or(64, |&n| u32::from(n));
            let key = next << 6 | u32::from(v);
            (key & mask == 0).then(|| {
                let h = (key.wrapping_add(1)).wrapping_mul(0x9e37_79b1) >> 26;
                ALPHABET[h as usize] as char
            })
        })
        .collect()
}
