//! Pathspecs as a user gives them after `--` (any bytes, magic included:
//! `:(top,icase,exclude,attr:...)`, `:/`, `:!`), from the top of a work
//! tree and from a directory inside it, matched against any paths: a
//! clear error or an answer, never a panic.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use git_simm::repo::Repo;
use libfuzzer_sys::fuzz_target;

fn repo_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory").keep();
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&dir)
            .status()
            .expect("git runs")
            .success();
        assert!(ok, "git init");
        std::fs::create_dir_all(dir.join("sub/dir")).expect("mkdir");
        dir
    })
}

thread_local! {
    static REPO: Repo = Repo::open(repo_dir()).expect("opens");
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    // Pathspecs, one a line; after an empty line, paths to match.
    let (specs, paths) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &b"a/b.c\nsub/dir/x"[..]),
    };
    let specs: Vec<&[u8]> = specs.split(|&b| b == b'\n').collect();
    let cwd = if mode & 1 == 0 {
        repo_dir().clone()
    } else {
        repo_dir().join("sub/dir")
    };
    REPO.with(|repo| {
        if let Ok(Some(mut spec)) = repo.pathspec(&specs, &cwd) {
            let _ = spec.needs_attributes();
            for path in paths.split(|&b| b == b'\n') {
                let _ = spec.matches(path, false, None);
                let _ = spec.matches(path, true, None);
            }
        }
    });
});
