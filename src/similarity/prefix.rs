//! Candidate pairs that cannot miss: prefix filtering over git's chunk
//! buckets (Bayardo, Ma and Srikant, "Scaling up all pairs similarity
//! search", 2007; Xiao et al., PPJoin, 2008).
//!
//! Fingerprints find a file's nearest relatives fast, but they estimate a
//! different quantity from git's score (48-byte windows against a bag of
//! lines), so a source git scores best can sit farther away than others.
//! This index answers the question fingerprints cannot: *which files could
//! possibly score `t` or more against this one?*, with a superset that is
//! provably complete.
//!
//! ## Why it misses nothing
//!
//! Fix one global order of buckets (here: rarest first among the indexed
//! files, ties by bucket number). The *prefix at `t`* of a file `x` of
//! size `|x|` is its buckets in that order, up to and including the first
//! one where the weight held so far exceeds `(1 − t)·|x|`; its *suffix* is
//! the rest, which therefore weighs less than `t·|x|` (the weights of a
//! histogram add up to at most the size: CRs git does not count are in the
//! size only).
//!
//! Take files `x` and `y` whose prefixes at `t` share no bucket, and say
//! `x`'s prefix ends no later in the order than `y`'s. A bucket both files
//! hold that comes no later than the end of `x`'s prefix is then in both
//! prefixes, which is excluded; so every shared bucket is in `x`'s suffix,
//! and git's copied bytes, the sum over shared buckets of the smaller
//! weight, are at most the suffix's weight: `copied < t·|x| ≤ t·max(|x|,
//! |y|)`. git's score `⌊copied·MAX / max(|x|, |y|)⌋` is then below `t`.
//! Hence **every pair scoring `t` or more shares a bucket of both
//! prefixes**, and probing the postings of a file's prefix buckets, keeping
//! the files whose own prefix holds the bucket, finds every such pair.
//! Everything is computed in integers in git's units, so the argument holds
//! to the last unit. A prefix shrinks as `t` grows, so one index built at
//! the lowest threshold ([`PrefixIndex::build`]) answers any higher one: each
//! posting remembers the highest threshold at which its bucket is still in
//! its file's prefix (a posting's `reach`).
//!
//! Containment `c(A in B) = copied / |A|` needs only `A`'s side of the
//! argument: if no bucket of `A`'s prefix at `t` is in `B` at all, `copied`
//! is below `t·|A|`. [`PrefixIndex::probe_containers`] probes an index of
//! every bucket ([`PrefixIndex::build`] at 0) that way.
//!
//! At `t = 0` every pair qualifies (a score is never negative), and no
//! prefix can show it: the probes then return every indexed file.

use rayon::prelude::*;

use crate::similarity::radix;
use crate::similarity::score::{self, MAX_SCORE, Spans};
use crate::similarity::seen::Seen;

/// Number of chunk buckets (git's `HASH_BASE`).
const BUCKETS: usize = 107_927;

/// One file's entry in a bucket's posting list.
#[derive(Clone, Copy, Debug)]
struct Posting {
    /// The file's position among the indexed files.
    file: u32,
    /// The highest threshold (in [`MAX_SCORE`] units) at which the bucket
    /// is still in the file's prefix.
    reach: u32,
}

/// Files indexed by the buckets of their prefixes (see the module
/// documentation).
pub struct PrefixIndex {
    /// Position of each bucket in the global order, rarest first.
    rank: Vec<u32>,
    /// Postings of the bucket at rank `r` are
    /// `postings[starts[r]..starts[r + 1]]`, highest reach first. By rank,
    /// so that a probe walking a file's buckets rarest first reads this
    /// array forwards.
    starts: Vec<u32>,
    /// Buckets no indexed file holds come first in the order: ranks below
    /// this have no postings.
    unheld: u32,
    postings: Vec<Posting>,
    /// Size of each indexed file; 0 for positions not indexed.
    sizes: Vec<u64>,
    /// The threshold the index was built at: probes ask at it or above.
    floor: u32,
}

/// Reusable per-thread state of probes: which files were already
/// proposed and where each sits in the caller's output, and the probe
/// file's buckets in rank order.
#[derive(Default)]
pub struct Probe {
    seen: Seen,
    sorted: RankSorted,
}

impl Probe {
    /// Start a new probe over `n` files; marks of earlier probes are void.
    fn begin(&mut self, n: usize) {
        self.seen.begin(n);
    }

    /// Mark `file` as proposed in this probe; true if it was not yet.
    fn first_time(&mut self, file: u32) -> bool {
        let new = self.seen.position(file as usize).is_none();
        self.seen.insert(file as usize, 0);
        new
    }

    /// Mark `file` as already known, so this probe does not propose it
    /// (no output slot: updates of its reach find none).
    fn exclude(&mut self, file: u32) {
        self.seen.insert(file as usize, u32::MAX);
    }
}

/// The weight held before a bucket still leaves it inside a prefix at `t`
/// of a file of `size` bytes: `before·MAX ≤ (MAX − t)·size`.
fn inside(before: u64, size: u64, t: u32) -> bool {
    u128::from(before) * u128::from(MAX_SCORE)
        <= u128::from(MAX_SCORE - t.min(MAX_SCORE)) * u128::from(size)
}

/// The highest `t` for which [`inside`] holds: `MAX − ⌈before·MAX / size⌉`.
fn reach(before: u64, size: u64) -> u32 {
    let scaled = (u128::from(before) * u128::from(MAX_SCORE)).div_ceil(u128::from(size.max(1)));
    MAX_SCORE.saturating_sub(u32::try_from(scaled).unwrap_or(u32::MAX))
}

/// The global order of buckets every prefix follows: rarest first (by
/// document frequency among the files of one collection), ties by bucket
/// number. Any fixed order makes the module's argument hold; rare buckets
/// first keep prefixes' posting lists short.
#[derive(Clone, Debug)]
pub struct Order {
    /// Position of each bucket in the order.
    rank: Vec<u32>,
    /// The bucket at each position.
    bucket: Vec<u32>,
}

impl Order {
    /// The order of `df[b]` (in how many files bucket `b` occurs),
    /// ascending; `df` shorter than the number of buckets counts the rest
    /// as 0.
    pub fn rarest_first(df: &[u32]) -> Order {
        // A counting sort by frequency, buckets taken in ascending order
        // so that ties stay in it: the order of sorting by (df, bucket),
        // without comparing 107,927 keys on every run.
        let count = |b: usize| df.get(b).copied().unwrap_or(0) as usize;
        let most = (0..BUCKETS).map(count).max().unwrap_or(0);
        let mut next = vec![0u32; most + 2];
        for b in 0..BUCKETS {
            next[count(b) + 1] += 1;
        }
        for c in 0..=most {
            next[c + 1] += next[c];
        }
        let mut bucket = vec![0u32; BUCKETS];
        let mut rank = vec![0u32; BUCKETS];
        for b in 0..BUCKETS {
            let at = &mut next[count(b)];
            bucket[*at as usize] = b as u32;
            rank[b] = *at;
            *at += 1;
        }
        Order { rank, bucket }
    }

    /// A table of document frequencies to fill ([`Order::rarest_first`]),
    /// one counter per bucket.
    pub fn counters() -> Vec<u32> {
        vec![0; BUCKETS]
    }

    /// Every bucket of `s` as a key `rank << 32 | weight`, in the order
    /// (keys sort as plain integers: cheaper than tuples).
    pub fn keys(&self, s: &Spans, out: &mut Vec<u64>) {
        out.clear();
        out.extend(
            s.weights()
                .map(|(b, w)| u64::from(self.rank[b as usize]) << 32 | u64::from(w)),
        );
        out.sort_unstable();
    }

    /// The bucket of a key of [`Order::keys`].
    pub fn bucket(&self, key: u64) -> u32 {
        self.bucket[(key >> 32) as usize]
    }
}

/// The weight of a key of [`Order::keys`].
pub fn weight(key: u64) -> u32 {
    key as u32
}

/// The rank of a key of [`Order::keys`].
pub fn rank(key: u64) -> u32 {
    (key >> 32) as u32
}

/// How many of a file's buckets (`keys` by [`Order::keys`]) make its
/// prefix at `t` (the module documentation's definition, `size` being
/// the file's size): every bucket whose weight before it leaves it
/// inside. Every pair scoring `t` or more shares a bucket of both files'
/// prefixes.
pub fn prefix_len(keys: &[u64], size: u64, t: u32) -> usize {
    let mut before = 0u64;
    for (i, &k) in keys.iter().enumerate() {
        if !inside(before, size, t) {
            return i;
        }
        before += u64::from(weight(k));
    }
    keys.len()
}

impl PrefixIndex {
    /// Index `files` (`None`, or an empty file, is left out) by their
    /// prefixes at `floor`; `floor = 0` indexes every bucket of every file.
    pub fn build(files: &[Option<&Spans>], floor: u32) -> PrefixIndex {
        // The files in a few runs per thread, each run counted and cut
        // into postings on its own, so that every thread builds the
        // index (after a large move it is a sixth of a warm run). Each
        // run has tables of its own, one counter per bucket: few files
        // make one run.
        let run = files
            .len()
            .div_ceil(2 * rayon::current_num_threads())
            .max(FILES_PER_RUN);
        PrefixIndex::build_in_runs(files, floor, run)
    }

    /// [`PrefixIndex::build`] in runs of `run` files.
    fn build_in_runs(files: &[Option<&Spans>], floor: u32, run: usize) -> PrefixIndex {
        let floor = floor.min(MAX_SCORE);
        let run = run.max(1);
        let df = files
            .par_chunks(run)
            .map(|run| {
                let mut df = Order::counters();
                for s in run.iter().flatten() {
                    for b in s.bucket_ids() {
                        df[b as usize] += 1;
                    }
                }
                df
            })
            .reduce_with(|mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += y;
                }
                a
            })
            .unwrap_or_else(Order::counters);
        let Order { rank, .. } = Order::rarest_first(&df);
        let sizes: Vec<u64> = files.iter().map(|s| s.map_or(0, |s| s.size())).collect();
        let mut runs: Vec<Run> = files
            .par_chunks(run)
            .enumerate()
            .map(|(k, files)| Run::cut(files, k * run, &rank, floor))
            .collect();
        // A counting sort by rank: each run's first slot for each rank
        // follows the runs before it, so the runs place their postings
        // side by side, each into slots of its own.
        let unheld = df.iter().filter(|&&n| n == 0).count() as u32;
        let mut starts = vec![0u32; BUCKETS + 1];
        let mut at = 0u32;
        for (r, start) in starts[..BUCKETS].iter_mut().enumerate() {
            *start = at;
            for run in &mut runs {
                let n = run.slots[r];
                run.slots[r] = at;
                at += n;
            }
        }
        starts[BUCKETS] = at;
        let total = at as usize;
        let mut postings: Vec<Posting> = Vec::with_capacity(total);
        let base = Slots(postings.as_mut_ptr());
        runs.par_iter_mut().for_each(|run| {
            for &(r, p) in &run.cut {
                let at = &mut run.slots[r as usize];
                // SAFETY: the runs' slots for rank `r` are disjoint ranges
                // of `0..total` (each run's starts where the previous
                // run's count ends, and the last ends at the next rank's
                // start), and each run takes as many as it counted: every
                // slot below `total`, inside the capacity, is written by
                // exactly one run, once.
                unsafe { base.slot(*at as usize).write(p) };
                *at += 1;
            }
        });
        // SAFETY: every slot below `total` was written just above.
        unsafe { postings.set_len(total) };
        drop(runs);
        // Each rank's list by reach, the ranks in two halves of the
        // postings on two threads.
        let by_reach = |lists: &mut [Posting], ranks: std::ops::Range<usize>| {
            let base = starts[ranks.start] as usize;
            for r in ranks {
                let (from, to) = (starts[r] as usize - base, starts[r + 1] as usize - base);
                // Most ranks hold no posting or one.
                if to - from > 1 {
                    lists[from..to].sort_unstable_by_key(|p| std::cmp::Reverse(p.reach));
                }
            }
        };
        let mid = starts
            .partition_point(|&s| (s as usize) < total / 2)
            .min(BUCKETS);
        let (low, high) = postings.split_at_mut(starts[mid] as usize);
        rayon::join(|| by_reach(low, 0..mid), || by_reach(high, mid..BUCKETS));
        PrefixIndex {
            rank,
            starts,
            unheld,
            postings,
            sizes,
            floor,
        }
    }

    /// Number of positions (indexed or not) the index was built over.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether the index was built over no positions.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The postings of the bucket at rank `r` at threshold `t` and above.
    fn postings_at(&self, r: u32, t: u32) -> &[Posting] {
        if r < self.unheld {
            return &[];
        }
        let list =
            &self.postings[self.starts[r as usize] as usize..self.starts[r as usize + 1] as usize];
        &list[..list.partition_point(|p| p.reach >= t)]
    }

    /// Every indexed file that can score `t` or more against `file` by
    /// git's score (either way round: git's score of two files is
    /// symmetric), appended to `out` once each. `t` below the index's
    /// floor is raised to it: the answer is then complete only for scores
    /// at the floor and up.
    pub fn probe(&self, file: &Spans, t: u32, probe: &mut Probe, out: &mut Vec<u32>) {
        let mut reached = Vec::new();
        self.probe_reach(file, t, &[], probe, &mut reached);
        out.extend(reached.into_iter().map(|(f, _)| f));
    }

    /// [`PrefixIndex::probe`], leaving out the files in `known` (callers
    /// that scored some already), with each file's *reach*: the highest
    /// threshold at which the pair is still proposed (a bucket in both
    /// prefixes at that threshold). A file whose reach is below `u`
    /// scores below `u` (the module documentation's argument at `u`), so
    /// a caller whose threshold rises while it scores the proposals, best
    /// reach first, can stop at the first reach below it.
    pub fn probe_reach(
        &self,
        file: &Spans,
        t: u32,
        known: &[u32],
        probe: &mut Probe,
        out: &mut Vec<(u32, u32)>,
    ) {
        let t = t.max(self.floor).min(MAX_SCORE);
        probe.begin(self.sizes.len());
        for &k in known {
            probe.exclude(k);
        }
        let size = file.size();
        if size == 0 {
            return;
        }
        if t == 0 {
            self.every_file(probe, |i| out.push((i, 0)));
            return;
        }
        let mut sorted = std::mem::take(&mut probe.sorted);
        by_rank(file, &self.rank, &mut sorted);
        for (r, before) in prefix(&sorted.keys, size, t) {
            let mine = reach(before, size);
            for p in self.postings_at(r, t) {
                // git's size filter at `t`: the score is at most the
                // smaller size over the larger.
                if !score::sizes_compatible(self.sizes[p.file as usize], size, t) {
                    continue;
                }
                let r = p.reach.min(mine);
                let f = p.file as usize;
                match probe.seen.position(f) {
                    None => {
                        probe.seen.insert(f, out.len() as u32);
                        out.push((p.file, r));
                    }
                    Some(at) => {
                        if let Some(slot) = out.get_mut(at as usize)
                            && slot.0 == p.file
                        {
                            slot.1 = slot.1.max(r);
                        }
                    }
                }
            }
        }
        probe.sorted = sorted;
    }

    /// At threshold 0 every non-empty file is a candidate: `push` each
    /// one this probe has not seen.
    fn every_file(&self, probe: &mut Probe, mut push: impl FnMut(u32)) {
        for (i, &s) in self.sizes.iter().enumerate() {
            if s > 0 && probe.first_time(i as u32) {
                push(i as u32);
            }
        }
    }

    /// Every indexed file that can hold `t` or more of `part` (Broder's
    /// containment `copied / |part| ≥ t`), appended to `out` once each.
    /// Needs an index built at 0 (every bucket of every file); one built
    /// higher answers only for files whose prefix holds the buckets.
    pub fn probe_containers(&self, part: &Spans, t: u32, probe: &mut Probe, out: &mut Vec<u32>) {
        probe.begin(self.sizes.len());
        let size = part.size();
        if size == 0 {
            return;
        }
        if t == 0 {
            self.every_file(probe, |i| out.push(i));
            return;
        }
        let mut sorted = std::mem::take(&mut probe.sorted);
        by_rank(part, &self.rank, &mut sorted);
        for (r, _) in prefix(&sorted.keys, size, t) {
            for p in self.postings_at(r, 0) {
                if probe.first_time(p.file) {
                    out.push(p.file);
                }
            }
        }
        probe.sorted = sorted;
    }
}

/// The fewest files [`PrefixIndex::build`] gives a run of its own.
const FILES_PER_RUN: usize = 256;

/// One run of files of [`PrefixIndex::build`] cut into postings: each
/// prefix bucket's (rank, posting), and per rank how many of them (then
/// where the run's first posting of the rank goes).
struct Run {
    cut: Vec<(u32, Posting)>,
    slots: Vec<u32>,
}

impl Run {
    /// The postings of `files`, the first at position `first`, by their
    /// prefixes at `floor` under `rank`.
    fn cut(files: &[Option<&Spans>], first: usize, rank: &[u32], floor: u32) -> Run {
        let mut sorted = RankSorted::default();
        // A prefix holds at most all of a file's buckets: room for that
        // many at once, where growing by doubling wrote every posting
        // about twice, into pages touched for the first time (a fifth of
        // a warm `renames` is page faults). Room never written is never
        // touched.
        let most = files.iter().flatten().map(|s| s.bucket_count()).sum();
        let mut run = Run {
            cut: Vec::with_capacity(most),
            slots: vec![0; BUCKETS],
        };
        for (i, s) in files.iter().enumerate() {
            let Some(s) = s.filter(|s| s.size() > 0) else {
                continue;
            };
            by_rank(s, rank, &mut sorted);
            for (r, before) in prefix(&sorted.keys, s.size(), floor) {
                run.slots[r as usize] += 1;
                run.cut.push((
                    r,
                    Posting {
                        file: (first + i) as u32,
                        reach: reach(before, s.size()),
                    },
                ));
            }
        }
        run
    }
}

/// The postings being placed by several runs at once
/// ([`PrefixIndex::build`]).
struct Slots(*mut Posting);

impl Slots {
    /// The pointer to slot `i`. A method, so that closures capture the
    /// whole `Slots`, not its raw pointer.
    ///
    /// # Safety
    /// `i` is within the allocation's capacity.
    unsafe fn slot(&self, i: usize) -> *mut Posting {
        // SAFETY: passed on from this function's contract.
        unsafe { self.0.add(i) }
    }
}

// SAFETY: the runs write disjoint slots (see `PrefixIndex::build`), and
// nothing reads them until every run is done.
unsafe impl Sync for Slots {}

/// The prefix of a file of `size` at threshold `t`, from its keys in
/// rank order ([`by_rank`]): each bucket's rank with the weight of the
/// buckets before it, while that weight stays [`inside`].
fn prefix(keys: &[u64], size: u64, t: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
    keys.iter()
        .map(|&k| split(k))
        .scan(0u64, move |before, (r, w)| {
            if !inside(*before, size, t) {
                return None;
            }
            let at = *before;
            *before += u64::from(w);
            Some((r, at))
        })
}

/// A file's buckets in rank order ([`by_rank`]) and the scratch space
/// sorting them takes, kept from file to file.
#[derive(Clone, Debug, Default)]
struct RankSorted {
    keys: Vec<u64>,
    scratch: Vec<u64>,
}

/// Ranks fit in the radix sort's 17 bits.
const _: () = assert!(BUCKETS as u64 <= radix::KEY_LIMIT);

/// Every bucket of `s` as `rank << 32 | weight`, rarest first, in
/// `out.keys`. A file's ranks are distinct, so ordering by rank alone
/// orders the keys ([`radix::sort`]).
fn by_rank(s: &Spans, rank: &[u32], out: &mut RankSorted) {
    let keys = &mut out.keys;
    keys.clear();
    keys.extend(
        s.weights()
            .map(|(b, w)| u64::from(rank[b as usize]) << 32 | u64::from(w)),
    );
    radix::sort(keys, &mut out.scratch);
}

/// The rank and weight of a key of [`by_rank`].
fn split(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of real text and edited copies of them: the lossless claim
    /// checked against every pair, at several thresholds, both for
    /// git's score and for containment.
    fn corpus() -> Vec<Spans> {
        let texts = crate::testing::real_text();
        let mut files: Vec<Vec<u8>> = texts.iter().take(120).cloned().collect();
        let mut rng = crate::testing::Rng(11);
        for k in 0..120 {
            let mut copy = files[k].clone();
            for _ in 0..1 + rng.below(6) {
                let at = rng.below(copy.len().max(1));
                let cut = (at + 1 + rng.below(400)).min(copy.len());
                copy.drain(at..cut);
                let from = rng.below(files[(k + 1) % 120].len().max(1));
                let piece =
                    &files[(k + 1) % 120][from..(from + 200).min(files[(k + 1) % 120].len())];
                let at = rng.below(copy.len().max(1));
                copy.splice(at..at, piece.iter().copied());
            }
            files.push(copy);
        }
        // Near-identical copies: one byte changed in a long file.
        for k in 0..120 {
            if files[k].len() > 8000 {
                let mut copy = files[k].clone();
                let at = copy.len() / 2;
                copy[at] = b'#';
                files.push(copy);
            }
        }
        // Repetitive content: runs of one character and one line repeated.
        files.push(vec![b'x'; 18_000]);
        files.push(vec![b'x'; 17_000]);
        files.push(b"same line\n".repeat(900));
        files.push(b"same line\n".repeat(1000));
        files.iter().map(|f| Spans::new(f)).collect()
    }

    #[test]
    fn every_pair_at_the_threshold_shares_a_prefix_bucket() {
        let spans = corpus();
        let refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        let index = PrefixIndex::build(&refs, MAX_SCORE / 2);
        let mut probe = Probe::default();
        for pct in [50u32, 60, 75, 90, 99] {
            let t = MAX_SCORE / 100 * pct;
            let mut truth = 0;
            for (j, d) in spans.iter().enumerate() {
                let mut found = Vec::new();
                index.probe_reach(d, t, &[], &mut probe, &mut found);
                for (i, s) in spans.iter().enumerate() {
                    let score = score::score(s, d, t);
                    if i != j && score >= t {
                        truth += 1;
                        let reach = found.iter().find(|f| f.0 == i as u32).map(|f| f.1);
                        assert!(reach.is_some(), "{pct}%: ({i}, {j}) missed");
                        // Proposed up to a threshold no lower than its score.
                        assert!(
                            reach >= Some(score),
                            "{pct}%: ({i}, {j}): {reach:?} < {score}"
                        );
                    }
                }
            }
            // Edited copies and the repetitive files pair at every level.
            assert!(truth >= 10, "{pct}%: only {truth} true pairs");
        }
    }

    #[test]
    fn probes_propose_few_files_beyond_the_true_pairs() {
        let spans = corpus();
        let refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        let index = PrefixIndex::build(&refs, MAX_SCORE / 2);
        let mut probe = Probe::default();
        let mut proposed = 0;
        for d in &spans {
            let mut found = Vec::new();
            index.probe(d, MAX_SCORE / 2, &mut probe, &mut found);
            proposed += found.len();
        }
        let all = spans.len() * spans.len();
        assert!(
            proposed * 10 < all,
            "{proposed} of {all} pairs proposed: the filter prunes nothing"
        );
    }

    #[test]
    fn every_container_at_the_threshold_is_proposed() {
        let spans = corpus();
        let refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        let index = PrefixIndex::build(&refs, 0);
        let mut probe = Probe::default();
        for pct in [30u32, 50, 80] {
            let t = MAX_SCORE / 100 * pct;
            let mut truth = 0;
            for (j, part) in spans.iter().enumerate() {
                let mut found = Vec::new();
                index.probe_containers(part, t, &mut probe, &mut found);
                for (i, whole) in spans.iter().enumerate() {
                    let copied = score::copied(part, whole);
                    let held = u128::from(copied) * u128::from(MAX_SCORE);
                    if i != j && held >= u128::from(t) * u128::from(part.size()) {
                        truth += 1;
                        assert!(found.contains(&(i as u32)), "{pct}%: {j} in {i} missed");
                    }
                }
            }
            assert!(truth >= 100, "{pct}%: only {truth} true pairs");
        }
    }

    /// The radix sort orders every file as a comparison sort of the
    /// same keys does, small files and large, rare ranks and common.
    #[test]
    fn by_rank_sorts_as_a_comparison_sort() {
        let files = corpus();
        let mut df = Order::counters();
        for s in &files {
            for b in s.bucket_ids() {
                df[b as usize] += 1;
            }
        }
        let Order { rank, .. } = Order::rarest_first(&df);
        let mut sorted = RankSorted::default();
        let mut radix_sorted = 0;
        for s in &files {
            by_rank(s, &rank, &mut sorted);
            let mut expected: Vec<u64> = s
                .weights()
                .map(|(b, w)| u64::from(rank[b as usize]) << 32 | u64::from(w))
                .collect();
            expected.sort_unstable();
            assert_eq!(sorted.keys, expected);
            radix_sorted += usize::from(expected.len() >= radix::COMPARISON_BELOW);
        }
        assert!(
            radix_sorted > 100,
            "{radix_sorted} files took the radix path"
        );
        // Ranks at both ends of the range, in one file.
        let reversed: Vec<u32> = (0..BUCKETS as u32).rev().collect();
        for s in files.iter().take(20) {
            by_rank(s, &reversed, &mut sorted);
            assert!(sorted.keys.windows(2).all(|w| w[0] < w[1]));
        }
    }

    /// The counting sort orders buckets as sorting by (frequency,
    /// bucket) does: ties, empty buckets and a short table included.
    #[test]
    fn rarest_first_is_the_order_by_frequency_then_bucket() {
        let mut rng = crate::testing::Rng(11);
        for (len, spread) in [(BUCKETS, 3), (BUCKETS, 1000), (500, 7), (0, 1)] {
            let df: Vec<u32> = (0..len).map(|_| rng.below(spread) as u32).collect();
            let Order { rank, bucket } = Order::rarest_first(&df);
            let mut expected: Vec<u32> = (0..BUCKETS as u32).collect();
            expected.sort_by_key(|&b| (df.get(b as usize).copied().unwrap_or(0), b));
            assert_eq!(bucket, expected);
            for (r, &b) in bucket.iter().enumerate() {
                assert_eq!(rank[b as usize] as usize, r);
            }
        }
    }

    #[test]
    fn reach_is_the_highest_threshold_inside() {
        for (before, size) in [
            (0u64, 10u64),
            (5, 10),
            (9, 10),
            (10, 10),
            (1, 3),
            (2, 7),
            (1234, 99_999),
        ] {
            let r = reach(before, size);
            assert!(inside(before, size, r), "{before}/{size} at {r}");
            if r < MAX_SCORE {
                assert!(!inside(before, size, r + 1), "{before}/{size} at {}", r + 1);
            }
        }
    }

    /// Files cut in many runs, placed side by side, make the index one
    /// run makes: the same lists (ties of reach in any order), the same
    /// order and sizes.
    #[test]
    fn runs_build_the_index_one_run_builds() {
        let spans = corpus();
        let mut refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        // Positions not indexed, inside runs and at a run's edge.
        refs[3] = None;
        refs[7] = None;
        let one = PrefixIndex::build_in_runs(&refs, MAX_SCORE / 2, refs.len());
        let lists = |index: &PrefixIndex| -> Vec<Vec<(u32, u32)>> {
            (0..BUCKETS)
                .map(|r| {
                    let from = index.starts[r] as usize;
                    let to = index.starts[r + 1] as usize;
                    let list = &index.postings[from..to];
                    assert!(list.windows(2).all(|w| w[0].reach >= w[1].reach));
                    let mut list: Vec<(u32, u32)> =
                        list.iter().map(|p| (p.reach, p.file)).collect();
                    list.sort_unstable();
                    list
                })
                .collect()
        };
        let expected = lists(&one);
        assert!(one.postings.len() > 1000, "{}", one.postings.len());
        for run in [1, 7, 64, refs.len() - 1] {
            let many = PrefixIndex::build_in_runs(&refs, MAX_SCORE / 2, run);
            assert_eq!(many.rank, one.rank, "runs of {run}");
            assert_eq!(many.starts, one.starts, "runs of {run}");
            assert_eq!(many.unheld, one.unheld, "runs of {run}");
            assert_eq!(many.sizes, one.sizes, "runs of {run}");
            assert_eq!(lists(&many), expected, "runs of {run}");
        }
    }

    #[test]
    fn zero_threshold_proposes_everything() {
        let spans = corpus();
        let refs: Vec<Option<&Spans>> = spans.iter().map(Some).collect();
        let index = PrefixIndex::build(&refs, 0);
        let mut probe = Probe::default();
        let mut found = Vec::new();
        index.probe(&spans[0], 0, &mut probe, &mut found);
        assert_eq!(found.len(), spans.len());
    }
}
