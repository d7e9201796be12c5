//! `git simm export`: fingerprints as Parquet, to a file or to stdout
//! when stdout is not a terminal.

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::export::{self, Selection, TreeSource};
use git_simm::fsutil;
use git_simm::progress::Feedback;
use git_simm::repo::{Repo, RepoError};

use super::Status;
use super::settings::{flush_warnings, open_store};
use crate::cli::ExportArgs;

pub(super) fn export(
    cwd: &Path,
    no_cache: bool,
    args: &ExportArgs,
    feedback: &Feedback,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    // Refused before any work: a terminal would show binary noise (as
    // `git archive` refuses to), and the fingerprints would be lost.
    if args.output.is_none() && std::io::stdout().is_terminal() {
        bail!(
            "refusing to write binary Parquet to a terminal: \
             give --output <file> or redirect stdout"
        );
    }
    let selection = if args.all {
        Selection::All
    } else {
        let mut sources = Vec::with_capacity(args.trees.len().max(1));
        for spec in &args.trees {
            sources.push(tree_source(&repo, spec)?);
        }
        if args.trees.is_empty() {
            // An implied HEAD not yet born exports nothing, as git takes
            // it for the empty tree.
            match tree_source(&repo, OsStr::new("HEAD")) {
                Ok(source) => sources.push(source),
                Err(e)
                    if e.downcast_ref::<RepoError>()
                        .is_some_and(|r| matches!(r, RepoError::UnknownRevision { .. })) => {}
                Err(e) => return Err(e),
            }
        }
        Selection::Trees(sources)
    };
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&repo),
    };
    let mut store = open_store(&repo, no_cache)?;
    let rows = export::collect(&repo, &mut store, &name, &selection, feedback);
    flush_warnings(&mut store, err);
    let rows = rows?;
    let written = match &args.output {
        Some(path) => write_file(&rows, path, feedback)?,
        None => {
            let out = std::io::BufWriter::new(std::io::stdout());
            export::write_parquet(&rows, out, feedback)?
        }
    };
    if !args.quiet {
        writeln!(
            err,
            "Exported {} rows of {} ({} fingerprinted; {} rows answered by the store, {} blobs fingerprinted now, {} chunked now, {} signed now)",
            written.rows,
            name,
            written.fingerprinted,
            rows.outcome.cached,
            rows.outcome.computed,
            rows.histograms_computed,
            rows.signatures_computed
        )?;
    }
    Ok(Status::Success)
}

/// A tree-ish as the export names it: the commit behind it when there is
/// one (through tags), and its tree.
fn tree_source(repo: &Repo, given: &OsStr) -> Result<TreeSource> {
    let spec = given.as_encoded_bytes();
    let (id, kind) = repo.resolve_object(spec)?;
    let commit = match kind {
        gix::object::Kind::Commit => Some(id),
        gix::object::Kind::Tag => repo
            .resolve_object(&[spec, b"^{commit}"].concat())
            .ok()
            .filter(|(_, k)| *k == gix::object::Kind::Commit)
            .map(|(c, _)| c),
        _ => None,
    };
    let tree = repo.peel_to_tree(id, spec)?;
    Ok(TreeSource {
        revision: given.to_string_lossy().into_owned(),
        commit,
        tree,
    })
}

/// The name a fleet knows the repository by: `remote.origin.url`
/// normalised to `host/owner/name` ([`normalised`]); a local path there
/// (a clone of a clone or of a mirror) is followed to that repository's
/// own `remote.origin.url`, a few steps at most; else (no remote, or none
/// with a host) the repository's directory name: `repo` for `repo/.git`
/// and for a bare `repo.git`.
fn default_name(repo: &Repo) -> String {
    const HOPS: usize = 4;
    let mut url = repo.config_string("remote.origin.url");
    let mut base = repo.work_dir().unwrap_or_else(|| repo.git_dir()).to_owned();
    for _ in 0..HOPS {
        let Some(u) = url.take() else { break };
        if let Some(name) = normalised(&u) {
            return name;
        }
        // A local path, relative to the repository that names it.
        let local = base.join(u.strip_prefix("file://").unwrap_or(&u));
        let Ok(next) = Repo::open(&local) else { break };
        url = next.config_string("remote.origin.url");
        base = next.work_dir().unwrap_or_else(|| next.git_dir()).to_owned();
    }
    directory_name(repo)
}

/// The repository's directory name, without `.git`.
fn directory_name(repo: &Repo) -> String {
    let dir = repo.work_dir().unwrap_or_else(|| repo.common_dir());
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match base.strip_suffix(".git") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => base,
    }
}

/// A remote URL as `host/path` without `.git`, the user information
/// (`user:token@`, which must not travel with every exported row), the
/// port and the scheme: `https://github.com/owner/name.git`,
/// `git@github.com:owner/name.git` and `ssh://git@github.com:22/owner/name`
/// are all `github.com/owner/name`. `None` for a local path or a `file://`
/// URL (git's rule: a colon after a slash is not the scp-like form).
fn normalised(url: &str) -> Option<String> {
    let (authority, path) = match url.split_once("://") {
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("file") => return None,
        Some((_, rest)) => rest.split_at(rest.find('/').unwrap_or(rest.len())),
        None => {
            let colon = url.find(':')?;
            if url[..colon].contains('/') {
                return None;
            }
            (&url[..colon], &url[colon + 1..])
        }
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = match host.strip_prefix('[') {
        // [::1]:22
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.split(':').next().unwrap_or(host),
    };
    // A one-letter "host" is a Windows drive (`C:\repo`), not a host.
    if host.len() < 2 {
        return None;
    }
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    Some(if path.is_empty() {
        host.to_ascii_lowercase()
    } else {
        format!("{}/{path}", host.to_ascii_lowercase())
    })
}

/// How the temporaries of `export -o` are named: `.<file name>` and this,
/// then random letters, beside the file.
const TMP_MARK: &str = ".simm-tmp-";

/// Write to a temporary file beside `path`, synced, then rename it into
/// place and sync the directory, so a failed, interrupted or killed export
/// leaves no truncated Parquet behind and a finished one survives a crash.
/// The temporary is locked while written; the ones killed exports left
/// (unlocked; Parquet, or empty for a minute) are removed first, and
/// those of earlier versions (`.simm-export-` and six letters) once an
/// hour old.
fn write_file(rows: &export::Export, path: &Path, feedback: &Feedback) -> Result<export::Written> {
    let dir = fsutil::parent_dir(path);
    let name = path
        .file_name()
        .with_context(|| format!("'{}' is not a file name", path.display()))?;
    fsutil::clean_dead_temporaries(
        dir,
        |n| n.starts_with('.') && n.contains(TMP_MARK),
        PARQUET_MAGIC,
    );
    remove_old_temporaries(dir);
    let prefix = format!(".{}{TMP_MARK}", name.to_string_lossy());
    let tmp = fsutil::locked_temporary(dir, &prefix)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    let file = tmp
        .as_file()
        .try_clone()
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    let written = export::write_parquet(rows, std::io::BufWriter::new(file), feedback)
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    fsutil::sync_dir(dir).with_context(|| format!("cannot sync '{}'", dir.display()))?;
    Ok(written)
}

/// Every Parquet file begins so.
const PARQUET_MAGIC: &[u8] = b"PAR1";

/// Temporaries of earlier versions (`.simm-export-` and six letters or
/// digits, not locked): removed once an hour old, if Parquet.
fn remove_old_temporaries(dir: &Path) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for e in read.filter_map(Result::ok) {
        let old_name = e
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix(".simm-export-"))
            .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()));
        let old = e
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old_name
            && old
            && fsutil::head(&e.path(), PARQUET_MAGIC.len()).is_some_and(|h| h == PARQUET_MAGIC)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::normalised;

    #[test]
    fn remote_urls_normalised() {
        for (url, name) in [
            (
                "https://github.com/owner/name.git",
                Some("github.com/owner/name"),
            ),
            (
                "https://me:secret@GitHub.com/owner/name/",
                Some("github.com/owner/name"),
            ),
            (
                "git@github.com:owner/name.git",
                Some("github.com/owner/name"),
            ),
            (
                "ssh://git@github.com:22/owner/name",
                Some("github.com/owner/name"),
            ),
            ("git://example.org/a/b/c.git", Some("example.org/a/b/c")),
            ("ssh://git@[::1]:2222/x.git", Some("::1/x")),
            ("example.com:project.git", Some("example.com/project")),
            ("/srv/git/project.git", None),
            ("../project", None),
            ("./a:b", None),
            ("file:///srv/git/project.git", None),
            ("C:\\repos\\x", None),
        ] {
            assert_eq!(normalised(url).as_deref(), name, "{url}");
        }
    }
}
