//! Candidate pairs that cannot miss a link: prefix filtering
//! ([`crate::similarity::prefix`]) over the residual chunk histograms,
//! the files as they are scored (boilerplate taken out), streamed from
//! the histogram store.
//!
//! Blobs are searched in ascending order of residual size (ties by
//! position), each against the blobs before it: every pair is looked at
//! once, from its larger side, and git's size filter makes the partners
//! of a blob one contiguous run of that order (the smaller ones down to
//! `t` of its size). The index is built in segments of that order as
//! the search reaches them, and a segment is dropped once the smallest
//! blob still to search is out of its size window: memory holds the
//! prefixes of one size window, not of every blob, and never every
//! decoded histogram at once.
//!
//! Two passes over the stored histograms: the first counts, for every
//! blob, its residual size and which buckets it holds (their document
//! frequencies fix the order of buckets, rarest first); the second
//! decodes each blob's residual histogram once for its prefix postings,
//! and once more when it is searched (its histogram is then kept for its
//! scoring).
//!
//! A blob `x` proposes every earlier blob `y` that passes git's size
//! filter against it and holds a bucket of `x`'s prefix in its own
//! prefix: by [`crate::similarity::prefix`]'s argument, every pair
//! scoring the threshold or more is among them. One more filter, from
//! PPJoin's positional filtering (Xiao et al., 2008), drops pairs that
//! provably cannot reach the threshold: buckets are met in the global
//! order, so when `x` meets `y` in bucket `b`, every bucket the two
//! share before `b` has been met already (it is in both prefixes), and
//! git's copied bytes are at most what those earlier shared buckets hold
//! (at most `x`'s weight in them, and at most `y`'s weight between its
//! first met bucket and `b`) plus the smaller of the two files' weights
//! from `b` on. A pair whose bound, at any bucket met, is below the
//! threshold scores below it.

use rayon::prelude::*;

use crate::similarity::prefix::{self, Order, prefix_len};
use crate::similarity::score::{self, Buckets, MAX_SCORE, Spans};
use crate::similarity::seen::Seen;
use crate::similarity::store::histograms::{Histograms, Loc};

/// Blobs per segment of the index.
const SEGMENT: usize = 1 << 14;

/// The blobs taking part, in search order, with what the passes found.
pub(super) struct Residuals {
    /// Residual size of each blob position: its size without the
    /// boilerplate buckets; 0 for a blob that takes no part (binary, not
    /// in the store, or nothing left).
    pub(super) size: Vec<u64>,
    /// Positions taking part, ascending by (residual size, position).
    pub(super) seq: Vec<u32>,
    /// Residual sizes in search order (`size[seq[k]]`).
    sizes: Vec<u64>,
    /// The order of buckets prefixes follow.
    order: Order,
}

/// The first pass: residual sizes and document frequencies of the blobs
/// whose histograms `locs` places in `histograms`, each decoded without
/// `common` and dropped (memory stays a few words per blob).
pub(super) fn residuals(
    histograms: &Histograms,
    locs: &[Option<Loc>],
    common: &Buckets,
) -> Residuals {
    // One decoding per blob: its residual size, and its buckets counted.
    let (df, found) = locs
        .par_iter()
        .enumerate()
        .with_min_len(1024)
        .fold(
            || (Order::counters(), Vec::new()),
            |(mut df, mut found), (p, loc)| {
                if let Some(spans) = loc
                    .and_then(|l| histograms.record(l))
                    .and_then(|r| Spans::decode_without(r, common))
                    .filter(|s| !s.is_binary() && s.size() > 0)
                {
                    for b in spans.bucket_ids() {
                        df[b as usize] += 1;
                    }
                    found.push((p as u32, spans.size()));
                }
                (df, found)
            },
        )
        .reduce(
            || (Order::counters(), Vec::new()),
            |(mut df, mut found), (other, more)| {
                for (x, y) in df.iter_mut().zip(other) {
                    *x += y;
                }
                found.extend(more);
                (df, found)
            },
        );
    let mut size = vec![0u64; locs.len()];
    for (p, s) in found {
        size[p as usize] = s;
    }
    let mut seq: Vec<u32> = (0..size.len() as u32)
        .filter(|&p| size[p as usize] > 0)
        .collect();
    seq.sort_unstable_by_key(|&p| (size[p as usize], p));
    let sizes = seq.iter().map(|&p| size[p as usize]).collect();
    Residuals {
        size,
        seq,
        sizes,
        order: Order::rarest_first(&df),
    }
}

impl Residuals {
    /// The first search position whose blob can pair with one of
    /// residual size `s` at `t` (git's size filter: at least `t` of `s`).
    pub(super) fn window_start(&self, s: u64, t: u32) -> usize {
        self.sizes
            .partition_point(|&y| y < s && !score::sizes_compatible(y, s, t))
    }
}

/// How far below the threshold the indexed prefixes reach ([`MAX_SCORE`]
/// units): prefixes are taken at `t - DEPTH`, a little longer than the
/// shortest that finds every pair, so that a pair must share more than a
/// bucket or two to survive the overlap bound ([`Index::probe`]).
/// Measured on git.git's 30,000-file tree (`benches/groups.sh`, warm,
/// CPU): 0, 10.1 s (1.4 million pairs scored); 2.5%, 4.2 s; 5%, 4.0 s;
/// 10%, 4.7 s; 20%, 5.7 s; the same groups at each.
const DEPTH: u32 = MAX_SCORE / 20;

/// One blob's entry in a bucket's postings: its search position and its
/// weight in the bucket.
#[derive(Clone, Copy)]
struct Posting {
    k: u32,
    w: u32,
}

/// The postings of the prefixes of the blobs at search positions
/// `start..end`, by bucket, ascending by position within a bucket.
struct Segment {
    start: usize,
    end: usize,
    /// Postings of bucket `b` are `postings[starts[b]..starts[b + 1]]`.
    starts: Vec<u32>,
    postings: Vec<Posting>,
}

/// A blob's residual histogram, as searched and scored.
pub(super) struct Blob {
    /// Its position.
    pub(super) p: usize,
    /// Its residual size.
    pub(super) size: u64,
    /// Its histogram without the boilerplate buckets.
    pub(super) spans: Spans,
}

/// A blob's prefix: its buckets and weights, the rank of its last bucket
/// in the order, and the weight of the buckets after it (its suffix).
struct Prefix {
    buckets: Vec<(u32, u32)>,
    last: u32,
    suffix: u64,
}

/// The prefix index over the blobs searched so far (see the module
/// documentation): segments built ahead of the search and dropped behind
/// its size window.
pub(super) struct Index<'a> {
    pub(super) res: &'a Residuals,
    histograms: &'a Histograms,
    locs: &'a [Option<Loc>],
    common: &'a Buckets,
    /// The threshold.
    t: u32,
    /// The threshold prefixes are taken at.
    depth: u32,
    segments: std::collections::VecDeque<Segment>,
    /// Search positions below this have their postings built.
    built: usize,
    /// For each built search position, the rank of its prefix's last
    /// bucket and its suffix's weight.
    last: Vec<u32>,
    suffix: Vec<u64>,
}

/// How many pairs a probe met and how many it proposed.
#[derive(Clone, Copy, Default)]
pub(super) struct Met {
    /// Pairs sharing a prefix bucket within the size window.
    pub(super) shared: usize,
    /// Of those, pairs the overlap bound did not rule out.
    pub(super) proposed: usize,
}

impl<'a> Index<'a> {
    /// An index at threshold `t` ([`MAX_SCORE`] units, above 0) over the
    /// blobs of `res`, whose stored histograms `locs` places.
    pub(super) fn new(
        res: &'a Residuals,
        histograms: &'a Histograms,
        locs: &'a [Option<Loc>],
        common: &'a Buckets,
        t: u32,
    ) -> Index<'a> {
        let t = t.clamp(1, MAX_SCORE);
        Index {
            res,
            histograms,
            locs,
            common,
            t,
            depth: t.saturating_sub(DEPTH),
            segments: std::collections::VecDeque::new(),
            built: 0,
            last: Vec::new(),
            suffix: Vec::new(),
        }
    }

    /// The residual histogram of the blob at search position `k`.
    pub(super) fn blob(&self, k: usize) -> Option<Blob> {
        let p = self.res.seq[k] as usize;
        let spans = self.locs[p]
            .and_then(|l| self.histograms.record(l))
            .and_then(|r| Spans::decode_without(r, self.common))?;
        Some(Blob {
            p,
            size: spans.size(),
            spans,
        })
    }

    /// The stored record of the blob at position `p` (whole histogram,
    /// boilerplate included: [`Spans::copied_stored`] ignores it).
    pub(super) fn record(&self, p: usize) -> Option<&[u8]> {
        self.locs[p].and_then(|l| self.histograms.record(l))
    }

    /// Make the index ready to search positions `from..to`: postings
    /// built through `to`, segments no blob from `from` on can pair with
    /// dropped.
    pub(super) fn prepare(&mut self, from: usize, to: usize) {
        let n = self.res.seq.len();
        while self.built < to.min(n) {
            let end = (self.built + SEGMENT).min(n);
            let segment = self.segment(self.built, end);
            self.segments.push_back(segment);
            self.built = end;
        }
        if let Some(&smallest) = self.res.sizes.get(from) {
            let lo = self.res.window_start(smallest, self.t);
            while self.segments.front().is_some_and(|s| s.end <= lo) {
                self.segments.pop_front();
            }
        }
    }

    /// The prefix of `spans` at the index's depth.
    fn prefix(&self, spans: &Spans, keys: &mut Vec<u64>) -> Prefix {
        let order = &self.res.order;
        order.keys(spans, keys);
        let len = prefix_len(keys, spans.size(), self.depth);
        Prefix {
            buckets: keys[..len]
                .iter()
                .map(|&k| (order.bucket(k), prefix::weight(k)))
                .collect(),
            last: len.checked_sub(1).map_or(0, |i| prefix::rank(keys[i])),
            suffix: keys[len..]
                .iter()
                .map(|&k| u64::from(prefix::weight(k)))
                .sum(),
        }
    }

    /// The postings of the prefixes of positions `start..end`.
    fn segment(&mut self, start: usize, end: usize) -> Segment {
        let this = &*self;
        let prefixes: Vec<Prefix> = (start..end)
            .into_par_iter()
            .with_min_len(64)
            .map_init(Vec::new, |sorted, k| match this.blob(k) {
                Some(blob) => this.prefix(&blob.spans, sorted),
                None => Prefix {
                    buckets: Vec::new(),
                    last: 0,
                    suffix: 0,
                },
            })
            .collect();
        let mut starts = vec![0u32; Order::counters().len() + 1];
        for p in &prefixes {
            for &(b, _) in &p.buckets {
                starts[b as usize + 1] += 1;
            }
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut fill = starts.clone();
        let total = starts.last().copied().unwrap_or(0) as usize;
        let mut postings = vec![Posting { k: 0, w: 0 }; total];
        for (i, p) in prefixes.iter().enumerate() {
            for &(b, w) in &p.buckets {
                let at = &mut fill[b as usize];
                postings[*at as usize] = Posting {
                    k: (start + i) as u32,
                    w,
                };
                *at += 1;
            }
            self.last.push(p.last);
            self.suffix.push(p.suffix);
        }
        Segment {
            start,
            end,
            starts,
            postings,
        }
    }

    /// Every earlier blob (search position below `k`) that can score the
    /// threshold or more against `x` (at search position `k`), appended
    /// to `out` as positions, once each.
    ///
    /// Every such blob shares a bucket of both prefixes (they are taken
    /// at a threshold no higher than `t`). The bound: say `x`'s prefix
    /// ends no later in the order than `y`'s (else swap the names). A
    /// bucket both hold up to the end of `x`'s prefix is in both prefixes
    /// and met here; every other bucket they share is in `x`'s suffix.
    /// git's copied bytes are therefore at most the smaller weights summed
    /// over the buckets met, plus the weight of `x`'s suffix; a pair whose
    /// bound is under the threshold is not proposed.
    pub(super) fn probe(&self, k: usize, x: &Blob, state: &mut Probe, out: &mut Vec<u32>) -> Met {
        let t = self.t;
        let lo = self.res.window_start(x.size, t);
        state.begin(self.res.seq.len());
        let mut keys = std::mem::take(&mut state.keys);
        let mine = self.prefix(&x.spans, &mut keys);
        state.keys = keys;
        let segments: Vec<&Segment> = self
            .segments
            .iter()
            .filter(|s| s.end > lo && s.start < k)
            .collect();
        // A blob first met at bucket `b` of `x`'s prefix holds none of the
        // prefix buckets before `b` (had it held one, that bucket, earlier
        // in the order than `b`, would be in its prefix too, and met
        // there). What it can share with `x` is then at most `x`'s weight
        // from `b` on: `left` (the prefix from `b`) plus `x`'s suffix,
        // which weighs at most `depth·|x|`. When `left` is under
        // `(t − depth)·|x|` the pair cannot reach `t·|x| ≤ t·max(|x|,
        // |y|)`: from there on only the blobs already met are followed.
        let mut left: u64 = mine.buckets.iter().map(|&(_, w)| u64::from(w)).sum();
        let opening = u128::from(t - self.depth) * u128::from(x.size);
        for &(b, w) in &mine.buckets {
            let open = u128::from(left) * u128::from(MAX_SCORE) >= opening;
            left -= u64::from(w);
            for s in &segments {
                let list =
                    &s.postings[s.starts[b as usize] as usize..s.starts[b as usize + 1] as usize];
                let from = list.partition_point(|p| (p.k as usize) < lo);
                let to = list.partition_point(|p| (p.k as usize) < k);
                for p in &list[from..to] {
                    let j = p.k as usize;
                    let at = match state.seen.position(j) {
                        Some(at) => at as usize,
                        None if !open => continue,
                        None => {
                            let at = state.found.len();
                            state.seen.insert(j, at as u32);
                            state.found.push((p.k, 0));
                            at
                        }
                    };
                    state.found[at].1 += u64::from(w.min(p.w));
                }
            }
        }
        let mut met = Met {
            shared: state.found.len(),
            proposed: 0,
        };
        for &(j, held) in &state.found {
            let j = j as usize;
            let suffix = if mine.last <= self.last[j] {
                mine.suffix
            } else {
                self.suffix[j]
            };
            if reaches(held + suffix, x.size.max(self.res.sizes[j]), t) {
                met.proposed += 1;
                out.push(self.res.seq[j]);
            }
        }
        met
    }
}

/// Whether `copied` bytes can make a score of `t` or more against a
/// larger file of `larger` bytes: git's `⌊copied·MAX / larger⌋ ≥ t`.
pub(super) fn reaches(copied: u64, larger: u64, t: u32) -> bool {
    u128::from(copied) * u128::from(MAX_SCORE) >= u128::from(t) * u128::from(larger)
}

/// The fewest copied bytes that make a score of `t` against a larger
/// file of `larger` bytes.
pub(super) fn needed(larger: u64, t: u32) -> u64 {
    let n = (u128::from(t) * u128::from(larger)).div_ceil(u128::from(MAX_SCORE));
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Reusable per-thread state of probes.
#[derive(Default)]
pub(super) struct Probe {
    seen: Seen,
    keys: Vec<u64>,
    /// Candidates met: search position, smaller weights summed over the
    /// buckets met.
    found: Vec<(u32, u64)>,
}

impl Probe {
    fn begin(&mut self, n: usize) {
        self.seen.begin(n);
        self.found.clear();
    }
}
