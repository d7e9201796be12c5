//! Packs: the order git-simm hands `git pack-objects` ([`order`]), the
//! object list it is built from ([`list`]), running git's plumbing
//! ([`git`]), checking the result ([`verify`]) and replacing a
//! repository's packs safely ([`repack`](mod@repack)); and, for packs
//! git-simm writes itself with the delta bases it chooses, git's delta
//! encoding ([`delta`]), a pack writer ([`mod@write`]) whose output
//! `git index-pack --strict` accepts, and the choice of those bases
//! ([`bases`], `repack --bases=simm`).

pub mod bases;
pub mod delta;
pub mod git;
pub mod list;
pub mod order;
pub mod repack;
pub mod verify;
pub mod write;

pub use list::{ListOptions, PackList, pack_list};
pub use order::Strategy;

use crate::repo::RepoError;
pub use repack::{RepackError, RepackOptions, RepackReport, repack};

/// Failures of the packing pipeline; each names the git command or object
/// involved.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// git could not be started at all.
    #[error("cannot run '{command}': is git installed and on PATH?")]
    Spawn {
        /// The command line.
        command: String,
        /// What the system reported.
        #[source]
        source: std::io::Error,
    },
    /// A git command failed; its own message is kept.
    #[error("'{command}' failed: {message}")]
    Git {
        /// The command line.
        command: String,
        /// git's stderr, trimmed.
        message: String,
    },
    /// git printed something that is not what its documentation promises.
    #[error("unexpected output from '{command}': {line}")]
    Parse {
        /// The command line.
        command: String,
        /// The offending line.
        line: String,
    },
    /// More blobs or trees than crafted names can order.
    #[error("{0} blobs or trees are more than the {max} a similarity order can express", max = order::MAX_RANKS)]
    TooManyObjects(usize),
    /// Reading the repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// A file operation on a pack being written failed.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// Writing a pack failed.
    #[error("cannot write the pack {}: {source}", path.display())]
    Write {
        /// The pack file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: write::WriteError,
    },
    /// Computing fingerprints failed.
    #[error(transparent)]
    Compute(#[from] crate::similarity::compute::ComputeError),
    /// The work was interrupted (a git command it ran was stopped).
    #[error("interrupted")]
    Interrupted(#[from] crate::progress::Interrupted),
}
