//! A repository's configuration and `.gitmodules` of any bytes, read as
//! the commands read them (every key git-simm looks up, as string, bool,
//! int and path; the submodule ignore settings): an error or a value,
//! never a panic.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use git_simm::repo::Repo;
use libfuzzer_sys::fuzz_target;

/// One repository made by `git init`, reused: its config is rewritten for
/// every input.
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
        dir
    })
}

const KEYS: &[&str] = &[
    "simm.storeDir",
    "simm.groupThreshold",
    "simm.strict",
    "simm.ignore",
    "simm.renameThreshold",
    "diff.renameLimit",
    "diff.renames",
    "diff.ignoreSubmodules",
    "pack.compression",
    "core.compression",
    "core.ignorecase",
    "core.hooksPath",
    "repack.writeBitmaps",
    "gc.pruneExpire",
    "attr.tree",
    "promisor.quiet",
    "remote.origin.url",
    "submodule.sub.ignore",
];

const CORE: &[u8] = b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n";

fuzz_target!(|data: &[u8]| {
    let dir = repo_dir();
    // Before the first NUL: appended to a valid `[core]`; after: `.gitmodules`.
    let (config, modules) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let mut text = CORE.to_vec();
    text.extend_from_slice(config);
    std::fs::write(dir.join(".git/config"), &text).expect("write config");
    std::fs::write(dir.join(".gitmodules"), modules).expect("write .gitmodules");
    let Ok(repo) = Repo::open(dir) else {
        return;
    };
    for key in KEYS {
        let _ = repo.config_string(key);
        let _ = repo.config_strings(key);
        let _ = repo.config_bool(key);
        let _ = repo.config_int(key);
        let _ = repo.config_path(key);
    }
    let _ = repo.remote_names();
    let _ = repo.hooks_dir();
    if let Ok(ignores) = repo.submodule_ignores(None) {
        for path in [&b"sub"[..], b"a/b", b""] {
            let _ = ignores.for_path(path);
        }
    }
    if let Some(v) = repo.config_string("gc.pruneExpire") {
        let _ = git_simm::pack::parse_expiry(&v);
    }
    if let Some(v) = repo.config_string("simm.groupThreshold") {
        let _ = git_simm::similarity::score::parse_rename_score(&v);
    }
});
