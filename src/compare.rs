//! Two files compared from their Coates signatures
//! ([`crate::similarity::signature`]): the estimated edit distance and
//! similarity, containment either way, and where they differ, as byte
//! and line ranges of both; git's exact score beside the estimate when
//! both contents are at hand.
//!
//! A side needs only its stored signature ([`Stored`]): it comes from a
//! store (this repository's, another's), so two files compare where their
//! blobs are absent (a blob-less partial clone whose store was filled
//! elsewhere). The store keeps symbols without positions, so the regions
//! where the files differ, and git's score, need both contents: then both
//! are signed again with every chunk's place ([`Signature::new`]) and the
//! estimate is made from those signatures; the regions come from their
//! fine symbols, whatever the sizes.

use crate::similarity::score::{self, Spans};
use crate::similarity::signature::estimate::{self, Estimate, Region, Span};
use crate::similarity::signature::{Shape, Signature, Stored};

/// One side of a comparison: its stored signature, and its content when
/// at hand.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// The file's signature as the store keeps it.
    pub stored: Stored,
    /// The file's content, if it could be read.
    pub content: Option<Vec<u8>>,
}

/// What one side's signature holds, as [`compare`] used it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Size in bytes.
    pub size: u64,
    /// Lines (a last line without LF counts).
    pub lines: u64,
    /// Symbols of the signature compared.
    pub symbols: usize,
}

/// What [`compare`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The estimate from the signatures alone.
    pub estimate: Estimate,
    /// Where the files differ, in file order; `None` unless both contents
    /// are at hand (the store keeps no positions).
    pub regions: Option<Vec<Region>>,
    /// git's rename score of the pair in percent (as `R087` shows it),
    /// when both contents are at hand; 100 for the same blob, as git
    /// pairs identical blobs without scoring them.
    pub git_score: Option<u32>,
    /// The two sides' facts.
    pub a: Facts,
    /// The second side's.
    pub b: Facts,
}

/// Compare `a` and `b`. `same_blob` says both are the same object (git's
/// score is then 100% without looking).
pub fn compare(a: &Side, b: &Side, same_blob: bool) -> Comparison {
    // Identical contents are one blob for git, which pairs them by id
    // (100%) without scoring: two files on disk, or a file and its blob.
    let same_blob = same_blob || matches!((&a.content, &b.content), (Some(x), Some(y)) if x == y);
    if let (Some(x), Some(y)) = (&a.content, &b.content) {
        let (sa, sb) = (Signature::new(x), Signature::new(y));
        let facts = |s: &Signature| Facts {
            size: s.size(),
            lines: s.lines(),
            symbols: s.len(),
        };
        let regions = if same_blob {
            Vec::new()
        } else {
            // The regions at the fine level whatever the sizes: the
            // contents are here, and the coarse symbols a large file
            // keeps in the store (one per 64 bytes) miss a chunk edited
            // in place three times in four, the fine ones (one per 16)
            // miss only chunks under 16 bytes.
            let fine = |d: &[u8]| Signature::with_shape(d, &Shape::STORED);
            let (lines_x, lines_y) = (line_ends(x), line_ends(y));
            estimate::regions(&fine(x), &fine(y))
                .into_iter()
                .map(|r| Region {
                    a: exact_lines(r.a, x, &lines_x),
                    b: exact_lines(r.b, y, &lines_y),
                })
                .collect()
        };
        let git_score = if same_blob {
            100
        } else {
            score::percent(score::score(&Spans::new(x), &Spans::new(y), 0))
        };
        return Comparison {
            estimate: estimate::estimate(&sa, &sb),
            regions: Some(regions),
            git_score: Some(git_score),
            a: facts(&sa),
            b: facts(&sb),
        };
    }
    let facts = |s: &Stored| Facts {
        size: s.size(),
        lines: s.lines(),
        symbols: s.len(),
    };
    Comparison {
        estimate: estimate::estimate_stored(&a.stored, &b.stored),
        regions: same_blob.then(Vec::new),
        git_score: same_blob.then_some(100),
        a: facts(&a.stored),
        b: facts(&b.stored),
    }
}

/// Where `data`'s LFs are, ascending.
fn line_ends(data: &[u8]) -> Vec<u64> {
    memchr::memchr_iter(b'\n', data)
        .map(|at| at as u64)
        .collect()
}

/// `span` with its lines those of its bytes in `data` (an empty span: the
/// line it sits on); `lfs` are `data`'s LFs ([`line_ends`]), so that a
/// span's lines are found by a search, not by counting from the start
/// (regions times bytes, for files with thousands of regions).
fn exact_lines(span: Span, data: &[u8], lfs: &[u64]) -> Span {
    let len = data.len() as u64;
    let start = span.start.min(len);
    let end = span.end.clamp(start, len);
    let line_of = |at: u64| lfs.partition_point(|&lf| lf < at) as u64;
    let first_line = line_of(start);
    let last_line = if end > start {
        line_of(end - 1)
    } else {
        first_line
    };
    Span {
        start,
        end,
        first_line,
        last_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::real_text;

    fn side(data: &[u8], with_content: bool) -> Side {
        Side {
            stored: Stored::of(data),
            content: with_content.then(|| data.to_vec()),
        }
    }

    #[test]
    fn git_score_only_with_both_contents() {
        let texts = real_text();
        let (a, b) = (&texts[20], &texts[21]);
        let both = compare(&side(a, true), &side(b, true), false);
        let want = score::percent(score::score(&Spans::new(a), &Spans::new(b), 0));
        assert_eq!(both.git_score, Some(want));
        assert!(both.regions.is_some());
        let one = compare(&side(a, true), &side(b, false), false);
        assert_eq!(one.git_score, None);
        assert_eq!(one.regions, None);
        let none = compare(&side(a, false), &side(b, false), false);
        assert_eq!(one.estimate, none.estimate);
        let same = compare(&side(a, false), &side(a, false), true);
        assert_eq!(same.git_score, Some(100));
        assert_eq!(same.regions, Some(Vec::new()));
    }

    #[test]
    fn exact_lines_hold_the_region_bytes() {
        let texts = real_text();
        let a = texts.iter().find(|t| t.len() > 6000).unwrap();
        // One line in the middle changed.
        let lines: Vec<&[u8]> = a.split_inclusive(|&b| b == b'\n').collect();
        let k = lines.len() / 2;
        let mut b = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if i == k {
                b.extend_from_slice(b"a line that was not there before, long enough to matter\n");
            } else {
                b.extend_from_slice(l);
            }
        }
        let c = compare(&side(a, true), &side(&b, true), false);
        let regions = c.regions.expect("both contents at hand");
        assert!(!regions.is_empty());
        let hit = regions
            .iter()
            .find(|r| r.b.first_line <= k as u64 && r.b.last_line >= k as u64);
        assert!(hit.is_some(), "{regions:?}");
        for r in &regions {
            for (span, data) in [(r.a, &a[..]), (r.b, &b[..])] {
                let before = data[..span.start as usize]
                    .iter()
                    .filter(|&&x| x == b'\n')
                    .count() as u64;
                assert_eq!(span.first_line, before);
                assert!(span.last_line >= span.first_line);
            }
        }
    }
}
