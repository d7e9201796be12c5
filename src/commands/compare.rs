//! `git simm compare`: two files, from their signatures.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::compare::{self, Side};
use git_simm::output::compare::{self as report, Named};
use git_simm::progress::Feedback;
use git_simm::repo::{Repo, RepoError};
use git_simm::similarity::compute::{self, ComputeError};
use git_simm::similarity::signature::Stored;
use gix::ObjectId;

use super::Status;
use super::fingerprint::DiskFiles;
use super::settings::{discover_if_any, flush_warnings, open_store, store_dir};
use crate::cli::CompareArgs;

/// A resolved side: what it is and where it came from.
struct Resolved {
    side: Side,
    blob: Option<ObjectId>,
}

pub(super) fn compare(
    cwd: &Path,
    no_cache: bool,
    args: &CompareArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let here = discover_if_any(cwd)?;
    let there = match &args.repository {
        Some(p) => Some(Repo::open(&cwd.join(p))?),
        None => None,
    };
    // One reader of files on disk for both sides: its conversions read
    // the index once.
    let disk = DiskFiles::new(here.as_ref());
    let a = resolve(
        here.as_ref(),
        cwd,
        &args.a,
        Some(&disk),
        no_cache,
        feedback,
        err,
    )?;
    let b = match &there {
        Some(repo) => resolve(Some(repo), cwd, &args.b, None, no_cache, feedback, err)?,
        None => resolve(
            here.as_ref(),
            cwd,
            &args.b,
            Some(&disk),
            no_cache,
            feedback,
            err,
        )?,
    };
    let same = a.blob.is_some() && a.blob == b.blob;
    let c = compare::compare(&a.side, &b.side, same);
    let repository = args.repository.as_ref().map(|p| p.display().to_string());
    let name_a = Named {
        name: args.a.as_encoded_bytes(),
        blob: a.blob.map(|id| id.to_string()),
        repository: None,
    };
    let name_b = Named {
        name: args.b.as_encoded_bytes(),
        blob: b.blob.map(|id| id.to_string()),
        repository,
    };
    if args.json {
        let doc = report::Compare::new(&name_a, &name_b, &c);
        git_simm::output::json::write(out, &doc)?;
    } else {
        report::write_text(out, &name_a, &name_b, &c)?;
    }
    out.flush()?;
    Ok(Status::Success)
}

/// One side: a file on disk (when `disk` is given and it exists, read
/// through it), else a
/// blob of `repo`, its signature from `repo`'s store (the blob read only
/// if the store lacks it) and its content when the blob is present.
#[allow(clippy::too_many_arguments)]
fn resolve(
    repo: Option<&Repo>,
    cwd: &Path,
    arg: &std::ffi::OsStr,
    disk: Option<&DiskFiles<'_>>,
    no_cache: bool,
    feedback: &Feedback,
    err: &mut impl Write,
) -> Result<Resolved> {
    let path = cwd.join(arg);
    let arg_bytes = arg.as_encoded_bytes();
    let arg = &*arg.to_string_lossy();
    let id = match repo {
        Some(r) => object_id(r, arg_bytes)?,
        None => None,
    };
    // A bare repository has no work tree: a name is a revision first (its
    // directory holds `HEAD` and `config`), a file on disk only when no
    // revision has that name, as for `git diff --no-index`.
    let on_disk = disk.is_some()
        && path.symlink_metadata().is_ok()
        && (repo.is_none_or(|r| r.work_dir().is_some()) || id.is_none());
    match (id, disk.filter(|_| on_disk)) {
        (Some(_), Some(_)) => bail!(
            "ambiguous argument '{arg}': both revision and filename\n\
             Use ':./{arg}' for the file in the index, or a path that is not a revision \
             (such as './{arg}') for the file on disk."
        ),
        (None, Some(disk)) => {
            if path.is_dir() {
                bail!("'{arg}' is a directory, not a file");
            }
            let data = disk.read(&path)?;
            Ok(Resolved {
                side: Side {
                    stored: Stored::of(&data),
                    content: Some(data),
                },
                blob: None,
            })
        }
        (Some(id), None) => {
            let repo = repo.context("no repository")?;
            blob_side(repo, id, arg, no_cache, feedback, err)
        }
        (None, None) if repo.is_none() => bail!(
            "'{arg}' is not a file, and there is no repository here to look up a blob \
             (not a git repository (or any of the parent directories): {})",
            cwd.display()
        ),
        (None, None) => bail!(
            "'{arg}' is neither a file nor a blob (paths are relative to the current directory; \
             name a blob as <rev>:<path>)"
        ),
    }
}

/// The object `arg` names in `repo`, without reading it (a blob-less
/// partial clone has the trees that name a blob, not the blob); `None`
/// when it names nothing.
fn object_id(repo: &Repo, arg: &[u8]) -> Result<Option<ObjectId>> {
    match repo.resolve_id(arg) {
        Ok(id) => Ok(Some(id)),
        Err(RepoError::UnknownRevision { .. }) => {
            // A full id of an object this repository lacks still names a
            // blob whose signature a store may hold.
            Ok(ObjectId::from_hex(arg)
                .ok()
                .filter(|id| id.kind() == repo.object_hash()))
        }
        Err(e) => Err(e.into()),
    }
}

fn blob_side(
    repo: &Repo,
    id: ObjectId,
    arg: &str,
    no_cache: bool,
    feedback: &Feedback,
    err: &mut impl Write,
) -> Result<Resolved> {
    let present = repo.missing_objects(&[id]).is_empty();
    if present {
        let (kind, _) = repo.reader().header(&id)?;
        if kind != gix::object::Kind::Blob {
            bail!("'{arg}' is a {kind}, not a file or blob");
        }
    }
    let mut store = open_store(repo, no_cache)?;
    let found = compute::signatures(repo, &mut store, &[id], feedback);
    flush_warnings(&mut store, err);
    let stored = match found {
        Ok(mut s) => s.pop().unwrap_or_default(),
        Err(ComputeError::Repo(RepoError::MissingObject { .. })) if !present => {
            bail!(
                "no signature of '{arg}' (blob {id}) in the store at {}, and the blob is not in {}",
                store_dir(repo)?.display(),
                repo.common_dir().display()
            )
        }
        Err(e) => return Err(e.into()),
    };
    // Read only when present: comparing never fetches a blob the
    // signature already stands for.
    let content = if repo.missing_objects(&[id]).is_empty() {
        Some(repo.reader().blob(&id)?)
    } else {
        None
    };
    Ok(Resolved {
        side: Side { stored, content },
        blob: Some(id),
    })
}
