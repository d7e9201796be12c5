//! Where flags, git config and the environment become library options.

use std::io::Write;

use anyhow::{Context, Result};
use git_simm::repo::Repo;
use git_simm::similarity::score;
use git_simm::similarity::store::Store;

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
    let dir = match repo.config_path("simm.storeDir")? {
        Some(dir) => repo.common_dir().join(dir),
        None => Store::default_dir(repo.common_dir()),
    };
    Store::open(&dir, hash_len)
        .with_context(|| format!("cannot open the fingerprint store in {}", dir.display()))
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
    score::parse_rename_score(&text).with_context(|| format!("invalid {origin} value '{text}'"))
}
