//! Running git's own plumbing (`rev-list`, `pack-objects`, `check-attr`)
//! with its input fed and its output drained on threads, so neither side
//! can block the other.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::PackError;
use crate::progress::{Feedback, Interrupted};
use crate::repo::Repo;

/// A git command against `repo` ([`Repo::git_command`]: its git dir and
/// work tree explicit, so the caller's environment cannot point it
/// elsewhere).
///
/// In a partial clone, lazy fetching is off (`GIT_NO_LAZY_FETCH=1`):
/// packing works on the objects that are there, as `git repack` does, and
/// a listing that named a missing object must fail rather than fetch it
/// alone (one `git fetch` per object, which in a blob-less clone of any
/// size never ends).
pub fn git(repo: &Repo) -> Command {
    let mut cmd = repo.git_command();
    if repo.is_partial() {
        cmd.env("GIT_NO_LAZY_FETCH", "1");
    }
    cmd
}

pub(super) fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run `cmd` feeding it `input`, and return its stdout; a non-zero exit
/// becomes [`PackError::Git`] with git's message. Interrupted through
/// `feedback`, the child is stopped (see [`run_with`]).
pub fn run(cmd: Command, input: Option<&[u8]>, feedback: &Feedback) -> Result<Vec<u8>, PackError> {
    run_with(cmd, input, false, feedback)
}

/// How often a running child's interrupt flag is looked at.
const POLL: Duration = Duration::from_millis(20);

/// How long a child stopped by SIGTERM may take to clean up before it is
/// killed.
const GRACE: Duration = Duration::from_secs(2);

/// [`run`]; with `relay`, git's stderr (its progress) is also handed to
/// `feedback` as it comes, so the user watches a long pack-objects run.
///
/// Once `feedback`'s flag is set the child gets SIGTERM, on which git
/// removes its temporary files (`tmp_pack_*`) as it does on Ctrl-C, and a
/// SIGKILL if it is still running two seconds later; the result is
/// [`PackError::Interrupted`]. So is a child that died of SIGINT: Ctrl-C
/// in a terminal reaches git-simm's children as well as git-simm.
pub fn run_with(
    mut cmd: Command,
    input: Option<&[u8]>,
    relay: bool,
    feedback: &Feedback,
) -> Result<Vec<u8>, PackError> {
    let command = describe(&cmd);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let spawn_error = |source| PackError::Spawn {
        command: command.clone(),
        source,
    };
    feedback.check()?;
    let mut child = cmd.spawn().map_err(spawn_error)?;
    // stdin is fed, stdout drained and stderr read by threads of their
    // own, so a child that writes much before it has read everything
    // cannot deadlock against us, and this thread is free to watch the
    // interrupt flag.
    let (status, interrupted, stdout, stderr_text, fed) = std::thread::scope(|scope| {
        let feeder = match (input, child.stdin.take()) {
            (Some(data), Some(mut stdin)) => Some(scope.spawn(move || stdin.write_all(data))),
            _ => None,
        };
        let drain = child.stdout.take().map(|mut stdout| {
            scope.spawn(move || {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
            })
        });
        // The stderr reader drops `closed` when git closes its stderr,
        // which is when it exits.
        let (closed, stderr_closed) = std::sync::mpsc::channel::<()>();
        let reader = child.stderr.take().map(|mut stderr| {
            scope.spawn(move || {
                let _closed = closed;
                let mut text = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = std::io::Read::read(&mut stderr, &mut buf) {
                    if relay {
                        feedback.git_stderr(&buf[..n]);
                    }
                    text.extend_from_slice(&buf[..n]);
                }
                text
            })
        });
        let interrupted = wait_for_close(&stderr_closed, feedback)
            || match child.try_wait() {
                Ok(Some(_)) => false,
                _ => wait_for_exit(&mut child, feedback),
            };
        if interrupted {
            stop(&mut child);
        }
        let status = child.wait();
        let panicked = || std::io::Error::other("a thread talking to git panicked");
        let stdout = match drain.map(|t| t.join()) {
            Some(Ok(Ok(out))) => Ok(out),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(panicked()),
            None => Ok(Vec::new()),
        };
        let stderr_text = reader.and_then(|t| t.join().ok()).unwrap_or_default();
        let fed = match feeder.map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(panicked()),
            None => Ok(()),
        };
        (status, interrupted, stdout, stderr_text, fed)
    });
    let status = status.map_err(spawn_error)?;
    if interrupted || killed_by_sigint(status) {
        return Err(PackError::Interrupted(Interrupted));
    }
    let stdout = stdout.map_err(spawn_error)?;
    if !status.success() {
        return Err(PackError::Git {
            command,
            message: git_message(&stderr_text, status),
            said: git_words(&stderr_text, status),
        });
    }
    fed.map_err(spawn_error)?;
    Ok(stdout)
}

/// Wait until `closed` reports the child's stderr closed; true if
/// `feedback` was interrupted first.
fn wait_for_close(closed: &std::sync::mpsc::Receiver<()>, feedback: &Feedback) -> bool {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match closed.recv_timeout(POLL) {
            Err(RecvTimeoutError::Timeout) if feedback.is_interrupted() => return true,
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}

/// Wait until `child` exits (it closed its stderr, so that is near);
/// true if `feedback` was interrupted first.
fn wait_for_exit(child: &mut Child, feedback: &Feedback) -> bool {
    loop {
        match child.try_wait() {
            Ok(None) if feedback.is_interrupted() => return true,
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Ok(Some(_)) | Err(_) => return false,
        }
    }
}

/// Stop an interrupted child: SIGTERM, on which git cleans up after
/// itself, then SIGKILL if it is still there after [`GRACE`].
fn stop(child: &mut Child) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process};
        if kill_process(Pid::from_child(child), Signal::TERM).is_ok() {
            let until = Instant::now() + GRACE;
            while Instant::now() < until {
                if !matches!(child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    let _ = child.kill();
}

/// Whether a child was killed by SIGINT (Ctrl-C in its terminal).
fn killed_by_sigint(status: std::process::ExitStatus) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal() == Some(rustix::process::Signal::INT.as_raw())
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        false
    }
}

/// git's stderr as one line for an error message.
pub fn git_message(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        format!("exited with {status}")
    } else {
        text.lines()
            .map(|l| l.strip_prefix("fatal: ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// git's stderr as it wrote it, less the `fatal: ` of its first line
/// (which git-simm's own adds back).
pub fn git_words(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        format!("exited with {status}")
    } else {
        text.strip_prefix("fatal: ").unwrap_or(text).to_owned()
    }
}

/// The version of the `git` on PATH, as (major, minor).
pub fn git_version() -> Result<(u32, u32), PackError> {
    let mut cmd = Command::new("git");
    cmd.arg("version");
    let command = describe(&cmd);
    let out = run(cmd, None, &Feedback::none())?;
    let text = String::from_utf8_lossy(&out);
    let bad = || PackError::Parse {
        command: command.clone(),
        line: text.trim().to_owned(),
    };
    let version = text.trim().strip_prefix("git version ").ok_or_else(bad)?;
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    Ok((major, minor))
}

/// The options `git pack-objects` needs to follow a [`PackList`](super::PackList): deltas
/// recomputed (so the order matters at all) and name hash version 1, the
/// one the crafted names are built for (git 2.49 added others).
pub fn pack_objects_args(version: (u32, u32)) -> Vec<&'static str> {
    let mut args = vec!["--no-reuse-delta", "--delta-base-offset"];
    if version >= (2, 49) {
        args.push("--name-hash-version=1");
    }
    args
}
