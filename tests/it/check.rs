//! `git-simm check --staged`, the pre-commit hook and `install-hook`, end to
//! end: real repositories, the hook installed by the binary, and real
//! `git commit` runs that execute it. Every case is checked against what
//! git itself sees (`git diff --cached -M --name-status`), so the warnings
//! are shown to describe git's real behaviour, not only our own opinion.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use util::{Repo, Rng, cache_tree, drop_cache_tree, git_command, lossy, path_with_simm, stderr};

/// A text of `n` distinct lines, different for each seed.
fn text(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| format!("line {i} {}\n", String::from_utf8_lossy(&rng.junk(40))))
        .collect()
}

/// `lines` with about `changed` of every 100 lines replaced by new ones.
fn edited(lines: &[String], changed: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i % 100 < changed {
                format!("new {i} {}\n", String::from_utf8_lossy(&rng.junk(40)))
            } else {
                l.clone()
            }
        })
        .collect::<String>()
        .into_bytes()
}

fn join(lines: &[String]) -> Vec<u8> {
    lines.concat().into_bytes()
}

/// PATH without any directory holding a `git-simm`.
fn path_without_simm() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let bin = Path::new(env!("CARGO_BIN_EXE_git-simm"));
    path.split(':')
        .filter(|d| !d.is_empty() && !Path::new(d).join("git-simm").exists())
        .filter(|d| Some(Path::new(d)) != bin.parent())
        .collect::<Vec<_>>()
        .join(":")
}

/// `git commit -m msg` with the given PATH (the hook runs in it).
fn commit(r: &Repo, msg: &str, path: &str) -> Output {
    git_command(&r.path)
        .env("PATH", path)
        .args(["commit", "-q", "-m", msg])
        .output()
        .expect("run git commit")
}

/// A repository with the hook installed by `git-simm install-hook`.
fn hooked_repo() -> Repo {
    let r = Repo::new();
    let o = r.simm(&["install-hook"]);
    assert!(o.status.success(), "{}", stderr(&o));
    r
}

/// git's own name-status of the staged changes with the given options.
fn git_status(r: &Repo, opts: &[&str]) -> String {
    let mut args = vec!["diff", "--cached", "--name-status"];
    args.extend_from_slice(opts);
    r.git_str(&args)
}

#[test]
fn heavily_edited_rename_warns_and_strict_refuses() {
    let r = hooked_repo();
    let base = text(1, 200);
    r.write("src/old_name.c", &join(&base));
    r.write("keep.txt", &join(&text(2, 50)));
    r.commit_all("base");
    r.git_mv("src/old_name.c", "lib/new_name.c");
    r.write("lib/new_name.c", &edited(&base, 60, 3));
    r.git(&["add", "-A"]);

    // git itself: no rename at its default, a 25-50% rename at -M20%.
    let default = git_status(&r, &["-M"]);
    assert!(!default.contains('R'), "git saw the rename: {default}");
    let low = git_status(&r, &["-M20%"]);
    let score: u32 = low
        .lines()
        .find_map(|l| l.strip_prefix('R'))
        .and_then(|l| l.split('\t').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no rename at -M20%: {low}"));
    assert!((25..50).contains(&score), "score {score}");

    let head = r.rev("HEAD");
    let o = commit(&r, "edit and move", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let expected = format!(
        "warning: 'src/old_name.c' -> 'lib/new_name.c' is a rename ({score}% similar) \
         that git will not detect (below its 50% threshold)"
    );
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("Commit the pure move first"), "{err}");
    assert_ne!(r.rev("HEAD"), head, "the commit should have happened");

    // Same kind of change under simm.strict: refused, HEAD stays.
    r.git_mv("lib/new_name.c", "other/third_name.c");
    let current: Vec<String> = lossy(&edited(&base, 60, 3))
        .split_inclusive('\n')
        .map(str::to_owned)
        .collect();
    r.write("other/third_name.c", &edited(&current, 60, 4));
    r.git(&["add", "-A"]);
    r.git(&["config", "simm.strict", "true"]);
    let head = r.rev("HEAD");
    let o = commit(&r, "refused", &path_with_simm());
    assert!(!o.status.success(), "strict commit went through");
    let err = stderr(&o);
    assert!(
        err.contains("'lib/new_name.c' -> 'other/third_name.c'"),
        "{err}"
    );
    assert!(err.contains("git commit --no-verify"), "{err}");
    assert_eq!(r.rev("HEAD"), head, "HEAD moved");

    // --no-strict on the command line wins over the config.
    let o = r.simm(&["check", "--staged", "--no-strict"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A value git would not take for a boolean stops the check, as git
    // stops on one, rather than turning strictness off; a flag still
    // decides without reading it.
    r.git(&["config", "simm.strict", "notabool"]);
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).contains("simm.strict"), "{}", stderr(&o));
    let o = r.simm(&["check", "--staged", "--no-strict"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    r.git(&["config", "simm.strict", "true"]);
    // A threshold above the pair's score silences it (flag beats default).
    let o = r.simm(&["check", "--staged", "--rename-threshold", "60"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "");
    // simm.ignore drops findings naming an ignored path.
    r.git(&["config", "--add", "simm.ignore", "*.md"]);
    r.git(&["config", "--add", "simm.ignore", "other/"]);
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// `git simm check --staged` in `r`, killed and failed after `secs`
/// seconds.
fn check_within(r: &Repo, secs: u64) -> Output {
    let mut child = util::simm_command()
        .current_dir(&r.path)
        .args(["check", "--staged"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run git-simm");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("check --staged took over {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// simm.ignore patterns are .gitignore patterns, matched by git's
/// wildmatch. Regression: the hand-written glob it replaced was
/// exponential in the stars of a pattern (`*a*a*a*a*b` against a long
/// name of `a`s took a minute, eight stars hours).
#[test]
fn simm_ignore_is_gitignore_and_quick_with_many_stars() {
    let r = Repo::new();
    let base = text(11, 200);
    r.write("src/old_name.c", &join(&base));
    r.commit_all("base");
    let long = format!("{}/{}.c", "a".repeat(60), "a".repeat(200));
    r.git_mv("src/old_name.c", &long);
    r.write(long.as_str(), &edited(&base, 60, 3));
    r.git(&["add", "-A"]);
    let warned = |o: &Output| stderr(o).contains("that git will not detect");

    r.git(&["config", "--add", "simm.ignore", "*a*a*a*a*a*a*a*a*b"]);
    let o = check_within(&r, 10);
    assert!(o.status.success() && warned(&o), "{}", stderr(&o));
    // A name at any depth; a later `!` pattern takes it back.
    r.git(&["config", "--add", "simm.ignore", "*.c"]);
    let o = check_within(&r, 10);
    assert_eq!(stderr(&o), "");
    r.git(&["config", "--add", "simm.ignore", "!*.c"]);
    let o = check_within(&r, 10);
    assert!(warned(&o), "{}", stderr(&o));
    // A trailing slash names directories only (`a*/*.c/` is not the new
    // file); `/a*/` is its top directory, and takes all in it.
    r.git(&["config", "--unset-all", "simm.ignore"]);
    r.git(&["config", "--add", "simm.ignore", "a*/*.c/"]);
    let o = check_within(&r, 10);
    assert!(warned(&o), "{}", stderr(&o));
    r.git(&["config", "--add", "simm.ignore", "/a*/"]);
    let o = check_within(&r, 10);
    assert_eq!(stderr(&o), "");
}

#[test]
fn pure_move_is_silent() {
    let r = hooked_repo();
    r.write("a/file.c", &join(&text(5, 100)));
    r.commit_all("base");
    r.git_mv("a/file.c", "b/moved.c");
    assert!(git_status(&r, &["-M"]).starts_with("R100"));
    let o = r.simm(&["check", "--staged"]);
    assert!(o.status.success());
    assert_eq!(lossy(&o.stdout), "");
    assert_eq!(stderr(&o), "");
    let head = r.rev("HEAD");
    let o = commit(&r, "move", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_ne!(r.rev("HEAD"), head);
    // Nothing staged at all: silent too.
    let o = r.simm(&["check", "--staged"]);
    assert!(o.status.success());
    assert_eq!(stderr(&o), "");
}

#[test]
fn near_copy_of_tracked_file_warns() {
    let r = hooked_repo();
    let base = text(7, 100);
    r.write("orig/util.c", &join(&base));
    r.commit_all("base");
    r.write("dup/helpers.c", &edited(&base, 5, 8));
    r.git(&["add", "-A"]);
    // git agrees it is a copy of an unchanged file, above 90%.
    let harder = git_status(&r, &["-C", "-C"]);
    let line = harder
        .lines()
        .find(|l| l.starts_with('C'))
        .unwrap_or_else(|| panic!("git sees no copy: {harder}"));
    let score: u32 = line[1..4].parse().expect("score");
    assert!(score >= 90, "{line}");
    let o = commit(&r, "copy", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: 'dup/helpers.c' is a {score}% copy of 'orig/util.c': probable copy-paste duplication."
        )),
        "{err}"
    );
    // A new unrelated file is not a copy.
    r.write("fresh.c", &join(&text(9, 100)));
    r.git(&["add", "-A"]);
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(stderr(&o), "");
}

#[test]
fn renames_lost_to_the_rename_limit_are_reported() {
    let r = hooked_repo();
    let mut bases = Vec::new();
    for i in 0..3u64 {
        let base = text(20 + i, 100);
        r.write(format!("old/a{i}.txt"), &join(&base));
        bases.push(base);
    }
    r.commit_all("base");
    for (i, base) in bases.iter().enumerate() {
        r.git_mv(&format!("old/a{i}.txt"), &format!("new/b{i}.txt"));
        r.write(format!("new/b{i}.txt"), &edited(base, 30, 30 + i as u64));
    }
    r.git(&["add", "-A"]);
    r.git(&["config", "diff.renameLimit", "2"]);
    // git: no renames within the limit, three 60-80% renames without it.
    let limited = git_status(&r, &["-M"]);
    assert!(!limited.contains('R'), "{limited}");
    let unlimited = git_status(&r, &["-M", "-l0"]);
    let scores: Vec<u32> = unlimited
        .lines()
        .filter_map(|l| l.strip_prefix('R'))
        .filter_map(|l| l[..3].parse().ok())
        .collect();
    assert_eq!(scores.len(), 3, "{unlimited}");
    assert!(scores.iter().all(|s| (60..=80).contains(s)), "{scores:?}");

    let o = commit(&r, "moves", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    for i in 0..3 {
        let needle = format!("'old/a{i}.txt' -> 'new/b{i}.txt' is a rename");
        let line = err
            .lines()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("{needle} missing: {err}"));
        assert!(
            line.contains("diff.renameLimit=2; git would need 3"),
            "{line}"
        );
    }
    // With git's limit raised, git finds them, and so the check is silent.
    r.git(&["reset", "-q", "--soft", "HEAD~1"]);
    r.git(&["config", "diff.renameLimit", "10"]);
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(stderr(&o), "");
}

#[test]
fn install_hook_honours_hooks_path_and_refuses_to_overwrite() {
    let r = Repo::new();
    r.git(&["config", "core.hooksPath", "my hooks"]);
    let hook: PathBuf = r.path.join("my hooks/pre-commit");
    let o = r.simm(&["install-hook"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let installed = std::fs::read(&hook).expect("hook installed in core.hooksPath");
    assert_eq!(installed, util::shipped_hook());
    assert!(!r.path.join(".git/hooks/pre-commit").exists());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&hook).expect("stat").permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "not executable: {mode:o}");
    }
    // git really runs it from there: a heavily edited rename warns.
    let base = text(40, 100);
    r.write("x.c", &join(&base));
    r.commit_all("base");
    r.git_mv("x.c", "y.c");
    r.write("y.c", &edited(&base, 60, 41));
    r.git(&["add", "-A"]);
    let o = commit(&r, "m", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'x.c' -> 'y.c' is a rename"),
        "{}",
        stderr(&o)
    );
    // Installing again over our own hook is fine.
    let o = r.simm(&["install-hook"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A different hook is kept unless --force.
    std::fs::write(&hook, "#!/bin/sh\necho mine\n").expect("write");
    let o = r.simm(&["install-hook"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&hook).expect("read"),
        b"#!/bin/sh\necho mine\n"
    );
    // --force keeps the hook it replaces, and says where.
    let o = r.simm(&["install-hook", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&hook).expect("read"), util::shipped_hook());
    let backup = r.path.join("my hooks/pre-commit.simm-backup");
    assert_eq!(
        std::fs::read(&backup).expect("backup kept"),
        b"#!/bin/sh\necho mine\n"
    );
    assert!(
        util::stdout(&o).contains(&format!(
            "kept the previous pre-commit hook as {}",
            backup.display()
        )),
        "{}",
        util::stdout(&o)
    );
    // A second, different hook forced over does not clobber the first
    // backup.
    std::fs::write(&hook, "#!/bin/sh\necho other\n").expect("write");
    let o = r.simm(&["install-hook", "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&backup).expect("backup kept"),
        b"#!/bin/sh\necho mine\n"
    );
    assert_eq!(
        std::fs::read(r.path.join("my hooks/pre-commit.simm-backup.1")).expect("second backup"),
        b"#!/bin/sh\necho other\n"
    );
}

#[test]
fn hook_without_git_simm_on_path_says_so_and_commits() {
    let r = hooked_repo();
    let base = text(50, 100);
    r.write("x.c", &join(&base));
    r.commit_all("base");
    r.git_mv("x.c", "y.c");
    r.write("y.c", &edited(&base, 60, 51));
    r.git(&["add", "-A"]);
    let head = r.rev("HEAD");
    let o = commit(&r, "m", &path_without_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "git-simm not installed; skipping similarity checks\n"
    );
    assert_ne!(r.rev("HEAD"), head);
}

#[test]
fn awkward_path_names_work() {
    let r = hooked_repo();
    let base = text(60, 100);
    r.write("plain.txt", &join(&base));
    r.commit_all("base");
    std::fs::create_dir_all(r.path.join("dir with space")).expect("mkdir");
    r.git(&["mv", "plain.txt", "dir with space/new\nline.txt"]);
    r.write("dir with space/new\nline.txt", &edited(&base, 60, 61));
    r.git(&["add", "-A"]);
    assert!(!git_status(&r, &["-M"]).contains('R'));
    let head = r.rev("HEAD");
    let o = commit(&r, "odd", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("'plain.txt' -> \"dir with space/new\\nline.txt\" is a rename"),
        "{err}"
    );
    assert_ne!(r.rev("HEAD"), head);
}

/// The copy search looks only at the unchanged files that can matter, but
/// which of two equally similar sources git names depends on files that
/// cannot: git fills a destination's four candidate slots with the first
/// sources it meets, hopeless ones included, and the slot order breaks the
/// tie. Here three small files sort first; without them git (and the
/// check) would name `b/orig.c`, with them `c/other.c`.
#[test]
fn copy_source_ties_break_as_git_does() {
    let base = text(21, 120);
    for fillers in [0, 3] {
        let r = Repo::new();
        for k in 0..fillers {
            r.write(format!("a{k}.txt"), format!("small file {k}\n").as_bytes());
        }
        r.write("b/orig.c", &join(&base));
        r.write("c/other.c", &join(&base));
        r.commit_all("base");
        r.write("d/new.c", &edited(&base, 2, 5));
        r.git(&["add", "-A"]);
        let git = git_status(&r, &["-C", "-C"]);
        let (score, source) = git
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f.len() == 3 && f[0].starts_with('C') && f[2] == "d/new.c")
                    .then(|| (f[0][1..].to_owned(), f[1].to_owned()))
            })
            .unwrap_or_else(|| panic!("git sees no copy: {git}"));
        let expected = if fillers == 0 {
            "b/orig.c"
        } else {
            "c/other.c"
        };
        assert_eq!(
            source, expected,
            "the fixture no longer shows the tie: {git}"
        );
        let o = r.simm(&["check", "--staged"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "warning: 'd/new.c' is a {}% copy of '{source}': probable copy-paste duplication.\n\
                 git-simm: this commit adds 1 near-copy of a tracked file.\n",
                score.trim_start_matches('0')
            )
        );
    }
}

/// The check reads HEAD's tree only where the index's cache-tree does not
/// vouch for it, and takes the unchanged directories from the index. What
/// it finds must not depend on the state git left the cache-tree in:
/// partly invalidated (as `git add` leaves it), valid for the new tree (as
/// `git commit` leaves it for the hook) or absent (an index written by
/// plumbing), with git's own diff agreeing on what there is to find.
#[test]
fn findings_do_not_depend_on_the_cache_tree() {
    let r = Repo::new();
    let base = text(70, 100);
    let moved = text(71, 100);
    r.write("src/util.c", &join(&base));
    r.write("docs/guide.txt", &join(&moved));
    for d in 0..6u64 {
        r.write(format!("lib{d}/sub/f.c"), &join(&text(80 + d, 60)));
        r.write(format!("lib{d}/g.c"), &join(&text(90 + d, 60)));
    }
    r.commit_all("base");
    // A near-copy added deep in one directory, a heavily edited move into
    // another; the other directories untouched.
    r.write("lib0/sub/deeper/copy.c", &edited(&base, 3, 72));
    r.git_mv("docs/guide.txt", "lib1/manual.txt");
    r.write("lib1/manual.txt", &edited(&moved, 60, 73));
    // Named paths: `git add -A` would also re-add every racily clean file
    // (all of them, this soon after the commit) and invalidate everything.
    r.git(&["add", "lib0/sub/deeper/copy.c", "lib1/manual.txt"]);
    let copies = git_status(&r, &["-C", "-C"]);
    assert!(
        copies
            .lines()
            .any(|l| l.starts_with('C') && l.ends_with("src/util.c\tlib0/sub/deeper/copy.c")),
        "{copies}"
    );
    assert!(!git_status(&r, &["-M"]).contains('R'));
    assert!(git_status(&r, &["-M25%"]).contains("R"));

    let findings = |what: &str| {
        let o = r.simm(&["check", "--staged"]);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        stderr(&o)
    };
    // `git add` invalidated the root and the directories it staged into;
    // the others are still valid.
    let tree = cache_tree(&r.path).expect("git add keeps a cache-tree");
    assert!(tree.num_entries.is_none());
    let valid = |name: &str| {
        tree.children
            .iter()
            .any(|c| c.name.as_slice() == name.as_bytes() && c.num_entries.is_some())
    };
    assert!(valid("lib2") && valid("src") && !valid("lib0") && !valid("lib1"));
    let partly = findings("partly invalidated");
    assert!(
        partly.contains("'docs/guide.txt' -> 'lib1/manual.txt' is a rename"),
        "{partly}"
    );
    assert!(
        partly.contains("'lib0/sub/deeper/copy.c' is a 9"),
        "{partly}"
    );
    assert!(partly.contains("copy of 'src/util.c'"), "{partly}");

    r.git(&["write-tree"]);
    assert!(cache_tree(&r.path).is_some_and(|t| t.num_entries.is_some()));
    assert_eq!(findings("valid"), partly);

    drop_cache_tree(&r.path);
    assert_eq!(findings("no cache-tree"), partly);
}

/// A staged split (a real source file cut into three parts) and a staged
/// merge (two real files joined) are each warned about, naming every
/// file; git itself sees only deletions and additions (or one rename).
#[test]
fn staged_split_and_merge_warn() {
    let r = hooked_repo();
    let whole = util::corpus_text("rust/serde_json-1.0.133/src/value/ser.rs");
    let a = util::corpus_text("rust/toml-0.8.19/src/macros.rs");
    let b = util::corpus_text("rust/tokio-1.41.1/src/sync/batch_semaphore.rs");
    r.write("src/ser.rs", &whole);
    r.write("src/macros.rs", &a);
    r.write("src/semaphore.rs", &b);
    r.commit_all("base");
    let lines: Vec<&[u8]> = whole.split_inclusive(|&c| c == b'\n').collect();
    let third = lines.len() / 3;
    r.remove("src/ser.rs");
    r.write("src/ser/map.rs", &lines[..third].concat());
    r.write("src/ser/seq.rs", &lines[third..2 * third].concat());
    r.write("src/ser/value.rs", &lines[2 * third..].concat());
    r.remove("src/macros.rs");
    r.remove("src/semaphore.rs");
    r.write("src/joined.rs", &[a, b].concat());
    r.git(&["add", "-A"]);
    let status = git_status(&r, &["-M"]);
    assert!(status.contains("D\tsrc/ser.rs"), "{status}");

    let o = r.simm(&["check", "--staged"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // The lost rename of the source to its largest part is the split.
    assert!(!err.contains("is a rename"), "{err}");
    let split = err
        .lines()
        .find(|l| l.starts_with("warning: 'src/ser.rs' was split into"))
        .unwrap_or_else(|| panic!("no split warning: {err}"));
    for part in ["src/ser/map.rs", "src/ser/seq.rs", "src/ser/value.rs"] {
        assert!(split.contains(&format!("'{part}'")), "{split}");
    }
    let merge = err
        .lines()
        .find(|l| l.starts_with("warning: 'src/joined.rs' is made of"))
        .unwrap_or_else(|| panic!("no merge warning: {err}"));
    assert!(merge.contains("'src/macros.rs'") && merge.contains("'src/semaphore.rs'"));
    // --strict refuses, as for any warning.
    let o = r.simm(&["check", "--staged", "--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // simm.ignore silences them like any finding.
    r.git(&["config", "--add", "simm.ignore", "src/ser/*"]);
    r.git(&["config", "--add", "simm.ignore", "src/joined.rs"]);
    let o = r.simm(&["check", "--staged"]);
    assert!(
        !stderr(&o).contains("split") && !stderr(&o).contains("made of"),
        "{}",
        stderr(&o)
    );
}

/// `n` distinct real texts of the pinned corpus, 1 to 16 KiB.
fn corpus_texts(n: usize) -> Vec<Vec<u8>> {
    let mut seen = std::collections::HashSet::new();
    let texts: Vec<Vec<u8>> = util::corpus_files()
        .iter()
        .filter(|p| util::wanted(p))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (1024..=16384).contains(&d.len()) && util::is_text(d))
        .filter(|d| seen.insert(d.clone()))
        .take(n)
        .collect();
    assert_eq!(texts.len(), n, "the corpus has too few texts");
    texts
}

/// `text` with three of every five lines replaced: git scores it 25-50%
/// against the original, a rename only at a low threshold.
fn rewritten(text: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % 5 < 3 {
            out.extend_from_slice(&rng.fresh_line());
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// One directory of 1,500 real files moved to another, a third of them
/// rewritten on the way (git's defaults see those as deletions and
/// additions): the hook says so in one warning with a few examples and a
/// summary, on one screen; `-v` lists every file, `--json` keeps every
/// file, and the files named are exactly those git's own diff loses.
#[test]
fn a_large_move_is_one_warning_on_one_screen() {
    let r = hooked_repo();
    let texts = corpus_texts(1500);
    for (i, t) in texts.iter().enumerate() {
        r.write(format!("src/m{:02}/f{i:04}.txt", i % 20), t);
    }
    r.commit_all("base");
    r.git(&["mv", "src", "lib"]);
    for (i, t) in texts.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        r.write(
            format!("lib/m{:02}/f{i:04}.txt", i % 20),
            &rewritten(t, i as u64),
        );
    }
    r.git(&["add", "-A"]);

    // What git's own diff will lose: the deletions it does not pair that
    // git pairs at -M25% (the check's threshold), every one under 50%.
    let git = git_status(&r, &["-M"]);
    let deleted: std::collections::HashSet<&str> =
        git.lines().filter_map(|l| l.strip_prefix("D\t")).collect();
    let low = git_status(&r, &["-M25%", "-l0"]);
    let mut lost: Vec<String> = low
        .lines()
        .filter(|l| l.starts_with('R'))
        .filter(|l| deleted.contains(l.split('\t').nth(1).unwrap()))
        .map(|l| {
            assert!(l[1..4].parse::<u32>().unwrap() < 50, "{l}");
            l.split('\t').nth(1).unwrap().to_owned()
        })
        .collect();
    lost.sort();
    assert!(lost.len() > 400, "git loses only {} renames", lost.len());

    let json = r.simm(&["check", "--staged", "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(doc["version"], 1);
    let findings = doc["findings"].as_array().unwrap();
    let mut old: Vec<String> = findings
        .iter()
        .map(|f| {
            assert_eq!(f["kind"], "lost-rename", "{f}");
            assert_eq!(f["reason"], "below-threshold", "{f}");
            assert_eq!(f["move"], 0, "{f}");
            f["old"][0]["path"].as_str().unwrap().to_owned()
        })
        .collect();
    old.sort();
    assert_eq!(old, lost);
    assert_eq!(
        doc["moves"].as_array().unwrap().len(),
        1,
        "{}",
        doc["moves"]
    );
    assert_eq!(doc["moves"][0]["from"]["path"], "src");
    assert_eq!(doc["moves"][0]["to"]["path"], "lib");
    assert_eq!(doc["moves"][0]["files"], lost.len());
    assert_eq!(doc["summary"]["lost_renames"], lost.len());
    assert_eq!(doc["summary"]["lost_history"], lost.len());

    let o = commit(&r, "move src to lib", &path_with_simm());
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // One screen: 24 rows of 80 columns.
    let rows: usize = err.lines().map(|l| l.len().div_ceil(80).max(1)).sum();
    assert!(
        rows <= 24,
        "{} lines, {rows} rows:\n{err}",
        err.lines().count()
    );
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "warning: {} files moved from 'src/' to 'lib/' are renames that git will not \
             detect (below its 50% threshold)",
            lost.len()
        )),
        "{err}"
    );
    assert!(
        lines[1..4].iter().all(|l| l.starts_with("  'src/")),
        "{err}"
    );
    assert_eq!(
        lines[4],
        format!(
            "  ... and {} more ('git simm check --staged -v' lists them)",
            lost.len() - 3
        )
    );
    assert_eq!(
        lines.last().copied(),
        Some(&*format!(
            "git-simm: this commit would lose the history of {n} files ({n} renames git will not detect).",
            n = lost.len()
        )),
        "{err}"
    );

    // -v lists every file, under the same warning.
    r.git(&["reset", "-q", "--soft", "HEAD~1"]);
    let o = r.simm(&["check", "--staged", "-v"]);
    let verbose = stderr(&o);
    let mut listed: Vec<String> = verbose
        .lines()
        .filter_map(|l| l.strip_prefix("  '"))
        .map(|l| l.split('\'').next().unwrap().to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, lost);
}
