//! `git simm similar`: the files of a tree most like one file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::output::{self, write_quoted_path};
use git_simm::progress::Feedback;
use git_simm::repo::{AttrSource, Repo, RepoError};
use git_simm::similar::{self, Query};
use git_simm::similarity::score::{self, Binary};

use super::Status;
use super::fingerprint::DiskFiles;
use super::settings::{diff_attributes, flush_warnings, open_store};
use crate::cli::SimilarArgs;

pub(super) fn similar(
    cwd: &Path,
    no_cache: bool,
    args: &SimilarArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let min_score = score::parse_threshold(&args.threshold)
        .with_context(|| format!("invalid --threshold '{}'", args.threshold))?;
    // Searching the branch not yet born is searching nothing, as git
    // takes such a HEAD for the empty tree where it is only implied.
    let (tree_spec, defaulted) = match &args.tree {
        Some(t) => (t.as_encoded_bytes(), false),
        None => (b"HEAD".as_slice(), true),
    };
    let tree = super::renames::tree_or_unborn(&repo, tree_spec, defaulted)?
        .unwrap_or_else(|| gix::ObjectId::empty_tree(repo.object_hash()));
    let tree_name = String::from_utf8_lossy(tree_spec).into_owned();
    // Paths and revisions are any bytes, as git takes them; named as text.
    let query_bytes = args.query.as_encoded_bytes();
    let query_text = args.query.to_string_lossy().into_owned();
    let query_path = cwd.join(&args.query);
    let mut attributes = diff_attributes(&repo, None, AttrSource::WorktreeThenIndex)?;
    let query = if query_path.is_file() || query_path.is_symlink() {
        let binary = match in_work_tree(&repo, &query_path) {
            Some(rel) => attributes.binary(&rel)?,
            None => Binary::Auto,
        };
        Query {
            name: query_text.clone(),
            data: DiskFiles::new(Some(&repo)).read(&query_path)?,
            binary,
        }
    } else {
        if repo.is_partial()
            && let Ok(id) = repo.resolve_id(query_bytes)
        {
            // The query and every file of the tree are read: one fetch
            // for all that a partial clone lacks, not one for the query
            // and another for the tree.
            let mut ids: Vec<gix::ObjectId> = repo
                .tree_entries(tree)?
                .into_iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        git_simm::repo::EntryKind::Regular | git_simm::repo::EntryKind::Executable
                    )
                })
                .map(|e| e.id)
                .collect();
            ids.push(id);
            repo.fetch_missing(&ids, feedback)?;
        }
        let (id, kind) = match repo.resolve_object(query_bytes) {
            Ok(found) => found,
            Err(RepoError::UnknownRevision { .. }) => bail!(
                "'{}' is neither a file nor a blob (paths are relative to the current directory; \
                 name a blob as <rev>:<path>)",
                query_text
            ),
            Err(e) => return Err(e.into()),
        };
        if kind != gix::object::Kind::Blob {
            bail!("'{query_text}' is a {kind}, not a file or blob");
        }
        // `<rev>:<path>` names the path its attributes are read for; a
        // path relative to the current directory (`:./x`) or a bare blob
        // id has none.
        let path = query_bytes
            .iter()
            .position(|&b| b == b':')
            .map(|colon| &query_bytes[colon + 1..]);
        let binary = match path {
            Some(path) if !path.is_empty() && !path.starts_with(b".") => {
                let start = path.iter().take_while(|&&b| b == b'/').count();
                attributes.binary(&path[start..])?
            }
            _ => Binary::Auto,
        };
        Query {
            name: query_text.clone(),
            data: repo.reader().blob(&id)?,
            binary,
        }
    };
    if query.data.is_empty() {
        let _ = writeln!(
            err,
            "warning: '{}' is empty; git never pairs empty files by content",
            query.name
        );
        return Ok(Status::NothingFound);
    }
    let opts = similar::Options {
        min_score,
        limit: args.limit,
        ignore_common: !args.no_ignore_common,
    };
    let mut store = open_store(&repo, no_cache)?;
    if args.containment {
        let status = containing(
            &repo, &mut store, tree, &query, &opts, args, attributes, feedback, out,
        );
        flush_warnings(&mut store, err);
        return status;
    }
    let (matches, _outcome) = similar::find_similar(
        &repo,
        &mut store,
        tree,
        &query,
        &opts,
        Some(&mut attributes),
        feedback,
    )?;
    flush_warnings(&mut store, err);
    if args.json {
        let doc = output::json::Similar::new(&query.name, &tree_name, min_score, &matches);
        output::json::write(out, &doc)?;
    } else {
        let lines = matches
            .iter()
            .map(|m| (format!("{}%\t", score::percent(m.score)), &m.path[..]));
        write_lines(out, args.nul, lines)?;
    }
    out.flush()?;
    Ok(found(!matches.is_empty()))
}

/// `similar --containment`.
#[allow(clippy::too_many_arguments)]
fn containing(
    repo: &Repo,
    store: &mut git_simm::similarity::store::Store,
    tree: gix::ObjectId,
    query: &Query,
    opts: &similar::Options,
    args: &SimilarArgs,
    mut attributes: git_simm::repo::DiffAttributes,
    feedback: &Feedback,
    out: &mut impl Write,
) -> Result<Status> {
    let matches = similar::find_containing(
        repo,
        store,
        tree,
        query,
        opts,
        Some(&mut attributes),
        feedback,
    )?;
    if args.json {
        let tree_name = match &args.tree {
            Some(t) => t.to_string_lossy().into_owned(),
            None => "HEAD".to_owned(),
        };
        let doc = output::json::Containing::new(&query.name, &tree_name, opts.min_score, &matches);
        output::json::write(out, &doc)?;
    } else {
        let lines = matches.iter().map(|m| {
            let prefix = format!(
                "{}%\t{}%\t",
                score::percent(m.query_in_file),
                score::percent(m.file_in_query)
            );
            (prefix, &m.path[..])
        });
        write_lines(out, args.nul, lines)?;
    }
    out.flush()?;
    Ok(found(!matches.is_empty()))
}

/// One line per match, `<prefix><path>`: with `-z` the path verbatim and
/// NUL-ended, else quoted as git quotes paths and LF-ended.
fn write_lines<'a>(
    out: &mut impl Write,
    nul: bool,
    lines: impl Iterator<Item = (String, &'a [u8])>,
) -> Result<()> {
    let mut buf = Vec::new();
    for (prefix, path) in lines {
        buf.extend_from_slice(prefix.as_bytes());
        if nul {
            buf.extend_from_slice(path);
            buf.push(b'\0');
        } else {
            write_quoted_path(&mut buf, path)?;
            buf.push(b'\n');
        }
    }
    out.write_all(&buf)?;
    Ok(())
}

/// `similar`'s exit status: 1 when nothing qualified.
fn found(any: bool) -> Status {
    if any {
        Status::Success
    } else {
        Status::NothingFound
    }
}

/// `file`'s path from the top of the work tree, when it is inside it.
fn in_work_tree(repo: &Repo, file: &Path) -> Option<Vec<u8>> {
    let top = repo.work_dir()?.canonicalize().ok()?;
    super::fingerprint::relative_to(&top, file)
}
