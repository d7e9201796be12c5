//! One function per subcommand: turn parsed arguments into calls on the
//! library and write the results. This is the command edge, so errors are
//! `anyhow` with context, and the exit status is decided here.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gix::ObjectId;

use crate::cli::{
    CheckArgs, Cli, Command, CompletionsArgs, FingerprintArgs, InstallHookArgs, ManpageArgs,
    PackOrderArgs, RenamesArgs, RepackArgs, SimilarArgs,
};
use crate::compute;
use crate::fingerprint::{Fingerprint, Fingerprinter};
use crate::output::{self, write_quoted_path};
use crate::progress::{Progress, trace};
use crate::repo::{EntryKind, Repo, RepoError};
use crate::score;
use crate::similar::{self, Query};
use crate::store::Store;

/// How a command ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Exit 0.
    Success,
    /// Exit 1: the search found nothing (like `git grep`).
    NothingFound,
    /// Exit 1: `check --strict` warned, so the hook refuses the commit.
    Refused,
}

/// Run a parsed command line, writing results to `out` and warnings to
/// `err`.
pub fn run(cli: Cli, out: &mut impl Write, err: &mut impl Write) -> Result<Status> {
    // Like `git -C`: everything, including relative paths, as if started
    // there.
    if let Some(dir) = &cli.directory {
        std::env::set_current_dir(dir)
            .with_context(|| format!("cannot change to '{}'", dir.display()))?;
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let result = match &cli.command {
        Command::Fingerprint(args) => fingerprint(&cwd, cli.no_cache, args, out, err),
        Command::Similar(args) => similar(&cwd, cli.no_cache, args, out, err),
        Command::Renames(args) => renames(&cwd, cli.no_cache, args, out, err),
        Command::Check(args) => check(&cwd, cli.no_cache, args, err),
        Command::InstallHook(args) => install_hook(&cwd, args, out),
        Command::PackOrder(args) => pack_order(&cwd, cli.no_cache, args, out, err),
        Command::Repack(args) => repack(&cwd, cli.no_cache, args, err),
        Command::Completions(args) => completions(args, out),
        Command::Manpage(args) => manpage(&cwd, args, out),
    };
    match result {
        Err(e) if is_broken_pipe(&e) => Ok(Status::Success),
        other => other,
    }
}

/// The message `main` prints after `fatal: `: the context chain joined as
/// anyhow's `{:#}` does, except that a "not a git repository" error is
/// complete on its own (gix's cause only repeats it).
pub fn describe_error(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        parts.push(cause.to_string());
        if matches!(
            cause.downcast_ref::<RepoError>(),
            Some(RepoError::NotARepository { .. } | RepoError::BadGitDir { .. })
        ) {
            break;
        }
    }
    parts.join(": ")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The repository's store, or a disabled one for `--no-cache`. It lives in
/// `simm.storeDir` when set, a relative path being taken from the common
/// git directory (where the default, `simm`, lives, so the same value means
/// the same place from every worktree and in bare repositories); several
/// repositories may share one store, since blob ids name content.
fn open_store(repo: &Repo, no_cache: bool) -> Result<Store> {
    let hash_len = repo.object_hash().len_in_bytes();
    if no_cache {
        return Ok(Store::disabled(hash_len));
    }
    let dir = match repo.config_path("simm.storeDir")? {
        Some(dir) => repo.common_dir().join(dir),
        None => Store::default_dir(repo.common_dir()),
    };
    Store::open(&dir, hash_len)
        .with_context(|| format!("cannot open the fingerprint store in {}", dir.display()))
}

fn flush_warnings(store: &mut Store, err: &mut impl Write) {
    for w in store.take_warnings() {
        let _ = writeln!(err, "warning: {w}");
    }
}

/// What one `fingerprint` argument named.
enum Target {
    Tree(ObjectId),
    Blob(ObjectId, String),
    Disk(PathBuf),
}

fn resolve_target(repo: Option<&Repo>, cwd: &Path, arg: &str) -> Result<Target> {
    // As in git, a bare repository has no files to confuse with revisions
    // (its own `HEAD` file is not one).
    let bare = repo.is_some_and(|r| r.work_dir().is_none());
    let on_disk = !bare && cwd.join(arg).symlink_metadata().is_ok();
    let object = match repo {
        Some(repo) => match repo.resolve_object(arg) {
            Ok(found) => Some(found),
            Err(RepoError::UnknownRevision { .. }) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    match (object, on_disk) {
        (Some(_), true) => bail!(
            "ambiguous argument '{arg}': both revision and filename\n\
             Use '--' to separate paths from revisions, like this:\n\
             'git-simm fingerprint [<revision>...] -- [<file>...]'"
        ),
        (Some((id, gix::object::Kind::Blob)), false) => Ok(Target::Blob(id, arg.to_owned())),
        (Some(_), false) => {
            let repo = repo.context("no repository")?;
            Ok(Target::Tree(repo.resolve_tree(arg)?))
        }
        (None, true) => Ok(Target::Disk(PathBuf::from(arg))),
        (None, false) if repo.is_none() => bail!(
            "'{arg}' is not a file, and there is no repository here to look up a revision \
             (not a git repository (or any of the parent directories): {})",
            cwd.display()
        ),
        (None, false) => {
            bail!("ambiguous argument '{arg}': unknown revision or path not in the working tree.")
        }
    }
}

/// One output line of `fingerprint`.
struct Line {
    fingerprint: Option<Fingerprint>,
    size: u64,
    name: Vec<u8>,
}

fn fingerprint(
    cwd: &Path,
    no_cache: bool,
    args: &FingerprintArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    // Plain files can be fingerprinted anywhere, like `git hash-object`;
    // revisions and --all need a repository.
    let repo = match Repo::discover(cwd) {
        Ok(r) => Some(r),
        Err(e @ RepoError::NotARepository { .. }) => {
            if args.all || args.targets.iter().any(|t| !cwd.join(t).exists()) {
                return Err(e.into());
            }
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mut store = match &repo {
        Some(r) => open_store(r, no_cache)?,
        None => Store::disabled(20),
    };
    if args.all {
        let repo = repo.as_ref().context("no repository")?;
        return fingerprint_all(repo, &mut store, args, out, err);
    }
    if args.targets.is_empty() && args.paths.is_empty() {
        bail!("nothing to fingerprint: name a tree-ish or a path, or use --all");
    }
    let mut targets = Vec::new();
    for t in &args.targets {
        targets.push(resolve_target(repo.as_ref(), cwd, t)?);
    }
    targets.extend(args.paths.iter().map(|p| Target::Disk(p.clone())));

    for target in targets {
        let lines = match target {
            Target::Tree(tree) => {
                let repo = repo.as_ref().context("no repository")?;
                let entries: Vec<_> = repo
                    .tree_entries(tree)?
                    .into_iter()
                    .filter(|e| e.kind != EntryKind::Submodule)
                    .collect();
                let ids: Vec<ObjectId> = entries.iter().map(|e| e.id).collect();
                let progress = Progress::new("Fingerprinting blobs", ids.len() as u64, false);
                let (prints, _) = compute::fingerprint_blobs(repo, &mut store, &ids, &progress)?;
                progress.finish();
                entries
                    .into_iter()
                    .zip(prints)
                    .map(|(e, p)| Line {
                        fingerprint: p.fingerprint,
                        size: p.size,
                        name: e.path,
                    })
                    .collect()
            }
            Target::Blob(id, name) => {
                let repo = repo.as_ref().context("no repository")?;
                let (prints, _) =
                    compute::fingerprint_blobs(repo, &mut store, &[id], &Progress::hidden())?;
                prints
                    .into_iter()
                    .map(|p| Line {
                        fingerprint: p.fingerprint,
                        size: p.size,
                        name: name.clone().into_bytes(),
                    })
                    .collect()
            }
            Target::Disk(path) => disk_lines(&cwd.join(&path), &path)?,
        };
        flush_warnings(&mut store, err);
        if !args.quiet {
            write_lines(&lines, args.nul, out)?;
        }
    }
    out.flush()?;
    Ok(Status::Success)
}

fn fingerprint_all(
    repo: &Repo,
    store: &mut Store,
    args: &FingerprintArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let blobs = repo.all_blobs()?;
    let ids: Vec<ObjectId> = blobs.iter().map(|(id, _)| *id).collect();
    let progress = Progress::new("Fingerprinting blobs", ids.len() as u64, false);
    let (prints, _) = compute::fingerprint_blobs(repo, store, &ids, &progress)?;
    progress.finish();
    flush_warnings(store, err);
    if !args.quiet {
        let lines: Vec<Line> = ids
            .iter()
            .zip(prints)
            .map(|(id, p)| Line {
                fingerprint: p.fingerprint,
                size: p.size,
                name: id.to_string().into_bytes(),
            })
            .collect();
        write_lines(&lines, args.nul, out)?;
    }
    out.flush()?;
    Ok(Status::Success)
}

fn write_lines(lines: &[Line], nul: bool, out: &mut impl Write) -> Result<()> {
    let mut buf = Vec::with_capacity(lines.len() * 100);
    for l in lines {
        let fp = l.fingerprint.unwrap_or_default();
        write!(buf, "{fp} {} ", l.size)?;
        if nul {
            buf.extend_from_slice(&l.name);
            buf.push(0);
        } else {
            write_quoted_path(&mut buf, &l.name)?;
            buf.push(b'\n');
        }
    }
    out.write_all(&buf)?;
    Ok(())
}

/// Fingerprint a file, or every file below a directory (skipping `.git`),
/// in path order. Symlinks are fingerprinted as git stores them: the target
/// path's bytes.
fn disk_lines(path: &Path, shown: &Path) -> Result<Vec<Line>> {
    let mut files = Vec::new();
    collect_files(path, shown, &mut files)?;
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut fpr = Fingerprinter::new();
    let mut lines = Vec::with_capacity(files.len());
    for (full, name) in files {
        let data = read_as_git_would(&full)?;
        lines.push(Line {
            fingerprint: fpr.fingerprint(&data),
            size: data.len() as u64,
            name,
        });
    }
    Ok(lines)
}

fn collect_files(path: &Path, shown: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read '{}'", shown.display()))?;
    if meta.is_dir() {
        let mut children: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("cannot read directory '{}'", shown.display()))?
            .collect::<std::io::Result<_>>()
            .with_context(|| format!("cannot read directory '{}'", shown.display()))?;
        children.sort_by_key(|c| c.file_name());
        for c in children {
            if c.file_name() == ".git" {
                continue;
            }
            collect_files(&c.path(), &shown.join(c.file_name()), out)?;
        }
    } else if meta.is_file() || meta.file_type().is_symlink() {
        out.push((path.to_owned(), path_bytes(shown)));
    }
    Ok(())
}

fn read_as_git_would(path: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .with_context(|| format!("cannot read link '{}'", path.display()))?;
        return Ok(path_bytes(&target));
    }
    std::fs::read(path).with_context(|| format!("cannot read '{}'", path.display()))
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Vec<u8> {
    p.to_string_lossy().into_owned().into_bytes()
}

fn similar(
    cwd: &Path,
    no_cache: bool,
    args: &SimilarArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = Repo::discover(cwd)?;
    let min_score = score::parse_rename_score(&args.threshold)
        .with_context(|| format!("invalid --threshold '{}'", args.threshold))?;
    let tree = repo.resolve_tree(&args.tree)?;
    let query_path = cwd.join(&args.query);
    let query = if query_path.is_file() || query_path.is_symlink() {
        Query {
            name: args.query.clone(),
            data: read_as_git_would(&query_path)?,
        }
    } else {
        let (id, kind) = match repo.resolve_object(&args.query) {
            Ok(found) => found,
            Err(RepoError::UnknownRevision { .. }) => bail!(
                "'{}' is neither a file nor a blob (paths are relative to the current directory; \
                 name a blob as <rev>:<path>)",
                args.query
            ),
            Err(e) => return Err(e.into()),
        };
        if kind != gix::object::Kind::Blob {
            bail!("'{}' is a {kind}, not a file or blob", args.query);
        }
        Query {
            name: args.query.clone(),
            data: repo.reader().blob(&id)?,
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
    let mut store = open_store(&repo, no_cache)?;
    let opts = similar::Options {
        min_score,
        limit: args.limit,
    };
    let (matches, _outcome) = similar::find_similar(&repo, &mut store, tree, &query, &opts)?;
    flush_warnings(&mut store, err);
    if args.json {
        let doc = serde_json::json!({
            "query": query.name,
            "tree": args.tree,
            "threshold": score::percent(min_score),
            "matches": matches.iter().map(|m| serde_json::json!({
                "path": output::json_path(&m.path),
                "blob": m.id.to_string(),
                "size": m.size,
                "score": score::percent(m.score),
                "distance": m.distance,
            })).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        let mut buf = Vec::new();
        for m in &matches {
            write!(buf, "{}%\t", score::percent(m.score))?;
            write_quoted_path(&mut buf, &m.path)?;
            buf.push(b'\n');
        }
        out.write_all(&buf)?;
    }
    out.flush()?;
    Ok(if matches.is_empty() {
        Status::NothingFound
    } else {
        Status::Success
    })
}

/// One side of a comparison, as entries sorted by path, plus the contents
/// of work-tree files that are not in the object database.
struct Side {
    entries: Vec<crate::repo::Entry>,
    contents: std::collections::HashMap<ObjectId, Vec<u8>>,
}

/// The tree of a tree-ish; `None` for a defaulted `HEAD` that does not
/// resolve (an unborn branch), which git takes as the empty tree.
fn tree_or_unborn(repo: &Repo, spec: &str, defaulted: bool) -> Result<Option<ObjectId>> {
    match repo.resolve_tree(spec) {
        Ok(tree) => Ok(Some(tree)),
        Err(RepoError::UnknownRevision { .. }) if defaulted => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The entries of a tree-ish ([`tree_or_unborn`]; unborn is empty).
fn tree_side(repo: &Repo, spec: &str, defaulted: bool) -> Result<Vec<crate::repo::Entry>> {
    match tree_or_unborn(repo, spec, defaulted)? {
        Some(tree) => Ok(repo.tree_entries(tree)?),
        None => Ok(Vec::new()),
    }
}

fn renames(
    cwd: &Path,
    no_cache: bool,
    args: &RenamesArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    use crate::renames::{Detect, Options};
    let repo = Repo::discover(cwd)?;
    let filter = match &args.diff_filter {
        Some(spec) => Some(output::DiffFilter::parse(spec).map_err(anyhow::Error::msg)?),
        None => None,
    };
    // Budgets of the exhaustive search and of git's tie replay, for
    // experiments (README, "Performance").
    let budget = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let mut opts = Options {
        exhaustive_budget: budget(
            "GIT_SIMM_EXHAUSTIVE_BUDGET",
            crate::renames::DEFAULT_EXHAUSTIVE_BUDGET,
        ),
        replay_budget: budget(
            "GIT_SIMM_REPLAY_BUDGET",
            crate::renames::DEFAULT_REPLAY_BUDGET,
        ),
        limit: args.rename_limit,
        rename_empty: args.rename_empty && !args.no_rename_empty,
        ..Options::default()
    };
    // git applies -M and -C in order; the last score given wins.
    let mut score_arg = args.find_renames.clone();
    if !args.find_copies.is_empty() {
        opts.detect = if args.find_copies.len() > 1 {
            Detect::CopiesHarder
        } else {
            Detect::Copies
        };
        if let Some(last) = args.find_copies.iter().rev().find(|s| !s.is_empty()) {
            score_arg = Some(last.clone());
        }
    }
    if args.find_copies_harder {
        opts.detect = Detect::CopiesHarder;
    }
    if args.no_renames {
        opts.detect = Detect::Off;
    }
    if let Some(s) = score_arg.filter(|s| !s.is_empty()) {
        let score =
            score::parse_rename_score(&s).with_context(|| format!("invalid rename score '{s}'"))?;
        if score > 0 {
            opts.min_score = score;
        }
    }

    // `--cached` reads the tree through the index's cache-tree where it
    // can, as `git diff --cached` does; copy detection against every file
    // and unmerged entries take the general path.
    let staged = match (args.cached, args.revs.as_slice()) {
        (true, [] | [_]) if opts.detect != Detect::CopiesHarder => {
            let spec = args.revs.first().map_or("HEAD", String::as_str);
            cached_changes(&repo, spec, args.revs.is_empty())?
        }
        _ => None,
    };
    let (changes, contents) = match staged {
        Some(changes) => (changes, Default::default()),
        None => general_changes(&repo, args, opts.detect)?,
    };
    let mut store = open_store(&repo, no_cache)?;
    let (records, outcome) = {
        let mut content = compute::RepoContent::new(&repo, &mut store, contents);
        crate::renames::detect(&changes, &opts, &mut content)?
    };
    flush_warnings(&mut store, err);
    if let Some(needed) = outcome.limit_needed {
        let _ = writeln!(
            err,
            "warning: exhaustive rename detection was skipped due to too many files.\n\
             warning: you may want to set your diff.renameLimit variable to at least {needed} and retry the command."
        );
    }
    if outcome.degraded_to_copies {
        let _ = writeln!(
            err,
            "warning: only found copies from modified paths due to too many files.\n\
             warning: you may want to set your diff.renameLimit variable to at least {} and retry the command.",
            outcome.sources.max(outcome.destinations)
        );
    }
    let records: Vec<_> = records
        .into_iter()
        .filter(|r| filter.as_ref().is_none_or(|f| f.allows(r.status.letter())))
        .collect();
    if args.json {
        write_renames_json(out, &records, &outcome, &mut store_sizes(&repo, &records))?;
    } else {
        output::write_name_status(out, &records, args.nul)?;
    }
    out.flush()?;
    Ok(Status::Success)
}

/// The changes from `spec`'s tree to the index, with the tree read only
/// where the index's cache-tree does not vouch for it ([`Repo::staged`]).
/// `None` when the index has unmerged entries, which the general path
/// reports as git does.
fn cached_changes(
    repo: &Repo,
    spec: &str,
    defaulted: bool,
) -> Result<Option<Vec<crate::changes::Change>>> {
    match repo.staged(tree_or_unborn(repo, spec, defaulted)?) {
        Ok(staged) => Ok(Some(
            crate::changes::diff_staged(&staged.tree, &staged.index, &staged.same).0,
        )),
        Err(RepoError::Unmerged { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Changes to detect renames in, and contents the object database lacks
/// (work tree files), by id.
type Compared = (
    Vec<crate::changes::Change>,
    std::collections::HashMap<ObjectId, Vec<u8>>,
);

/// The changes `renames` compares, read whole: two trees, a tree and the
/// index, or a tree and the work tree (whose contents are kept, since the
/// object database does not have them).
fn general_changes(
    repo: &Repo,
    args: &RenamesArgs,
    detect: crate::renames::Detect,
) -> Result<Compared> {
    let mut unmerged: Vec<Vec<u8>> = Vec::new();
    let (old, new) = match (args.cached, args.revs.as_slice()) {
        (true, [] | [_]) => {
            let spec = args.revs.first().map_or("HEAD", String::as_str);
            let old = tree_side(repo, spec, args.revs.is_empty())?;
            let (entries, conflicts) = repo.index_entries_with_conflicts()?;
            unmerged = conflicts;
            let new = Side {
                entries,
                contents: Default::default(),
            };
            (old, new)
        }
        (false, [a, b]) => (
            tree_side(repo, a, false)?,
            Side {
                entries: tree_side(repo, b, false)?,
                contents: Default::default(),
            },
        ),
        (false, [] | [_]) => {
            let spec = args.revs.first().map_or("HEAD", String::as_str);
            let old = tree_side(repo, spec, args.revs.is_empty())?;
            let new = worktree_side(repo, &old)?;
            (old, new)
        }
        _ => bail!("--cached takes at most one tree-ish"),
    };
    let changes = crate::changes::diff_with_unmerged(
        &old,
        &new.entries,
        &unmerged,
        detect == crate::renames::Detect::CopiesHarder,
    );
    Ok((changes, new.contents))
}

/// Sizes of the blobs in `records`, for JSON output (from object headers).
fn store_sizes(
    repo: &Repo,
    records: &[crate::renames::Record],
) -> std::collections::HashMap<ObjectId, u64> {
    let reader = repo.reader();
    records
        .iter()
        .flat_map(|r| r.old.iter().chain(r.new.iter()))
        .filter_map(|e| reader.header(&e.id).ok().map(|(_, size)| (e.id, size)))
        .collect()
}

fn write_renames_json(
    out: &mut impl Write,
    records: &[crate::renames::Record],
    outcome: &crate::renames::Outcome,
    sizes: &mut std::collections::HashMap<ObjectId, u64>,
) -> Result<()> {
    use crate::renames::Status as S;
    let side = |e: &Option<crate::repo::Entry>| {
        e.as_ref().map(|e| {
            serde_json::json!({
                "path": output::json_path(&e.path),
                "blob": e.id.to_string(),
                "size": sizes.get(&e.id),
            })
        })
    };
    let changes: Vec<_> = records
        .iter()
        .map(|r| {
            serde_json::json!({
                "status": r.status.letter().to_string(),
                "score": matches!(r.status, S::Renamed | S::Copied).then(|| score::percent(r.score)),
                "old": side(&r.old),
                "new": side(&r.new),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "changes": changes,
        "stats": {
            "sources": outcome.sources,
            "destinations": outcome.destinations,
            "exact": outcome.exact,
            "basename": outcome.basename,
            "inexact": outcome.inexact,
            "candidate_pairs": outcome.candidate_pairs,
            "scored_pairs": outcome.scored_pairs,
            "full_rescans": outcome.full_rescans,
            "ties_unreplayed": outcome.ties_unreplayed,
            "exhaustive_destinations": outcome.exhaustive_destinations,
            "exhaustive_skipped": outcome.exhaustive_skipped,
        },
    });
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// The work tree as a side: every tracked path's current content, keeping
/// in memory only what differs from `old` (the rest is already a blob).
fn worktree_side(repo: &Repo, old: &[crate::repo::Entry]) -> Result<Side> {
    let old_ids: std::collections::HashMap<&[u8], ObjectId> =
        old.iter().map(|e| (e.path.as_slice(), e.id)).collect();
    let mapped = repo.map_worktree(|entry, data| {
        let unchanged = old_ids.get(entry.path.as_slice()) == Some(&entry.id);
        (!unchanged && entry.kind != EntryKind::Submodule).then(|| data.to_vec())
    })?;
    let mut side = Side {
        entries: Vec::with_capacity(mapped.len()),
        contents: Default::default(),
    };
    for (entry, data) in mapped {
        if let Some(data) = data {
            side.contents.insert(entry.id, data);
        }
        side.entries.push(entry);
    }
    Ok(side)
}

/// A similarity from a flag, else from git config, else the default; in
/// [`score::MAX_SCORE`] units.
fn threshold(repo: &Repo, flag: Option<&String>, key: &str, default: &str) -> Result<u32> {
    let (text, origin) = match flag {
        Some(f) => (f.clone(), "option"),
        None => match repo.config_string(key) {
            Some(v) => (v, key),
            None => (default.to_owned(), "default"),
        },
    };
    score::parse_rename_score(&text).with_context(|| format!("invalid {origin} value '{text}'"))
}

fn check(cwd: &Path, no_cache: bool, args: &CheckArgs, err: &mut impl Write) -> Result<Status> {
    use crate::check::{self, Settings};
    trace("check: start");
    let repo = Repo::discover(cwd)?;
    let limit = match repo.config_int("diff.renameLimit") {
        Some(n) if n > 0 => n as usize,
        Some(_) => 0,
        None => check::GIT_DEFAULT_RENAME_LIMIT,
    };
    // diff.renames may also be "copies", which still detects renames.
    let git_renames = match repo.config_string("diff.renames") {
        Some(v) if v.eq_ignore_ascii_case("copies") || v.eq_ignore_ascii_case("copy") => true,
        Some(_) => repo.config_bool("diff.renames").unwrap_or(true),
        None => true,
    };
    let settings = Settings {
        rename_threshold: threshold(
            &repo,
            args.rename_threshold.as_ref(),
            "simm.renameThreshold",
            "25%",
        )?,
        copy_threshold: threshold(
            &repo,
            args.copy_threshold.as_ref(),
            "simm.copyThreshold",
            "90%",
        )?,
        git_min_score: score::DEFAULT_MIN_SCORE,
        git_rename_limit: limit,
        git_renames,
        ignore: repo.config_strings("simm.ignore"),
    };
    let strict = if args.no_strict {
        false
    } else {
        args.strict || repo.config_bool("simm.strict").unwrap_or(false)
    };
    trace("check: settings");
    let staged = repo.staged(tree_or_unborn(&repo, "HEAD", true)?)?;
    trace("check: HEAD's tree and the index");
    let mut store = open_store(&repo, no_cache)?;
    let findings = {
        let mut content = compute::RepoContent::new(&repo, &mut store, Default::default());
        check::check(&staged, &settings, &mut content)?
    };
    trace("check: done");
    flush_warnings(&mut store, err);
    check::write_findings(err, &findings, &settings)?;
    err.flush()?;
    Ok(if strict && !findings.is_empty() {
        Status::Refused
    } else {
        Status::Success
    })
}

/// The hook `install-hook` writes.
pub const PRE_COMMIT_HOOK: &str = include_str!("../git-hooks/pre-commit");

fn install_hook(cwd: &Path, args: &InstallHookArgs, out: &mut impl Write) -> Result<Status> {
    let repo = Repo::discover(cwd)?;
    let dir = repo.hooks_dir();
    let path = dir.join("pre-commit");
    match std::fs::read(&path) {
        Ok(existing) if existing == PRE_COMMIT_HOOK.as_bytes() => {
            make_executable(&path)?;
            writeln!(
                out,
                "git-simm's pre-commit hook is already installed in {}",
                path.display()
            )?;
            return Ok(Status::Success);
        }
        Ok(_) if !args.force => bail!(
            "a different pre-commit hook exists at {}; not overwriting it \
             (use --force to replace it, or call `git-simm check --staged` from it)",
            path.display()
        ),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read {}", path.display()));
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Write beside it and rename, so a failed write never leaves half a hook.
    let tmp = dir.join(".pre-commit.git-simm.tmp");
    std::fs::write(&tmp, PRE_COMMIT_HOOK)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    make_executable(&tmp)?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(
        out,
        "installed git-simm's pre-commit hook in {}",
        path.display()
    )?;
    out.flush()?;
    Ok(Status::Success)
}

fn completions(args: &CompletionsArgs, out: &mut impl Write) -> Result<Status> {
    crate::generate::completions(args.shell, out)?;
    out.flush()?;
    Ok(Status::Success)
}

fn manpage(cwd: &Path, args: &ManpageArgs, out: &mut impl Write) -> Result<Status> {
    match &args.dir {
        Some(dir) => {
            crate::generate::man_pages(&cwd.join(dir))
                .with_context(|| format!("cannot write man pages to {}", dir.display()))?;
        }
        None => crate::generate::man_page(out)?,
    }
    out.flush()?;
    Ok(Status::Success)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .permissions();
    perms.set_mode(perms.mode() | 0o755);
    std::fs::set_permissions(path, perms)
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> Result<()> {
    Ok(())
}

fn pack_order(
    cwd: &Path,
    no_cache: bool,
    args: &PackOrderArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = Repo::discover(cwd)?;
    let mut store = open_store(&repo, no_cache)?;
    let list = crate::pack_objects::pack_list(
        &repo,
        &mut store,
        &crate::pack_objects::ListOptions {
            revs: &args.revs,
            keep_unreachable: args.keep_unreachable,
            strategy: args.order,
            progress: true,
        },
    )?;
    flush_warnings(&mut store, err);
    out.write_all(&list.input)?;
    out.flush()?;
    Ok(Status::Success)
}

fn repack(cwd: &Path, no_cache: bool, args: &RepackArgs, err: &mut impl Write) -> Result<Status> {
    let repo = Repo::discover(cwd)?;
    let mut store = open_store(&repo, no_cache)?;
    let opts = crate::repack::RepackOptions {
        window: args.window,
        depth: args.depth,
        threads: args.threads,
        strategy: args.order,
        progress: !args.quiet,
        write_bitmap: if args.no_write_bitmap_index {
            Some(false)
        } else if args.write_bitmap_index {
            Some(true)
        } else {
            None
        },
    };
    let report = crate::repack::repack(&repo, &mut store, &opts)?;
    flush_warnings(&mut store, err);
    if !args.quiet {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let change = if report.bytes_before > 0 {
            format!(
                " ({:+.1}%)",
                (report.bytes_after as f64 / report.bytes_before as f64 - 1.0) * 100.0
            )
        } else {
            String::new()
        };
        writeln!(
            err,
            "Repacked {} objects ({} blobs) into {}: {:.2} MiB -> {:.2} MiB{change}; {} old pack(s) removed{}",
            report.objects,
            report.blobs,
            report.pack,
            mib(report.bytes_before),
            mib(report.bytes_after),
            report.packs_removed,
            if report.bitmap {
                "; bitmap written"
            } else {
                ""
            },
        )?;
    }
    Ok(Status::Success)
}
