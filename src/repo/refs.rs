//! References in reftable repositories, which gix 0.90 cannot read.
//!
//! gix reads loose and packed references only. A repository created with
//! `git init --ref-format=reftable` (`extensions.refStorage = reftable`)
//! keeps its references in `reftable/`, and its `HEAD` file is a decoy
//! (`ref: refs/heads/.invalid`) meant to stop tools that do not know the
//! format. gix does not stop: `HEAD` and every branch read as missing, so
//! a populated repository would look unborn and every file as added.
//!
//! So here revisions are resolved by git itself, one `git rev-parse` per
//! revision (a command names a few), and everything else (objects, trees,
//! the index) is still read with gix: the object database is the same in
//! both formats. The other thing gix reads references for is
//! `includeIf "onbranch:..."`: see `config.rs` for that.

use std::process::{Command, Stdio};

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Repo, RepoError};

/// Where a repository keeps its references (`extensions.refStorage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum RefStorage {
    /// Loose files and `packed-refs`, which gix reads.
    #[default]
    Files,
    /// The reftable format, which git resolves for us.
    Reftable,
}

/// The reference storage of a repository, as git's `setup.c` decides it:
/// `extensions.refStorage` from the repository's own configuration file,
/// `files` or `reftable`. Like git, refuse an unknown value, and the
/// extension in a version 0 repository (git: "repo version is 0, but
/// v1-only extension found"), where gix would go on as if the references
/// were files.
pub(super) fn ref_storage(repo: &gix::Repository) -> Result<RefStorage, RepoError> {
    let config = repo.config_snapshot();
    let own = |meta: &gix::config::file::Metadata| meta.source == gix::config::Source::Local;
    let plumbing = config.plumbing();
    let Some(value) = plumbing.string_filter("extensions.refStorage", own) else {
        return Ok(RefStorage::Files);
    };
    let refuse = |reason: String| RepoError::BadRefStorage {
        path: repo.git_dir().to_owned(),
        reason,
    };
    let version = plumbing
        .string_filter("core.repositoryFormatVersion", own)
        .and_then(|v| v.to_str().ok().and_then(|v| v.trim().parse::<u32>().ok()))
        .unwrap_or(0);
    if version < 1 {
        return Err(refuse(
            "repo version is 0, but v1-only extension found: refstorage".into(),
        ));
    }
    if value.eq_ignore_ascii_case(b"files") {
        Ok(RefStorage::Files)
    } else if value.eq_ignore_ascii_case(b"reftable") {
        Ok(RefStorage::Reftable)
    } else {
        Err(refuse(format!(
            "unknown reference storage format '{}' (extensions.refStorage)",
            value.to_str_lossy()
        )))
    }
}

impl Repo {
    /// `git` run against this repository: its git dir and work tree
    /// explicit, so the caller's environment cannot point it elsewhere,
    /// the rest of the environment (`GIT_INDEX_FILE`, `-c` values) as git
    /// passed it to us.
    pub fn git_command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir").arg(&self.git_dir);
        if let Some(work) = &self.work_dir {
            cmd.arg("--work-tree").arg(work);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Resolve a revision with `git rev-parse`, for a reftable repository.
    /// A revision git does not know is [`RepoError::UnknownRevision`], as
    /// from gix (so an unborn `HEAD` still reads as unborn); git failing
    /// any other way is an error naming reftable. The id must name an
    /// object that exists, as gix requires: `rev-parse --verify` vouches
    /// for the syntax only.
    pub(super) fn rev_parse_with_git(
        &self,
        repo: &gix::Repository,
        spec: &[u8],
    ) -> Result<ObjectId, RepoError> {
        let mut cmd = self.git_command();
        cmd.args(["rev-parse", "-q", "--verify", "--end-of-options"])
            .arg(crate::fsutil::os_str(spec));
        let text = String::from_utf8_lossy(spec).into_owned();
        let failed = |reason: String| RepoError::Reftable {
            spec: text.clone(),
            reason,
        };
        let out = cmd
            .output()
            .map_err(|e| failed(format!("cannot run git: {e}")))?;
        let unknown = |why: &str| RepoError::UnknownRevision {
            spec: text.clone(),
            source: gix::Error::from_error(std::io::Error::other(why.to_owned())),
        };
        match out.status.code() {
            Some(0) => {}
            // `--verify -q`: the revision does not resolve; git says nothing.
            Some(1) => return Err(unknown("git rev-parse does not know it")),
            _ => return Err(failed(git_stderr(&out.stderr, out.status))),
        }
        let hex = out.stdout.trim();
        let id = ObjectId::from_hex(hex).map_err(|_| {
            failed(format!(
                "git rev-parse printed '{}', not an object id",
                hex.to_str_lossy()
            ))
        })?;
        if id.kind() != repo.object_hash() {
            return Err(failed(format!(
                "git rev-parse printed a {} id in a {} repository",
                id.kind(),
                repo.object_hash()
            )));
        }
        match super::header(&repo.objects, &id) {
            Ok(_) => Ok(id),
            Err(RepoError::MissingObject { .. }) => {
                Err(unknown("the object it names does not exist"))
            }
            Err(e) => Err(e),
        }
    }
}

/// git's stderr as one line for an error message.
pub(super) fn git_stderr(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = stderr.to_str_lossy();
    let text = text.trim();
    if text.is_empty() {
        format!("git exited with {status}")
    } else {
        text.lines()
            .map(|l| l.strip_prefix("fatal: ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
