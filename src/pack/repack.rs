//! `git-simm repack`: rewrite every object of a repository into one pack
//! whose deltas `git pack-objects` found in similarity order, without ever
//! being in a state that lacks an object.
//!
//! The sequence is the one `git repack -a -d` follows, with the checks made
//! explicit because this is the one command that deletes repository data:
//!
//! 1. refuse what it cannot handle safely (shallow clones, `.keep` packs,
//!    a read-only object directory, another repack running), before any
//!    work;
//! 2. list every object: what `git repack -a` packs, plus every local object
//!    the walk does not reach (as `--keep-unreachable` does), so the object
//!    set after equals the one before;
//! 3. `git pack-objects` writes the pack into a private temporary directory
//!    inside `objects/pack`, where git never looks for packs;
//! 4. the new pack is verified (checksums, object count, every listed id,
//!    every object rebuilt and hashed to its id), fsynced and renamed into
//!    place, index last, since the index is what makes a pack visible;
//! 5. only then are the old packs (index first) and loose copies removed;
//! 6. a multi-pack bitmap is written where git would write a bitmap
//!    (`repack.writeBitmaps`, else bare repositories).
//!
//! In a partial clone, the promisor packs (what the promisor remote sent,
//! and every blob fetched since) are kept as they are, `.promisor` files
//! included, and the other objects are repacked: what `git repack -a -d`
//! puts in its main pack there. Nothing is fetched (git's lazy fetching is
//! off for every git it runs).
//!
//! ### Deviation
//! `git repack -a -d` also rewrites the promisor packs into one new
//! promisor pack; git-simm leaves them alone.
//!
//! Killed at any point, the repository holds every object: before step 4
//! the old packs are untouched, after it the new pack holds everything. A
//! leftover temporary directory is cleaned by the next run, as are the
//! `tmp_pack_*` and `tmp_idx_*` files a killed `git pack-objects` leaves,
//! once they are as old as `git gc` wants (`gc.pruneExpire`, two weeks by
//! default), and the lock dies with the process that held it.
//!
//! Interrupted (the [`Feedback`] flag set, as on Ctrl-C), it stops at the
//! next check before the install, `git pack-objects` included (stopped
//! with SIGTERM, on which git removes its own temporary files), removes
//! its temporary directory, releases the lock and returns
//! [`RepackError::Interrupted`] with the repository as it was. An install
//! that has begun (step 4 to 5) is never interrupted: it takes
//! milliseconds, and finishing it is the one way not to leave the
//! repository half-moved. After it, `git prune-packed` and the bitmap may
//! be interrupted: loose copies of packed objects or a missing bitmap are
//! all that is left then.

use std::path::{Path, PathBuf};

pub use super::RepackError;
use super::pack_dir::{
    JOURNAL_NAME, Lock, TMP_PREFIX, dir_files, existing_packs, file_len,
    finish_interrupted_removal, git_tmp_expiry, loose_bytes, probe_writable, remove_midx,
    remove_new_bitmap_temporaries, remove_old_packs, remove_stale_temporaries, sync, sync_dir,
    undo_interrupted_install,
};
use crate::pack::order::Strategy;
use crate::pack::{self, ListOptions, PackError};
use crate::progress::{Feedback, Interrupted, is_interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::store::Store;

/// Options of [`repack`]; `None` leaves the choice to git (its config, then
/// its defaults: window 10, depth 50, one thread per core).
#[derive(Clone, Debug, Default)]
pub struct RepackOptions {
    /// `--window` for pack-objects.
    pub window: Option<u32>,
    /// `--depth` for pack-objects.
    pub depth: Option<u32>,
    /// `--threads` for pack-objects.
    pub threads: Option<u32>,
    /// How to order blobs.
    pub strategy: Strategy,
    /// Who chooses the delta bases.
    pub bases: Bases,
    /// Ask git for its progress (`pack-objects --progress`), which comes
    /// to the [`Feedback`]'s observer; otherwise git runs quietly. git
    /// draws it for a terminal, so set it when that is where it goes.
    pub git_progress: bool,
    /// Write a reachability bitmap (`-b`); `None`: `repack.writeBitmaps`,
    /// else yes in a bare repository, as git decides.
    pub write_bitmap: Option<bool>,
    /// For tests: abort the process (like `kill -9`: no destructors run,
    /// nothing is cleaned up) at the named point of the run: `listed`,
    /// `packed`, `verified`, `installing` (after each file moved into
    /// place) or `removing` (after each old pack removed).
    pub abort_at: Option<String>,
}

/// Who chooses each object's delta base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Bases {
    /// `git pack-objects`, its window seeing objects in the order of
    /// [`Strategy`].
    Git,
    /// git-simm ([`crate::pack::bases`]), which writes the pack, its
    /// index and reverse index itself, and reads the pack back: smaller
    /// than git's window at its cost (docs/performance.md, "Pack size").
    #[default]
    Simm,
}

impl Bases {
    /// Every choice with its command-line name.
    pub const ALL: [(&'static str, Bases); 2] = [("git", Bases::Git), ("simm", Bases::Simm)];

    /// The choice called `name` on the command line.
    pub fn from_name(name: &str) -> Option<Bases> {
        Bases::ALL.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

/// What a repack did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepackReport {
    /// Objects in the new pack.
    pub objects: usize,
    /// Blobs among them.
    pub blobs: usize,
    /// Bytes of packs and loose objects before.
    pub bytes_before: u64,
    /// Bytes of the new pack.
    pub bytes_after: u64,
    /// Old packs removed.
    pub packs_removed: usize,
    /// The new pack's file name; empty when there was nothing to pack
    /// (`objects` is 0), as in an empty repository.
    pub pack: String,
    /// Whether a bitmap was written.
    pub bitmap: bool,
}

/// Repack `repo` into one pack in similarity order; see the module
/// documentation for the steps and guarantees, and for what an interrupt
/// through `feedback` does. `feedback` also sees the fingerprinting of
/// blobs, git's own progress (with [`RepackOptions::git_progress`]) and the
/// end of each step.
pub fn repack(
    repo: &Repo,
    store: &mut Store,
    opts: &RepackOptions,
    feedback: &Feedback,
) -> Result<RepackReport, RepackError> {
    feedback.trace("repack: start");
    let pack_dir = repo.objects_dir().join("pack");
    refuse_unsafe(repo, &pack_dir)?;
    let _lock = Lock::take(repo.common_dir())?;
    remove_stale_temporaries(&pack_dir, git_tmp_expiry(repo));
    undo_interrupted_install(&pack_dir)?;
    finish_interrupted_removal(&pack_dir)?;
    // Promisor packs (a partial clone's) are kept as they are and their
    // objects left out of the new pack, which is what `git repack -a -d`
    // leaves outside its main pack there.
    let old: Vec<PathBuf> = existing_packs(&pack_dir)?
        .into_iter()
        .filter(|base| !base.with_extension("promisor").exists())
        .collect();
    let bytes_before = old
        .iter()
        .map(|p| file_len(&p.with_extension("pack")))
        .sum::<u64>()
        + loose_bytes(&repo.objects_dir());

    let list = pack::pack_list(
        repo,
        store,
        &ListOptions {
            revs: &[],
            keep_unreachable: true,
            strategy: opts.strategy,
        },
        feedback,
    )
    .map_err(interrupted_or)?;
    fault_point(opts, "listed");
    feedback.check()?;
    if list.objects.is_empty() {
        // An empty repository: `git repack` says "Nothing new to pack."
        // and succeeds, changing nothing; so does this (`--non-empty`
        // would have pack-objects write nothing).
        return Ok(RepackReport {
            objects: 0,
            blobs: 0,
            bytes_before,
            bytes_after: bytes_before,
            packs_removed: 0,
            pack: String::new(),
            bitmap: false,
        });
    }

    // Removed when dropped, even on an early return; a killed run's is
    // removed by the next run (remove_stale_temporaries).
    let tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .tempdir_in(&pack_dir)
        .map_err(|source| RepackError::Io {
            what: "create a temporary directory in",
            path: pack_dir.clone(),
            source,
        })?;
    let result = pack_and_install(repo, opts, &list, tmp.path(), &pack_dir, &old, feedback);
    // Whatever happened, the temporary directory holds nothing needed now.
    let _ = tmp.close();
    let (name, bytes_after) = result?;

    // The new pack holds every object: the old packs and loose copies go.
    let new_base = pack_dir.join(&name).with_extension("");
    remove_midx(&pack_dir)?;
    let superseded: Vec<PathBuf> = old.iter().filter(|b| **b != new_base).cloned().collect();
    remove_old_packs(&pack_dir, &superseded, |point| fault_point(opts, point))?;
    let removed = superseded.len();
    // Interrupted from here on, loose copies of packed objects or the
    // bitmap are all that is left to do.
    let mut prune = pack::git::git(repo);
    prune.args(["prune-packed", "--quiet"]);
    pack::git::run(prune, None, feedback).map_err(interrupted_or)?;
    feedback.trace("repack: old packs and loose objects removed");
    // pack-objects cannot write a pack bitmap for a list it was given, so
    // the bitmap (what makes clones and fetches of a served repository
    // cheap) is a multi-pack one over the new pack.
    // Not by default in a partial clone: a bitmap needs every object its
    // pack reaches, and git writes none there either.
    let bitmap = opts
        .write_bitmap
        .or_else(|| repo.config_bool("repack.writeBitmaps"))
        .unwrap_or(repo.work_dir().is_none() && !repo.is_partial());
    if bitmap {
        let tmp_before = dir_files(&pack_dir).unwrap_or_default();
        let mut midx = pack::git::git(repo);
        midx.args(["multi-pack-index", "write", "--bitmap"]);
        if !opts.git_progress {
            midx.arg("--no-progress");
        }
        let written = pack::git::run(midx, None, feedback);
        if written.is_err() {
            remove_new_bitmap_temporaries(&pack_dir, &tmp_before);
        }
        written.map_err(|e| {
            if is_interrupted(&e) {
                RepackError::Interrupted(Interrupted)
            } else {
                RepackError::Bitmap(e.to_string())
            }
        })?;
        feedback.trace("repack: bitmap written");
    }
    Ok(RepackReport {
        objects: list.objects.len(),
        blobs: list.blobs,
        bytes_before,
        bytes_after,
        packs_removed: removed,
        pack: name,
        bitmap,
    })
}

/// Steps 3 and 4: pack into `tmp`, verify, install. Returns the pack's file
/// name (`pack-<hash>.pack`) and size.
fn pack_and_install(
    repo: &Repo,
    opts: &RepackOptions,
    list: &pack::PackList,
    tmp: &Path,
    pack_dir: &Path,
    old: &[PathBuf],
    feedback: &Feedback,
) -> Result<(String, u64), RepackError> {
    let hash = match opts.bases {
        Bases::Git => pack_objects(repo, opts, list, tmp, feedback)?,
        Bases::Simm => simm_pack(repo, opts, list, tmp, feedback)?,
    };
    let name = format!("pack-{hash}");
    let idx = tmp.join(format!("{name}.idx"));
    crate::pack::verify::verify_pack(&idx, repo.object_hash(), &list.objects, feedback).map_err(
        |e| match e {
            RepoError::Interrupted(i) => RepackError::Interrupted(i),
            e => e.into(),
        },
    )?;
    feedback.trace("repack: verified");
    fault_point(opts, "verified");
    // The last moment to stop: from the journal on, the install runs to
    // its end (or a killed run's is undone by the next).
    feedback.check()?;

    let target = pack_dir.join(format!("{name}.pack"));
    let bytes = file_len(&tmp.join(format!("{name}.pack")));
    if old.contains(&pack_dir.join(&name)) {
        // The same objects in the same order: the pack exists already.
        return Ok((format!("{name}.pack"), bytes));
    }
    // Data files first, the index last: a pack is visible by its index.
    let mut files: Vec<PathBuf> = std::fs::read_dir(tmp)
        .map_err(|source| RepackError::Io {
            what: "read",
            path: tmp.to_owned(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort_by_key(|p| p.extension().is_some_and(|e| e == "idx"));
    for f in &files {
        sync(f)?;
    }
    let journal = pack_dir.join(JOURNAL_NAME);
    std::fs::write(&journal, format!("{name}\n"))
        .and_then(|()| std::fs::File::open(&journal)?.sync_all())
        .map_err(|source| RepackError::Io {
            what: "write",
            path: journal.clone(),
            source,
        })?;
    sync_dir(pack_dir)?;
    for f in &files {
        let Some(file_name) = f.file_name() else {
            continue;
        };
        let dest = pack_dir.join(file_name);
        std::fs::rename(f, &dest).map_err(|source| RepackError::Io {
            what: "install",
            path: dest.clone(),
            source,
        })?;
        fault_point(opts, "installing");
    }
    sync_dir(pack_dir)?;
    std::fs::remove_file(&journal).map_err(|source| RepackError::Io {
        what: "remove",
        path: journal.clone(),
        source,
    })?;
    debug_assert!(target.exists());
    Ok((format!("{name}.pack"), bytes))
}

/// Step 3 with `git pack-objects`; returns the new pack's hash.
fn pack_objects(
    repo: &Repo,
    opts: &RepackOptions,
    list: &pack::PackList,
    tmp: &Path,
    feedback: &Feedback,
) -> Result<String, RepackError> {
    let version = pack::git::git_version()?;
    let mut cmd = pack::git::git(repo);
    cmd.arg("pack-objects")
        .args(pack::git::pack_objects_args(version));
    cmd.arg("--non-empty");
    if let Some(w) = opts.window {
        cmd.arg(format!("--window={w}"));
    }
    if let Some(d) = opts.depth {
        cmd.arg(format!("--depth={d}"));
    }
    if let Some(t) = opts.threads {
        cmd.arg(format!("--threads={t}"));
    }
    // pack-objects only shows progress on a terminal of its own; its stderr
    // is a pipe to us, so it is asked for when wanted.
    cmd.arg(if opts.git_progress {
        "--progress"
    } else {
        "-q"
    });
    cmd.arg(tmp.join("pack"));
    // Its progress goes to the observer as it comes; its one line of
    // output is the new pack's hash.
    let out =
        pack::git::run_with(cmd, Some(&list.input), true, feedback).map_err(interrupted_or)?;
    let hash = String::from_utf8_lossy(&out).trim().to_owned();
    if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(RepackError::PackObjects(format!(
            "unexpected output '{hash}'"
        )));
    }
    feedback.trace("repack: pack-objects");
    fault_point(opts, "packed");
    feedback.check()?;

    Ok(hash)
}

/// Step 3 with the bases git-simm chooses ([`pack::bases`]); returns the
/// new pack's hash.
fn simm_pack(
    repo: &Repo,
    opts: &RepackOptions,
    list: &pack::PackList,
    tmp: &Path,
    feedback: &Feedback,
) -> Result<String, RepackError> {
    let bases_opts = pack::bases::BasesOptions {
        depth: opts.depth.unwrap_or(50),
        window: opts.window.map_or(10, |w| w as usize),
        level: pack::bases::compression_level(repo),
    };
    let run = || pack::bases::write_pack(repo, list, &bases_opts, tmp, feedback);
    let threads = opts
        .threads
        .filter(|&t| t != 0)
        .map(|t| delta_search_threads(t, list.objects.len(), bases_opts.window));
    let name = match threads {
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| RepackError::PackObjects(format!("cannot start {t} threads: {e}")))?
            .install(run),
        None => run(),
    }
    .map_err(interrupted_or)?;
    feedback.trace("repack: pack written (bases chosen by git-simm)");
    fault_point(opts, "packed");
    feedback.check()?;
    Ok(name.trim_start_matches("pack-").to_owned())
}

/// How many threads the delta search of `objects` objects with `window`
/// uses when `requested` are asked for, as `git pack-objects` decides
/// (`ll_find_deltas`): work is cut into parts of at least twice the
/// window, and a part without work starts no thread, so `--threads`
/// beyond the work there is (`--threads=100000`) starts no more threads
/// than that. No window, no search: one thread.
pub(crate) fn delta_search_threads(requested: u32, objects: usize, window: usize) -> usize {
    let requested = requested.max(1) as usize;
    if window == 0 {
        return 1;
    }
    // git's loop: part i takes what is left / (threads - i), unless that
    // is under 2 * window and it is not the last part. Parts before
    // `requested - objects / (2 * window)` cannot get that much, so the
    // loop starts there.
    let may_work = (objects / (2 * window)).clamp(1, requested);
    let mut left = objects;
    let mut started = 0;
    for i in requested - may_work..requested {
        let mut part = left / (requested - i);
        if part < 2 * window && i + 1 < requested {
            part = 0;
        }
        if part > 0 {
            started += 1;
        }
        left -= part;
    }
    started.max(1)
}

/// Step 1: everything that makes a repack unsafe or impossible, checked
/// before any work.
fn refuse_unsafe(repo: &Repo, pack_dir: &Path) -> Result<(), RepackError> {
    if repo.common_dir().join("shallow").exists() {
        return Err(RepackError::Shallow {
            path: repo.common_dir().to_owned(),
        });
    }
    std::fs::create_dir_all(pack_dir).map_err(|source| RepackError::NotWritable {
        path: pack_dir.to_owned(),
        source,
    })?;
    let mut keeps = Vec::new();
    for path in dir_files(pack_dir)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".keep") {
            keeps.push(name);
        }
    }
    if !keeps.is_empty() {
        keeps.sort();
        return Err(RepackError::KeptPacks {
            dir: pack_dir.to_owned(),
            names: keeps,
        });
    }
    probe_writable(pack_dir)?;
    probe_writable(&repo.objects_dir())
}

/// Tests kill a repack at named points ([`RepackOptions::abort_at`]) to
/// check that every point leaves a complete repository: abort, like a
/// `kill -9`, runs no destructors and removes nothing.
fn fault_point(opts: &RepackOptions, name: &str) {
    if opts.abort_at.as_deref() == Some(name) {
        std::process::abort();
    }
}

/// A [`PackError`] as a [`RepackError`], an interrupt as
/// [`RepackError::Interrupted`] wherever it was noticed.
fn interrupted_or(e: PackError) -> RepackError {
    if is_interrupted(&e) {
        RepackError::Interrupted(Interrupted)
    } else {
        RepackError::List(e)
    }
}

#[cfg(test)]
mod tests {
    use super::delta_search_threads;

    /// git's partition loop, run in full.
    fn git_threads(requested: usize, objects: usize, window: usize) -> usize {
        let mut left = objects;
        let mut started = 0;
        for i in 0..requested {
            let mut part = left / (requested - i);
            if part < 2 * window && i + 1 < requested {
                part = 0;
            }
            started += usize::from(part > 0);
            left -= part;
        }
        started.max(1)
    }

    #[test]
    fn threads_are_capped_as_git_caps_them() {
        for requested in [1, 2, 3, 7, 64, 1000] {
            for objects in [0, 1, 19, 20, 21, 99, 1000, 12345] {
                for window in [1, 10, 250] {
                    assert_eq!(
                        delta_search_threads(requested as u32, objects, window),
                        git_threads(requested, objects, window),
                        "{requested} {objects} {window}"
                    );
                }
            }
        }
        assert_eq!(delta_search_threads(100_000, 500, 10), 25);
        assert_eq!(delta_search_threads(u32::MAX, 500, 10), 25);
        assert_eq!(delta_search_threads(100_000, 500, 0), 1);
    }
}
