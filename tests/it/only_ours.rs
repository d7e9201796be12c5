//! git-simm removes only what it can prove it made, and leaves nothing of
//! its own behind: a store directory shared with other files (through
//! `simm.storeDir` or a `.git/simm` symbolic link) keeps them, damaged or
//! not, whatever runs there (`gc --force` included); the temporaries a
//! killed `export -o` left are recognised and removed by the next export;
//! tables and exports are synced with their directory when renamed into
//! place; `repack` leaves no lock file; and a few refusals say what git
//! (or the documentation) says.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::util::{Repo, corpus_text, lossy};

fn small_repo() -> Repo {
    let repo = Repo::new();
    let text = corpus_text("rust/toml-0.8.19/src/ser.rs");
    repo.write("a.txt", &text);
    repo.write("b.txt", &text[..text.len() / 2]);
    repo.commit_all("one");
    repo
}

/// The user's files a store directory may hold, with their bytes.
fn plant(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let files: [(&str, &[u8]); 6] = [
        ("fp-notes.table", b"notes that happen to end in .table"),
        ("hist-notes.table", b"more notes"),
        (
            "tmp-important",
            b"GSIMMFP\0 a user's file named like an old temporary",
        ),
        ("tmp-simm-notes", b"a user's file named like a temporary"),
        ("notes.txt", b"plain notes"),
        ("tmp-a1b2c3", b"not the store's content"),
    ];
    let mut planted = BTreeMap::new();
    for (name, data) in files {
        let path = dir.join(name);
        std::fs::write(&path, data).expect("write");
        // Old enough for any age rule.
        let old = SystemTime::now() - Duration::from_secs(30 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(old))
            .expect("mtime");
        planted.insert(path, data.to_vec());
    }
    planted
}

/// Files named exactly as the store names its tables, holding something
/// else: not provably the store's, so set aside, never removed.
fn plant_lookalikes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    ["fp-00000000-00000001.table", "hist-00000000-00000002.table"]
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let data = format!("my {name}").into_bytes();
            std::fs::write(&path, &data).expect("write");
            (path, data)
        })
        .collect()
}

fn assert_kept(planted: &BTreeMap<PathBuf, Vec<u8>>, what: &str) {
    for (path, data) in planted {
        assert_eq!(
            std::fs::read(path).ok().as_deref(),
            Some(data.as_slice()),
            "{what}: {} was removed or changed",
            path.display()
        );
    }
}

fn assert_set_aside(lookalikes: &[(PathBuf, Vec<u8>)], what: &str) {
    for (path, data) in lookalikes {
        let mut aside = path.as_os_str().to_owned();
        aside.push(".damaged");
        let aside = PathBuf::from(aside);
        let kept = std::fs::read(path)
            .ok()
            .or_else(|| std::fs::read(&aside).ok());
        assert_eq!(
            kept.as_deref(),
            Some(data.as_slice()),
            "{what}: {} was lost",
            path.display()
        );
    }
}

fn commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["fingerprint", "HEAD"],
        vec!["similar", "a.txt"],
        vec!["groups", "--threshold", "30", "HEAD"],
        vec!["gc", "--force"],
        vec!["gc", "--force", "--drop-histograms"],
        vec!["fingerprint", "HEAD"],
    ]
}

#[test]
fn a_shared_store_directory_keeps_every_file_that_is_not_the_stores() {
    let repo = small_repo();
    let shared = repo.path.parent().expect("parent").join("shared");
    let planted = plant(&shared);
    let lookalikes = plant_lookalikes(&shared);
    repo.git(&["config", "simm.storeDir", &shared.display().to_string()]);
    for args in commands() {
        let o = repo.simm(&args);
        assert!(
            o.status.success() || o.status.code() == Some(1),
            "{args:?}: {}",
            lossy(&o.stderr)
        );
        assert_kept(&planted, &format!("simm.storeDir, {args:?}"));
        assert_set_aside(&lookalikes, &format!("simm.storeDir, {args:?}"));
    }
    // The store works there all the same.
    assert!(
        std::fs::read_dir(&shared)
            .expect("read")
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("fp-")
                && e.file_name().to_string_lossy().ends_with(".table")
                && !planted.contains_key(&e.path())
                && !lookalikes.iter().any(|(p, _)| *p == e.path()))
    );
}

#[test]
fn a_store_that_is_a_symbolic_link_keeps_every_file_that_is_not_the_stores() {
    let repo = small_repo();
    let elsewhere = repo.path.parent().expect("parent").join("elsewhere");
    let planted = plant(&elsewhere);
    let lookalikes = plant_lookalikes(&elsewhere);
    std::os::unix::fs::symlink(&elsewhere, repo.store_dir()).expect("symlink");
    for args in commands() {
        let o = repo.simm(&args);
        assert!(
            o.status.success() || o.status.code() == Some(1),
            "{args:?}: {}",
            lossy(&o.stderr)
        );
        assert_kept(&planted, &format!(".git/simm -> elsewhere, {args:?}"));
        assert_set_aside(&lookalikes, &format!(".git/simm -> elsewhere, {args:?}"));
    }
}

/// What killed exports leave beside the file (the temporary, whole or
/// not, no longer locked by its writer) is removed by the next export to
/// that directory; a live export's temporary (locked) and a user's file of
/// a similar name are not.
#[cfg(feature = "export")]
#[test]
fn a_killed_exports_temporaries_are_removed_by_the_next() {
    let repo = small_repo();
    let out = repo.path.parent().expect("parent").join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let dead = out.join(".f.parquet.simm-tmp-AbC123");
    let dead_empty = out.join(".g.parquet.simm-tmp-XyZ789");
    let live = out.join(".f.parquet.simm-tmp-Live42");
    let users = out.join(".f.parquet.simm-tmp-notes");
    std::fs::write(&dead, b"PAR1 and half a file").expect("write");
    std::fs::write(&dead_empty, b"").expect("write");
    // Empty temporaries go only once they have been idle for a minute (a
    // writer creates its temporary a moment before it locks it).
    std::fs::OpenOptions::new()
        .write(true)
        .open(&dead_empty)
        .expect("open")
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .expect("set mtime");
    let fresh_empty = out.join(".h.parquet.simm-tmp-Fresh1");
    std::fs::write(&fresh_empty, b"").expect("write");
    std::fs::write(&live, b"PAR1 being written").expect("write");
    std::fs::write(&users, b"my notes").expect("write");
    let held = std::fs::File::open(&live).expect("open");
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).expect("lock");
    let target = out.join("f.parquet");
    let o = repo.simm(&["export", "-q", "-o", &target.display().to_string()]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    assert!(target.is_file());
    assert!(!dead.exists(), "a dead export's temporary stayed");
    assert!(
        !dead_empty.exists(),
        "a dead export's empty temporary stayed"
    );
    assert!(live.exists(), "a live export's temporary was removed");
    assert!(
        fresh_empty.exists(),
        "an export's just-created temporary was removed"
    );
    assert_eq!(std::fs::read(&users).expect("kept"), b"my notes");
    drop(held);
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("read")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// A run killed between writing a store table and renaming it into place
/// leaves the whole table under its temporary name, no longer locked: the
/// next run that writes to the store removes it; a live writer's
/// temporary (locked) and a user's file of a similar name stay.
#[test]
fn a_killed_runs_store_temporaries_are_removed_by_the_next_write() {
    let repo = small_repo();
    let o = repo.simm(&["fingerprint", "-q", "HEAD"]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    let store = repo.store_dir();
    let tables: Vec<PathBuf> = std::fs::read_dir(&store)
        .expect("store")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "table"))
        .collect();
    assert!(!tables.is_empty(), "no table written");
    // What the kill leaves: each table's bytes under a temporary's name.
    let mut dead = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let path = store.join(format!("tmp-simm-Dead0{i}"));
        std::fs::copy(t, &path).expect("copy");
        dead.push(path);
    }
    let live = store.join("tmp-simm-Live42");
    std::fs::copy(&tables[0], &live).expect("copy");
    let held = std::fs::File::open(&live).expect("open");
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).expect("lock");
    let users = store.join("tmp-simm-notes");
    std::fs::write(&users, b"my notes").expect("write");

    let text = corpus_text("rust/toml-0.8.19/src/macros.rs");
    repo.write("c.txt", &text);
    repo.commit_all("two");
    let o = repo.simm(&["fingerprint", "-q", "HEAD"]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    for d in &dead {
        assert!(!d.exists(), "{} stayed after the next write", d.display());
    }
    assert!(live.exists(), "a live writer's temporary was removed");
    assert_eq!(std::fs::read(&users).expect("kept"), b"my notes");
    drop(held);
}

/// A repack leaves no lock file behind, however it ended the time before.
#[test]
fn repack_leaves_no_lock_file() {
    let repo = small_repo();
    let lock = repo.path.join(".git/simm-repack.lock");
    for args in [&["repack", "-q"][..], &["repack", "-q", "--bases=git"]] {
        let o = repo.simm(args);
        assert!(o.status.success(), "{}", lossy(&o.stderr));
        assert!(!lock.exists(), "{args:?} left {}", lock.display());
    }
    // A lock file a killed run left: taken, then removed.
    std::fs::write(&lock, b"").expect("write");
    let o = repo.simm(&["repack", "-q"]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    assert!(!lock.exists());
}

/// Tables and the export are synced and so is their directory after the
/// rename that publishes them (seen with strace: a rename into the
/// directory, then an fsync of a descriptor opened on that directory).
#[test]
fn renamed_files_are_made_durable_with_their_directory() {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped: strace is not installed");
        return;
    }
    let repo = small_repo();
    #[cfg_attr(not(feature = "export"), allow(unused_mut))]
    let mut runs = vec![(
        vec!["fingerprint".to_owned(), "HEAD".to_owned()],
        repo.store_dir(),
    )];
    #[cfg(feature = "export")]
    {
        let out = repo.path.parent().expect("parent").join("durable");
        std::fs::create_dir(&out).expect("mkdir");
        let export = out.join("f.parquet");
        runs.push((
            vec![
                "export".into(),
                "-q".into(),
                "-o".into(),
                export.display().to_string(),
            ],
            out,
        ));
    }
    for (args, dir) in runs {
        let log = repo.path.parent().expect("parent").join("strace.log");
        let mut cmd = std::process::Command::new("strace");
        crate::util::git_env(&mut cmd);
        let o = cmd
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=openat,fsync,rename,renameat,renameat2",
            ])
            .arg("-o")
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_git-simm"))
            .args(&args)
            .current_dir(&repo.path)
            .output()
            .expect("strace");
        assert!(o.status.success(), "{args:?}: {}", lossy(&o.stderr));
        let log = std::fs::read_to_string(&log).expect("log");
        assert!(
            synced_after_rename(&log, &dir),
            "{args:?}: no fsync of {} after the rename:\n{log}",
            dir.display()
        );
    }
}

/// The calls of an strace `-f` log, one a line: a call another thread
/// interrupted (`<unfinished ...>`, then `<... call resumed>` on a later
/// line of the same thread) is joined into one line, placed where it
/// started.
fn whole_calls(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open: std::collections::HashMap<String, usize> = Default::default();
    for line in log.lines() {
        // strace pads the thread id: "7222  fsync(4 <unfinished ...>".
        let (pid, rest) = line.split_once(' ').unwrap_or(("", line));
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            open.insert(pid.to_owned(), out.len());
            out.push(format!("{pid} {head}"));
        } else if let Some((_, tail)) = rest
            .strip_prefix("<... ")
            .and_then(|r| r.split_once(" resumed>"))
        {
            match open.remove(pid) {
                Some(at) => out[at].push_str(tail),
                None => out.push(line.to_owned()),
            }
        } else {
            out.push(line.to_owned());
        }
    }
    out
}

/// Two threads renaming and syncing at once, as strace printed them in a
/// run where each call was interrupted by the other thread's: the
/// directory sync after the first rename is found.
#[test]
fn interleaved_strace_calls_are_joined() {
    let log = "\
7222  renameat(AT_FDCWD, \"/r/.git/simm/tmp-1\", AT_FDCWD, \"/r/.git/simm/sig-1.table\") = 0
7222  openat(AT_FDCWD, \"/r/.git/simm\", O_RDONLY|O_CLOEXEC) = 4
7222  fsync(4 <unfinished ...>
7218  <... fsync resumed>)              = 0
7218  renameat(AT_FDCWD, \"/r/.git/simm/tmp-2\", AT_FDCWD, \"/r/.git/simm/fp-1.table\" <unfinished ...>
7222  <... fsync resumed>)              = 0
7218  <... renameat resumed>)           = 0
";
    let joined = whole_calls(log);
    assert_eq!(joined[2], "7222 fsync(4)              = 0");
    assert!(synced_after_rename(log, Path::new("/r/.git/simm")));
    // Without the sync, no.
    let unsynced: String = log
        .lines()
        .filter(|l| !l.contains("fsync"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!synced_after_rename(&unsynced, Path::new("/r/.git/simm")));
}

/// Whether `log` (strace) shows a rename into `dir` followed by an fsync of
/// a descriptor opened on `dir` itself.
fn synced_after_rename(log: &str, dir: &Path) -> bool {
    let dir = dir.display().to_string();
    let log = whole_calls(log);
    let Some(renamed) = log.iter().position(|l| {
        l.contains("rename") && l.contains(&format!("\"{dir}/")) && !l.contains("= -1")
    }) else {
        return false;
    };
    let mut fds = Vec::new();
    for line in log.iter().skip(renamed + 1) {
        if line.contains("openat(")
            && line.contains(&format!("\"{dir}\""))
            && let Some(fd) = line
                .rsplit("= ")
                .next()
                .and_then(|f| f.trim().parse::<i32>().ok())
        {
            fds.push(fd);
        }
        if fds.iter().any(|fd| line.contains(&format!("fsync({fd})"))) {
            return true;
        }
    }
    false
}

/// `origin --in` a path that does not exist says what the documentation
/// says; `pack-order` with an unknown revision says what git says,
/// without a git command line of its own.
#[test]
fn refusals_in_git_and_documented_words() {
    let repo = small_repo();
    let o = repo.simm(&["origin", ".", "--in", "/nonexistent/repo"]);
    assert_eq!(o.status.code(), Some(128));
    assert_eq!(
        lossy(&o.stderr),
        "fatal: not a git repository: '/nonexistent/repo'\n"
    );
    let git = repo.git_output(&["rev-list", "--objects", "nosuchrev"]);
    let o = repo.simm(&["pack-order", "nosuchrev"]);
    assert_eq!(o.status.code(), Some(128));
    assert_eq!(lossy(&o.stderr), lossy(&git.stderr));
    assert!(!lossy(&o.stderr).contains("--git-dir"));
}
