//! Nothing hangs: `--threads` is capped as git caps it, a FIFO or a
//! directory named like a store table neither blocks a command nor is
//! warned about, and the first SIGTERM ends a command within a second
//! whatever it waits on (a git child that never returns, a full pipe).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Repo, corpus_text, git_command, lossy, simm_command};

/// Wait for `child` at most `limit`; `None` (and the child killed) when it
/// was still running.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The most threads `pid` had at once until it ended (sampled).
fn peak_threads(child: &mut Child, limit: Duration) -> (Option<std::process::ExitStatus>, usize) {
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let until = Instant::now() + limit;
    let mut peak = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(n) = text
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
        {
            peak = peak.max(n);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            return (Some(status), peak);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return (None, peak);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn small_history() -> Repo {
    let repo = Repo::new();
    let mut text = corpus_text("rust/toml-0.8.19/src/ser.rs");
    for i in 0..12 {
        text.extend_from_slice(format!("// change {i}\n").as_bytes());
        repo.write("a.rs", &text);
        repo.write(format!("b{}.rs", i % 3), &text[..text.len() / 2]);
        repo.commit_all(&format!("c{i}"));
    }
    repo
}

/// `repack --threads=100000`: git's pack-objects starts no more threads
/// than it has parts of work (two windows each), and neither does the
/// delta search of `--bases=simm`; both finish, as `git repack` does.
#[test]
fn threads_are_capped_as_git_caps_them() {
    let repo = small_history();
    let o = repo.git_output(&["repack", "-adfq", "--threads=100000"]);
    assert!(o.status.success(), "git itself: {}", lossy(&o.stderr));
    for bases in ["--bases=simm", "--bases=git"] {
        let mut child = simm_command()
            .current_dir(&repo.path)
            .args(["repack", "-q", "--threads=100000", bases])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let (status, peak) = peak_threads(&mut child, Duration::from_secs(120));
        let status = status.unwrap_or_else(|| panic!("{bases}: still running after 120 s"));
        assert!(status.success(), "{bases}: {status:?}");
        // About 60 objects: git would start 3 delta threads; rayon,
        // progress and the watchdog add a few of git-simm's own.
        assert!(peak <= 16, "{bases}: {peak} threads");
        let o = repo.git_output(&["fsck", "--full"]);
        assert!(o.status.success(), "{}", lossy(&o.stderr));
    }
}

/// A FIFO and a directory named like store tables: every command runs
/// through (it would block forever opening the FIFO), says nothing about
/// them (mapping a directory fails with "No such device"), and leaves
/// them where they are.
#[test]
fn fifos_and_directories_named_like_tables_are_not_the_stores() {
    let repo = small_history();
    let store = repo.store_dir();
    std::fs::create_dir_all(&store).expect("mkdir");
    let fifo = store.join("fp-00000000-00000001.table");
    let hist_fifo = store.join("hist-00000000-00000001.table");
    for f in [&fifo, &hist_fifo] {
        let o = Command::new("mkfifo").arg(f).output().expect("mkfifo");
        assert!(o.status.success());
    }
    let dir = store.join("fp-00000000-00000002.table");
    std::fs::create_dir(&dir).expect("mkdir");
    for args in [
        &["fingerprint", "HEAD"][..],
        &["similar", "a.rs", "HEAD"],
        &["groups", "HEAD"],
        &["renames", "HEAD~3", "HEAD"],
        &["gc"],
    ] {
        let mut child = simm_command()
            .current_dir(&repo.path)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let status = wait_at_most(&mut child, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("{args:?} blocked"));
        let text = std::io::read_to_string(stderr).unwrap_or_default();
        assert!(
            status.success() || status.code() == Some(1),
            "{args:?}: {text}"
        );
        assert!(!text.contains("table"), "{args:?} warned: {text}");
    }
    assert!(dir.is_dir());
    for f in [&fifo, &hist_fifo] {
        let meta = std::fs::symlink_metadata(f).expect("still there");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
    }
}

/// Send SIGTERM to `child` once `ready` holds, and how long it then took
/// to end (`None`: it never ended within 30 s, and was killed).
fn terminate_when(
    child: &mut Child,
    ready: impl Fn() -> bool,
) -> (Option<std::process::ExitStatus>, Duration) {
    let until = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "it ended before it blocked"
        );
        assert!(Instant::now() < until, "it never got to the wait");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Blocked there for a while, as a user would find it.
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill");
    let status = wait_at_most(child, Duration::from_secs(30));
    (status, sent.elapsed())
}

fn assert_ended_promptly(what: &str, (status, took): (Option<std::process::ExitStatus>, Duration)) {
    let status = status.unwrap_or_else(|| panic!("{what}: did not stop after SIGTERM"));
    eprintln!("{what}: {status:?} {took:?} after SIGTERM");
    assert_eq!(status.code(), Some(130), "{what}: {status:?}");
    assert!(took < Duration::from_secs(1), "{what}: took {took:?}");
}

/// Blocked on a git that never returns (a partial clone's fetch over ssh
/// whose `core.sshCommand` hangs) and on its output (a pipe nobody
/// reads): the first SIGTERM ends the run within a second, with the
/// hanging program stopped too.
#[test]
fn the_first_sigterm_ends_any_wait_within_a_second() {
    let repo = small_history();
    repo.git(&["config", "uploadpack.allowFilter", "true"]);
    let base = repo.path.parent().expect("parent").to_owned();
    let clone = base.join("partial");
    let o = git_command(&base)
        .args(["clone", "-q", "--no-checkout", "--filter=blob:none"])
        .arg(format!("file://{}", repo.path.display()))
        .arg(&clone)
        .output()
        .expect("clone");
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    let pidfile = base.join("ssh.pid");
    let ssh = base.join("hanging-ssh");
    std::fs::write(
        &ssh,
        format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec sleep 600\n",
            pidfile.display()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for (k, v) in [
        (
            "remote.origin.url",
            "ssh://example.invalid/repo.git".to_owned(),
        ),
        ("core.sshCommand", ssh.display().to_string()),
    ] {
        let o = git_command(&clone)
            .args(["config", k, &v])
            .output()
            .expect("config");
        assert!(o.status.success());
    }
    for args in [&["fingerprint", "HEAD"][..], &["groups", "HEAD"]] {
        let _ = std::fs::remove_file(&pidfile);
        let mut child = simm_command()
            .current_dir(&clone)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let ended = terminate_when(&mut child, || pidfile.exists());
        assert_ended_promptly(&format!("{args:?} waiting on git fetch"), ended);
        // Every ssh git started, the one it waited on and any it started
        // as that one ended (after its `ssh -G` probe, the real one).
        std::thread::sleep(Duration::from_millis(300));
        let sleepers = std::fs::read_to_string(&pidfile).expect("pid");
        for sleeper in sleepers.lines() {
            assert_gone(Path::new(&format!("/proc/{}", sleeper.trim())));
        }
    }

    // Blocked writing its output to a reader that reads nothing.
    let many = Repo::new();
    for i in 0..1500 {
        many.write(
            format!("f{i:04}.txt"),
            format!("file number {i}\n").repeat(8).as_bytes(),
        );
    }
    many.commit_all("many");
    let mut child = simm_command()
        .current_dir(&many.path)
        .args(["fingerprint", "HEAD"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    // Blocked once its main thread sleeps in a write to the full pipe.
    let ready = || {
        std::fs::read_to_string(format!("/proc/{pid}/wchan"))
            .is_ok_and(|w| w.contains("pipe_write") || w.contains("wait_woken"))
    };
    let ended = terminate_when(&mut child, ready);
    assert_ended_promptly("fingerprint writing to a full pipe", ended);
}

/// The process at `proc_dir` ends within a few seconds (or is a zombie).
fn assert_gone(proc_dir: &Path) {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let gone = std::fs::read_to_string(proc_dir.join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if gone {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} still runs", proc_dir.display());
}

/// `compare` of two large files that share their lines in another order
/// ends in seconds: the alignment behind the regions gives up on a
/// shortest path after a bounded search, as git's diff does, and each
/// region's lines are found by a search, not by counting from the start
/// (either one alone takes a minute or more here).
#[test]
fn compare_of_large_dissimilar_files_ends_in_seconds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = corpus_text("rust/toml-0.8.19/src/de.rs");
    let mut data = Vec::new();
    while data.len() < 2_000_000 {
        data.extend_from_slice(&text);
    }
    let mut lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
    let mut rng = crate::util::Rng(5);
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i + 1));
    }
    std::fs::write(dir.path().join("a"), &data).expect("write a");
    std::fs::write(dir.path().join("b"), lines.concat()).expect("write b");
    let mut child = simm_command()
        .current_dir(dir.path())
        .args(["compare", "a", "b"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run git-simm");
    let status = wait_at_most(&mut child, Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| s.success()),
        "compare of two 2 MB files: {status:?}"
    );
}
