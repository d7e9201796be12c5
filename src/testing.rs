//! Real text for the unit tests: whole files of source code and prose, in
//! a fixed order. Tests here compare two implementations of one thing
//! (SIMD and portable, merge and dense), so they need varied real text
//! rather than particular files.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file below `src/`, sorted by path.
pub(crate) fn real_text() -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut paths,
    );
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).expect("read a test text"))
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("list a test text directory") {
        let path = e.expect("list a test text directory").path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Run the real `git` in `dir`, isolated from the machine's configuration
/// and from any repository the tests run inside of, with pinned
/// identities; its output, after checking that it succeeded.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2005-04-07T22:13:13Z")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "2005-04-07T22:13:13Z")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "gc.auto=0",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
