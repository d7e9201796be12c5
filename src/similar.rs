//! One file against a whole tree: Manber's sif in its "which files are like
//! this one?" mode, and Broder's containment both ways; both without the
//! tree's boilerplate unless asked to keep it.
//!
//! The answer is complete: every file of the tree whose score against the
//! query reaches the threshold is listed. Every regular file is scored,
//! exactly as git scores a rename (with the tree's boilerplate,
//! [`crate::groups::common`], taken out of both files unless
//! [`Options::ignore_common`] is off), from its chunk histogram, which the
//! histogram store keeps after the first run ([`RepoContent`]): scoring a
//! stored histogram costs about a microsecond, so no estimate stands
//! between a file and its score. Fingerprints still say how far each match
//! is (its Hamming distance).

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::Feedback;
use crate::renames::{Content, ContentError, RepoContent};
use crate::repo::{DiffAttributes, Entry, EntryKind, Repo, RepoError};
use crate::similarity::compute::{self, ComputeError};
use crate::similarity::fingerprint::{Fingerprint, Fingerprinter};
use crate::similarity::score::{self, Binary, Spans};
use crate::similarity::store::Store;

/// Distances at or above chance level say nothing (see
/// [`crate::similarity::candidates::MAX_DISTANCE`] for why the cut is this loose).
pub const MAX_DISTANCE: u32 = crate::similarity::candidates::MAX_DISTANCE;

/// The file to compare.
pub struct Query {
    /// How to name it in output.
    pub name: String,
    /// Its content.
    pub data: Vec<u8>,
    /// What the attributes of its path say about text versus binary
    /// ([`Binary::Auto`] for a file outside the repository).
    pub binary: Binary,
}

/// Options of [`find_similar`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Minimum git score, in [`score::MAX_SCORE`] units.
    pub min_score: u32,
    /// At most this many matches (0: all).
    pub limit: usize,
    /// Score without the tree's boilerplate ([`crate::groups::common`]):
    /// chunks in more than a tenth of the tree's files (license headers,
    /// generated preambles) taken out of both files, so that sharing only
    /// them makes no match. Off: git's plain score.
    pub ignore_common: bool,
}

/// One file of the tree that is similar to the query.
#[derive(Clone, Debug)]
pub struct Match {
    /// Path in the tree.
    pub path: Vec<u8>,
    /// Its blob.
    pub id: ObjectId,
    /// Its size in bytes.
    pub size: u64,
    /// git's score in [`score::MAX_SCORE`] units.
    pub score: u32,
    /// Hamming distance of the fingerprints, when both have one.
    pub distance: Option<u32>,
}

/// What [`find_similar`] looked at, so a short answer is never mistaken for
/// a complete search.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Regular files in the tree.
    pub files: usize,
    /// Files passing git's size filter (on their whole sizes).
    pub size_compatible: usize,
    /// Distinct blobs scored exactly: every one.
    pub scored: usize,
    /// Fingerprints taken from the store vs computed now.
    pub fingerprints: compute::Outcome,
}

/// The error returned by [`find_similar`].
#[derive(Debug, thiserror::Error)]
pub enum SimilarError {
    /// The tree could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Fingerprints could not be computed or stored.
    #[error(transparent)]
    Compute(#[from] ComputeError),
    /// The tree's boilerplate could not be counted.
    #[error(transparent)]
    Common(#[from] crate::groups::common::CommonError),
    /// Blobs could not be read or their histograms stored.
    #[error(transparent)]
    Content(#[from] ContentError),
}

/// Files of `tree` similar to `query`, best first (score descending, then
/// path). `feedback` sees the fingerprinting of the tree's blobs, and its
/// flag stops the reading of blobs. With `attributes`, each file is scored
/// as text or binary as its path's attributes say, as git's diff would
/// score it.
pub fn find_similar(
    repo: &Repo,
    store: &mut Store,
    tree: ObjectId,
    query: &Query,
    opts: &Options,
    attributes: Option<&mut DiffAttributes>,
    feedback: &Feedback,
) -> Result<(Vec<Match>, Outcome), SimilarError> {
    let mut outcome = Outcome::default();
    let TreeFiles {
        entries,
        binary_of,
        keys,
    } = tree_files(repo, tree, attributes)?;
    outcome.files = entries.len();
    let ids: Vec<ObjectId> = entries.iter().map(|e| e.id).collect();
    let query_size = query.data.len() as u64;
    let query_fp: Option<Fingerprint> = Fingerprinter::new().fingerprint(&query.data);
    let query_id = query_blob_id(repo, query)?;
    // Fingerprints (for the distances shown) and histograms, from the
    // stores or from one read of each blob they lack.
    let (prints, spans, fp_outcome) = {
        let mut lacking: Vec<ObjectId> = ids
            .iter()
            .zip(store.get_many(&ids))
            .filter(|(_, e)| e.is_none())
            .map(|(id, _)| *id)
            .collect();
        lacking.sort_unstable();
        lacking.dedup();
        let mut content = RepoContent::new(repo, store, Default::default(), feedback);
        let prints = content.items(&ids)?;
        let spans = content.spans(&keys)?;
        let read = content.items(&lacking)?;
        content.finish().map_err(ContentError::from)?;
        let fp_outcome = compute::Outcome {
            cached: ids.len()
                - ids
                    .iter()
                    .filter(|id| lacking.binary_search(id).is_ok())
                    .count(),
            computed: lacking.len(),
            bytes_read: read.iter().map(|s| s.size).sum(),
        };
        (prints, spans, fp_outcome)
    };
    outcome.fingerprints = fp_outcome;
    outcome.size_compatible = spans
        .iter()
        .filter(|s| s.size() > 0 && score::sizes_compatible(query_size, s.size(), opts.min_score))
        .count();
    outcome.scored = keys.len();

    // The tree's boilerplate, only when something is to be scored.
    let common = if opts.ignore_common && !keys.is_empty() {
        tree_boilerplate(repo, store, &ids, feedback)?
    } else {
        Vec::new()
    };
    let query_spans = Spans::with_binary(&query.data, query.binary).without(&common);
    let scores: Vec<u32> = score::Dense::default().with(&query_spans, |loaded| {
        keys.iter()
            .zip(&spans)
            .map(|(key, spans)| {
                if key.0 == query_id {
                    // Identical content: git pairs it as an exact rename at
                    // 100% before any scoring (CRLF text would otherwise
                    // score below).
                    score::MAX_SCORE
                } else if common.is_empty() {
                    loaded.score(spans, opts.min_score)
                } else {
                    loaded.score(&spans.without(&common), opts.min_score)
                }
            })
            .collect()
    });
    let score_of: std::collections::HashMap<(ObjectId, Binary), u32> = keys
        .iter()
        .copied()
        .zip(scores)
        .filter(|&(_, s)| s >= opts.min_score && s > 0)
        .collect();

    let mut matches: Vec<Match> = entries
        .par_iter()
        .zip(prints.par_iter())
        .zip(binary_of.par_iter())
        .filter_map(|((e, p), b)| {
            score_of.get(&(e.id, *b)).map(|&s| Match {
                path: e.path.clone(),
                id: e.id,
                size: p.size,
                score: s,
                distance: query_fp.zip(p.fingerprint).map(|(q, f)| q.distance(&f)),
            })
        })
        .collect();
    matches.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
    if opts.limit > 0 {
        matches.truncate(opts.limit);
    }
    Ok((matches, outcome))
}

/// One file of the tree that holds much of the query, or much of which the
/// query holds ([`find_containing`]).
#[derive(Clone, Debug)]
pub struct Containment {
    /// Path in the tree.
    pub path: Vec<u8>,
    /// Its blob.
    pub id: ObjectId,
    /// Its size in bytes.
    pub size: u64,
    /// How much of the query is in this file, in [`score::MAX_SCORE`] units.
    pub query_in_file: u32,
    /// How much of this file is in the query.
    pub file_in_query: u32,
}

impl Containment {
    /// Whether the file holds at least `min` of the query (the first group
    /// of [`find_containing`]'s answer), rather than only being held by it.
    pub fn contains_query(&self, min: u32) -> bool {
        self.query_in_file >= min
    }
}

/// Files of `tree` that contain at least `opts.min_score` of `query`, most
/// first, then files of which the query contains at least that much, most
/// first (ties by path); a file in both groups is listed in the first.
/// Containment is Broder's, computed exactly
/// ([`crate::similarity::containment`]) with each file chunked as its
/// path's attributes say; an identical blob is 100% both ways.
///
/// With [`Options::ignore_common`], the tree's boilerplate
/// ([`crate::groups::common`], counted as [`find_similar`] counts it) is
/// taken out of both files first: a short header that is mostly license
/// text is not "contained" in every file sharing the license, nor does a
/// file holding only boilerplate contain anything.
///
/// Every regular file of the tree is read: the fingerprints cannot tell
/// how much of a small file is inside a large one.
pub fn find_containing(
    repo: &Repo,
    store: &mut Store,
    tree: ObjectId,
    query: &Query,
    opts: &Options,
    attributes: Option<&mut DiffAttributes>,
    feedback: &Feedback,
) -> Result<Vec<Containment>, SimilarError> {
    use crate::similarity::containment;
    let TreeFiles {
        entries,
        binary_of,
        keys,
    } = tree_files(repo, tree, attributes)?;
    let query_id = query_blob_id(repo, query)?;
    let key_ids: Vec<ObjectId> = keys.iter().map(|k| k.0).collect();
    let common = if opts.ignore_common {
        let mut ids = key_ids.clone();
        ids.dedup();
        tree_boilerplate(repo, store, &ids, feedback)?
    } else {
        Vec::new()
    };
    let query_spans = Spans::with_binary(&query.data, query.binary).without(&common);
    let found = repo.map_blobs(&key_ids, feedback, |i, data| {
        if keys[i].0 == query_id {
            return (data.len() as u64, score::MAX_SCORE, score::MAX_SCORE);
        }
        let spans = Spans::with_binary(data, keys[i].1).without(&common);
        (
            data.len() as u64,
            containment::contained(&query_spans, &spans),
            containment::contained(&spans, &query_spans),
        )
    })?;
    let of: std::collections::HashMap<(ObjectId, Binary), (u64, u32, u32)> =
        keys.iter().copied().zip(found).collect();
    let min = opts.min_score.max(1);
    let mut matches: Vec<Containment> = entries
        .iter()
        .zip(&binary_of)
        .filter_map(|(e, b)| {
            let &(size, query_in_file, file_in_query) = of.get(&(e.id, *b))?;
            (query_in_file >= min || file_in_query >= min).then(|| Containment {
                path: e.path.clone(),
                id: e.id,
                size,
                query_in_file,
                file_in_query,
            })
        })
        .collect();
    matches.sort_by(|a, b| {
        let group = |m: &Containment| !m.contains_query(min);
        let key = |m: &Containment| {
            if m.contains_query(min) {
                (m.query_in_file, m.file_in_query)
            } else {
                (m.file_in_query, m.query_in_file)
            }
        };
        group(a)
            .cmp(&group(b))
            .then_with(|| key(b).cmp(&key(a)))
            .then_with(|| a.path.cmp(&b.path))
    });
    if opts.limit > 0 {
        matches.truncate(opts.limit);
    }
    Ok(matches)
}

/// The regular files of a tree, each with how its attributes say it is
/// scored, and the distinct (blob, decision) pairs among them, sorted: one
/// blob at paths with different attributes is scored once per decision.
struct TreeFiles {
    entries: Vec<Entry>,
    binary_of: Vec<Binary>,
    keys: Vec<(ObjectId, Binary)>,
}

fn tree_files(
    repo: &Repo,
    tree: ObjectId,
    attributes: Option<&mut DiffAttributes>,
) -> Result<TreeFiles, SimilarError> {
    let entries: Vec<Entry> = repo
        .tree_entries(tree)?
        .into_iter()
        .filter(|e| matches!(e.kind, EntryKind::Regular | EntryKind::Executable))
        .collect();
    let mut binary_of: Vec<Binary> = vec![Binary::Auto; entries.len()];
    if let Some(attributes) = attributes {
        for (e, b) in entries.iter().zip(binary_of.iter_mut()) {
            *b = attributes.binary(&e.path)?;
        }
    }
    let mut keys: Vec<(ObjectId, Binary)> = entries
        .iter()
        .zip(&binary_of)
        .map(|(e, b)| (e.id, *b))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Ok(TreeFiles {
        entries,
        binary_of,
        keys,
    })
}

/// The chunk buckets that are boilerplate among the distinct blobs `ids`
/// (sorted by id) of a tree: [`crate::groups::common::of_blobs`] at the
/// default share, histograms from the store.
fn tree_boilerplate(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<Vec<u32>, SimilarError> {
    let mut histograms = store
        .histograms()
        .map_err(crate::groups::common::CommonError::from)?;
    let common = crate::groups::common::of_blobs(
        repo,
        &mut histograms,
        ids,
        crate::groups::common::DEFAULT_SHARE,
        feedback,
    )?;
    store.add_warnings(histograms.take_warnings());
    Ok(common.buckets)
}

/// The blob id the query's content would have in `repo`.
fn query_blob_id(repo: &Repo, query: &Query) -> Result<ObjectId, RepoError> {
    gix::objs::compute_hash(repo.object_hash(), gix::object::Kind::Blob, &query.data).map_err(
        |source| RepoError::Hash {
            path: query.name.clone().into(),
            source,
        },
    )
}
