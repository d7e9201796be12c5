//! Packs: the order git-simm hands `git pack-objects` ([`order`]), the
//! object list it is built from ([`list`]), running git's plumbing
//! ([`git`]), checking the result ([`verify`]) and replacing a
//! repository's packs safely ([`repack`](mod@repack)); and, for packs
//! git-simm writes itself with the delta bases it chooses, git's delta
//! encoding ([`delta`]), a pack writer ([`mod@write`]) whose output
//! `git index-pack --strict` accepts, its index and reverse index
//! ([`idx`]), reading it back ([`reread`]), and the choice of those bases
//! ([`bases`], `repack --bases=simm`).

pub mod bases;
pub mod delta;
pub mod git;
pub mod idx;
pub mod list;
pub mod order;
mod pack_dir;
pub mod repack;
pub mod reread;
pub mod verify;
pub mod write;

pub use list::{ListOptions, PackList, pack_list};
pub use order::Strategy;
/// `gc.pruneExpire` as `gc` reads it; public for the fuzz targets
/// (`fuzz/`), not part of the library's interface.
#[doc(hidden)]
pub use pack_dir::parse_expiry;

use std::path::PathBuf;

use crate::progress::Interrupted;
use crate::repo::RepoError;
pub use repack::{RepackOptions, RepackReport, repack};

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
        /// git's stderr, trimmed, on one line.
        message: String,
        /// git's stderr as git wrote it, less its first `fatal: `.
        said: String,
    },
    /// git refused the revisions or options the user gave it: its own
    /// words, as it says them (`ambiguous argument 'x': unknown
    /// revision ...`).
    #[error("{message}")]
    Refused {
        /// git's message.
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

/// Why a repack did not happen or did not finish; the repository is
/// unchanged in every case except [`RepackError::Cleanup`], where the new
/// pack is in place and some old files were left behind,
/// [`RepackError::Bitmap`], where only the bitmap is missing, and
/// [`RepackError::Interrupted`] after the install, where loose copies of
/// packed objects or the bitmap may be left or missing.
#[derive(Debug, thiserror::Error)]
pub enum RepackError {
    /// A shallow clone lacks history its refs point into.
    #[error("{} is a shallow clone; repack it with git (or unshallow it: git fetch --unshallow)", path.display())]
    Shallow {
        /// The repository's git dir.
        path: PathBuf,
    },
    /// Packs marked to be kept would be rewritten.
    #[error("{} has .keep packs ({}); git-simm repack packs everything into one pack and will not override them", dir.display(), names.join(", "))]
    KeptPacks {
        /// The pack directory.
        dir: PathBuf,
        /// The `.keep` files.
        names: Vec<String>,
    },
    /// A pack without a matching index (or the reverse) is something to
    /// look at, not to delete.
    #[error("{} has no matching {}; run 'git fsck' and fix it first", path.display(), missing)]
    Incomplete {
        /// The file present.
        path: PathBuf,
        /// The extension missing.
        missing: &'static str,
    },
    /// The object directory is not writable.
    #[error("cannot write to {}", path.display())]
    NotWritable {
        /// The pack directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// Another repack holds the lock.
    #[error("another git-simm repack is running in this repository (it holds a lock on {})", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// Listing or ordering the objects failed.
    #[error(transparent)]
    List(#[from] PackError),
    /// Reading the repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// `git pack-objects` printed something other than a pack's hash.
    #[error("git pack-objects: {0}")]
    PackObjects(String),
    /// A file operation while writing or installing the new pack failed.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The repository is repacked, but its bitmap could not be written.
    #[error("the repository is repacked, but writing its bitmap failed: {0}")]
    Bitmap(String),
    /// The work was interrupted (the [`Feedback`](crate::progress::Feedback) flag was set).
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
    /// The new pack is installed, but removing old files failed.
    #[error("the new pack is in place, but {} could not be removed", path.display())]
    Cleanup {
        /// The file left behind.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}
