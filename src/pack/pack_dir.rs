//! The pack directory as `repack` handles it: listing its packs, the
//! install journal and its undo, removing packs and the multi-pack index,
//! fsync, temporaries left by killed runs (ours and git's), and the lock
//! that keeps two repacks apart.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::RepackError;
use crate::repo::Repo;

/// The lock file, in the git common directory (beside git's `gc.pid`).
pub(super) const LOCK_NAME: &str = "simm-repack.lock";

/// Names the pack being moved into place, so a run killed halfway through
/// the renames (a `.pack` in place, its `.idx` not yet) can be told from
/// someone else's stray file and undone by the next run.
pub(super) const JOURNAL_NAME: &str = "simm-repack.installing";

/// Names the old packs being removed once the new one is installed: a run
/// killed between removing a pack's `.idx` and its `.pack` left a pack
/// without an index, which the next run finishes removing instead of
/// taking it for someone else's damage.
pub(super) const REMOVING_NAME: &str = "simm-repack.removing";

/// Create and remove a file in `dir`: the one sure test that a repack can
/// write there, made before any work.
pub(super) fn probe_writable(dir: &Path) -> Result<(), RepackError> {
    let probe = dir.join(format!(".simm-write-test-{}", std::process::id()));
    std::fs::File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|source| RepackError::NotWritable {
            path: dir.to_owned(),
            source,
        })
}

/// The old packs, as paths without extension; every pack must have its
/// index and every index its pack.
pub(super) fn existing_packs(pack_dir: &Path) -> Result<Vec<PathBuf>, RepackError> {
    let mut bases = Vec::new();
    for path in dir_files(pack_dir)? {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let is_pack_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("pack-"));
        if !is_pack_name {
            continue;
        }
        match ext {
            "pack" if !path.with_extension("idx").exists() => {
                return Err(RepackError::Incomplete {
                    path,
                    missing: ".idx",
                });
            }
            "idx" if !path.with_extension("pack").exists() => {
                return Err(RepackError::Incomplete {
                    path,
                    missing: ".pack",
                });
            }
            "pack" => bases.push(path.with_extension("")),
            _ => {}
        }
    }
    bases.sort();
    Ok(bases)
}

/// A run killed while moving its pack into place left the files named in
/// the journal; without the index they are invisible to git and the old
/// packs still hold every object, so they go. With the index in place the
/// install had finished; only the journal is left to remove.
pub(super) fn undo_interrupted_install(pack_dir: &Path) -> Result<(), RepackError> {
    let journal = pack_dir.join(JOURNAL_NAME);
    let Ok(text) = std::fs::read_to_string(&journal) else {
        return Ok(());
    };
    for name in text
        .lines()
        .filter(|l| l.starts_with("pack-") && !l.contains('/'))
    {
        let base = pack_dir.join(name);
        if !base.with_extension("idx").exists() {
            remove_pack(&base)?;
        }
    }
    std::fs::remove_file(&journal).map_err(|source| RepackError::Cleanup {
        path: journal.clone(),
        source,
    })
}

/// Remove the old packs `bases` (superseded by an installed pack), under
/// the [`REMOVING_NAME`] journal.
/// `fault` is called with `"removing-index"` between a pack's index and
/// the rest of it, and `"removing"` after each pack (the tests' kill
/// points).
pub(super) fn remove_old_packs(
    pack_dir: &Path,
    bases: &[PathBuf],
    fault: impl Fn(&str),
) -> Result<(), RepackError> {
    let journal = pack_dir.join(REMOVING_NAME);
    let names: String = bases
        .iter()
        .filter_map(|b| b.file_name()?.to_str())
        .map(|n| format!("{n}\n"))
        .collect();
    std::fs::write(&journal, names)
        .and_then(|()| std::fs::File::open(&journal)?.sync_all())
        .map_err(|source| RepackError::Cleanup {
            path: journal.clone(),
            source,
        })?;
    for base in bases {
        remove_files(base, &PACK_FILES[..1])?;
        fault("removing-index");
        remove_files(base, &PACK_FILES[1..])?;
        fault("removing");
    }
    std::fs::remove_file(&journal).map_err(|source| RepackError::Cleanup {
        path: journal.clone(),
        source,
    })
}

/// Finish what a run killed while removing old packs left: every pack the
/// journal names goes (the pack that replaced them was installed before
/// the journal was written).
pub(super) fn finish_interrupted_removal(pack_dir: &Path) -> Result<(), RepackError> {
    let journal = pack_dir.join(REMOVING_NAME);
    let Ok(text) = std::fs::read_to_string(&journal) else {
        return Ok(());
    };
    for name in text
        .lines()
        .filter(|l| l.starts_with("pack-") && !l.contains('/'))
    {
        remove_pack(&pack_dir.join(name))?;
    }
    std::fs::remove_file(&journal).map_err(|source| RepackError::Cleanup {
        path: journal.clone(),
        source,
    })
}

/// Remove git's bitmap temporaries (`tmp_bitmap_*`) that appeared in
/// `pack_dir` since `before` was listed: `git multi-pack-index write
/// --bitmap` does not remove its own when a signal stops it.
pub(super) fn remove_new_bitmap_temporaries(pack_dir: &Path, before: &[PathBuf]) {
    let Ok(now) = dir_files(pack_dir) else {
        return;
    };
    for path in now {
        let is_tmp = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("tmp_bitmap_"));
        if is_tmp && !before.contains(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Remove one old pack: the index first, so no reader finds an index whose
/// pack is gone.
pub(super) fn remove_pack(base: &Path) -> Result<(), RepackError> {
    remove_files(base, &PACK_FILES)
}

/// A pack's files, the index first.
const PACK_FILES: [&str; 5] = ["idx", "pack", "rev", "bitmap", "mtimes"];

/// Remove `base` with each of `exts`, those present.
fn remove_files(base: &Path, exts: &[&str]) -> Result<(), RepackError> {
    for ext in exts {
        let path = base.with_extension(ext);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(RepackError::Cleanup { path, source }),
        }
    }
    Ok(())
}

/// A multi-pack index lists the old packs; git falls back to the packs'
/// own indexes without it, so it goes first (as `git repack -a -d` clears
/// it too).
pub(super) fn remove_midx(pack_dir: &Path) -> Result<(), RepackError> {
    for path in dir_files(pack_dir)? {
        let is_midx = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("multi-pack-index"));
        if is_midx {
            std::fs::remove_file(&path).map_err(|source| RepackError::Cleanup { path, source })?;
        }
    }
    Ok(())
}

pub(super) fn dir_files(dir: &Path) -> Result<Vec<PathBuf>, RepackError> {
    let read = std::fs::read_dir(dir).map_err(|source| RepackError::Io {
        what: "read",
        path: dir.to_owned(),
        source,
    })?;
    Ok(read
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect())
}

pub(super) fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Bytes of loose objects (the 2-hex-digit directories).
pub(super) fn loose_bytes(objects: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(objects) else {
        return 0;
    };
    read.filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .flat_map(|e| std::fs::read_dir(e.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

pub(super) fn sync(path: &Path) -> Result<(), RepackError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|source| RepackError::Io {
            what: "sync",
            path: path.to_owned(),
            source,
        })
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), RepackError> {
    // Directories cannot be opened for syncing on every platform; where
    // they can, the renames become durable.
    #[cfg(unix)]
    {
        sync(dir)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Temporary directories of runs that died: nobody else can be using them
/// while we hold the lock.
pub(super) fn remove_stale_temporaries(pack_dir: &Path, git_expiry: Option<Duration>) {
    let Ok(read) = std::fs::read_dir(pack_dir) else {
        return;
    };
    let now = SystemTime::now();
    for e in read.filter_map(Result::ok) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TMP_PREFIX) {
            let _ = std::fs::remove_dir_all(e.path());
        } else if name.starts_with(GIT_TMP_PREFIX)
            && let Some(expiry) = git_expiry
            && let Ok(meta) = e.path().symlink_metadata()
            && meta
                .modified()
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age >= expiry))
        {
            // What a killed `git pack-objects` (ours, or any git's) left:
            // `tmp_pack_*`, `tmp_idx_*`, `tmp_rev_*`. A young one may belong
            // to a git still writing it, so the rule is `git gc`'s.
            let _ = if meta.is_dir() {
                std::fs::remove_dir_all(e.path())
            } else {
                std::fs::remove_file(e.path())
            };
        }
    }
}

/// How the private directories `git pack-objects` writes into start.
pub(super) const TMP_PREFIX: &str = ".simm-tmp-";

/// How git's own temporary files in `objects/pack` start.
pub(super) const GIT_TMP_PREFIX: &str = "tmp_";

/// How old a `tmp_*` file in `objects/pack` must be before it is removed,
/// or `None` to keep them all: `git gc` runs `git prune --expire
/// <gc.pruneExpire>` (default `2.weeks.ago`), and `git prune` removes the
/// `tmp_` files of `objects/pack` whose mtime is at or before that date
/// (`builtin/prune.c`, `prune_tmp_file`). `gc.pruneExpire` is read in the
/// forms `now`, `never` and `<n>.<unit>.ago` (or with spaces); any other
/// date falls back to git's default of two weeks.
pub(super) fn git_tmp_expiry(repo: &Repo) -> Option<Duration> {
    const TWO_WEEKS: Duration = Duration::from_secs(14 * 24 * 3600);
    match repo.config_string("gc.pruneExpire") {
        None => Some(TWO_WEEKS),
        Some(v) => parse_expiry(&v).unwrap_or(Some(TWO_WEEKS)),
    }
}

/// `now` -> `Some(0)`, `never` -> `None`, `3.days.ago` or `3 days ago`
/// -> three days; `None` for what is not understood.
pub fn parse_expiry(v: &str) -> Option<Option<Duration>> {
    let v = v.trim().to_ascii_lowercase();
    match v.as_str() {
        "now" => return Some(Some(Duration::ZERO)),
        "never" | "false" => return Some(None),
        _ => {}
    }
    let words: Vec<&str> = v.split(['.', ' ']).filter(|w| !w.is_empty()).collect();
    let [n, unit, "ago"] = words.as_slice() else {
        return None;
    };
    let n: u64 = n.parse().ok()?;
    let secs = match unit.trim_end_matches('s') {
        "second" => 1,
        "minute" => 60,
        "hour" => 3600,
        "day" => 86_400,
        "week" => 7 * 86_400,
        "month" => 30 * 86_400,
        "year" => 365 * 86_400,
        _ => return None,
    };
    Some(Some(Duration::from_secs(n.checked_mul(secs)?)))
}

/// The repack lock: an advisory lock on `simm-repack.lock` in the git
/// common directory ([`std::fs::File::try_lock`]: `flock` on Unix,
/// `LockFileEx` on Windows), held while the file is open. The operating
/// system releases it when the process ends, however it ends, so a killed
/// repack never blocks the next one and there is no pid to judge stale,
/// while two repacks can never both hold it.
///
/// The holder removes the file before it lets the lock go, so none stays
/// behind. That is safe because a taker checks, once it holds the lock,
/// that the name still leads to the file it locked: a process that opened
/// the file just before the holder removed it finds it gone and starts
/// over with a new one, rather than holding a lock on a deleted file while
/// a third process locks a new one.
pub(super) struct Lock {
    file: std::fs::File,
    path: PathBuf,
}

impl Lock {
    pub(super) fn take(git_dir: &Path) -> Result<Lock, RepackError> {
        let path = git_dir.join(LOCK_NAME);
        loop {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|source| RepackError::NotWritable {
                    path: git_dir.to_owned(),
                    source,
                })?;
            match file.try_lock() {
                Ok(()) if same_file(&file, &path) => return Ok(Lock { file, path }),
                // Removed (or replaced) by the holder before it let go.
                Ok(()) => continue,
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(RepackError::Locked { path });
                }
                Err(std::fs::TryLockError::Error(source)) => {
                    return Err(RepackError::Io {
                        what: "lock",
                        path,
                        source,
                    });
                }
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Still ours: removed while locked, then the lock goes with the
        // file. Where the name cannot be checked (not Unix) it stays.
        if cfg!(unix) && same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `path` names the file `file` has open.
#[cfg(unix)]
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_expire_reads_like_git() {
        let day = Duration::from_secs(86_400);
        assert_eq!(parse_expiry("now"), Some(Some(Duration::ZERO)));
        assert_eq!(parse_expiry("never"), Some(None));
        assert_eq!(parse_expiry("2.weeks.ago"), Some(Some(14 * day)));
        assert_eq!(parse_expiry("1 day ago"), Some(Some(day)));
        assert_eq!(parse_expiry("3.hours.ago"), Some(Some(3 * day / 24)));
        assert_eq!(parse_expiry("2024-01-01"), None);
    }
}
