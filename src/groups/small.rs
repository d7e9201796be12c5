//! Candidate pairs among small files, found without fingerprints and
//! without loss.
//!
//! A fingerprint of a small file is noisy (a 300-byte file has about 250
//! windows of 48 bytes, and one changed line touches a fifth of them), so
//! small pairs at 99% can sit at chance distance. Small files are cheap to
//! read, so their pairs come from their chunk histograms instead, by
//! prefix filtering (Bayardo, Ma and Srikant, "Scaling up all pairs
//! similarity search", 2007): order buckets rarest first; a file's prefix
//! is its rarest buckets holding more than `1 - t` of its bytes. If files
//! A and B share no bucket of A's prefix, at most `size(A) - prefix` bytes
//! of A are copied, less than `t * size(A) <= t * max(size(A), size(B))`,
//! so the pair scores under `t`. Every pair at `t` therefore shares a
//! bucket of one file's prefix: proposing exactly those pairs misses none.

use std::collections::HashMap;

use crate::similarity::score::{self, MAX_SCORE, Spans};

/// Files this small or smaller (in bytes, after boilerplate is taken out)
/// get their pairs from [`pairs`], whatever their fingerprints say.
pub const SMALL: u64 = 1024;

/// The largest file that can pair with a [`SMALL`] one at `min_score`
/// (git's size filter): the files [`pairs`] must see.
pub fn reach(min_score: u32) -> u64 {
    if min_score == 0 {
        return u64::MAX;
    }
    SMALL * u64::from(MAX_SCORE) / u64::from(min_score)
}

/// Every pair `(i, j)` (`i < j`, positions in `spans`) that can score
/// `min_score` or more and in which the smaller file is at most
/// [`SMALL`] bytes: a superset of the pairs at `min_score`, lossless.
/// `None` entries (binary files) never pair.
pub fn pairs(spans: &[Option<&Spans>], min_score: u32) -> Vec<(usize, usize)> {
    // Document frequency of each bucket among these files: rare buckets
    // first keeps prefixes short and their posting lists shorter.
    let mut df: HashMap<u32, u32> = HashMap::new();
    for s in spans.iter().flatten() {
        for b in s.bucket_ids() {
            *df.entry(b).or_default() += 1;
        }
    }
    let rank = |b: u32| (df.get(&b).copied().unwrap_or(0), b);
    let keep = u64::from(MAX_SCORE - min_score.min(MAX_SCORE));
    let mut postings: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, s) in spans.iter().enumerate() {
        let Some(s) = s else { continue };
        if s.size() == 0 || s.size() > SMALL {
            continue;
        }
        let mut buckets: Vec<(u32, u32)> = s.weights().collect();
        buckets.sort_unstable_by_key(|&(b, _)| rank(b));
        // The prefix: rarest buckets until they hold more than (1 - t)
        // of the file (in MAX_SCORE units, to stay exact).
        let mut held: u64 = 0;
        for (b, w) in buckets {
            postings.entry(b).or_default().push(i);
            held += u64::from(w);
            if held * u64::from(MAX_SCORE) > keep * s.size() {
                break;
            }
        }
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (j, s) in spans.iter().enumerate() {
        let Some(s) = s else { continue };
        if s.size() == 0 {
            continue;
        }
        for b in s.bucket_ids() {
            for &i in postings.get(&b).map_or(&[][..], Vec::as_slice) {
                if i != j {
                    let (x, y) = (i.min(j), i.max(j));
                    let small = spans[x]
                        .map_or(0, Spans::size)
                        .min(spans[y].map_or(0, Spans::size));
                    if small > 0
                        && score::sizes_compatible(
                            spans[x].map_or(0, Spans::size),
                            spans[y].map_or(0, Spans::size),
                            min_score,
                        )
                    {
                        out.push((x, y));
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefix filtering misses no pair that scores at the threshold:
    /// every pair of small real files (and edited copies) checked
    /// exhaustively.
    #[test]
    fn no_pair_at_the_threshold_is_missed() {
        let texts = crate::testing::real_text();
        let mut files: Vec<Vec<u8>> = texts
            .iter()
            .map(|t| t[..t.len().min(SMALL as usize - 100)].to_vec())
            .take(150)
            .collect();
        let mut rng = crate::testing::Rng(5);
        for k in 0..150 {
            let mut copy = files[k].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(copy.len());
                copy.insert(at, b'\n');
                let at = rng.below(copy.len());
                copy.drain(at..(at + 40).min(copy.len()));
            }
            files.push(copy);
        }
        let spans: Vec<Spans> = files.iter().map(|f| Spans::new(f)).collect();
        let refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        for pct in [50u32, 80, 90] {
            let t = MAX_SCORE / 100 * pct;
            let proposed = pairs(&refs, t);
            let mut truth = 0;
            for i in 0..spans.len() {
                for j in i + 1..spans.len() {
                    let small = spans[i].size().min(spans[j].size());
                    if small <= SMALL && score::score(&spans[i], &spans[j], t) >= t {
                        truth += 1;
                        assert!(
                            proposed.binary_search(&(i, j)).is_ok(),
                            "{pct}%: ({i}, {j})"
                        );
                    }
                }
            }
            assert!(truth >= 10, "{pct}%: only {truth} true pairs");
        }
    }
}
