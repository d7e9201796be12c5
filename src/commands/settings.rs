//! Where flags, git config and the environment become library options.
//! The `GIT_SIMM_*` variables are read here and nowhere else.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git_simm::repo::{Repo, RepoError};
use git_simm::similarity::score;
use git_simm::similarity::store::Store;

use super::terminal::Terminal;

/// The terminal side of this run's feedback: progress lines when stderr is
/// a terminal and the command is not `quiet`; with `GIT_SIMM_TRACE` set
/// (to anything), each step's elapsed time.
pub(super) fn terminal(quiet: bool) -> Terminal {
    Terminal::new(
        shows_progress(quiet),
        std::env::var_os("GIT_SIMM_TRACE").is_some(),
    )
}

/// Whether progress is shown: on a terminal, unless `quiet`. git's own
/// (pack-objects') follows the same rule.
pub(super) fn shows_progress(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// `GIT_SIMM_GROUPS_EXHAUSTIVE=1`: `groups` scores every size-compatible
/// pair and reports every pair at the threshold as a link, the ground
/// truth tests and `benches/groups.sh` compare the groups with.
pub(super) fn exhaustive() -> bool {
    std::env::var_os("GIT_SIMM_GROUPS_EXHAUSTIVE").is_some_and(|v| v == "1")
}

/// `GIT_SIMM_TEST_REPACK_ABORT=<point>`: where tests make a repack abort
/// ([`git_simm::pack::RepackOptions::abort_at`]).
pub(super) fn repack_abort_at() -> Option<String> {
    std::env::var("GIT_SIMM_TEST_REPACK_ABORT").ok()
}

/// The repository's store, or a disabled one for `--no-cache`. It lives in
/// `simm.storeDir` when set, a relative path being taken from the common
/// git directory (where the default, `simm`, lives, so the same value means
/// the same place from every worktree and in bare repositories); several
/// repositories may share one store, since blob ids name content.
pub(super) fn open_store(repo: &Repo, no_cache: bool) -> Result<Store> {
    let hash_len = repo.object_hash().len_in_bytes();
    if no_cache {
        return Ok(Store::disabled(hash_len));
    }
    let dir = store_dir(repo)?;
    Store::open(&dir, hash_len)
        .with_context(|| format!("cannot open the fingerprint store in {}", dir.display()))
}

/// The repository `cwd` is in, with its output conventions applied
/// (`core.quotePath`, a boolean git refuses to misread).
pub(super) fn discover(cwd: &Path) -> Result<Repo> {
    let repo = Repo::discover(cwd)?;
    apply_output_config(&repo)?;
    Ok(repo)
}

/// Print paths as the repository's configuration says git prints them.
pub(super) fn apply_output_config(repo: &Repo) -> Result<()> {
    let fully = repo.config_bool_strict("core.quotePath")?;
    git_simm::output::set_quote_path(fully.unwrap_or(true));
    Ok(())
}

/// The repository `cwd` is in, or `None` outside any: commands that
/// also take files on disk (`compare`, `origin`) work there like `git diff
/// --no-index`. Any other failure (a repository git would refuse, a
/// broken one) is an error.
pub(super) fn discover_if_any(cwd: &Path) -> Result<Option<Repo>> {
    match Repo::discover(cwd) {
        Ok(r) => {
            apply_output_config(&r)?;
            Ok(Some(r))
        }
        Err(RepoError::NotARepository { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Where [`open_store`] keeps the store.
pub(super) fn store_dir(repo: &Repo) -> Result<PathBuf> {
    Ok(match repo.config_path("simm.storeDir")? {
        Some(dir) => repo.common_dir().join(dir),
        None => Store::default_dir(repo.common_dir()),
    })
}

pub(super) fn flush_warnings(store: &mut Store, err: &mut impl Write) {
    for w in store.take_warnings() {
        let _ = writeln!(err, "warning: {w}");
    }
}

/// A similarity from a flag, else from git config, else the default; in
/// [`score::MAX_SCORE`] units.
pub(super) fn threshold(
    repo: &Repo,
    flag: Option<&String>,
    key: &str,
    default: &str,
) -> Result<u32> {
    let (text, origin) = match flag {
        Some(f) => (f.clone(), "option"),
        None => match repo.config_string(key) {
            Some(v) => (v, key),
            None => (default.to_owned(), "default"),
        },
    };
    score::parse_threshold(&text).with_context(|| format!("invalid {origin} value '{text}'"))
}

/// The attribute lookups of a comparison, from where git reads them: the
/// tree `--attr-source` (`flag`) names, else `GIT_ATTR_SOURCE`'s (either
/// must name a tree-ish, as in git), else `attr.tree`'s (ignored when bad),
/// else the in-tree files `source` says.
pub(super) fn diff_attributes(
    repo: &Repo,
    flag: Option<&str>,
    source: git_simm::repo::AttrSource,
) -> Result<git_simm::repo::DiffAttributes> {
    let source = match attr_tree(repo, flag)? {
        Some(tree) => git_simm::repo::AttrSource::Tree(tree),
        None => source,
    };
    Ok(repo.diff_attributes(source)?)
}

/// The tree attributes come from instead of the work tree and the index:
/// `flag` (a command's `--attr-source`), else `GIT_ATTR_SOURCE`, else
/// `attr.tree` ([`Repo::attr_source_tree`]).
pub(super) fn attr_tree(repo: &Repo, flag: Option<&str>) -> Result<Option<gix::ObjectId>> {
    // git's `--attr-source` reaches a subcommand only as GIT_ATTR_SOURCE
    // (git.c sets it for the command it runs).
    let env = std::env::var_os("GIT_ATTR_SOURCE").map(|v| v.to_string_lossy().into_owned());
    Ok(repo.attr_source_tree(flag.or(env.as_deref()))?)
}
