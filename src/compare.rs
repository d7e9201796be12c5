//! Two files compared from their Coates signatures
//! ([`crate::similarity::signature`]): the estimated edit distance and
//! similarity, containment either way, and where they differ, as byte
//! and line ranges of both; git's exact score beside the estimate when
//! both contents are at hand.
//!
//! Only the signatures are needed: they come from a store (this
//! repository's, another's), so two files compare where their blobs are
//! absent (a blob-less partial clone whose store was filled elsewhere).
//! A content at hand makes the line ranges exact (each range's bytes
//! mapped to lines) and, with both, gives git's score.

use crate::similarity::score::{self, Spans};
use crate::similarity::signature::Signature;
use crate::similarity::signature::estimate::{self, Estimate, Region, Span};

/// One side of a comparison: its signature, and its content when at hand.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// The file's signature.
    pub signature: Signature,
    /// The file's content, if it could be read.
    pub content: Option<Vec<u8>>,
}

/// What [`compare`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The estimate from the signatures alone.
    pub estimate: Estimate,
    /// Where the files differ, in file order.
    pub regions: Vec<Region>,
    /// git's rename score of the pair in percent (as `R087` shows it),
    /// when both contents are at hand; 100 for the same blob, as git
    /// pairs identical blobs without scoring them.
    pub git_score: Option<u32>,
}

/// Compare `a` and `b`. `same_blob` says both are the same object (git's
/// score is then 100% without looking).
pub fn compare(a: &Side, b: &Side, same_blob: bool) -> Comparison {
    let estimate = estimate::estimate(&a.signature, &b.signature);
    let mut regions = if same_blob {
        Vec::new()
    } else {
        estimate::regions(&a.signature, &b.signature)
    };
    for r in &mut regions {
        if let Some(data) = &a.content {
            r.a = exact_lines(r.a, data);
        }
        if let Some(data) = &b.content {
            r.b = exact_lines(r.b, data);
        }
    }
    let git_score = if same_blob {
        Some(100)
    } else {
        match (&a.content, &b.content) {
            (Some(x), Some(y)) => Some(score::percent(score::score(
                &Spans::new(x),
                &Spans::new(y),
                0,
            ))),
            _ => None,
        }
    };
    Comparison {
        estimate,
        regions,
        git_score,
    }
}

/// `span` with its lines those of its bytes in `data` (an empty span: the
/// line it sits on).
fn exact_lines(span: Span, data: &[u8]) -> Span {
    let len = data.len() as u64;
    let start = span.start.min(len);
    let end = span.end.clamp(start, len);
    let line_of = |at: u64| data[..at as usize].iter().filter(|&&b| b == b'\n').count() as u64;
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
            signature: Signature::new(data),
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
        let one = compare(&side(a, true), &side(b, false), false);
        assert_eq!(one.git_score, None);
        assert_eq!(one.estimate, both.estimate);
        let same = compare(&side(a, false), &side(a, false), true);
        assert_eq!(same.git_score, Some(100));
        assert!(same.regions.is_empty());
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
        assert!(!c.regions.is_empty());
        let hit = c
            .regions
            .iter()
            .find(|r| r.b.first_line <= k as u64 && r.b.last_line >= k as u64);
        assert!(hit.is_some(), "{:?}", c.regions);
        for r in &c.regions {
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
