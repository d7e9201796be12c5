//! What two signatures say about their files: the estimated edit
//! distance and similarity, containment either way, and the regions where
//! the files differ, as byte and line ranges of each.
//!
//! Two signatures are compared at the finest level both have: fine when
//! both files are under [`FINE_LIMIT`](super::FINE_LIMIT), else coarse;
//! stored ones ([`estimate_stored`]) at the fine level or their sketches'.
//! The regions need the signatures made from the contents
//! ([`Signature::new`]): the store keeps no positions.

use std::borrow::Cow;

use super::{CHUNK, Signature, Stored, align};

/// The estimate for one pair of signatures ([`estimate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Bytes per symbol of the level compared ([`C`](super::C),
    /// [`COARSE_C`](super::COARSE_C), or a sketch's `16 * 2^level`).
    pub c: usize,
    /// The Levenshtein distance of the two signatures, in symbols.
    pub symbol_distance: usize,
    /// The estimated edit distance of the files in bytes: the symbol
    /// distance times the bytes per symbol of the pair, kept between the
    /// difference of the sizes and the larger size (the bounds of the true
    /// distance). Chunks are the neighbourhoods: a changed byte counts its
    /// whole line, as in git's score.
    pub edit_distance: u64,
    /// The longest common subsequence of the two signatures over the
    /// longer one: the estimated share of the larger file that is
    /// unchanged, as git's score counts the larger file's bytes found in
    /// the other. The same share in a sketch as in the full signature
    /// (`lcs.rs` says why the Levenshtein distance is not). `None` when
    /// neither signature has a symbol (both files are a few bytes).
    pub similarity: Option<f64>,
    /// How much of the first file lies, as one stretch with edits, inside
    /// the second: `1 -` the distance of the first signature to the
    /// best-matching part of the second, over the first's length. `None`
    /// when the first has no symbol.
    pub a_in_b: Option<f64>,
    /// The same, the other way round.
    pub b_in_a: Option<f64>,
}

/// Both signatures at the finest level both have.
fn level<'a>(a: &'a Signature, b: &'a Signature) -> (Cow<'a, Signature>, Cow<'a, Signature>) {
    if a.is_fine() && b.is_fine() {
        return (Cow::Borrowed(a), Cow::Borrowed(b));
    }
    let coarse = |s: &'a Signature| {
        if s.is_fine() {
            Cow::Owned(s.coarse())
        } else {
            Cow::Borrowed(s)
        }
    };
    (coarse(a), coarse(b))
}

/// Estimate edit distance, similarity and containment of the files behind
/// `a` and `b`.
pub fn estimate(a: &Signature, b: &Signature) -> Estimate {
    let (a, b) = level(a, b);
    of_symbols(a.symbols(), b.symbols(), a.c(), a.size(), b.size())
}

/// [`estimate`] from what the store keeps ([`Stored`]): at the fine level
/// when both files are under [`FINE_LIMIT`](super::FINE_LIMIT), else at
/// the sketch level of the larger one (about one symbol per `16 *
/// 2^level` bytes, 64 to 128 symbols for the larger file), so that a
/// part much smaller than the whole it is compared with has few symbols
/// to be found by.
pub fn estimate_stored(a: &Stored, b: &Stored) -> Estimate {
    if let (Some(sa), Some(sb)) = (a.fine(), b.fine()) {
        return of_symbols(sa, sb, super::C, a.size(), b.size());
    }
    let l = a.level().max(b.level()).max(2);
    // On the stack: no allocation per pair.
    let (mut ba, mut bb) = ([0; 256], [0; 256]);
    let sa = a.sketch_in(l, &mut ba).unwrap_or_default();
    let sb = b.sketch_in(l, &mut bb).unwrap_or_default();
    of_symbols(&sa, &sb, super::C << l, a.size(), b.size())
}

/// The estimate from two symbol strings at `c` bytes per symbol, of files
/// of `size_a` and `size_b` bytes: the distance and both containments in
/// one walk ([`align::distances`]).
fn of_symbols(sa: &[u8], sb: &[u8], c: usize, size_a: u64, size_b: u64) -> Estimate {
    let ds = align::distances(sa, sb);
    let d = ds.distance;
    let longer = sa.len().max(sb.len());
    let inside = |x: &[u8], far: usize| (!x.is_empty()).then(|| 1.0 - far as f64 / x.len() as f64);
    Estimate {
        c,
        symbol_distance: d,
        edit_distance: edit_distance(sa.len() + sb.len(), size_a, size_b, c, d),
        similarity: (longer > 0).then(|| ds.common as f64 / longer as f64),
        a_in_b: inside(sa, ds.a_in_b),
        b_in_a: inside(sb, ds.b_in_a),
    }
}

/// The bytes a symbol distance `d` stands for: `d` times the pair's bytes
/// per symbol (`symbols` of them in both, else `c`), within the bounds
/// any edit distance of the two sizes keeps.
fn edit_distance(symbols: usize, size_a: u64, size_b: u64, c: usize, d: usize) -> u64 {
    let per_symbol = if symbols > 0 {
        (size_a + size_b) as f64 / symbols as f64
    } else {
        c as f64
    };
    let low = size_a.abs_diff(size_b);
    let high = size_a.max(size_b);
    ((d as f64 * per_symbol).round() as u64).clamp(low, high)
}

/// A range of one file: bytes `start..end` (`end` exclusive), on lines
/// `first_line..=last_line` (from 0). An empty range (`start == end`)
/// marks where the other file has something this one lacks; its lines are
/// then `first_line` = `last_line` = the line it sits at the start of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// First line (from 0).
    pub first_line: u64,
    /// Last line (from 0).
    pub last_line: u64,
}

impl Span {
    /// Whether the range holds no byte.
    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// Lines in the range: 0 for an empty one.
    pub fn line_count(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.last_line - self.first_line + 1
        }
    }
}

/// Where two files differ: a span of each, between the same two chunks
/// both files have (or a file's start or end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The span in the first file.
    pub a: Span,
    /// The span in the second file.
    pub b: Span,
}

/// The regions where the files of `a` and `b` differ, in file order.
///
/// The signatures are aligned (a longest common subsequence of their
/// symbols: the chunks both files have, in the same order); two
/// consecutive shared chunks enclose a region when a symbol between them
/// is only in one file, or when the bytes or lines between them differ in
/// number (a chunk that emitted no symbol still moves what follows). What
/// lies between two shared chunks that are as far apart in both files,
/// with nothing in between, is taken as unchanged: an edit of equal length
/// in chunks without a symbol is not seen.
///
/// A chunk is shared only when all its symbols are matched, to all the
/// symbols of one chunk of the other file: a changed chunk that emits
/// several symbols can keep one of them by chance (one in 64), and the
/// region must still hold it.
pub fn regions(a: &Signature, b: &Signature) -> Vec<Region> {
    let (a, b) = level(a, b);
    let pairs = whole_chunks(&a, &b, align::matches(&keys(&a), &keys(&b)));
    let mut out: Vec<Region> = Vec::new();
    let mut prev: Option<(usize, usize)> = None;
    let ends = pairs.iter().copied().map(Some).chain(std::iter::once(None));
    for next in ends {
        let (ia, ib) = match prev {
            Some((i, j)) => (i + 1, j + 1),
            None => (0, 0),
        };
        let (na, nb) = next.unwrap_or((a.len(), b.len()));
        let unmatched = na > ia || nb > ib;
        let sa = between(&a, prev.map(|p| p.0), next.map(|p| p.0));
        let sb = between(&b, prev.map(|p| p.1), next.map(|p| p.1));
        let moved = sa.end - sa.start != sb.end - sb.start || sa.line_count() != sb.line_count();
        if unmatched || moved {
            push(&mut out, Region { a: sa, b: sb });
        }
        prev = next;
    }
    out
}

/// What the alignment of [`regions`] compares: a symbol's value with its
/// chunk's length and line end, so that two symbols of different chunks
/// meet by chance far less often than one in 64.
fn keys(sig: &Signature) -> Vec<u16> {
    (0..sig.len())
        .map(|i| {
            let m = sig.mark(i);
            u16::from(sig.symbols()[i] & 63) | (m.len as u16) << 6 | u16::from(m.line_end) << 13
        })
        .collect()
}

/// The pairs of `pairs` (ascending, as [`align::matches`] gives them)
/// whose chunks are matched whole: as many pairs join the two chunks as
/// each chunk has symbols. A chunk's symbols are consecutive, so the pairs
/// joining two chunks are too.
fn whole_chunks(a: &Signature, b: &Signature, pairs: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let (ra, rb) = (chunk_runs(a), chunk_runs(b));
    let chunks = |&(i, j): &(usize, usize)| (a.mark(i).chunk, b.mark(j).chunk);
    let mut out = Vec::with_capacity(pairs.len());
    for group in pairs.chunk_by(|x, y| chunks(x) == chunks(y)) {
        let (i, j) = group[0];
        if group.len() == ra[i] && group.len() == rb[j] {
            out.extend_from_slice(group);
        }
    }
    out
}

/// For each symbol of `sig`, how many symbols its chunk emitted.
fn chunk_runs(sig: &Signature) -> Vec<usize> {
    let starts: Vec<u64> = (0..sig.len()).map(|i| sig.mark(i).chunk).collect();
    let mut runs = Vec::with_capacity(starts.len());
    for run in starts.chunk_by(|x, y| x == y) {
        runs.extend(std::iter::repeat_n(run.len(), run.len()));
    }
    runs
}

/// The span of `sig`'s file strictly between the chunks of symbols
/// `after` and `before` (the file's start and end for `None`).
fn between(sig: &Signature, after: Option<usize>, before: Option<usize>) -> Span {
    let (start, first_line) = match after {
        Some(i) => {
            let m = sig.mark(i);
            (m.chunk + m.len, m.line + u64::from(m.line_end))
        }
        None => (0, 0),
    };
    let (end, last_line) = match before {
        Some(i) => {
            let m = sig.mark(i);
            // The line before, when the next shared chunk starts its own.
            (m.chunk, m.line.saturating_sub(u64::from(m.line_start)))
        }
        None => (sig.size(), sig.lines().saturating_sub(1)),
    };
    // Two symbols of one chunk enclose nothing.
    let end = end.max(start);
    Span {
        start,
        end,
        first_line,
        last_line: if end > start {
            last_line.max(first_line)
        } else {
            first_line
        },
    }
}

/// Add a region, merged with the last one when at most one chunk lies
/// between them in each file: a lone shared symbol amid a change is as
/// likely two symbols equal by chance (one in 64) as a chunk kept.
fn push(out: &mut Vec<Region>, r: Region) {
    let near = (CHUNK + 1) as u64;
    if let Some(last) = out.last_mut()
        && r.a.start <= last.a.end + near
        && r.b.start <= last.b.end + near
    {
        last.a = join(last.a, r.a);
        last.b = join(last.b, r.b);
        return;
    }
    out.push(r);
}

fn join(x: Span, y: Span) -> Span {
    let start = x.start.min(y.start);
    let end = x.end.max(y.end);
    Span {
        start,
        end,
        first_line: x.first_line.min(y.first_line),
        last_line: if end > start {
            x.last_line.max(y.last_line)
        } else {
            x.first_line.min(y.first_line)
        },
    }
}
