//! Configuration read from every place git reads it: `git -c`
//! values, which git passes to `git simm` in `GIT_CONFIG_PARAMETERS` (they
//! were ignored: `git -c simm.strict=true simm check --staged` let a copy
//! through), `--config-env`, `include.path`, `includeIf "gitdir:..."` and
//! a linked worktree's `config.worktree`. Each case is checked against
//! what `git config --get` says in the same place.

use crate::util;

use std::path::Path;
use std::process::Output;

use util::{Repo, git_command, path_with_simm, stderr, stdout};

/// A repository whose staged change is a 100% copy of a tracked file:
/// `check --staged` warns, and refuses when strict.
fn copy_staged() -> Repo {
    let r = Repo::new();
    let text: Vec<u8> = (0..200)
        .flat_map(|i| format!("line {i} of a file worth copying\n").into_bytes())
        .collect();
    r.write("a.txt", &text);
    r.commit_all("one");
    r.write("b.txt", &text);
    r.git(&["add", "b.txt"]);
    r
}

/// `git <git_args> simm <args>` in `dir`, git finding the binary under
/// test on PATH, as a user runs it.
fn git_simm(dir: &Path, git_args: &[&str], args: &[&str]) -> Output {
    git_command(dir)
        .env("PATH", path_with_simm())
        .args(git_args)
        .arg("simm")
        .args(args)
        .output()
        .expect("run git simm")
}

/// What `git config --type=bool --get simm.strict` says in `dir` with `git_args`.
fn git_says_strict(dir: &Path, git_args: &[&str]) -> Option<String> {
    let o = git_command(dir)
        .args(git_args)
        .args(["config", "--type=bool", "--get", "simm.strict"])
        .output()
        .expect("git config");
    o.status.success().then(|| stdout(&o).trim().to_owned())
}

/// `check --staged` refuses (1) exactly where git says simm.strict is true,
/// and passes (0) where git says false or nothing.
fn check_agrees_with_git(dir: &Path, git_args: &[&str], strict: bool) {
    let said = git_says_strict(dir, git_args);
    assert_eq!(
        said.as_deref() == Some("true"),
        strict,
        "git {git_args:?} says simm.strict={said:?}"
    );
    let o = git_simm(dir, git_args, &["check", "--staged"]);
    assert!(stderr(&o).contains("100% copy"), "{}", stderr(&o));
    assert_eq!(
        o.status.code(),
        Some(if strict { 1 } else { 0 }),
        "git {git_args:?} simm check --staged: {}",
        stderr(&o)
    );
}

#[test]
fn git_dash_c_sets_strict_and_overrides_the_files() {
    let r = copy_staged();
    check_agrees_with_git(&r.path, &[], false);
    check_agrees_with_git(&r.path, &["-c", "simm.strict=true"], true);
    check_agrees_with_git(&r.path, &["-c", "simm.strict"], true);
    check_agrees_with_git(
        &r.path,
        &["-c", "simm.strict=yes", "-c", "simm.strict=off"],
        false,
    );
    // `-c` comes last, after the repository's file and GIT_CONFIG_COUNT.
    r.git(&["config", "simm.strict", "true"]);
    check_agrees_with_git(&r.path, &[], true);
    check_agrees_with_git(&r.path, &["-c", "simm.strict=false"], false);
    let o = git_command(&r.path)
        .env("PATH", path_with_simm())
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "simm.strict")
        .env("GIT_CONFIG_VALUE_0", "false")
        .args(["-c", "simm.strict=true", "simm", "check", "--staged"])
        .output()
        .expect("git simm");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // --config-env reaches the command the same way.
    let o = git_command(&r.path)
        .env("PATH", path_with_simm())
        .env("SIMM_STRICT", "false")
        .args([
            "--config-env=simm.strict=SIMM_STRICT",
            "simm",
            "check",
            "--staged",
        ])
        .output()
        .expect("git simm");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Multi-valued keys add up across sources, values with quotes, spaces
/// and `!` survive git's quoting, as `git config --get-all` shows them.
#[test]
fn git_dash_c_values_keep_their_text_and_add_to_lists() {
    let r = copy_staged();
    r.git(&["config", "simm.ignore", "nothing/"]);
    let o = git_simm(
        &r.path,
        &["-c", "simm.ignore=b.txt"],
        &["check", "--staged", "--strict"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let o = git_simm(
        &r.path,
        &["-c", "simm.ignore=c.txt"],
        &["check", "--staged", "--strict"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // A file name full of shell quoting, ignored by its exact name.
    let odd = "it's \"odd\" !x.txt";
    let text = std::fs::read(r.path.join("a.txt")).expect("a.txt");
    r.write(odd, &text);
    r.git(&["add", odd]);
    let ignore = format!("simm.ignore={odd}");
    let all = git_command(&r.path)
        .args([
            "-c",
            &ignore,
            "-c",
            "simm.ignore=b.txt",
            "config",
            "--get-all",
            "simm.ignore",
        ])
        .output()
        .expect("git config");
    assert_eq!(stdout(&all), format!("nothing/\n{odd}\nb.txt\n"));
    let o = git_simm(
        &r.path,
        &["-c", &ignore, "-c", "simm.ignore=b.txt"],
        &["check", "--staged", "--strict"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `git -c simm.storeDir=X simm fingerprint --all` fills X, not the
/// default store.
#[test]
fn git_dash_c_store_dir_is_where_fingerprints_go() {
    let r = copy_staged();
    let store = r.path.parent().expect("parent").join("elsewhere");
    let dir = store.to_string_lossy().into_owned();
    let o = git_simm(
        &r.path,
        &["-c", &format!("simm.storeDir={dir}")],
        &["fingerprint", "--all", "--quiet"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tables = std::fs::read_dir(&store).map(|d| d.count()).unwrap_or(0);
    assert!(tables > 0, "nothing in {dir}");
    assert!(!r.store_dir().exists(), "the default store was used");
}

/// A malformed `GIT_CONFIG_PARAMETERS` (git never writes one) is refused
/// with git's own words, not ignored.
#[test]
fn malformed_config_parameters_are_an_error() {
    let r = copy_staged();
    let o = util::simm_command()
        .current_dir(&r.path)
        .env("GIT_CONFIG_PARAMETERS", "simm.strict=true")
        .args(["check", "--staged"])
        .output()
        .expect("run git-simm");
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).contains("bogus format in GIT_CONFIG_PARAMETERS"),
        "{}",
        stderr(&o)
    );
}

/// `include.path` and `includeIf "gitdir:..."` are followed as git follows
/// them: an include for this repository applies, one for another does not.
#[test]
fn includes_and_conditional_includes_are_followed() {
    let r = copy_staged();
    let inc = r.path.parent().expect("parent").join("strict.inc");
    std::fs::write(&inc, "[simm]\n\tstrict = true\n").expect("write include");
    let inc = inc.to_string_lossy().into_owned();

    r.git(&["config", "include.path", &inc]);
    check_agrees_with_git(&r.path, &[], true);
    r.git(&["config", "--unset", "include.path"]);
    check_agrees_with_git(&r.path, &[], false);

    let elsewhere = format!("includeIf.gitdir:{}/other/.path", r.path.display());
    r.git(&["config", &elsewhere, &inc]);
    check_agrees_with_git(&r.path, &[], false);
    let here = format!("includeIf.gitdir:{}/.path", r.path.display());
    r.git(&["config", &here, &inc]);
    check_agrees_with_git(&r.path, &[], true);
    // A later value in the including file still wins.
    r.git(&["config", "simm.strict", "false"]);
    check_agrees_with_git(&r.path, &[], false);
}

/// `-c include.path=...` and `-c includeIf.<condition>.path=...` are
/// followed, as git follows them.
#[test]
fn git_dash_c_includes_are_followed() {
    let r = copy_staged();
    let inc = r.path.parent().expect("parent").join("strict.inc");
    std::fs::write(&inc, "[simm]\n\tstrict = true\n").expect("write include");
    let inc = inc.to_string_lossy().into_owned();
    let git_dir = r.path.join(".git").to_string_lossy().into_owned();
    for (key, strict) in [
        ("include.path".to_owned(), true),
        (format!("includeIf.gitdir:{git_dir}.path"), true),
        (format!("includeIf.gitdir:{git_dir}/other.path"), false),
        ("includeIf.onbranch:main.path".to_owned(), true),
        ("includeIf.onbranch:side.path".to_owned(), false),
    ] {
        let c = format!("{key}={inc}");
        check_agrees_with_git(&r.path, &["-c", &c], strict);
    }
}

/// `includeIf "gitdir:..."` in a linked worktree matches the worktree's
/// own git dir (`.git/worktrees/<name>`), as in git; gix matched other
/// directories (the common `.git` among them), so these patterns are
/// checked in both worktrees against `git config --get`.
#[test]
fn gitdir_includes_match_a_linked_worktree_as_in_git() {
    let r = copy_staged();
    r.git(&["commit", "-q", "-m", "copy"]);
    let wt = r.path.parent().expect("parent").join("wt");
    r.git(&["worktree", "add", "-q", "-b", "side", &wt.to_string_lossy()]);
    let text = std::fs::read(r.path.join("a.txt")).expect("a.txt");
    for dir in [&r.path, &wt] {
        std::fs::write(dir.join("c.txt"), &text).expect("write");
        let o = git_command(dir)
            .args(["add", "c.txt"])
            .output()
            .expect("git add");
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let inc = r.path.parent().expect("parent").join("strict.inc");
    std::fs::write(&inc, "[simm]\n\tstrict = true\n").expect("write include");
    let inc = inc.to_string_lossy().into_owned();
    let common = r.path.join(".git").to_string_lossy().into_owned();
    for pattern in [
        common.clone(),
        format!("{common}/"),
        format!("{common}/worktrees/wt"),
        format!("{common}/worktrees/wt/"),
        format!("{common}/worktrees/"),
        format!("{}/", wt.display()),
    ] {
        let key = format!("includeIf.gitdir:{pattern}.path");
        r.git(&["config", &key, &inc]);
        for dir in [&r.path, &wt] {
            let strict = git_says_strict(dir, &[]).as_deref() == Some("true");
            check_agrees_with_git(dir, &[], strict);
        }
        r.git(&["config", "--unset", &key]);
    }
}

/// With `extensions.worktreeConfig`, a linked worktree's `config.worktree`
/// applies there and only there.
#[test]
fn linked_worktree_reads_its_own_config() {
    let r = copy_staged();
    r.git(&["commit", "-q", "-m", "copy"]);
    let wt = r.path.parent().expect("parent").join("wt");
    r.git(&["worktree", "add", "-q", "-b", "side", &wt.to_string_lossy()]);
    r.git(&["config", "extensions.worktreeConfig", "true"]);
    let git = |dir: &Path, args: &[&str]| {
        let o = git_command(dir).args(args).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    git(&wt, &["config", "--worktree", "simm.strict", "true"]);
    let text = std::fs::read(r.path.join("a.txt")).expect("a.txt");
    for dir in [&r.path, &wt] {
        std::fs::write(dir.join("c.txt"), &text).expect("write");
        git(dir, &["add", "c.txt"]);
    }
    check_agrees_with_git(&wt, &[], true);
    check_agrees_with_git(&r.path, &[], false);
}
