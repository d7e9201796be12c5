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
    let out = fixture::git_env(&mut Command::new("git"))
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

/// `text` with every LF line end made CRLF (a last line without one
/// left as it is): what a checkout with `core.autocrlf` writes.
pub(crate) fn with_crlf(text: &[u8]) -> Vec<u8> {
    text.split_inclusive(|&b| b == b'\n')
        .flat_map(|l| match l.strip_suffix(b"\n") {
            Some(body) => [body, b"\r\n"].concat(),
            None => l.to_vec(),
        })
        .collect()
}

/// splitmix64: a seeded generator, so every failure reproduces.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::similarity::mix::mix(self.0)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// Fewer than `max` random bytes.
    pub(crate) fn some_bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max);
        self.bytes(n)
    }
}
