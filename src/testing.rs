//! What the unit tests share: real text from the pinned corpus
//! (`fixtures/corpus.sh`, the same the integration tests read), and a
//! pinned way to run git.

use std::path::Path;
use std::process::Command;

#[path = "../fixtures/fixture.rs"]
mod fixture;

/// Text files of the pinned corpus, 1 to 64 KiB, in path order: real code
/// (Rust, C, Python) and prose, the same on every machine and whatever
/// happens to this crate's own sources. Every fifth, so that each kind of
/// file is represented and the unit tests stay quick: about 580 files.
pub(crate) fn real_text() -> Vec<Vec<u8>> {
    static TEXTS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    TEXTS
        .get_or_init(|| {
            let dir = fixture::fixture("corpus");
            let mut paths = Vec::new();
            fixture::walk(&dir, &mut paths);
            let texts: Vec<Vec<u8>> = paths
                .iter()
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        ["rs", "c", "h", "py", "md", "rst", "txt", "toml"].contains(&e)
                    })
                })
                .filter_map(|p| std::fs::read(p).ok())
                .filter(|d| (1024..=64 * 1024).contains(&d.len()) && !d.contains(&0))
                .step_by(5)
                .collect();
            assert!(
                texts.len() >= 400,
                "only {} corpus texts in {}",
                texts.len(),
                dir.display()
            );
            texts
        })
        .clone()
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
