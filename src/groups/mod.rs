//! Every group of similar files in a collection: Manber's sif in its "all
//! against all" mode (`git simm groups`).
//!
//! A group is a connected set of files, linked by pairs whose exact git
//! score (the rename score, computed as [`score::score`] computes it for
//! `renames`) is at least the threshold. Fingerprints only choose which
//! pairs are scored; every link reported was scored exactly.
//!
//! 1. Files with the same blob are one node: exact copies group without
//!    scoring.
//! 2. Candidate pairs of distinct blobs come from the fingerprints
//!    ([`Search::close_pairs`]): git's size filter at the threshold, then
//!    a Hamming radius calibrated so that at least 99% of the pairs at or
//!    above the threshold are proposed ([`radius_for`]). Small files, whose
//!    fingerprints are noisy, are paired from their chunk histograms
//!    instead, without loss ([`small`]).
//! 3. Candidates are scored exactly, nearest first, in batches, from the
//!    chunk histograms the histogram store keeps (those it lacks are read
//!    in one pass in pack order, each blob once, and stored); a pair
//!    whose files are already connected is not scored (it could only join
//!    what is joined), so a cluster of n versions costs about n scores,
//!    not n²/2. Links at the threshold join components (union-find).
//! 4. Each group gets a representative (the member with the most links,
//!    then the largest, then the first path) and every member's score
//!    against it; waste is the bytes of every member but the
//!    representative, what keeping one copy would save.
//!
//! Boilerplate ([`common`]) is taken out of both files of every pair
//! before scoring unless [`Options::ignore_common`] is off, and enters
//! candidate search through each blob's residual ([`residual`]): from the
//! blobs whose boilerplate is a noticeable share of their bytes, pairs
//! whose residual sizes pass git's filter and whose residual sketches are
//! close are proposed too, so a file behind a long header and a copy of it
//! without (or behind another) are scored although their whole files are
//! far apart.
//!
//! ### Deviations from a full boilerplate-free search
//!
//! The residual search starts only from blobs with boilerplate at
//! [`Options::residual_share`] of their bytes or more; between two blobs
//! with less, the whole-file fingerprints and sizes decide, as they do
//! with [`Options::ignore_common`] off.
//!
//! Two caps trade a little recall for bounded work and memory, both
//! measured against exhaustive scoring ([`DEFAULT_MAX_PARTNERS`],
//! [`DEFAULT_MAX_TRIES`]): each blob keeps its nearest candidate
//! partners only, and pairs between two components are given up after
//! enough of them failed.

mod build;
pub mod common;
pub mod residual;
pub mod small;
mod verify;

use build::{build_group, representative};
use verify::{BATCH, Blobs, Scored, Scorer, link};

use std::collections::HashMap;

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::candidates::{Pair, Search, UNFINGERPRINTED};
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
    /// The fingerprint distance up to which pairs are scored; `None` for
    /// [`radius_for`] the threshold.
    pub radius: Option<u32>,
    /// Bytes of decoded chunk histograms kept in memory between batches
    /// ([`DEFAULT_CACHE_BYTES`]; `simm.groupCacheLimit`).
    pub cache_bytes: usize,
    /// Read the text of one chunk of each boilerplate bucket
    /// ([`Common::examples`]), to show it.
    pub show_common: bool,
    /// Candidate partners kept per blob (the nearest fingerprints among
    /// the larger blobs within the radius); 0 for all. Bounds the pairs'
    /// memory: a family of k versions of one file otherwise gives k²/2.
    pub max_partners: usize,
    /// Pairs scored between the same two components (each linked inside,
    /// no link across yet) before the rest between them are given up; 0
    /// for no limit.
    pub max_tries: u32,
    /// Score every candidate pair, connected or not, and report every
    /// pair at the threshold as a link: with a radius of 255, the
    /// exhaustive ground truth benches compare against.
    pub every_pair: bool,
    /// With [`Options::ignore_common`], also propose the pairs whose
    /// residuals (the files without boilerplate) are close ([`residual`]),
    /// from every blob whose boilerplate is at least
    /// [`Options::residual_share`] of its bytes.
    pub residual_search: bool,
    /// The share of a blob's bytes in common chunks from which its
    /// residual is searched.
    pub residual_share: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_score: DEFAULT_MIN_SCORE,
            min_size: DEFAULT_MIN_SIZE,
            ignore_common: true,
            common_share: common::DEFAULT_SHARE,
            radius: None,
            cache_bytes: DEFAULT_CACHE_BYTES,
            show_common: false,
            max_tries: DEFAULT_MAX_TRIES,
            max_partners: DEFAULT_MAX_PARTNERS,
            every_pair: false,
            residual_search: true,
            residual_share: residual::DEFAULT_SHARE,
        }
    }
}

/// The default [`Options::max_tries`]. Measured: no pair of the exact
/// ground truth lost on git.git's and vim's 5,000-file trees
/// (`benches/groups.sh`); on a vim tree of 30,000 files, 56,338 pairs
/// scored instead of 5,112,022 and one link of 35,328 missed (16 tries:
/// 19 missed); on git.git's 100,000-file tree 144,080 instead of 204,818,
/// two links of 105,933 missed (6,831 groups instead of 6,829). A
/// speed-for-recall trade like the fingerprint radius; 0 restores the
/// exhaustive walk of the candidates.
pub const DEFAULT_MAX_TRIES: u32 = 64;

/// The default [`Options::max_partners`]. Measured (`benches/groups.sh`,
/// warm): a vim tree of 75,000 files, 57,048,783 candidate pairs and
/// 2.0 GB RSS without it, 1,200,552 and 0.9 GB with it (CPU 11.3 -> 2.2
/// s), 5,998 groups instead of 5,999; git.git's 100,000-file tree 6,831
/// groups (6,829 without either cap); no pair of the exact ground truth
/// lost at 5,000 files on git.git or vim.
pub const DEFAULT_MAX_PARTNERS: usize = 32;

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

/// The fingerprint distance up to which candidate pairs are scored at
/// `min_score`.
///
/// Calibrated on real text (`tests/it/groups.rs`, `radius_calibration`:
/// the pinned corpus with 150 copies edited as real edits go, lines
/// inserted, deleted and replaced, and every pair scored exhaustively).
/// The farthest pairs were, at 80% and more: 99th percentile 78 bits,
/// maximum 82; at 90%: 71 and 76; at 70%: 95 and 106; at 60%: 108 and
/// 116; at 50%: 115 and 124, chance level. Small files spread most (few
/// 48-byte windows make a noisy fingerprint), which is why even 95% pairs
/// reach 76 bits. The radius keeps a margin over the maximum: 84 bits
/// from 80% up, rising linearly to 118 at 60%; below 60% the search is
/// exhaustive within git's size window (255).
pub fn radius_for(min_score: u32) -> u32 {
    let pct = score::percent(min_score);
    match pct {
        0..60 => 255,
        60..80 => 118 - (pct - 60) * 34 / 20,
        _ => 84,
    }
}

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
    /// Pairs proposed by sizes and fingerprints.
    pub candidate_pairs: usize,
    /// Pairs scored exactly.
    pub scored_pairs: usize,
    /// Candidate pairs not scored because their files were already
    /// connected.
    pub connected_pairs: usize,
    /// Candidate pairs not scored because [`Options::max_tries`] pairs
    /// between the same two components had failed already.
    pub given_up_pairs: usize,
    /// Scored pairs at or above the threshold.
    pub linked_pairs: usize,
    /// The fingerprint radius used.
    pub radius: u32,
    /// Blobs whose boilerplate is a noticeable share of their bytes, from
    /// which residuals were searched ([`Options::residual_search`]).
    pub residual_starts: usize,
    /// Candidate pairs the residual search proposed that the whole-file
    /// search had not.
    pub residual_pairs: usize,
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

    let radius = opts.radius.unwrap_or_else(|| radius_for(opts.min_score));
    outcome.radius = radius;
    let most = if opts.every_pair {
        0
    } else {
        opts.max_partners
    };
    let residual_on = opts.ignore_common && !common.buckets.is_empty();
    let mut pairs = if opts.every_pair && residual_on {
        // The ground truth with boilerplate out: every pair git's size
        // filter passes on the residual sizes.
        let sizes: Vec<Sketch> = residuals_of(&mut scorer, opts, &mut outcome)?
            .iter()
            .map(|r| Sketch {
                size: r.size,
                fingerprint: None,
            })
            .collect();
        Search::new(&sizes).close_pairs(opts.min_score, 255, 0, feedback)?
    } else {
        Search::new(&prints).close_pairs(opts.min_score, radius, most, feedback)?
    };
    feedback.trace("groups: candidate search");
    if residual_on && opts.residual_search && !opts.every_pair {
        add_residual_pairs(&mut scorer, opts, &mut pairs, &mut outcome, feedback)?;
        feedback.trace("groups: residual search");
    }

    if !opts.every_pair {
        outcome.blobs_read += add_small_pairs(&mut scorer, &prints, opts.min_score, &mut pairs)?;
        feedback.trace("groups: small files paired");
    }
    outcome.candidate_pairs = pairs.len();
    let (mut sets, links) = link(&mut scorer, &pairs, opts, &mut outcome)?;
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

/// The residual of every blob in play ([`residual::residuals`]), their
/// histograms read first where the store lacks them.
fn residuals_of(
    scorer: &mut Scorer,
    opts: &Options,
    outcome: &mut Outcome,
) -> Result<Vec<residual::Residual>, GroupsError> {
    let all: Vec<usize> = (0..scorer.ids.len()).collect();
    outcome.blobs_read += scorer.ensure(&all)?;
    scorer.reader.feedback.trace("groups: residuals located");
    Ok(residual::residuals(
        &scorer.histograms,
        &scorer.locs,
        &scorer.common,
        opts.min_size,
        opts.min_score,
        opts.residual_share,
    ))
}

/// Add to `pairs` (sorted nearest first, and kept so) the pairs the
/// residual search proposes ([`residual`]) that are not there yet.
fn add_residual_pairs(
    scorer: &mut Scorer,
    opts: &Options,
    pairs: &mut Vec<Pair>,
    outcome: &mut Outcome,
    feedback: &Feedback,
) -> Result<(), GroupsError> {
    let res = residuals_of(scorer, opts, outcome)?;
    feedback.trace("groups: residuals sketched");
    let starts: Vec<usize> = (0..res.len())
        .filter(|&p| res[p].noticeable && res[p].fingerprint.is_some())
        .collect();
    outcome.residual_starts = starts.len();
    if starts.is_empty() {
        return Ok(());
    }
    let sketches: Vec<Sketch> = res.iter().map(residual::Residual::searched).collect();
    drop(res);
    let found = Search::new(&sketches).pairs_from(
        &starts,
        opts.min_score,
        residual::radius_for(opts.min_score),
        opts.max_partners,
        feedback,
    )?;
    feedback.trace("groups: residuals scanned");
    let mut new: std::collections::HashSet<(u32, u32)> = found.iter().map(|p| (p.a, p.b)).collect();
    for p in pairs.iter() {
        if new.is_empty() {
            break;
        }
        new.remove(&(p.a, p.b));
    }
    let before = pairs.len();
    pairs.extend(found.into_iter().filter(|p| new.contains(&(p.a, p.b))));
    outcome.residual_pairs = pairs.len() - before;
    if outcome.residual_pairs > 0 {
        pairs.par_sort_unstable();
    }
    Ok(())
}

/// Add to `pairs` (sorted nearest first, and kept so) every pair
/// [`small::pairs`] proposes among the files small enough for it, read
/// now (they stay cached for scoring); returns how many were read.
fn add_small_pairs(
    scorer: &mut Scorer,
    prints: &[Sketch],
    min_score: u32,
    pairs: &mut Vec<Pair>,
) -> Result<usize, GroupsError> {
    let reach = small::reach(min_score);
    let mut smalls: Vec<usize> = (0..prints.len())
        .filter(|&p| prints[p].size <= reach)
        .collect();
    if smalls.len() < 2 {
        return Ok(0);
    }
    let read = scorer.load(&mut smalls.clone())?;
    smalls.sort_unstable();
    let held: Vec<Scored> = smalls.iter().map(|&p| scorer.get(p)).collect();
    let spans: Vec<Option<&Spans>> = held.iter().map(|s| s.as_deref()).collect();
    // Only pairs of two small files can be proposed again.
    let mut known: std::collections::HashSet<(u32, u32)> = pairs
        .iter()
        .filter(|p| prints[p.a as usize].size <= reach && prints[p.b as usize].size <= reach)
        .map(|p| (p.a, p.b))
        .collect();
    for (x, y) in small::pairs(&spans, min_score) {
        let (a, b) = (smalls[x] as u32, smalls[y] as u32);
        if known.insert((a, b)) {
            let distance = match (
                prints[a as usize].fingerprint,
                prints[b as usize].fingerprint,
            ) {
                (Some(f), Some(g)) => f.distance(&g).min(254) as u8,
                _ => UNFINGERPRINTED,
            };
            pairs.push(Pair { distance, a, b });
        }
    }
    pairs.par_sort_unstable();
    Ok(read)
}
