//! `origin`: which commit of another repository a directory was copied
//! from (a vendored library, years and patches later), and how it drifted.
//!
//! Broder's two measures answer it: containment (how much of the local
//! copy an upstream state explains) ranks the states, and resemblance (the
//! two alike as wholes) breaks ties. A vendored copy is usually a subset
//! (a library's sources without its tests, build files or other
//! platforms), so the files upstream has and the copy lacks must not
//! count against the release it came from. Both are counted in bytes, a
//! file's share being what git's rename score says (identical files count
//! in full, a patched file by its score); identical bytes come first, so a
//! state holding every local file byte for byte ranks above any other.
//!
//! Two passes keep it fast on an upstream with a long history:
//! 1. `states.rs`: blob-id overlap of every commit's directories with the
//!    local files, no blob read (most of a vendored copy is unpatched
//!    files).
//! 2. `compare.rs`: the best few states file by file: identical, modified
//!    (git's score), missing, added; fingerprints from the upstream
//!    repository's own store pair the files that moved.
//!
//! Candidates are the tags (oldest first), then the first-parent history of
//! upstream's `HEAD` (oldest first), or the commits of a given range. Many
//! commits share one state of the directory (most commits do not touch a
//! library's sources); a state is named by its first release tag (one not
//! named like a pre-release: `-rc1`, `alpha`, `beta`, `pre`), else its
//! first tag, else its first commit, and the other tags with the same
//! state are listed with it: the copy cannot tell those apart.

mod compare;
mod states;

use gix::ObjectId;

use crate::progress::{Feedback, Interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::compute::ComputeError;
use crate::similarity::score;
use crate::similarity::store::Store;

pub use compare::CompareError;
pub use states::{Commit, Overlap, StatesError};

/// One file of the local copy.
#[derive(Clone, Debug)]
pub struct LocalFile {
    /// Its path relative to the directory compared.
    pub path: Vec<u8>,
    /// Its content, as git would store it.
    pub data: Vec<u8>,
}

/// Which upstream commits to compare with.
#[derive(Clone, Debug)]
pub enum Range {
    /// Every tag, then the first-parent history of `HEAD`.
    Default,
    /// The commits `git rev-list <args>` lists (any bytes, as git takes
    /// them).
    RevList(Vec<std::ffi::OsString>),
}

/// Options of [`find_origin`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The commits to compare with.
    pub range: Range,
    /// Compare this many states file by file (at least 1).
    pub compare: usize,
}

/// A file on one side of a comparison.
#[derive(Clone, Debug)]
pub struct OneSide {
    /// Its path relative to the directory compared.
    pub path: Vec<u8>,
    /// Its blob.
    pub id: ObjectId,
    /// Its size in bytes.
    pub size: u64,
}

/// A local file and the upstream file it is.
#[derive(Clone, Debug)]
pub struct FilePair {
    /// The local file.
    pub local: OneSide,
    /// The upstream file.
    pub upstream: OneSide,
    /// git's similarity of the two ([`score::MAX_SCORE`] for identical
    /// files).
    pub score: u32,
}

/// A local copy against one upstream directory, file by file.
#[derive(Clone, Debug, Default)]
pub struct Files {
    /// Byte for byte upstream's, in local path order.
    pub identical: Vec<FilePair>,
    /// Paired with an upstream file they differ from.
    pub modified: Vec<FilePair>,
    /// Upstream files the local copy lacks, in upstream path order.
    pub missing: Vec<OneSide>,
    /// Local files upstream lacks, in path order.
    pub added: Vec<OneSide>,
    /// The bytes both hold over the bytes either holds, in
    /// [`score::MAX_SCORE`] units (a modified file's bytes weighed by its
    /// score).
    pub resemblance: u32,
    /// The share of the local bytes upstream holds, same units.
    pub contained: u32,
    /// The local bytes of the identical files.
    pub identical_bytes: u64,
    /// The bytes of the missing files: what the state adds to the copy.
    pub missing_bytes: u64,
}

impl Files {
    /// Whether every local file is byte for byte one of upstream's: the
    /// copy is this state, or a subset of it.
    pub fn exact(&self) -> bool {
        self.modified.is_empty() && self.added.is_empty() && !self.identical.is_empty()
    }

    /// The local bytes of files paired with an upstream file at another
    /// path: fewer when the directories line up.
    pub fn moved_bytes(&self) -> u64 {
        self.identical
            .iter()
            .chain(&self.modified)
            .filter(|p| p.local.path != p.upstream.path)
            .map(|p| p.local.size)
            .sum()
    }

    /// How `self` ranks against `other` by what the copy holds, best
    /// first: a state holding every local file byte for byte before any
    /// that does not; then by how much of the local copy it explains
    /// (identical bytes, then identical and modified bytes, a modified
    /// file weighed by its score). What the state adds (missing files)
    /// is not counted here: a vendored copy is usually a subset of a
    /// release (a library's sources without its tests, build files or
    /// other platforms), so it only breaks ties ([`Match::rank`]).
    pub fn explains(&self, other: &Files) -> std::cmp::Ordering {
        other
            .exact()
            .cmp(&self.exact())
            .then(other.identical_bytes.cmp(&self.identical_bytes))
            .then(other.contained.cmp(&self.contained))
    }
}

/// One upstream commit and directory the local copy may come from.
#[derive(Clone, Debug)]
pub struct Match {
    /// The commit (the first candidate with this state of the directory).
    pub commit: ObjectId,
    /// The tag naming it, if a tag of the default range.
    pub tag: Option<String>,
    /// Every tag with the same state of the directory, oldest first.
    pub tags: Vec<String>,
    /// The directory in that commit (empty for its root).
    pub path: Vec<u8>,
    /// The directory's tree.
    pub tree: ObjectId,
    /// How many candidate commits have this state of the directory.
    pub same_state: usize,
    /// The last of those (in candidate order).
    pub last_commit: ObjectId,
    /// The first pass's overlap.
    pub overlap: Overlap,
    /// File by file.
    pub files: Files,
}

impl Match {
    /// Whether a release tag (not a pre-release) names this state.
    pub fn is_release(&self) -> bool {
        self.tag.as_deref().is_some_and(|t| !is_prerelease(t))
    }

    /// How `self` ranks against `other` as the origin of the copy, best
    /// first: by what of the copy each explains ([`Files::explains`]);
    /// among states the copy cannot tell apart that way, a release before
    /// a commit between releases (copies are made from releases); then
    /// the directory whose paths line up with the copy's (fewer bytes
    /// found at another path); then by what the state adds, fewer missing
    /// bytes first; then more identical files.
    pub fn rank(&self, other: &Match) -> std::cmp::Ordering {
        self.files
            .explains(&other.files)
            .then(other.is_release().cmp(&self.is_release()))
            .then(self.files.moved_bytes().cmp(&other.files.moved_bytes()))
            .then(self.files.missing_bytes.cmp(&other.files.missing_bytes))
            .then(other.files.identical.len().cmp(&self.files.identical.len()))
    }
}

/// What [`find_origin`] looked at.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Candidate commits.
    pub commits: usize,
    /// Commits walked in full to find the directory upstream.
    pub probes: usize,
    /// Directories looked at in every commit.
    pub paths: usize,
    /// Distinct states of those sharing a file with the local copy.
    pub states: usize,
    /// Tree objects read.
    pub trees_read: usize,
    /// States compared file by file.
    pub compared: usize,
}

/// The error returned by [`find_origin`].
#[derive(Debug, thiserror::Error)]
pub enum OriginError {
    /// The upstream repository could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Upstream fingerprints could not be computed or stored.
    #[error(transparent)]
    Compute(#[from] ComputeError),
    /// Upstream has no commit in the range.
    #[error("no commits to compare with in {}", path.display())]
    NoCommits {
        /// The upstream repository.
        path: std::path::PathBuf,
    },
    /// Ctrl-C.
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
}

impl From<StatesError> for OriginError {
    fn from(e: StatesError) -> Self {
        match e {
            StatesError::Repo(e) => OriginError::Repo(e),
            StatesError::Interrupted(e) => OriginError::Interrupted(e),
        }
    }
}

impl From<CompareError> for OriginError {
    fn from(e: CompareError) -> Self {
        match e {
            CompareError::Repo(e) => OriginError::Repo(e),
            CompareError::Compute(e) => OriginError::Compute(e),
        }
    }
}

/// The candidate commits of `range`, in preference order: tags oldest
/// first, then the first-parent history oldest first.
pub fn candidates(upstream: &Repo, range: &Range) -> Result<Vec<Commit>, RepoError> {
    let mut out = Vec::new();
    match range {
        Range::Default => {
            for (name, id) in upstream.tagged_commits()? {
                out.push(Commit {
                    id,
                    tag: Some(name),
                });
            }
            // An empty repository has no HEAD to list: tags alone then.
            if upstream.resolve_id("HEAD").is_ok() {
                let mut fp = upstream.rev_list(&["--first-parent"], &["HEAD".to_owned()])?;
                fp.reverse();
                // A tagged commit is a candidate once, as its tag.
                let tagged: std::collections::HashSet<ObjectId> =
                    out.iter().map(|c| c.id).collect();
                out.extend(
                    fp.into_iter()
                        .filter(|id| !tagged.contains(id))
                        .map(|id| Commit { id, tag: None }),
                );
            }
        }
        Range::RevList(args) => {
            let mut ids = upstream.rev_list(&[], args)?;
            ids.reverse();
            out.extend(ids.into_iter().map(|id| Commit { id, tag: None }));
        }
    }
    Ok(out)
}

/// The commits and directories of `upstream` the local `files` most
/// likely come from, best first: the [`Options::compare`] best states of
/// the first pass compared file by file and ordered by [`Match::rank`]
/// (then candidate order). Empty when no upstream commit shares a file
/// with the local copy.
///
/// `store` is upstream's fingerprint store: the few upstream blobs
/// fingerprinted (files to pair by content) are looked up and kept there.
pub fn find_origin(
    upstream: &Repo,
    store: &mut Store,
    files: &[LocalFile],
    opts: &Options,
    feedback: &Feedback,
) -> Result<(Vec<Match>, Outcome), OriginError> {
    let mut outcome = Outcome::default();
    let commits = candidates(upstream, &opts.range)?;
    if commits.is_empty() {
        return Err(OriginError::NoCommits {
            path: upstream
                .work_dir()
                .unwrap_or_else(|| upstream.git_dir())
                .to_owned(),
        });
    }
    outcome.commits = commits.len();
    let mut local = compare::Local::new(files, upstream.object_hash())?;
    let mut sizes = std::collections::HashMap::new();
    let mut paths: std::collections::HashMap<ObjectId, Vec<Vec<u8>>> =
        std::collections::HashMap::new();
    for (id, f) in local.ids.iter().zip(files) {
        sizes.insert(*id, f.data.len() as u64);
        paths.entry(*id).or_default().push(f.path.clone());
    }
    let first_pass = states::Local {
        sizes: &sizes,
        paths: &paths,
        files: u32::try_from(files.len()).unwrap_or(u32::MAX),
    };
    feedback.trace(&format!("origin: {} candidate commits", commits.len()));
    let found = states::states(upstream, &commits, &first_pass, feedback)?;
    feedback.trace(&format!(
        "origin: {} states of {} paths, {} trees read",
        found.states.len(),
        found.paths.len(),
        found.trees_read
    ));
    outcome.probes = found.probes;
    outcome.paths = found.paths.len();
    outcome.states = found.states.len();
    outcome.trees_read = found.trees_read;

    let take = opts.compare.max(1).min(found.states.len());
    let stage = feedback.stage("Comparing files", take as u64);
    let mut matches = Vec::with_capacity(take);
    for state in &found.states[..take] {
        feedback.check()?;
        let files = compare::compare(upstream, store, state.tree, &mut local, feedback)?;
        let named = state
            .tags
            .iter()
            .copied()
            .find(|&i| commits[i].tag.as_deref().is_some_and(|t| !is_prerelease(t)))
            .or(state.tags.first().copied())
            .unwrap_or(state.first);
        let first = &commits[named];
        feedback.trace(&format!(
            "origin: compared {}:{}",
            first.tag.clone().unwrap_or_else(|| first.id.to_string()),
            String::from_utf8_lossy(&state.path)
        ));
        matches.push((
            state.first,
            Match {
                commit: first.id,
                tag: first.tag.clone(),
                tags: state
                    .tags
                    .iter()
                    .filter_map(|&i| commits[i].tag.clone())
                    .collect(),
                path: state.path.clone(),
                tree: state.tree,
                same_state: state.commits,
                last_commit: commits[state.last].id,
                overlap: state.overlap,
                files,
            },
        ));
        stage.inc(1);
    }
    stage.finish();
    outcome.compared = matches.len();
    matches.sort_by(|(ia, a), (ib, b)| a.rank(b).then(ia.cmp(ib)));
    Ok((matches.into_iter().map(|(_, m)| m).collect(), outcome))
}

/// Whether a tag is named like a pre-release (`v2.40.0-rc0`,
/// `v5.4-alpha`, `1.0.0-beta.2`, `v3.0pre1`): such a tag and the release
/// after it often have the same sources, and the release is what people
/// vendor.
pub fn is_prerelease(tag: &str) -> bool {
    let t = tag.to_ascii_lowercase();
    let b = t.as_bytes();
    if ["alpha", "beta", "pre", "preview", "snapshot"]
        .iter()
        .any(|w| t.contains(w))
    {
        return true;
    }
    // "rc" after a separator or digit, then a digit or the end.
    t.match_indices("rc").any(|(i, _)| {
        let before = i == 0 || !b[i - 1].is_ascii_alphabetic();
        let after = b.get(i + 2).is_none_or(|c| !c.is_ascii_alphabetic());
        before && after
    })
}

/// A ratio of [`Files`] in percent, as git prints a score (truncated).
pub fn percent(ratio: u32) -> u32 {
    score::percent(ratio)
}

#[cfg(test)]
mod tests {
    use super::is_prerelease;

    #[test]
    fn prerelease_names() {
        for t in [
            "v2.40.0-rc0",
            "v5.4-alpha",
            "1.0.0-beta.2",
            "v3.0pre1",
            "RC1",
            "v1.0rc",
        ] {
            assert!(is_prerelease(t), "{t}");
        }
        for t in [
            "v2.40.1",
            "5.3.0",
            "v1.2.0",
            "source-1.0",
            "arc-2",
            "v1.0-src",
        ] {
            assert!(!is_prerelease(t), "{t}");
        }
    }
}
