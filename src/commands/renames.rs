//! `git simm renames`: the two sides compared (trees, the index, the work
//! tree), rename detection, and git's output formats.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::output::{self};
use git_simm::progress::Feedback;
use git_simm::repo::{AttrSource, EntryKind, IgnoreSubmodules, Repo, RepoError, SubmoduleIgnores};
use git_simm::similarity::score;
use gix::ObjectId;

use super::Status;
use super::settings::{diff_attributes, flush_warnings, open_store};
use crate::cli::RenamesArgs;

/// One side of a comparison, as entries sorted by path, plus the contents
/// of work-tree files that are not in the object database.
pub(super) struct Side {
    entries: Vec<git_simm::repo::Entry>,
    contents: std::collections::HashMap<ObjectId, Vec<u8>>,
    /// Work-tree paths git's diff does not count as up to date
    /// ([`git_simm::repo::WorktreeRead::fresh`]): it compares them by
    /// content and drops them where that did not change, so they are no
    /// copy sources even for `--find-copies-harder`.
    stale: std::collections::HashSet<Vec<u8>>,
}

/// `e`, or the usage error git diff gives where a blob stands for a
/// tree-ish: it takes blobs only in pairs (a diff of two blobs).
pub(super) fn blob_is_usage(e: anyhow::Error) -> anyhow::Error {
    let not_a_tree = e.chain().find_map(|c| match c.downcast_ref::<RepoError>() {
        Some(r @ RepoError::NotATreeish { kind, .. }) if *kind == gix::object::Kind::Blob => {
            Some(r.to_string())
        }
        _ => None,
    });
    match not_a_tree {
        Some(message) => super::Usage(message).into(),
        None => e,
    }
}

/// The tree of a tree-ish; `None` for a defaulted `HEAD` that does not
/// resolve (an unborn branch), which git takes as the empty tree.
pub(super) fn tree_or_unborn(
    repo: &Repo,
    spec: &(impl AsRef<[u8]> + ?Sized),
    defaulted: bool,
) -> Result<Option<ObjectId>> {
    match repo.resolve_tree(spec) {
        Ok(tree) => Ok(Some(tree)),
        Err(RepoError::UnknownRevision { .. }) if defaulted => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The entries of a tree-ish ([`tree_or_unborn`]; unborn is empty).
pub(super) fn tree_side(
    repo: &Repo,
    spec: &(impl AsRef<[u8]> + ?Sized),
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
    let repo = super::settings::discover(cwd)?;
    feedback.trace("renames: repository opened");
    let filter = if args.diff_filter.is_empty() {
        None
    } else {
        let mut f = output::DiffFilter::default();
        for spec in &args.diff_filter {
            f.add(spec).map_err(anyhow::Error::msg)?;
        }
        Some(f)
    };
    let mut opts = Options {
        limit: args.rename_limit,
        rename_empty: args.rename_empty && !args.no_rename_empty,
        ..Options::default()
    };
    let (detect, score_arg) = detection(&args.detection);
    opts.detect = detect;
    // As in git, the last -B given counts.
    if let Some(b) = args.break_rewrites.last() {
        opts.breaks = Some(git_simm::renames::Breaks::parse(b)?);
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
            let spec = args
                .revs
                .first()
                .map_or(b"HEAD".as_slice(), |r| r.as_encoded_bytes());
            cached_changes(&repo, spec, args.revs.is_empty())?
        }
        _ => None,
    };
    let forced = match &args.ignore_submodules {
        Some(when) => Some(IgnoreSubmodules::parse(when)?),
        None => None,
    };
    // git reads diff.ignoreSubmodules with the rest of its diff settings,
    // so a bad value stops every diff, submodules or not.
    if let Some(value) = repo.config_string("diff.ignoreSubmodules") {
        IgnoreSubmodules::parse(&value)?;
    }
    let ignores = Ignores {
        repo: &repo,
        forced,
        loaded: std::cell::OnceCell::new(),
    };
    let (changes, contents) = match staged {
        Some(changes) => (changes, Default::default()),
        None => general_changes(&repo, cwd, args, opts.detect, &ignores)?,
    };
    let changes = without_ignored_submodules(changes, &ignores)?;
    feedback.trace("renames: the changes");
    let attributes = diff_attributes(&repo, args.attr_source.as_deref(), attr_source_of(args))?;
    feedback.trace("renames: attribute sources");
    let split_opts = match &args.find_splits {
        Some(s) => {
            let min = score::parse_threshold(s)
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
        content.flush()?;
        // The process ends after the output: freeing every histogram
        // read (tens of thousands after a large move) would only delay
        // the exit by milliseconds. Nothing in it holds a lock or a
        // temporary file.
        std::mem::forget(content);
        (records, outcome, spreads)
    };
    std::mem::forget(changes);
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
    // Without `--diff-filter` the records stay where they are: moving
    // tens of thousands of them only to keep them all shows in a warm run.
    let mut records = records;
    if let Some(f) = &filter {
        f.retain(&mut records);
    }
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
    let differences = !records.is_empty();
    // As the content and the changes above: tens of thousands of paths,
    // freed one by one only to exit.
    std::mem::forget(records);
    if (args.exit_code || args.quiet) && differences {
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
        [one] => !args.cached && one.as_encoded_bytes().windows(2).any(|w| w == b".."),
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
    spec: &(impl AsRef<[u8]> + ?Sized),
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
    cwd: &Path,
    args: &RenamesArgs,
    detect: git_simm::renames::Detect,
    ignores: &Ignores,
) -> Result<Compared> {
    let mut unmerged: Vec<Vec<u8>> = Vec::new();
    // `A..B` and `A...B`, read as git diff reads them.
    let range = match (args.cached, args.revs.as_slice()) {
        (false, [one]) => repo.resolve_diff_range(one.as_encoded_bytes())?,
        _ => None,
    };
    // Between two trees, unchanged files are read only as copy sources
    // of `--find-copies-harder`; else the subtrees both hold alike are
    // left unread, as git's tree diff leaves them.
    let harder = detect == git_simm::renames::Detect::CopiesHarder;
    let two_trees = |a: ObjectId, b: ObjectId| -> Result<(Vec<_>, Side)> {
        let (old, new) = if harder {
            (repo.tree_entries(a)?, repo.tree_entries(b)?)
        } else {
            repo.tree_entries_differing(a, b)?
        };
        Ok((
            old,
            Side {
                entries: new,
                contents: Default::default(),
                stale: Default::default(),
            },
        ))
    };
    let (old, new) = match (args.cached, args.revs.as_slice(), range) {
        (_, _, Some((a, b))) => two_trees(a, b)?,
        (true, [] | [_], None) => {
            let spec = args
                .revs
                .first()
                .map_or(b"HEAD".as_slice(), |r| r.as_encoded_bytes());
            let old = tree_side(repo, spec, args.revs.is_empty())?;
            let (entries, conflicts) = repo.index_entries_with_conflicts()?;
            unmerged = conflicts;
            let new = Side {
                entries,
                contents: Default::default(),
                stale: Default::default(),
            };
            (old, new)
        }
        (false, [a, b], None) => {
            let a = repo.resolve_tree(a.as_encoded_bytes())?;
            two_trees(a, repo.resolve_tree(b.as_encoded_bytes())?)?
        }
        (false, [] | [_], None) => {
            let spec = args
                .revs
                .first()
                .map_or(b"HEAD".as_slice(), |r| r.as_encoded_bytes());
            let old = tree_side(repo, spec, args.revs.is_empty())?;
            let attr_tree = super::settings::attr_tree(repo, args.attr_source.as_deref())?;
            let new = worktree_side(repo, &old, ignores, attr_tree)?;
            (old, new)
        }
        _ => return Err(super::Usage("--cached takes at most one tree-ish".into()).into()),
    };
    let pathspecs: Vec<&[u8]> = args
        .pathspecs
        .iter()
        .map(|p| p.as_encoded_bytes())
        .collect();
    let (old, new) = match repo.pathspec(&pathspecs, cwd)? {
        Some(mut specs) => {
            let mut old = old;
            let mut new = new;
            // `:(attr:...)` asks the attributes git's diff reads for this
            // comparison, where the `diff` attribute comes from too.
            let mut attrs = match specs.needs_attributes() {
                true => Some(diff_attributes(
                    repo,
                    args.attr_source.as_deref(),
                    attr_source_of(args),
                )?),
                false => None,
            };
            let is_dir = |e: &git_simm::repo::Entry| e.kind == EntryKind::Submodule;
            old.retain(|e| specs.matches(&e.path, is_dir(e), attrs.as_mut()));
            new.entries
                .retain(|e| specs.matches(&e.path, is_dir(e), attrs.as_mut()));
            unmerged.retain(|p| specs.matches(p, false, attrs.as_mut()));
            (old, new)
        }
        None => (old, new),
    };
    let changes = git_simm::repo::changes::diff_worktree(
        old,
        new.entries,
        &new.stale,
        &unmerged,
        harder,
        repo.config_bool("diff.autoRefreshIndex").unwrap_or(true),
        repo.object_hash(),
    )?;
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
pub(super) fn worktree_side(
    repo: &Repo,
    old: &[git_simm::repo::Entry],
    ignores: &Ignores,
    attr_tree: Option<ObjectId>,
) -> Result<Side> {
    let old_ids: std::collections::HashMap<&[u8], ObjectId> =
        old.iter().map(|e| (e.path.as_slice(), e.id)).collect();
    // Only what changed is kept in memory; a file git takes the index's
    // blob for comes unread, and its blob is in the object database (or
    // the promisor remote's, for a skip-worktree entry of a partial clone).
    let mapped = repo.map_worktree(attr_tree, |entry, read| {
        let unchanged = old_ids.get(entry.path.as_slice()) == Some(&entry.id);
        let data = read
            .data
            .filter(|_| !unchanged && entry.kind != EntryKind::Submodule)
            .map(<[u8]>::to_vec);
        (data, read.fresh)
    })?;
    let mut side = Side {
        entries: Vec::with_capacity(mapped.len()),
        contents: Default::default(),
        stale: Default::default(),
    };
    for (mut entry, (data, fresh)) in mapped {
        if let Some(data) = data {
            side.contents.insert(entry.id, data);
        }
        if !fresh {
            side.stale.insert(entry.path.clone());
        }
        if entry.kind == EntryKind::Submodule
            && let Some(work_dir) = repo.work_dir()
        {
            entry.id = submodule_state(repo, work_dir, &entry, ignores.for_path(&entry.path)?)?;
        }
        side.entries.push(entry);
    }
    Ok(side)
}

/// The id git's diff gives a checked-out submodule on the work-tree side
/// (`diff-lib.c`, `match_stat_with_submodule`): the index's commit when
/// the submodule's HEAD is there and its work tree is clean as `ignore`
/// counts it, and the null id otherwise (HEAD elsewhere, or tracked files
/// modified, or untracked files present under `none`, as `git status
/// --porcelain=2` in the submodule reports them, which is what git runs
/// too), so that a submodule moved or dirty is `M`. Under `all` nothing is
/// looked at: [`without_ignored_submodules`] drops the entry's change.
/// A submodule that is not checked out keeps the index's commit.
fn submodule_state(
    repo: &Repo,
    work_dir: &Path,
    entry: &git_simm::repo::Entry,
    ignore: IgnoreSubmodules,
) -> Result<ObjectId> {
    if ignore == IgnoreSubmodules::All {
        return Ok(entry.id);
    }
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
    let head = git(&["rev-parse", "--verify", "-q", "HEAD"])?;
    let head = String::from_utf8_lossy(&head.stdout);
    // A HEAD that does not resolve counts as unchanged, as in git's
    // `ce_compare_gitlink`.
    if ObjectId::from_hex(head.trim().as_bytes()).is_ok_and(|head| head != entry.id) {
        return Ok(ObjectId::null(repo.object_hash()));
    }
    if ignore == IgnoreSubmodules::Dirty {
        return Ok(entry.id);
    }
    let mut status = vec!["status", "--porcelain=2"];
    if ignore == IgnoreSubmodules::Untracked {
        status.push("-uno");
    }
    let status = git(&status)?;
    if !status.status.success() {
        bail!(
            "cannot read the status of submodule '{rel}': {}",
            String::from_utf8_lossy(&status.stderr).trim()
        );
    }
    if !status.stdout.is_empty() {
        return Ok(ObjectId::null(repo.object_hash()));
    }
    Ok(entry.id)
}

/// Submodule settings, read only when a submodule is met (they need
/// `.gitmodules`, perhaps from the index).
pub(super) struct Ignores<'a> {
    repo: &'a Repo,
    forced: Option<IgnoreSubmodules>,
    loaded: std::cell::OnceCell<SubmoduleIgnores>,
}

impl Ignores<'_> {
    fn for_path(&self, path: &[u8]) -> Result<IgnoreSubmodules> {
        let loaded = match self.loaded.get() {
            Some(loaded) => loaded,
            None => {
                let read = self.repo.submodule_ignores(self.forced)?;
                self.loaded.get_or_init(|| read)
            }
        };
        Ok(loaded.for_path(path)?)
    }
}

/// `changes` without those of submodules whose setting is `all`: git's
/// diff drops a submodule's addition, removal or new commit then
/// (`diff.c`, `diff_addremove` and `diff_change`), but not a change of
/// type between a submodule and a file.
fn without_ignored_submodules(
    changes: Vec<git_simm::repo::changes::Change>,
    ignores: &Ignores,
) -> Result<Vec<git_simm::repo::changes::Change>> {
    use git_simm::repo::changes::ChangeKind;
    let only_submodules = |c: &git_simm::repo::changes::Change| {
        c.kind != ChangeKind::Unmerged
            && c.old
                .iter()
                .chain(c.new.iter())
                .all(|e| e.kind == EntryKind::Submodule)
    };
    if !changes.iter().any(only_submodules) {
        return Ok(changes);
    }
    let mut kept = Vec::with_capacity(changes.len());
    for change in changes {
        if only_submodules(&change) && ignores.for_path(change.path())? == IgnoreSubmodules::All {
            continue;
        }
        kept.push(change);
    }
    Ok(kept)
}

/// What git detects after the detection options in the order given, and
/// the score the last -M or -C set (empty: git's default), as git's
/// option callbacks apply them (diff.c): -M sets the score and detects
/// renames only; -C sets the score and detects copies, or copies harder
/// when it already did; --no-renames turns detection off; and
/// --find-copies-harder, wherever it stands, detects copies harder
/// (`diff_setup_done`).
fn detection(given: &[crate::cli::DetectionArg]) -> (git_simm::renames::Detect, Option<String>) {
    use crate::cli::DetectionArg;
    use git_simm::renames::Detect;
    let mut detect = Detect::Renames;
    let mut harder = false;
    let mut score = None;
    for arg in given {
        match arg {
            DetectionArg::Renames(s) => {
                score = Some(s.clone());
                detect = Detect::Renames;
            }
            DetectionArg::Copies(s) => {
                score = Some(s.clone());
                if detect == Detect::Copies {
                    harder = true;
                } else {
                    detect = Detect::Copies;
                }
            }
            DetectionArg::NoRenames => detect = Detect::Off,
            DetectionArg::CopiesHarder => harder = true,
        }
    }
    if harder {
        detect = Detect::CopiesHarder;
    }
    (detect, score)
}
