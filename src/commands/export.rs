//! `git simm export`: fingerprints as Parquet, to a file or to stdout
//! when stdout is not a terminal.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::export::{self, Selection, TreeSource};
use git_simm::progress::Feedback;
use git_simm::repo::Repo;

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
    let repo = Repo::discover(cwd)?;
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
        let specs = if args.trees.is_empty() {
            vec!["HEAD".to_owned()]
        } else {
            args.trees.clone()
        };
        let mut sources = Vec::with_capacity(specs.len());
        for spec in specs {
            sources.push(tree_source(&repo, &spec)?);
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
            "Exported {} rows of {} ({} fingerprinted; {} rows answered by the store, {} blobs fingerprinted now, {} chunked now)",
            written.rows,
            name,
            written.fingerprinted,
            rows.outcome.cached,
            rows.outcome.computed,
            rows.histograms_computed
        )?;
    }
    Ok(Status::Success)
}

/// A tree-ish as the export names it: the commit behind it when there is
/// one (through tags), and its tree.
fn tree_source(repo: &Repo, spec: &str) -> Result<TreeSource> {
    let (id, kind) = repo.resolve_object(spec)?;
    let commit = match kind {
        gix::object::Kind::Commit => Some(id),
        gix::object::Kind::Tag => repo
            .resolve_object(&format!("{spec}^{{commit}}"))
            .ok()
            .filter(|(_, k)| *k == gix::object::Kind::Commit)
            .map(|(c, _)| c),
        _ => None,
    };
    let tree = repo.peel_to_tree(id, spec)?;
    Ok(TreeSource {
        revision: spec.to_owned(),
        commit,
        tree,
    })
}

/// `remote.origin.url`, else the repository's directory name: `repo` for
/// `repo/.git` and for a bare `repo.git`.
fn default_name(repo: &Repo) -> String {
    if let Some(url) = repo.config_string("remote.origin.url") {
        return without_credentials(&url);
    }
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

/// `url` without the user information of `scheme://user:token@host/...`,
/// which would otherwise travel with every exported row.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Write to a temporary file beside `path`, then rename it into place, so
/// a failed or interrupted export leaves no truncated Parquet behind.
fn write_file(rows: &export::Export, path: &Path, feedback: &Feedback) -> Result<export::Written> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".simm-export-");
    // A plain file's mode (the umask applies), not a temporary's 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder
        .tempfile_in(dir)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    let file = tmp
        .as_file()
        .try_clone()
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    let written = export::write_parquet(rows, std::io::BufWriter::new(file), feedback)
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    Ok(written)
}
