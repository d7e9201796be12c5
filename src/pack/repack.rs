//! `git-simm repack`: rewrite every object of a repository into one pack
//! whose deltas `git pack-objects` found in similarity order, without ever
//! being in a state that lacks an object.
//!
//! The sequence is the one `git repack -a -d` follows, with the checks made
//! explicit because this is the one command that deletes repository data:
//!
//! 1. refuse what it cannot handle safely (shallow or partial clones, `.keep`
//!    packs, a read-only object directory, another repack running), before
//!    any work;
//! 2. list every object: what `git repack -a` packs, plus every local object
//!    the walk does not reach (as `--keep-unreachable` does), so the object
//!    set after equals the one before;
//! 3. `git pack-objects` writes the pack into a private temporary directory
//!    inside `objects/pack`, where git never looks for packs;
//! 4. the new pack is verified (checksums, object count, every listed id),
//!    fsynced and renamed into place, index last, since the index is what
//!    makes a pack visible;
//! 5. only then are the old packs (index first) and loose copies removed;
//! 6. a multi-pack bitmap is written where git would write a bitmap
//!    (`repack.writeBitmaps`, else bare repositories).
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
use std::time::{Duration, SystemTime};

use crate::pack::order::Strategy;
use crate::pack::{self, ListOptions, PackError};
use crate::progress::{Feedback, Interrupted, is_interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::store::Store;

/// Why a repack did not happen or did not finish; the repository is
/// unchanged in every case except [`RepackError::Cleanup`], where the new
/// pack is in place and some old files were left behind,
/// [`RepackError::Bitmap`], where only the bitmap is missing, and
/// [`RepackError::Interrupted`] after the install, where loose copies of
/// packed objects or the bitmap may be left or missing.
#[derive(Debug, thiserror::Error)]
pub enum RepackError {
    /// A shallow clone lacks history its refs point into.
    #[error("{} is a shallow clone; repack it with git (or unshallow it: git fetch --unshallow)", path.display())]
    Shallow {
        /// The repository's git dir.
        path: PathBuf,
    },
    /// A partial clone's missing objects cannot be listed.
    #[error("{} is a partial clone (promisor remote); repack it with git", path.display())]
    Partial {
        /// The repository's git dir.
        path: PathBuf,
    },
    /// Packs marked to be kept would be rewritten.
    #[error("{} has .keep packs ({}); git-simm repack packs everything into one pack and will not override them", dir.display(), names.join(", "))]
    KeptPacks {
        /// The pack directory.
        dir: PathBuf,
        /// The `.keep` files.
        names: Vec<String>,
    },
    /// A pack without a matching index (or the reverse) is something to
    /// look at, not to delete.
    #[error("{} has no matching {}; run 'git fsck' and fix it first", path.display(), missing)]
    Incomplete {
        /// The file present.
        path: PathBuf,
        /// The extension missing.
        missing: &'static str,
    },
    /// The object directory is not writable.
    #[error("cannot write to {}", path.display())]
    NotWritable {
        /// The pack directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// Another repack holds the lock.
    #[error("another git-simm repack is running in this repository (it holds a lock on {})", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// Listing or ordering the objects failed.
    #[error(transparent)]
    List(#[from] PackError),
    /// Reading the repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// `git pack-objects` printed something other than a pack's hash.
    #[error("git pack-objects: {0}")]
    PackObjects(String),
    /// A file operation while writing or installing the new pack failed.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The repository is repacked, but its bitmap could not be written.
    #[error("the repository is repacked, but writing its bitmap failed: {0}")]
    Bitmap(String),
    /// The work was interrupted (the [`Feedback`] flag was set).
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
    /// The new pack is installed, but removing old files failed.
    #[error("the new pack is in place, but {} could not be removed", path.display())]
    Cleanup {
        /// The file left behind.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

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
    #[default]
    Git,
    /// git-simm ([`crate::pack::bases`]), which writes the pack itself;
    /// `git index-pack --strict` indexes it.
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

/// The lock file, in the git common directory (beside git's `gc.pid`).
const LOCK_NAME: &str = "simm-repack.lock";
/// Names the pack being moved into place, so a run killed halfway through
/// the renames (a `.pack` in place, its `.idx` not yet) can be told from
/// someone else's stray file and undone by the next run.
const JOURNAL_NAME: &str = "simm-repack.installing";
/// How the private directories `git pack-objects` writes into start.
const TMP_PREFIX: &str = ".simm-tmp-";

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
    let old = existing_packs(&pack_dir)?;
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
    let mut removed = 0;
    for base in &old {
        if *base == new_base {
            continue;
        }
        remove_pack(base)?;
        removed += 1;
        fault_point(opts, "removing");
    }
    // Interrupted from here on, loose copies of packed objects or the
    // bitmap are all that is left to do.
    let mut prune = pack::git::git(repo);
    prune.args(["prune-packed", "--quiet"]);
    pack::git::run(prune, None, feedback).map_err(interrupted_or)?;
    feedback.trace("repack: old packs and loose objects removed");
    // pack-objects cannot write a pack bitmap for a list it was given, so
    // the bitmap (what makes clones and fetches of a served repository
    // cheap) is a multi-pack one over the new pack.
    let bitmap = opts
        .write_bitmap
        .or_else(|| repo.config_bool("repack.writeBitmaps"))
        .unwrap_or(repo.work_dir().is_none());
    if bitmap {
        let mut midx = pack::git::git(repo);
        midx.args(["multi-pack-index", "write", "--bitmap"]);
        if !opts.git_progress {
            midx.arg("--no-progress");
        }
        pack::git::run(midx, None, feedback).map_err(|e| {
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
    let name = match opts.threads {
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t as usize)
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

/// Step 1: everything that makes a repack unsafe or impossible, checked
/// before any work.
fn refuse_unsafe(repo: &Repo, pack_dir: &Path) -> Result<(), RepackError> {
    if repo.common_dir().join("shallow").exists() {
        return Err(RepackError::Shallow {
            path: repo.common_dir().to_owned(),
        });
    }
    let promisor_remote = repo
        .remote_names()
        .iter()
        .any(|r| repo.config_bool(&format!("remote.{r}.promisor")) == Some(true));
    if promisor_remote || repo.config_string("extensions.partialClone").is_some() {
        return Err(RepackError::Partial {
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
        } else if name.ends_with(".promisor") {
            return Err(RepackError::Partial {
                path: repo.common_dir().to_owned(),
            });
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

/// Create and remove a file in `dir`: the one sure test that a repack can
/// write there, made before any work.
fn probe_writable(dir: &Path) -> Result<(), RepackError> {
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
fn existing_packs(pack_dir: &Path) -> Result<Vec<PathBuf>, RepackError> {
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
fn undo_interrupted_install(pack_dir: &Path) -> Result<(), RepackError> {
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

/// Remove one old pack: the index first, so no reader finds an index whose
/// pack is gone.
fn remove_pack(base: &Path) -> Result<(), RepackError> {
    for ext in ["idx", "pack", "rev", "bitmap", "mtimes"] {
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
fn remove_midx(pack_dir: &Path) -> Result<(), RepackError> {
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

fn dir_files(dir: &Path) -> Result<Vec<PathBuf>, RepackError> {
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

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Bytes of loose objects (the 2-hex-digit directories).
fn loose_bytes(objects: &Path) -> u64 {
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

fn sync(path: &Path) -> Result<(), RepackError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|source| RepackError::Io {
            what: "sync",
            path: path.to_owned(),
            source,
        })
}

fn sync_dir(dir: &Path) -> Result<(), RepackError> {
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
fn remove_stale_temporaries(pack_dir: &Path, git_expiry: Option<Duration>) {
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

/// How git's own temporary files in `objects/pack` start.
const GIT_TMP_PREFIX: &str = "tmp_";

/// How old a `tmp_*` file in `objects/pack` must be before it is removed,
/// or `None` to keep them all: `git gc` runs `git prune --expire
/// <gc.pruneExpire>` (default `2.weeks.ago`), and `git prune` removes the
/// `tmp_` files of `objects/pack` whose mtime is at or before that date
/// (`builtin/prune.c`, `prune_tmp_file`). `gc.pruneExpire` is read in the
/// forms `now`, `never` and `<n>.<unit>.ago` (or with spaces); any other
/// date falls back to git's default of two weeks.
fn git_tmp_expiry(repo: &Repo) -> Option<Duration> {
    const TWO_WEEKS: Duration = Duration::from_secs(14 * 24 * 3600);
    match repo.config_string("gc.pruneExpire") {
        None => Some(TWO_WEEKS),
        Some(v) => parse_expiry(&v).unwrap_or(Some(TWO_WEEKS)),
    }
}

/// `now` -> `Some(0)`, `never` -> `None`, `3.days.ago` or `3 days ago`
/// -> three days; `None` for what is not understood.
fn parse_expiry(v: &str) -> Option<Option<Duration>> {
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
/// The file stays when the lock is released: deleting it would let a
/// process that opened it just before lock the deleted file while a third
/// creates and locks a new one.
struct Lock {
    _file: std::fs::File,
}

impl Lock {
    fn take(git_dir: &Path) -> Result<Lock, RepackError> {
        let path = git_dir.join(LOCK_NAME);
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
            Ok(()) => Ok(Lock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(RepackError::Locked { path }),
            Err(std::fs::TryLockError::Error(source)) => Err(RepackError::Io {
                what: "lock",
                path,
                source,
            }),
        }
    }
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
