//! `git simm renames`: the two sides compared (trees, the index, the work
//! tree), rename detection, and git's output formats.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::output::{self};
use git_simm::progress::Feedback;
use git_simm::repo::{AttrSource, EntryKind, Repo, RepoError};
use git_simm::similarity::score;
use gix::ObjectId;

use super::Status;
use super::settings::{budgets, diff_attributes, flush_warnings, open_store};
use crate::cli::RenamesArgs;

/// One side of a comparison, as entries sorted by path, plus the contents
/// of work-tree files that are not in the object database.
pub(super) struct Side {
    entries: Vec<git_simm::repo::Entry>,
    contents: std::collections::HashMap<ObjectId, Vec<u8>>,
}

/// The tree of a tree-ish; `None` for a defaulted `HEAD` that does not
/// resolve (an unborn branch), which git takes as the empty tree.
pub(super) fn tree_or_unborn(repo: &Repo, spec: &str, defaulted: bool) -> Result<Option<ObjectId>> {
    match repo.resolve_tree(spec) {
        Ok(tree) => Ok(Some(tree)),
        Err(RepoError::UnknownRevision { .. }) if defaulted => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The entries of a tree-ish ([`tree_or_unborn`]; unborn is empty).
pub(super) fn tree_side(
    repo: &Repo,
    spec: &str,
    defaulted: bool,
) -> Result<Vec<git_simm::repo::Entry>> {
    match tree_or_unborn(repo, spec, defaulted)? {
        Some(tree) => Ok(repo.tree_entries(tree)?),
        None => Ok(Vec::new()),
    }
}

pub(super) fn renames(
    cwd: &Path,
    no_cache: bool,
    args: &RenamesArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    use git_simm::renames::{Detect, Options};
    let repo = Repo::discover(cwd)?;
    let filter = match &args.diff_filter {
        Some(spec) => Some(output::DiffFilter::parse(spec).map_err(anyhow::Error::msg)?),
        None => None,
    };
    let budgets = budgets();
    let mut opts = Options {
        exhaustive_budget: budgets.exhaustive,
        replay_budget: budgets.replay,
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
        (true, [] | [_]) if opts.detect != Detect::CopiesHarder && args.pathspecs.is_empty() => {
            let spec = args.revs.first().map_or("HEAD", String::as_str);
            cached_changes(&repo, spec, args.revs.is_empty())?
        }
        _ => None,
    };
    let (changes, contents) = match staged {
        Some(changes) => (changes, Default::default()),
        None => general_changes(&repo, args, opts.detect)?,
    };
    feedback.trace("renames: the changes");
    let attributes = diff_attributes(&repo, args.attr_source.as_deref(), attr_source_of(args))?;
    feedback.trace("renames: attribute sources");
    let split_opts = match &args.find_splits {
        Some(s) => {
            let min = score::parse_rename_score(s)
                .with_context(|| format!("invalid --find-splits value '{s}'"))?;
            Some(git_simm::renames::splits::Options {
                min: if min == 0 {
                    git_simm::renames::splits::Options::default().min
                } else {
                    min
                },
                ..Default::default()
            })
        }
        None => None,
    };
    let mut store = open_store(&repo, no_cache)?;
    let (records, outcome, spreads) = {
        let mut content =
            git_simm::renames::RepoContent::new(&repo, &mut store, contents, feedback)
                .with_attributes(attributes);
        let (records, outcome) =
            git_simm::renames::detect(&changes, &opts, &mut content, feedback)?;
        let spreads = match &split_opts {
            Some(o) => Some(git_simm::renames::splits::find(&records, o, &mut content)?),
            None => None,
        };
        (records, outcome, spreads)
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
    if args.quiet {
        // Nothing printed, as git diff --quiet.
    } else if args.json {
        let mut doc = output::json::Renames::new(&records, &outcome, &store_sizes(&repo, &records));
        if let Some((splits, merges)) = &spreads {
            doc.splits = Some(splits.iter().map(output::json::Spread::new).collect());
            doc.merges = Some(merges.iter().map(output::json::Spread::new).collect());
        }
        output::json::write(out, &doc)?;
    } else {
        output::write_name_status(out, &records, args.nul)?;
        if let Some((splits, merges)) = &spreads {
            output::write_spreads(out, splits, merges, args.nul)?;
        }
    }
    out.flush()?;
    if (args.exit_code || args.quiet) && !records.is_empty() {
        return Ok(Status::Differences);
    }
    Ok(Status::Success)
}

/// Where git's diff reads in-tree attribute files for this comparison: a
/// diff of two trees does not load the index, so only the work tree's
/// count; one against the index or the work tree reads the index's where
/// the work tree has none.
fn attr_source_of(args: &RenamesArgs) -> AttrSource {
    let two_trees = match args.revs.as_slice() {
        [_, _] => true,
        [one] => !args.cached && (one.contains("..")),
        _ => false,
    };
    if two_trees {
        AttrSource::Worktree
    } else {
        AttrSource::WorktreeThenIndex
    }
}

/// The changes from `spec`'s tree to the index, with the tree read only
/// where the index's cache-tree does not vouch for it ([`Repo::staged`]).
/// `None` when the index has unmerged entries, which the general path
/// reports as git does.
pub(super) fn cached_changes(
    repo: &Repo,
    spec: &str,
    defaulted: bool,
) -> Result<Option<Vec<git_simm::repo::changes::Change>>> {
    match repo.staged(tree_or_unborn(repo, spec, defaulted)?) {
        Ok(staged) => Ok(Some(
            git_simm::repo::changes::diff_staged(&staged.tree, &staged.index, &staged.same).0,
        )),
        Err(RepoError::Unmerged { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Changes to detect renames in, and contents the object database lacks
/// (work tree files), by id.
pub(super) type Compared = (
    Vec<git_simm::repo::changes::Change>,
    std::collections::HashMap<ObjectId, Vec<u8>>,
);

/// The changes `renames` compares, read whole: two trees, a tree and the
/// index, or a tree and the work tree (whose contents are kept, since the
/// object database does not have them).
pub(super) fn general_changes(
    repo: &Repo,
    args: &RenamesArgs,
    detect: git_simm::renames::Detect,
) -> Result<Compared> {
    let mut unmerged: Vec<Vec<u8>> = Vec::new();
    // `A..B` and `A...B`, read as git diff reads them.
    let range = match (args.cached, args.revs.as_slice()) {
        (false, [one]) => repo.resolve_diff_range(one)?,
        _ => None,
    };
    let (old, new) = match (args.cached, args.revs.as_slice(), range) {
        (_, _, Some((a, b))) => (
            repo.tree_entries(a)?,
            Side {
                entries: repo.tree_entries(b)?,
                contents: Default::default(),
            },
        ),
        (true, [] | [_], None) => {
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
        (false, [a, b], None) => (
            tree_side(repo, a, false)?,
            Side {
                entries: tree_side(repo, b, false)?,
                contents: Default::default(),
            },
        ),
        (false, [] | [_], None) => {
            let spec = args.revs.first().map_or("HEAD", String::as_str);
            let old = tree_side(repo, spec, args.revs.is_empty())?;
            let new = worktree_side(repo, &old)?;
            (old, new)
        }
        _ => bail!("--cached takes at most one tree-ish"),
    };
    let (old, new) = match Pathspecs::new(repo, &args.pathspecs)? {
        Some(specs) => {
            let mut old = old;
            let mut new = new;
            old.retain(|e| specs.matches(&e.path));
            new.entries.retain(|e| specs.matches(&e.path));
            unmerged.retain(|p| specs.matches(p));
            (old, new)
        }
        None => (old, new),
    };
    let changes = git_simm::repo::changes::diff_with_unmerged(
        &old,
        &new.entries,
        &unmerged,
        detect == git_simm::renames::Detect::CopiesHarder,
        repo.object_hash(),
    );
    Ok((changes, new.contents))
}

/// Sizes of the blobs in `records`, for JSON output (from object headers).
pub(super) fn store_sizes(
    repo: &Repo,
    records: &[git_simm::renames::Record],
) -> std::collections::HashMap<ObjectId, u64> {
    let reader = repo.reader();
    records
        .iter()
        .flat_map(|r| r.old.iter().chain(r.new.iter()))
        .filter_map(|e| reader.header(&e.id).ok().map(|(_, size)| (e.id, size)))
        .collect()
}

/// The work tree as a side: every tracked path's current content, keeping
/// in memory only what differs from `old` (the rest is already a blob).
pub(super) fn worktree_side(repo: &Repo, old: &[git_simm::repo::Entry]) -> Result<Side> {
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
    for (mut entry, data) in mapped {
        if let Some(data) = data {
            side.contents.insert(entry.id, data);
        }
        if entry.kind == EntryKind::Submodule
            && let Some(work_dir) = repo.work_dir()
        {
            entry.id = submodule_state(repo, work_dir, &entry)?;
        }
        side.entries.push(entry);
    }
    Ok(side)
}

/// The id git's diff gives a checked-out submodule on the work-tree side
/// (`diff-lib.c`, `match_stat_with_submodule`): the commit its HEAD is at,
/// or the null id when its tracked content is modified (as `git status
/// --porcelain=2` in the submodule reports it, which is what git runs
/// too; untracked files do not count), so that a submodule moved or dirty
/// is `M`. `diff.ignoreSubmodules` and `submodule.<name>.ignore` are not
/// read.
/// A submodule that is not checked out keeps the index's commit.
fn submodule_state(
    repo: &Repo,
    work_dir: &Path,
    entry: &git_simm::repo::Entry,
) -> Result<ObjectId> {
    let Ok(rel) = std::str::from_utf8(&entry.path) else {
        return Ok(entry.id);
    };
    let dir = work_dir.join(rel);
    if !dir.join(".git").exists() {
        return Ok(entry.id);
    }
    let git = |args: &[&str]| -> Result<std::process::Output> {
        std::process::Command::new("git")
            .current_dir(&dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .args(args)
            .output()
            .with_context(|| format!("cannot run git in submodule '{rel}'"))
    };
    // git's diff does not count untracked files in a submodule.
    let status = git(&["status", "--porcelain=2", "--untracked-files=no"])?;
    if !status.status.success() {
        bail!(
            "cannot read the status of submodule '{rel}': {}",
            String::from_utf8_lossy(&status.stderr).trim()
        );
    }
    if !status.stdout.is_empty() {
        return Ok(ObjectId::null(repo.object_hash()));
    }
    let head = git(&["rev-parse", "--verify", "-q", "HEAD"])?;
    let head = String::from_utf8_lossy(&head.stdout);
    Ok(ObjectId::from_hex(head.trim().as_bytes()).unwrap_or(entry.id))
}

/// git's pathspecs without magic: each names a path or a directory (what is
/// under it) relative to the current directory, or is a wildmatch pattern
/// against the whole path, where `*` crosses `/` (git's `pathspec.c`,
/// `match_pathspec_item`).
struct Pathspecs {
    specs: Vec<Vec<u8>>,
}

impl Pathspecs {
    /// `None` when there are no pathspecs (everything matches).
    fn new(repo: &Repo, given: &[String]) -> Result<Option<Pathspecs>> {
        if given.is_empty() {
            return Ok(None);
        }
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let prefix = match repo.work_dir() {
            Some(top) => {
                let top = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
                let cwd = cwd.canonicalize().unwrap_or(cwd);
                cwd.strip_prefix(&top)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default()
            }
            None => String::new(),
        };
        let mut specs = Vec::new();
        for spec in given {
            let mut parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
            for part in spec.split('/') {
                match part {
                    "" | "." => {}
                    ".." => {
                        if parts.pop().is_none() {
                            bail!("{spec}: '{spec}' is outside repository");
                        }
                    }
                    p => parts.push(p),
                }
            }
            specs.push(parts.join("/").into_bytes());
        }
        Ok(Some(Pathspecs { specs }))
    }

    fn matches(&self, path: &[u8]) -> bool {
        use gix::bstr::ByteSlice;
        self.specs.iter().any(|spec| {
            spec.is_empty()
                || path == spec.as_slice()
                || (path.starts_with(spec) && path.get(spec.len()) == Some(&b'/'))
                || (spec.iter().any(|b| matches!(b, b'*' | b'?' | b'['))
                    && gix::glob::wildmatch(
                        spec.as_bstr(),
                        path.as_bstr(),
                        gix::glob::wildmatch::Mode::empty(),
                    ))
        })
    }
}
