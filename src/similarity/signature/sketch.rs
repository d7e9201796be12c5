//! A signature's text forms for SQL engines: the fine and coarse levels
//! as they are, and a sketch of about 128 symbols whatever the file's
//! size, at two adjacent levels, so that an engine's quadratic
//! `levenshtein` compares any two files within git's size window in
//! microseconds.
//!
//! Level 0 is the fine signature (one symbol per [`C`](super::C) bytes),
//! level 1 half of its symbols, level `l >= 2` one in `2^(l-2)` of the
//! coarse symbols (levels stop at 14, files over 32 MiB): about one
//! symbol per `16 * 2^l` bytes. Whether a symbol is kept is decided by
//! its selection bits, six bits of its chunk's hash apart from its value
//! (`selected`): the same chunk keeps or drops its symbol in every
//! file, an edit changes the sketch only where it changes symbols, and
//! the kept symbols have all 64 values, written as they are. A file of `s` bytes is sketched at level
//! `max(0, ceil(log2(s / 2048)))` and the next one: two files within git's
//! size window (the smaller at least 4/5 of the larger) are at the same or
//! adjacent levels, and have a sketch at one level in common.

use super::{ALPHABET, FINE_LIMIT};

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

/// What sketches are drawn from: the fine symbols' values and those of
/// level 1 (when the fine symbols are there), and the keys ([`key`]) of
/// the coarse symbols, all of them or those of one level and above.
#[derive(Debug, Default)]
pub(super) struct Parts {
    /// The fine symbols' values, and the values of those in level 1.
    pub fine: Option<(Vec<u8>, Vec<u8>)>,
    /// The coarse symbols' keys.
    pub keys: Vec<u16>,
}

/// The text forms of a signature of a file of `size` bytes.
pub(super) fn texts(size: u64, parts: &Parts) -> Texts {
    let level = level_of(size, parts.fine.is_some());
    Texts {
        fine: parts.fine.as_ref().map(|(values, _)| text(values)),
        level,
        sketch: text(&at_level(parts, level)),
        sketch_next: text(&at_level(parts, level + 1)),
    }
}

/// The symbols (values 0..64) of the sketch at level `l` (0 and 1 need
/// the fine symbols; without them, level 2 is drawn).
pub(super) fn at_level(parts: &Parts, l: u32) -> Vec<u8> {
    match (l, &parts.fine) {
        (0, Some((values, _))) => values.clone(),
        (1, Some((_, level_one))) => level_one.clone(),
        (l, _) => reduce(&parts.keys, l.max(2)),
    }
}

/// The symbols of the sketch at level `l` (2 or more) from coarse keys
/// (all of them, or those of a sketch at a level no higher).
pub(super) fn reduce(keys: &[u16], l: u32) -> Vec<u8> {
    let mask = (1u16 << bits(l)) - 1;
    let mut out = vec![0; keys.len()];
    let n = reduce_into(keys.iter().copied(), mask, &mut out);
    out.truncate(n);
    out
}

/// [`reduce`] into `out`, which has room for every key; the number of
/// symbols kept. `mask` is the level's ([`bits`]).
#[inline(always)]
pub(super) fn reduce_into(keys: impl Iterator<Item = u16>, mask: u16, out: &mut [u8]) -> usize {
    // Every key written, the kept ones advancing: no branch to mispredict
    // on a coin-flip filter, no growth.
    let mut n = 0;
    for k in keys {
        out[n] = (k & 63) as u8;
        n += usize::from(selected(k, mask));
    }
    n
}

fn text(values: &[u8]) -> String {
    // Bytes, not chars: one store each, no UTF-8 encoding per symbol
    // (every export row has two or three of these).
    let ascii: Vec<u8> = values
        .iter()
        .map(|&v| ALPHABET[usize::from(v & 63)])
        .collect();
    // The alphabet is ASCII (checked below), so this is never the empty
    // fallback.
    String::from_utf8(ascii).unwrap_or_default()
}

const _: () = {
    let mut i = 0;
    while i < ALPHABET.len() {
        assert!(ALPHABET[i].is_ascii());
        i += 1;
    }
};

/// A coarse symbol's key: its selection bits above its value.
#[inline(always)]
pub(super) fn key(value: u8, selection: u8) -> u16 {
    u16::from(selection & 63) << 6 | u16::from(value & 63)
}

/// Whether a coarse symbol with `key` is in the sketch of a level whose
/// [`bits`] are those of `mask`: its six selection bits, then (from level
/// 9 on, files over 1 MiB) its value's bits, are zero as far as the mask
/// reaches. Levels nest (a key in one level's sketch is in every lower
/// level's), and a symbol's being kept depends on its chunk alone.
#[inline(always)]
pub(super) fn selected(key: u16, mask: u16) -> bool {
    let order = (key >> 6) | (key & 63) << 6;
    order & mask == 0
}
