//! Which submodule changes `renames` shows, as `git diff -l0
//! --name-status` does: `--ignore-submodules[=<when>]`,
//! `submodule.<name>.ignore` (the repository's config over `.gitmodules`)
//! and `diff.ignoreSubmodules`, in work-tree mode, `--cached` and between
//! two trees, with submodules dirty, with untracked files, moved, added
//! and removed.

use crate::util::*;

/// A repository to be a submodule: real text, one commit.
fn submodule_source(corpus: &str) -> Repo {
    let s = Repo::new();
    s.write("lib.rs", &corpus_text(corpus));
    s.commit_all("sub");
    s
}

fn add_submodule(r: &Repo, source: &Repo, name: &str, path: &str) {
    r.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        "--name",
        name,
        &source.path.to_string_lossy(),
        path,
    ]);
}

fn in_sub(r: &Repo, path: &str, args: &[&str]) {
    let o = git_command(&r.path.join(path))
        .args(args)
        .output()
        .expect("git");
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
}

/// Four submodules (named otherwise than their paths, so that the names
/// `submodule.<name>.ignore` uses must be looked up in `.gitmodules`) and
/// real files renamed beside them. In the work tree: `dirty` has a tracked
/// file modified, `untracked` only an untracked file, `moved` a new commit
/// checked out, `staged` a new commit staged; `gone` was removed and
/// `fresh` added by the last commit.
fn submodule_repo() -> (Repo, Vec<Repo>) {
    let sources = vec![
        submodule_source("rust/regex-1.11.1/src/error.rs"),
        submodule_source("rust/memchr-2.8.3/src/cow.rs"),
    ];
    let r = Repo::new();
    r.write("src/lib.rs", &corpus_text("rust/regex-1.11.1/src/lib.rs"));
    r.write(
        "docs/core.py",
        &corpus_text("python/click-8.1.7/src/click/core.py"),
    );
    for (name, path) in [
        ("one", "dirty"),
        ("two", "untracked"),
        ("three", "moved"),
        ("four", "staged"),
        ("five", "gone"),
    ] {
        add_submodule(&r, &sources[0], name, path);
    }
    r.commit_all("base");
    r.git(&["rm", "-q", "gone"]);
    add_submodule(&r, &sources[1], "six", "fresh");
    r.git_mv("src/lib.rs", "src/regex.rs");
    r.commit_all("second");
    r.git_mv("docs/core.py", "core.py");
    std::fs::write(r.path.join("dirty/lib.rs"), b"modified\n").expect("write");
    std::fs::write(r.path.join("untracked/new.txt"), b"untracked\n").expect("write");
    for path in ["moved", "staged"] {
        in_sub(&r, path, &["commit", "-q", "--allow-empty", "-m", "new"]);
    }
    r.git(&["add", "staged"]);
    (r, sources)
}

const MODES: &[&[&str]] = &[
    &["-M", "HEAD"],
    &["-C", "HEAD"],
    &["-M", "--cached"],
    &["-M", "--cached", "HEAD~1"],
    &["-M", "HEAD~1", "HEAD"],
    &["-C", "HEAD~1", "HEAD"],
    // Pathspecs select submodules as directories (`moved/`) or by name.
    &["-M", "HEAD", "--", "moved/", "dirty", "src"],
    &["-M", "HEAD~1", "HEAD", "--", ":!gone", ":!src"],
];

fn agree(r: &Repo, mode: &[&str], flag: Option<&str>, what: &str) {
    let mut git = vec!["diff", "-l0", "--name-status"];
    let mut simm = vec!["renames"];
    for args in [&mut git, &mut simm] {
        args.extend(flag);
        args.extend_from_slice(mode);
    }
    let g = r.git_output(&git);
    let s = r.simm(&simm);
    assert!(g.status.success(), "git {git:?}: {}", stderr(&g));
    assert!(s.status.success(), "{simm:?} ({what}): {}", stderr(&s));
    assert_eq!(stdout(&s), stdout(&g), "{simm:?} ({what})");
}

const FLAGS: &[Option<&str>] = &[
    None,
    Some("--ignore-submodules"),
    Some("--ignore-submodules=none"),
    Some("--ignore-submodules=untracked"),
    Some("--ignore-submodules=dirty"),
    Some("--ignore-submodules=all"),
];

#[test]
fn submodule_ignore_settings_as_git_diff_applies_them() {
    let (r, _sources) = submodule_repo();
    // Each state must be visible to git under `none`, or the comparisons
    // below would prove little.
    let none = r.git_str(&["diff", "--name-status", "--ignore-submodules=none", "HEAD"]);
    for path in ["dirty", "untracked", "moved", "staged"] {
        assert!(none.contains(&format!("M\t{path}\n")), "{path}: {none}");
    }
    for flag in FLAGS {
        for mode in MODES {
            agree(&r, mode, *flag, "command line only");
        }
    }
    for when in ["none", "untracked", "dirty", "all"] {
        r.git(&["config", "diff.ignoreSubmodules", when]);
        for flag in FLAGS {
            for mode in MODES {
                agree(&r, mode, *flag, &format!("diff.ignoreSubmodules={when}"));
            }
        }
    }
    r.git(&["config", "diff.ignoreSubmodules", "dirty"]);
    // Per submodule, by name: `.gitmodules` first, then the repository's
    // config over it, the command line over both.
    let per_name = [
        ("one", "all"),
        ("two", "none"),
        ("three", "dirty"),
        ("four", "all"),
        ("six", "all"),
    ];
    for (name, when) in per_name {
        r.git(&[
            "config",
            "-f",
            ".gitmodules",
            &format!("submodule.{name}.ignore"),
            when,
        ]);
    }
    for flag in FLAGS {
        for mode in MODES {
            agree(&r, mode, *flag, ".gitmodules");
        }
    }
    r.git(&["config", "submodule.one.ignore", "none"]);
    r.git(&["config", "submodule.two.ignore", "untracked"]);
    r.git(&["config", "submodule.six.ignore", "none"]);
    for flag in FLAGS {
        for mode in MODES {
            agree(&r, mode, *flag, "config over .gitmodules");
        }
    }
    // `.gitmodules` from the index when the work tree has none.
    r.git(&["add", ".gitmodules"]);
    r.remove(".gitmodules");
    for mode in MODES {
        agree(&r, mode, None, ".gitmodules from the index");
    }
}

#[test]
fn bad_submodule_ignore_values_fail_as_git_does() {
    let (r, _sources) = submodule_repo();
    let check = |args: &[&str], what: &str| {
        let mut git = vec!["diff", "--name-status"];
        git.extend_from_slice(args);
        let mut simm = vec!["renames"];
        simm.extend_from_slice(args);
        let (g, s) = (r.git_output(&git), r.simm(&simm));
        assert_eq!(g.status.code(), Some(128), "git {what}");
        assert_eq!(s.status.code(), Some(128), "{what}: {}", stderr(&s));
        assert_eq!(stderr(&s), stderr(&g), "{what}");
    };
    check(
        &["--ignore-submodules=bogus", "HEAD"],
        "--ignore-submodules=bogus",
    );
    r.git(&["config", "submodule.one.ignore", "bogus"]);
    check(&["HEAD"], "submodule.one.ignore=bogus");
    r.git(&["config", "--unset", "submodule.one.ignore"]);
    r.git(&["config", "diff.ignoreSubmodules", "bogus"]);
    check(&["HEAD~1", "HEAD"], "diff.ignoreSubmodules=bogus");
}
