//! Every group of similar files in a collection: Manber's sif in its "all
//! against all" mode (`git simm groups`).
//!
//! A group is a connected set of files, linked by pairs whose exact git
//! score (the rename score, computed as [`score::score`] computes it for
//! `renames`) is at least the threshold. Every link reported was scored
//! exactly, and the groups are those exhaustive scoring of every pair
//! would give (below).
//!
//! 1. Files with the same blob are one node: exact copies group without
//!    scoring.
//! 2. Candidate pairs of distinct blobs come from a lossless search
//!    (`groups/search.rs`): prefix filtering over git's chunk buckets
//!    ([`crate::similarity::prefix`], whose documentation proves that
//!    every pair scoring the threshold or more shares a bucket of both
//!    files' prefixes), within git's size filter, less the pairs a
//!    positional bound proves to score under the threshold. No pair that
//!    can link is left out, whatever the fingerprints say: a shuffled
//!    copy, a copy behind a long shared skeleton, or a repetitive file
//!    whose fingerprint sits far from its partner's are proposed like any
//!    other.
//! 3. Candidates are scored exactly from the chunk histograms the
//!    histogram store keeps (those it lacks are read first in one pass in
//!    pack order, each blob once, and stored). Fingerprints keep the job
//!    they are good at, the order: each blob's candidates are scored
//!    nearest fingerprint first, and a pair whose files are already
//!    connected is not scored (it could only join what is joined), so a
//!    cluster of n versions costs about n scores, not n²/2. Links at the
//!    threshold join components (union-find).
//! 4. Each group gets a representative (the member with the most links,
//!    then the largest, then the first path) and every member's score
//!    against it; waste is the bytes of every member but the
//!    representative, what keeping one copy would save.
//!
//! ### Why no group misses a file
//!
//! A group is a connected component of the graph whose edges are the
//! pairs of distinct blobs scoring the threshold or more (and whose nodes
//! are blobs: paths of one blob are one node). Every such edge is a
//! candidate of the search (step 2, proven there). Every candidate is
//! either scored, and linked when it reaches the threshold, or skipped
//! because its two blobs are already connected by links, each an edge of
//! the graph. So every edge ends with its two blobs in one component of
//! the links, and every link is an edge: the components of the links are
//! exactly the components of the graph, the groups exhaustive scoring of
//! every pair would give ([`Options::every_pair`]).
//!
//! Boilerplate ([`common`]) is taken out of both files of every pair
//! before scoring unless [`Options::ignore_common`] is off; the search
//! runs on the same histograms without it (the residuals), so a file
//! behind a long header and a copy of it without (or behind another) are
//! proposed although their whole files are far apart.

mod build;
pub mod common;
mod search;
mod verify;

use build::{build_group, representative};
use verify::{BATCH, Blobs, Scorer, link};

use std::collections::HashMap;

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::compute::{self, ComputeError};
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Buckets, MAX_SCORE, Spans};
use crate::similarity::store::{Store, StoreError};

pub use common::Common;

/// One file to group: where it is and its blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// Its path (for `--all`, one path the blob appears at).
    pub path: Vec<u8>,
    /// Its blob (for a work-tree file, the id its content would have).
    pub id: ObjectId,
}

/// Options of [`find_groups`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The lowest score that links two files ([`MAX_SCORE`] units, more
    /// than 0).
    pub min_score: u32,
    /// Files smaller than this (in bytes) are left out; empty files always
    /// are.
    pub min_size: u64,
    /// Take boilerplate ([`common`]) out of the exact score.
    pub ignore_common: bool,
    /// The share of files a chunk must exceed to be boilerplate.
    pub common_share: f64,
    /// Bytes of decoded chunk histograms kept in memory between batches
    /// ([`DEFAULT_CACHE_BYTES`]; `simm.groupCacheLimit`).
    pub cache_bytes: usize,
    /// Read the text of one chunk of each boilerplate bucket
    /// ([`Common::examples`]), to show it.
    pub show_common: bool,
    /// Score every pair git's size filter lets through (on the sizes
    /// without boilerplate), connected or not, and report every pair at
    /// the threshold as a link: the exhaustive ground truth tests and
    /// benches compare against.
    pub every_pair: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_score: DEFAULT_MIN_SCORE,
            min_size: DEFAULT_MIN_SIZE,
            ignore_common: true,
            common_share: common::DEFAULT_SHARE,
            cache_bytes: DEFAULT_CACHE_BYTES,
            show_common: false,
            every_pair: false,
        }
    }
}

/// The default [`Options::cache_bytes`]: 512 MiB. Decoded histograms are
/// kept between batches of pairs up to this many bytes, then dropped
/// (each batch decodes what it needs again, from the memory-mapped
/// store), so the memory they take is this plus one batch's. A limit like
/// git's `core.deltaBaseCacheLimit`, memory against repeated decoding;
/// measured on git.git's 100,000-file tree, warm (`benches/groups.sh`,
/// load 3.5): 512 MiB 2.4-3.0 s wall, 3.5 s CPU, 614 MB RSS; 256 MiB 4.0
/// s, 4.0 s CPU, 512 MB; 128 MiB 4.1 s, 4.2 s CPU, 410 MB; 0 (only the
/// batch being scored) 4.2 s, 4.2 s CPU, 353 MB. Pairs come nearest first,
/// not grouped by blob, so a smaller cache decodes the same histograms
/// many times.
pub const DEFAULT_CACHE_BYTES: usize = 512 << 20;

/// The default threshold: 80%.
pub const DEFAULT_MIN_SCORE: u32 = MAX_SCORE / 5 * 4;

/// The default smallest file: the smallest a fingerprint is taken of
/// (smaller files are too short to be worth a group, and would have to
/// be compared with every file of their size).
pub const DEFAULT_MIN_SIZE: u64 = 192;

/// One file of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its path.
    pub path: Vec<u8>,
    /// Its blob.
    pub id: ObjectId,
    /// Its size in bytes.
    pub size: u64,
    /// Its score against the group's representative ([`MAX_SCORE`] for
    /// the representative and its exact copies).
    pub score: u32,
}

/// A verified link between two distinct blobs of a group, by member
/// position (the first member holding each blob).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// One member.
    pub a: usize,
    /// The other.
    pub b: usize,
    /// Their exact score, at least the threshold.
    pub score: u32,
}

/// A group of similar files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The representative first, then by score (highest first), then path.
    pub members: Vec<Member>,
    /// The scored pairs that joined the group (a spanning set: pairs of
    /// files already joined were not scored); exact copies need none.
    pub links: Vec<Link>,
    /// Bytes of every member but the representative.
    pub waste: u64,
}

/// What [`find_groups`] did, so a short answer is never mistaken for a
/// complete search.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Files given.
    pub files: usize,
    /// Files left out as smaller than [`Options::min_size`] (or empty).
    pub too_small: usize,
    /// Bytes of the files considered (each path counted).
    pub bytes: u64,
    /// Files left out as binary (git's NUL rule) among those read.
    pub binary: usize,
    /// Distinct blobs considered.
    pub blobs: usize,
    /// Pairs the prefix index proposed: within git's size filter, sharing
    /// a bucket of both prefixes, not ruled out by the positional bound
    /// (`groups/search.rs`, proven there).
    pub candidate_pairs: usize,
    /// Pairs sharing a prefix bucket within the size filter that the
    /// positional bound proved to score under the threshold.
    pub filtered_pairs: usize,
    /// Pairs scored exactly.
    pub scored_pairs: usize,
    /// Candidate pairs not scored because their files were already
    /// connected.
    pub connected_pairs: usize,
    /// Scored pairs at or above the threshold.
    pub linked_pairs: usize,
    /// Blobs read because the histogram store lacked their chunk
    /// histograms (each at most once; 0 on a warm store).
    pub blobs_read: usize,
    /// Fingerprints taken from the store vs computed now.
    pub fingerprints: compute::Outcome,
}

/// The error returned by [`find_groups`].
#[derive(Debug, thiserror::Error)]
pub enum GroupsError {
    /// A blob could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Fingerprints could not be computed or stored.
    #[error(transparent)]
    Compute(#[from] ComputeError),
    /// Fingerprints of work-tree files could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
}

/// What [`find_groups`] found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// The groups, most waste first.
    pub groups: Vec<Group>,
    /// The boilerplate taken out of scores (empty without
    /// [`Options::ignore_common`]).
    pub common: Common,
    /// Counts of the work.
    pub outcome: Outcome,
}

/// Blob contents the object database does not have (work-tree files), by
/// the id they would have.
pub type Contents = HashMap<ObjectId, Vec<u8>>;

/// The groups of similar files among `files`. `contents` holds what the
/// object database lacks. `feedback` sees the fingerprinting and the
/// scoring, and its flag stops both.
pub fn find_groups(
    repo: &Repo,
    store: &mut Store,
    files: &[File],
    contents: &Contents,
    opts: &Options,
    feedback: &Feedback,
) -> Result<Found, GroupsError> {
    let mut outcome = Outcome {
        files: files.len(),
        ..Outcome::default()
    };
    // Distinct blobs, each with the files holding it.
    let mut ids: Vec<ObjectId> = files.iter().map(|f| f.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let sketches = sketches(repo, store, &ids, contents, feedback, &mut outcome)?;
    let size_of: HashMap<ObjectId, u64> = ids
        .iter()
        .zip(&sketches)
        .map(|(&id, s)| (id, s.size))
        .collect();
    let mut blobs: Vec<(ObjectId, Sketch)> = Vec::with_capacity(ids.len());
    for (&id, &s) in ids.iter().zip(&sketches) {
        if s.size > 0 && s.size >= opts.min_size {
            blobs.push((id, s));
        }
    }
    outcome.too_small = files
        .iter()
        .filter(|f| {
            size_of
                .get(&f.id)
                .is_none_or(|&s| s == 0 || s < opts.min_size)
        })
        .count();
    outcome.blobs = blobs.len();
    outcome.bytes = files
        .iter()
        .filter_map(|f| size_of.get(&f.id))
        .filter(|&&s| s > 0 && s >= opts.min_size)
        .sum();
    feedback.trace("groups: fingerprints");

    let reader = Blobs {
        repo,
        contents,
        feedback,
    };
    let blob_ids: Vec<ObjectId> = blobs.iter().map(|&(id, _)| id).collect();
    let prints: Vec<Sketch> = blobs.iter().map(|&(_, s)| s).collect();
    let mut scorer = Scorer {
        reader: &reader,
        ids: &blob_ids,
        common: Buckets::default(),
        histograms: store.histograms()?,
        locs: vec![None; blob_ids.len()],
        cache: HashMap::new(),
        cache_bytes: 0,
        budget: opts.cache_bytes,
    };
    let common = if opts.ignore_common && !blobs.is_empty() {
        common_of(&mut scorer, opts, &mut outcome)?
    } else {
        Common::default()
    };
    scorer.common = Buckets::new(&common.buckets);
    feedback.trace("groups: boilerplate counted");

    // Every blob's histogram in the store (those it lacks read once, in
    // pack order): the search streams them all.
    let all: Vec<usize> = (0..blob_ids.len()).collect();
    outcome.blobs_read += scorer.ensure(&all)?;
    feedback.trace("groups: histograms ready");
    let (mut sets, links) = link(&scorer, &prints, opts, &mut outcome)?;
    feedback.trace("groups: pairs scored");

    // Files by blob, for blobs still in play.
    let mut paths_of: HashMap<ObjectId, Vec<&[u8]>> = HashMap::new();
    for f in files {
        paths_of.entry(f.id).or_default().push(&f.path);
    }
    // Components: blob positions by root, keeping those with two files or
    // more (two blobs, or one blob at two paths).
    let mut members_of: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..blob_ids.len() {
        members_of.entry(sets.find(i)).or_default().push(i);
    }
    let mut components: Vec<Vec<usize>> = members_of
        .into_values()
        .filter(|c| c.len() > 1 || paths_of.get(&blob_ids[c[0]]).is_some_and(|p| p.len() > 1))
        .collect();
    components.sort_unstable();
    // Exact copies of a binary blob are not a group (nothing else binary
    // is: a pair with a binary side never links).
    let singles: Vec<ObjectId> = components
        .iter()
        .filter(|c| c.len() == 1)
        .map(|c| blob_ids[c[0]])
        .collect();
    let single_positions: Vec<usize> = components
        .iter()
        .filter(|c| c.len() == 1)
        .map(|c| c[0])
        .collect();
    outcome.blobs_read += scorer.ensure(&single_positions)?;
    let binary_single: std::collections::HashSet<ObjectId> = singles
        .iter()
        .zip(&single_positions)
        .filter(|&(_, &p)| scorer.whole(p).is_none_or(|s| s.is_binary()))
        .map(|(&id, _)| id)
        .collect();
    outcome.binary += binary_single
        .iter()
        .map(|id| paths_of.get(id).map_or(0, Vec::len))
        .sum::<usize>();
    components.retain(|c| c.len() > 1 || !binary_single.contains(&blob_ids[c[0]]));

    let mut links_of: HashMap<usize, Vec<(usize, usize, u32)>> = HashMap::new();
    for &(a, b, s) in &links {
        links_of.entry(sets.find(a)).or_default().push((a, b, s));
    }
    // Representatives first (they need no histogram), then every
    // member's score against its representative in parallel batches,
    // then the groups.
    let component_links: Vec<Vec<(usize, usize, u32)>> = components
        .iter()
        .map(|c| links_of.remove(&sets.find(c[0])).unwrap_or_default())
        .collect();
    let reps: Vec<usize> = components
        .iter()
        .zip(&component_links)
        .map(|(c, l)| representative(&scorer, c, l, &paths_of, &prints))
        .collect();
    let member_pairs: Vec<(usize, usize)> = components
        .iter()
        .zip(&reps)
        .flat_map(|(c, &rep)| c.iter().filter(move |&&p| p != rep).map(move |&p| (rep, p)))
        .collect();
    let mut rep_score: HashMap<usize, u32> = HashMap::with_capacity(member_pairs.len());
    let progress = feedback.stage("Scoring groups", member_pairs.len() as u64);
    for batch in member_pairs.chunks(BATCH) {
        feedback.check()?;
        let mut wanted: Vec<usize> = batch.iter().flat_map(|&(r, p)| [r, p]).collect();
        outcome.blobs_read += scorer.load(&mut wanted)?;
        let scorer_ref = &scorer;
        let scores: Vec<u32> = batch
            .par_iter()
            .map(|&(r, p)| match (scorer_ref.get(r), scorer_ref.get(p)) {
                (Some(x), Some(y)) => score::score(&x, &y, 0),
                _ => 0,
            })
            .collect();
        rep_score.extend(batch.iter().map(|&(_, p)| p).zip(scores));
        progress.inc(batch.len() as u64);
    }
    progress.finish();
    let groups: Vec<Group> = components
        .iter()
        .zip(&reps)
        .zip(&component_links)
        .map(|((c, &rep), links)| {
            let score_of = |p: usize| {
                if p == rep {
                    MAX_SCORE
                } else {
                    rep_score.get(&p).copied().unwrap_or(0)
                }
            };
            build_group(&scorer, c, rep, score_of, links, &paths_of, &prints)
        })
        .collect();
    let mut groups = groups;
    groups.sort_by(|a, b| {
        b.waste
            .cmp(&a.waste)
            .then_with(|| a.members[0].path.cmp(&b.members[0].path))
    });
    feedback.trace("groups: groups built");
    store.add_warnings(scorer.histograms.take_warnings());
    Ok(Found {
        groups,
        common,
        outcome,
    })
}

/// Sizes and fingerprints of `ids`: from the store (computed and stored
/// when missing), and for contents outside the object database from the
/// contents.
fn sketches(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    contents: &Contents,
    feedback: &Feedback,
    outcome: &mut Outcome,
) -> Result<Vec<Sketch>, GroupsError> {
    let (in_odb, outside): (Vec<ObjectId>, Vec<ObjectId>) =
        ids.iter().partition(|id| !contents.contains_key(*id));
    let (prints, fp_outcome) = compute::fingerprint_blobs(repo, store, &in_odb, feedback)?;
    outcome.fingerprints = fp_outcome;
    let loose: Vec<(ObjectId, &[u8])> = outside
        .iter()
        .filter_map(|id| contents.get(id).map(|d| (*id, d.as_slice())))
        .collect();
    let loose_prints = compute::fingerprint_contents(store, &loose)?;
    let mut by_id: HashMap<ObjectId, Sketch> = in_odb.into_iter().zip(prints).collect();
    by_id.extend(loose.iter().map(|&(id, _)| id).zip(loose_prints));
    Ok(ids
        .iter()
        .map(|id| {
            by_id.get(id).copied().unwrap_or(Sketch {
                size: 0,
                fingerprint: None,
            })
        })
        .collect())
}

/// The boilerplate of the blobs in play, counted over a sample of their
/// histograms ([`Common::from_histograms`]); the texts shown for it are
/// read only when asked for ([`Options::show_common`]).
fn common_of(
    scorer: &mut Scorer,
    opts: &Options,
    outcome: &mut Outcome,
) -> Result<Common, GroupsError> {
    let picks = Common::sample_positions(scorer.ids.len());
    outcome.blobs_read += scorer.ensure(&picks)?;
    let sample: Vec<Spans> = picks.iter().filter_map(|&p| scorer.whole(p)).collect();
    let mut common = Common::from_histograms(sample.iter(), opts.common_share);
    if opts.show_common && !common.buckets.is_empty() {
        let ids: Vec<ObjectId> = picks.iter().map(|&p| scorer.ids[p]).collect();
        let texts = std::sync::Mutex::new(vec![Vec::new(); ids.len()]);
        scorer.reader.for_each(&ids, |k, data| {
            let mut t = texts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            t[k] = data.to_vec();
        })?;
        let texts = texts
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        common.fill_examples(texts.iter().map(Vec::as_slice));
    }
    Ok(common)
}
