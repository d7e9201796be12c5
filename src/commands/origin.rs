//! `git simm origin`: which commit of another repository a directory was
//! copied from.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::origin::{self, LocalFile, Range};
use git_simm::output::{self, write_quoted_path};
use git_simm::progress::Feedback;
use git_simm::repo::{EntryKind, Repo};

use super::Status;
use super::fingerprint::{
    DiskFiles, Target, collect_files, normalized, not_ignored, resolve_target,
};
use super::settings::{discover_if_any, flush_warnings, open_store};
use crate::cli::OriginArgs;

/// Matches beyond the listed ones compared file by file, so that a state
/// the first pass ranks a little low can still come first.
const COMPARE_AT_LEAST: usize = 16;

pub(super) fn origin(
    cwd: &Path,
    no_cache: bool,
    args: &OriginArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let here = discover_if_any(cwd)?;
    let directory = args.directory.to_string_lossy();
    let files = local_files(here.as_ref(), cwd, &args.directory)?;
    if files.is_empty() {
        bail!("'{directory}' has no files to compare");
    }
    let upstream = Repo::open(&cwd.join(&args.repository))?;
    let mut store = open_store(&upstream, no_cache)?;
    let opts = origin::Options {
        range: if args.range.is_empty() {
            Range::Default
        } else {
            Range::RevList(args.range.clone())
        },
        compare: if args.limit == 0 {
            usize::MAX
        } else {
            args.limit.max(COMPARE_AT_LEAST)
        },
    };
    let (compared, outcome) = origin::find_origin(&upstream, &mut store, &files, &opts, feedback)?;
    flush_warnings(&mut store, err);
    // Every state compared counts for the `exact:` line, listed or not.
    let shown = if args.limit == 0 {
        compared.len()
    } else {
        args.limit.min(compared.len())
    };
    let matches = &compared[..shown];
    let repository = args.repository.display().to_string();
    if args.json {
        let doc = output::origin::Origin::new(&directory, &repository, matches, &outcome);
        output::json::write(out, &doc)?;
    } else if let Some(best) = matches.first() {
        output::origin::write_matches(out, matches)?;
        writeln!(out)?;
        write!(out, "best: ")?;
        write_quoted_path(out, &output::origin::match_name(best))?;
        write!(out, " (commit {}", best.commit)?;
        let others: Vec<&String> = best
            .tags
            .iter()
            .filter(|t| Some(*t) != best.tag.as_ref())
            .collect();
        if !others.is_empty() {
            let shown: Vec<&str> = others.iter().take(6).map(|t| t.as_str()).collect();
            let more = if others.len() > shown.len() {
                ", ..."
            } else {
                ""
            };
            write!(
                out,
                "; the same directory in {} other tag{}: {}{more}",
                others.len(),
                if others.len() == 1 { "" } else { "s" },
                shown.join(", ")
            )?;
        }
        if best.same_state > 1 {
            write!(
                out,
                "; in {} candidate commits in all, the last {}",
                best.same_state, best.last_commit
            )?;
        }
        writeln!(out, ")")?;
        output::origin::write_exact(out, best, &compared[1..])?;
        output::origin::write_files(out, best)?;
    }
    if matches.is_empty() {
        let _ = writeln!(
            err,
            "no commit of '{repository}' shares a file with '{directory}'"
        );
        return Ok(Status::NothingFound);
    }
    Ok(Status::Success)
}

/// The files of the directory `arg` names, paths relative to it, in path
/// order.
fn local_files(repo: Option<&Repo>, cwd: &Path, given: &OsStr) -> Result<Vec<LocalFile>> {
    let arg = given.to_string_lossy();
    let target = match resolve_target(repo, cwd, given) {
        Ok(t) => t,
        Err(e) if repo.is_none() => {
            return Err(e.context(format!("'{arg}' is not a directory")));
        }
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    match target {
        Target::Blob(..) => bail!("'{arg}' is a blob, not a directory or tree"),
        Target::Tree(tree) => {
            let repo = repo.context("no repository")?;
            let mut reader = repo.reader();
            for e in repo.tree_entries(tree)? {
                if e.kind == EntryKind::Submodule {
                    continue;
                }
                files.push(LocalFile {
                    data: reader.blob(&e.id)?,
                    path: e.path,
                });
            }
        }
        Target::Disk(path) => {
            let full = cwd.join(&path);
            if !full.is_dir() {
                bail!("'{arg}' is not a directory");
            }
            let wanted = match repo.and_then(|r| r.work_dir().map(|w| (r, w))) {
                Some((repo, work)) => {
                    let inside = match (full.canonicalize(), work.canonicalize()) {
                        (Ok(d), Ok(w)) => d.starts_with(w),
                        _ => normalized(&full).starts_with(work),
                    };
                    if !inside {
                        bail!(
                            "{arg}: '{arg}' is outside repository at '{}'",
                            work.display()
                        );
                    }
                    not_ignored(repo, cwd, &path)?
                }
                None => None,
            };
            let mut found = Vec::new();
            collect_files(&full, Path::new(""), wanted.as_ref(), &mut found)?;
            let on_disk = DiskFiles::new(repo);
            for (file, rel) in found {
                files.push(LocalFile {
                    data: on_disk.read(&file)?,
                    path: rel,
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}
