//! Running git's own plumbing (`rev-list`, `pack-objects`, `check-attr`)
//! with its input fed and its output drained on threads, so neither side
//! can block the other.

use std::io::Write;
use std::process::{Command, Stdio};

use super::PackError;
use crate::repo::Repo;

/// A git command against `repo`, with its git dir made explicit so the
/// caller's environment cannot point it elsewhere.
pub fn git(repo: &Repo) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir").arg(repo.git_dir());
    if let Some(work) = repo.work_dir() {
        cmd.arg("--work-tree").arg(work);
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
/// becomes [`PackError::Git`] with git's message.
pub fn run(cmd: Command, input: Option<&[u8]>) -> Result<Vec<u8>, PackError> {
    run_with(cmd, input, false)
}

/// [`run`]; with `relay`, git's stderr (its progress) is also copied to
/// ours as it comes, so the user watches a long pack-objects run.
pub fn run_with(mut cmd: Command, input: Option<&[u8]>, relay: bool) -> Result<Vec<u8>, PackError> {
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
    let mut child = cmd.spawn().map_err(spawn_error)?;
    // stdin is fed and stdout drained by threads of their own, so a child
    // that writes much before it has read everything cannot deadlock
    // against us while stderr is read here.
    let feeder = match (input, child.stdin.take()) {
        (Some(data), Some(mut stdin)) => {
            let data = data.to_vec();
            Some(std::thread::spawn(move || stdin.write_all(&data)))
        }
        _ => None,
    };
    let drain = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
        })
    });
    let mut stderr_text = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = std::io::Read::read(&mut stderr, &mut buf) {
            if relay {
                let _ = std::io::stderr().write_all(&buf[..n]);
            }
            stderr_text.extend_from_slice(&buf[..n]);
        }
    }
    let status = child.wait().map_err(spawn_error)?;
    let panicked = || std::io::Error::other("a thread talking to git panicked");
    let stdout = match drain.map(|t| t.join()) {
        Some(Ok(Ok(out))) => out,
        Some(Ok(Err(e))) => return Err(spawn_error(e)),
        Some(Err(_)) => return Err(spawn_error(panicked())),
        None => Vec::new(),
    };
    let fed = feeder.map(|t| t.join());
    if !status.success() {
        return Err(PackError::Git {
            command,
            message: git_message(&stderr_text, status),
        });
    }
    match fed {
        Some(Ok(Err(e))) => Err(spawn_error(e)),
        Some(Err(_)) => Err(spawn_error(panicked())),
        _ => Ok(stdout),
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

/// The version of the `git` on PATH, as (major, minor).
pub fn git_version() -> Result<(u32, u32), PackError> {
    let mut cmd = Command::new("git");
    cmd.arg("version");
    let command = describe(&cmd);
    let out = run(cmd, None)?;
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
