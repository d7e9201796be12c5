//! `compare`'s output: the text report and its `--json` schema.

use std::io::{self, Write};

use serde::Serialize;

use crate::compare::{Comparison, Facts};
use crate::similarity::signature::estimate::Span;

/// What names one side of a comparison.
#[derive(Clone, Debug)]
pub struct Named<'a> {
    /// The argument as given (`HEAD:src/a.c`, a path, an id), as bytes:
    /// a path need not be UTF-8.
    pub name: &'a [u8],
    /// Its blob id, when it is a blob (not a file on disk).
    pub blob: Option<String>,
    /// The repository given with `--in`, for the side looked up there.
    pub repository: Option<String>,
}

/// `git simm compare --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Compare {
    /// The first file.
    pub a: Side,
    /// How much of the first file the second holds, in percent (estimated;
    /// `null` when the first is too small to have a symbol).
    pub a_in_b: Option<u32>,
    /// The second file.
    pub b: Side,
    /// How much of the second file the first holds, in percent.
    pub b_in_a: Option<u32>,
    /// The estimated edit distance in bytes.
    pub edit_distance: u64,
    /// git's rename score in percent, when both contents were at hand;
    /// else `null`.
    pub git_score: Option<u32>,
    /// Where the files differ, in file order; `null` unless both contents
    /// were at hand (the store keeps no positions).
    pub regions: Option<Vec<Region>>,
    /// The Levenshtein distance of the two signatures, in symbols.
    pub signature_distance: usize,
    /// The estimated similarity in percent: the share of the larger file
    /// unchanged; `null` when neither file has a symbol.
    pub similarity: Option<u32>,
}

/// One side of [`Compare`].
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The blob id in hex; `null` for a file on disk.
    pub blob: Option<String>,
    /// Lines in the file (a last line without LF counts).
    pub lines: u64,
    /// The argument as given (exact when `name_bytes` is `null`).
    pub name: String,
    /// `null` when `name` is exact, else the argument's bytes (a path
    /// that is not UTF-8).
    pub name_bytes: Option<Vec<u8>>,
    /// The repository given with `--in`, for the side looked up there;
    /// else `null`.
    pub repository: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Symbols in the signature compared (the stored one's when a content
    /// was missing: the fine symbols of a file under 8 KiB, else its
    /// sketch's).
    pub symbols: usize,
}

/// One region of [`Compare`]: a range of each file.
#[derive(Clone, Debug, Serialize)]
pub struct Region {
    /// The range in the first file.
    pub a: Range,
    /// The range in the second file.
    pub b: Range,
}

/// A range of one file.
#[derive(Clone, Debug, Serialize)]
pub struct Range {
    /// One past the last byte (bytes from 0).
    pub end: u64,
    /// The first line (from 1); for an empty range, the line the other
    /// file's text goes before.
    pub first_line: u64,
    /// The last line (from 1, inclusive); `first_line` for an empty
    /// range.
    pub last_line: u64,
    /// Lines in the range: 0 for an empty one.
    pub lines: u64,
    /// The first byte (from 0); equal to `end` for an empty range.
    pub start: u64,
}

fn range(s: Span) -> Range {
    Range {
        end: s.end,
        first_line: s.first_line + 1,
        last_line: s.last_line + 1,
        lines: s.line_count(),
        start: s.start,
    }
}

/// A span as a diff hunk header numbers it: `<first line>,<count>` from
/// 1, or for an empty span (as git writes a pure insertion or deletion)
/// the line before it and 0.
fn hunk(s: Span) -> String {
    if s.is_empty() {
        format!("{},0", s.first_line)
    } else {
        format!("{},{}", s.first_line + 1, s.line_count())
    }
}

fn side(n: &Named<'_>, f: &Facts) -> Side {
    let (name, name_bytes) = super::json_path(n.name);
    Side {
        blob: n.blob.clone(),
        lines: f.lines,
        name,
        name_bytes,
        repository: n.repository.clone(),
        size: f.size,
        symbols: f.symbols,
    }
}

/// A share as a whole percentage, truncated (as git prints scores).
fn percent(x: f64) -> u32 {
    (x * 100.0).clamp(0.0, 100.0) as u32
}

impl Compare {
    /// The document for `c`, the comparison of `a` and `b`.
    pub fn new(a: &Named<'_>, b: &Named<'_>, c: &Comparison) -> Compare {
        Compare {
            a: side(a, &c.a),
            a_in_b: c.estimate.a_in_b.map(percent),
            b: side(b, &c.b),
            b_in_a: c.estimate.b_in_a.map(percent),
            edit_distance: c.estimate.edit_distance,
            git_score: c.git_score,
            regions: c.regions.as_ref().map(|regions| {
                regions
                    .iter()
                    .map(|r| Region {
                        a: range(r.a),
                        b: range(r.b),
                    })
                    .collect()
            }),
            signature_distance: c.estimate.symbol_distance,
            similarity: c.estimate.similarity.map(percent),
        }
    }
}

/// The text report: each side, the estimate, then one diff hunk header
/// per region.
pub fn write_text(
    out: &mut impl Write,
    a: &Named<'_>,
    b: &Named<'_>,
    c: &Comparison,
) -> io::Result<()> {
    for (label, n, f) in [("a", a, &c.a), ("b", b, &c.b)] {
        write!(
            out,
            "{label}: {} ({} bytes, {} lines",
            super::quoted(n.name),
            f.size,
            f.lines
        )?;
        if let Some(blob) = &n.blob {
            write!(out, ", blob {blob}")?;
        }
        if let Some(r) = &n.repository {
            write!(out, ", in {r}")?;
        }
        writeln!(out, ")")?;
    }
    let e = &c.estimate;
    match (e.similarity, c.git_score) {
        (Some(s), Some(g)) => writeln!(
            out,
            "similarity: {}% estimated, git's score {g}%",
            percent(s)
        )?,
        (Some(s), None) => writeln!(out, "similarity: {}% estimated", percent(s))?,
        (None, Some(g)) => writeln!(out, "similarity: too small to estimate, git's score {g}%")?,
        (None, None) => writeln!(out, "similarity: too small to estimate")?,
    }
    writeln!(out, "edit distance: about {} bytes", e.edit_distance)?;
    let shown = |x: Option<f64>| x.map_or("-".to_owned(), |v| format!("{}%", percent(v)));
    writeln!(
        out,
        "containment: a in b {}, b in a {}",
        shown(e.a_in_b),
        shown(e.b_in_a)
    )?;
    match &c.regions {
        Some(regions) => {
            for r in regions {
                writeln!(out, "@@ -{} +{} @@", hunk(r.a), hunk(r.b))?;
            }
        }
        None => writeln!(
            out,
            "regions: not shown (they need both blobs; the store keeps no positions)"
        )?,
    }
    Ok(())
}
