//! git's ownership rule (CVE-2022-24765) with a real second user: a
//! repository another user owns is refused as git refuses it, in git's
//! words, before any of its configured programs can run or any store file
//! is written, and `safe.directory` lets it through exactly where git
//! does. git itself (`git rev-parse --git-dir`, run by the same user with
//! the same environment) is the oracle of every decision and message.
//!
//! The tests run as root (they create the user with `useradd` and hand
//! repositories over with `chown`); elsewhere they say why they skip.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{git_command, git_env, lossy};

/// The second user's name; created once, kept (a system account without
/// a home or a shell).
const USER: &str = "git-simm-test";

/// The second user's uid and gid, or why there is none.
fn second_user() -> Result<(u32, u32), String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err("not root, cannot create a second user".into());
    }
    let id = |flag: &str| -> Option<u32> {
        let o = Command::new("id").args([flag, USER]).output().ok()?;
        String::from_utf8(o.stdout).ok()?.trim().parse().ok()
    };
    if id("-u").is_none() {
        // Two tests may race to create it; the loser finds it made.
        let _ = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                USER,
            ])
            .output();
    }
    match (id("-u"), id("-g")) {
        (Some(u), Some(g)) => Ok((u, g)),
        _ => Err(format!("useradd {USER} failed")),
    }
}

macro_rules! second_user_or_skip {
    () => {
        match second_user() {
            Ok(ids) => ids,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        }
    };
}

/// A directory every user can enter, with a program that leaves a marker
/// file when run: what `core.fsmonitor` and `core.sshCommand` name.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    marker: PathBuf,
    program: PathBuf,
    home: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(tmp.path()).expect("real path");
        chmod(&root, 0o777);
        let marker = root.join("RAN");
        let program = root.join("program");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> '{}'\nexit 1\n",
                marker.display()
            ),
        )
        .expect("write program");
        chmod(&program, 0o755);
        let home = root.join("home");
        std::fs::create_dir(&home).expect("mkdir");
        chmod(&home, 0o777);
        World {
            _tmp: tmp,
            root,
            marker,
            program,
            home,
        }
    }

    /// A repository at `name` with a few commits, whose configuration runs
    /// the marker program wherever git would run one, readable by all.
    fn repo(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        let git = |args: &[&str]| {
            let o = git_command(&dir).args(args).output().expect("git");
            assert!(o.status.success(), "git {args:?}: {}", lossy(&o.stderr));
        };
        git(&["init", "-q"]);
        for (i, text) in ["one\ntwo\nthree\n", "one\ntwo\nthree\nfour\n"]
            .iter()
            .enumerate()
        {
            std::fs::write(dir.join("a.txt"), text.repeat(40)).expect("write");
            std::fs::write(dir.join(format!("b{i}.txt")), text.repeat(30)).expect("write");
            git(&["add", "."]);
            git(&["commit", "-qm", &format!("c{i}")]);
        }
        let program = self.program.display().to_string();
        for key in [
            "core.fsmonitor",
            "core.sshCommand",
            "core.pager",
            "diff.external",
        ] {
            git(&["config", key, &program]);
        }
        git(&[
            "config",
            "core.hooksPath",
            &self.root.join("hooks").display().to_string(),
        ]);
        allow_all(&dir);
        dir
    }

    fn ran(&self) -> String {
        std::fs::read_to_string(&self.marker).unwrap_or_default()
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Readable (and directories enterable) by every user.
fn allow_all(dir: &Path) {
    let o = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir)
        .output()
        .expect("chmod");
    assert!(o.status.success());
}

fn chown(path: &Path, (uid, gid): (u32, u32)) {
    let o = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .output()
        .expect("chown");
    assert!(o.status.success(), "{}", lossy(&o.stderr));
}

/// Who runs a command, and with what on top of the pinned environment.
#[derive(Clone, Default)]
struct As {
    user: Option<(u32, u32)>,
    env: Vec<(String, String)>,
}

impl As {
    fn root() -> As {
        As::default()
    }

    fn user(ids: (u32, u32)) -> As {
        As {
            user: Some(ids),
            env: Vec::new(),
        }
    }

    fn with(mut self, key: &str, value: &str) -> As {
        self.env.push((key.into(), value.into()));
        self
    }

    /// `program args...` in `dir` as this user, `HOME` in `world`.
    fn command(&self, world: &World, dir: &Path, program: &str) -> Command {
        let mut cmd = match self.user {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg(program);
                c
            }
            None => Command::new(program),
        };
        git_env(&mut cmd).current_dir(dir).env("HOME", &world.home);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    fn git(&self, world: &World, dir: &Path, args: &[&str]) -> Output {
        self.command(world, dir, "git")
            .args(args)
            .output()
            .expect("run git")
    }

    fn simm(&self, world: &World, dir: &Path, args: &[&str]) -> Output {
        self.command(world, dir, env!("CARGO_BIN_EXE_git-simm"))
            .args(args)
            .output()
            .expect("run git-simm")
    }
}

/// git's verdict in `dir` for `who`: `Ok` when it uses the repository,
/// `Err(stderr)` with its refusal (exit 128) otherwise.
fn git_verdict(world: &World, who: &As, dir: &Path) -> Result<(), String> {
    let o = who.git(world, dir, &["rev-parse", "--git-dir"]);
    match o.status.code() {
        Some(0) => Ok(()),
        Some(128) => Err(lossy(&o.stderr)),
        other => panic!("git rev-parse: {other:?}: {}", lossy(&o.stderr)),
    }
}

/// Assert that git-simm's `args` in `dir` decide as git does: refused with
/// git's message and exit 128, or let through (and then not refused for
/// ownership, whatever else happens).
fn assert_decides_as_git(world: &World, who: &As, dir: &Path, args: &[&str], case: &str) {
    let git = git_verdict(world, who, dir);
    let o = who.simm(world, dir, args);
    let stderr = lossy(&o.stderr);
    match git {
        Err(message) => {
            assert_eq!(o.status.code(), Some(128), "{case}: {args:?}: {stderr}");
            assert_eq!(stderr, message, "{case}: {args:?}");
        }
        Ok(()) => {
            assert!(
                !stderr.contains("dubious ownership") && !stderr.contains("bare repository"),
                "{case}: git uses the repository, git-simm refused: {stderr}"
            );
        }
    }
}

/// Every command that reads a repository, in a repository owned by the
/// other user and run by root: refused as git refuses, none of the
/// repository's programs run, nothing written into it. Then the same
/// repository owned by root and run by the other user.
#[test]
fn a_repository_of_another_user_is_refused_before_anything_runs() {
    let other = second_user_or_skip!();
    let world = World::new();
    let theirs = world.repo("theirs");
    // The partial clone whose promisor remote is reached over ssh.
    let partial = partial_clone(&world, "partial");
    // A plain directory to compare with (`origin`), and a query file.
    let mine = world.root.join("mine");
    std::fs::create_dir(&mine).expect("mkdir");
    std::fs::write(mine.join("a.txt"), "one\ntwo\nthree\n".repeat(40)).expect("write");
    allow_all(&mine);

    let commands: Vec<Vec<String>> = [
        "fingerprint HEAD",
        "fingerprint .",
        "fingerprint --all",
        "similar a.txt HEAD",
        "groups",
        "renames HEAD~ HEAD",
        "renames",
        "check --staged",
        "pack-order",
        "repack",
        "repack --bases=git",
        #[cfg(feature = "export")]
        "export -o out.parquet",
        "gc",
        "install-hook",
    ]
    .iter()
    .map(|c| c.split(' ').map(str::to_owned).collect())
    .collect();

    for (owner, runner, label) in [
        (other, As::root(), "root in the other user's repository"),
        (
            (0, 0),
            As::user(other),
            "the other user in root's repository",
        ),
    ] {
        for dir in [&theirs, &partial] {
            chown(dir, owner);
        }
        for args in &commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            for dir in [theirs.clone(), theirs.join(".git")] {
                let git = git_verdict(&world, &runner, &dir);
                assert!(git.is_err(), "{label}: git uses {}", dir.display());
                assert_decides_as_git(&world, &runner, &dir, &args, label);
            }
        }
        // `origin --in` names the other repository; run from a plain
        // directory, and through a partial clone whose fetch would run
        // `core.sshCommand`.
        for upstream in [&theirs, &partial] {
            let o = runner.simm(
                &world,
                &mine,
                &["origin", ".", "--in", &upstream.display().to_string()],
            );
            let git = git_verdict(&world, &runner, upstream).expect_err("git refuses");
            assert_eq!(o.status.code(), Some(128), "{label}: {}", lossy(&o.stderr));
            assert_eq!(lossy(&o.stderr), git, "{label}: origin --in");
        }
        assert_eq!(world.ran(), "", "{label}: a program of the repository ran");
        for dir in [&theirs, &partial] {
            assert!(
                !dir.join(".git/simm").exists(),
                "{label}: a store was written"
            );
            assert!(
                !dir.join("out.parquet").exists(),
                "{label}: an export was written"
            );
            assert!(!dir.join(".git/simm-repack.lock").exists());
        }
        assert!(
            !world.root.join("hooks").exists(),
            "{label}: a hook was installed"
        );
    }

    // Allowed, the same commands do run git there, programs included: the
    // marker proves the refusal above is what kept them from running.
    chown(&theirs, (0, 0));
    let o = As::root().simm(&world, &theirs, &["pack-order"]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    let o = As::root().simm(
        &world,
        &mine,
        &[
            "origin",
            ".",
            "--in",
            &partial.display().to_string(),
            "--no-cache",
        ],
    );
    let _ = o;
    assert_ne!(
        world.ran(),
        "",
        "the repository's own programs never ran when allowed"
    );
}

/// A partial clone (blobs left out) whose promisor remote is an ssh URL:
/// reading a missing blob runs `core.sshCommand`.
fn partial_clone(world: &World, name: &str) -> PathBuf {
    let server = world.repo(&format!("{name}-server"));
    let dir = world.root.join(name);
    let o = git_command(&world.root)
        .args(["clone", "-q", "--no-checkout", "--filter=blob:none"])
        .arg(format!("file://{}", server.display()))
        .arg(&dir)
        .output()
        .expect("git clone");
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    let git = |args: &[&str]| {
        let o = git_command(&dir).args(args).output().expect("git");
        assert!(o.status.success(), "git {args:?}: {}", lossy(&o.stderr));
    };
    git(&[
        "config",
        "remote.origin.url",
        "ssh://example.invalid/repo.git",
    ]);
    let program = world.program.display().to_string();
    git(&["config", "core.sshCommand", &program]);
    git(&["config", "core.fsmonitor", &program]);
    allow_all(&dir);
    dir
}

/// `safe.directory` as git reads it: system, global and command-line
/// configuration only, `*`, paths, `/*`, `.`, an empty value that
/// forgets; `SUDO_UID` for root; never the repository's own config. Each
/// case is decided by git and by git-simm, which must agree.
#[test]
fn safe_directory_lets_through_exactly_what_git_does() {
    let other = second_user_or_skip!();
    let world = World::new();
    let theirs = world.repo("theirs");
    let sub = theirs.join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    chown(&theirs, other);
    let path = theirs.display().to_string();
    let parent = world.root.display().to_string();
    let global = world.root.join("global-config");
    let (with_slash, parent_star, own_star) = (
        format!("{path}/"),
        format!("{parent}/*"),
        format!("{path}/*"),
    );
    let cases: Vec<(&str, Vec<&str>, As)> = vec![
        ("nothing", vec![], As::root()),
        ("*", vec!["*"], As::root()),
        ("the path", vec![&path], As::root()),
        ("the path with a slash", vec![&with_slash], As::root()),
        ("its parent's /*", vec![&parent_star], As::root()),
        ("its own /*", vec![&own_star], As::root()),
        ("* then empty", vec!["*", ""], As::root()),
        ("empty then the path", vec!["", &path], As::root()),
        ("relative", vec!["theirs"], As::root()),
        (".", vec!["."], As::root()),
        (
            "a path that does not exist",
            vec!["/nonexistent/x"],
            As::root(),
        ),
        (
            "SUDO_UID",
            vec![],
            As::root().with("SUDO_UID", &other.0.to_string()),
        ),
        (
            "SUDO_UID of someone else",
            vec![],
            As::root().with("SUDO_UID", "4242"),
        ),
    ];
    for (case, values, who) in cases {
        let text: String = values
            .iter()
            .map(|v| format!("[safe]\n\tdirectory = {v}\n"))
            .collect();
        std::fs::write(&global, text).expect("write global config");
        let who = who.with("GIT_CONFIG_GLOBAL", &global.display().to_string());
        for dir in [&theirs, &sub] {
            assert_decides_as_git(
                &world,
                &who,
                dir,
                &["fingerprint", "--no-cache", "HEAD"],
                case,
            );
        }
    }
    std::fs::write(&global, "").expect("write");
    let global_env = global.display().to_string();
    // Command-line configuration: `git -c` (GIT_CONFIG_PARAMETERS, which
    // git hands to git-simm) and GIT_CONFIG_COUNT; each must allow.
    let params = format!("'safe.directory'='{path}'");
    let count = As::root()
        .with("GIT_CONFIG_GLOBAL", &global_env)
        .with("GIT_CONFIG_COUNT", "4")
        .with("GIT_CONFIG_KEY_3", "safe.directory")
        .with("GIT_CONFIG_VALUE_3", &path);
    let parameters = As::root()
        .with("GIT_CONFIG_GLOBAL", &global_env)
        .with("GIT_CONFIG_PARAMETERS", &params);
    for (case, who) in [
        ("GIT_CONFIG_COUNT", count),
        ("GIT_CONFIG_PARAMETERS", parameters),
    ] {
        assert!(git_verdict(&world, &who, &theirs).is_ok(), "{case}");
        let o = who.simm(&world, &theirs, &["fingerprint", "--no-cache", "HEAD"]);
        assert!(o.status.success(), "{case}: {}", lossy(&o.stderr));
    }
    // The repository's own configuration cannot vouch for itself.
    let o = Command::new("git")
        .args(["config", "--file"])
        .arg(theirs.join(".git/config"))
        .args(["safe.directory", "*"])
        .output()
        .expect("git config");
    assert!(o.status.success());
    let who = As::root().with("GIT_CONFIG_GLOBAL", &global_env);
    assert!(git_verdict(&world, &who, &theirs).is_err());
    assert_decides_as_git(
        &world,
        &who,
        &theirs,
        &["fingerprint", "HEAD"],
        "repository config",
    );
    // Through `git simm`, as users run it: `git -c safe.directory=...`.
    let o = who
        .command(&world, &theirs, "git")
        .env("PATH", crate::util::path_with_simm())
        .args([
            "-c",
            &format!("safe.directory={path}"),
            "simm",
            "fingerprint",
            "--no-cache",
            "HEAD",
        ])
        .output()
        .expect("git simm");
    assert!(
        o.status.success(),
        "git -c safe.directory: {}",
        lossy(&o.stderr)
    );
    assert!(
        !theirs.join(".git/simm").exists(),
        "--no-cache wrote a store"
    );
}

/// Bare repositories, `.git` files and `GIT_DIR`: the directory itself
/// judged for a bare repository, the `.git` file and the git directory it
/// names for a work tree, nothing when `GIT_DIR` names the repository;
/// `safe.bareRepository=explicit` refuses a bare repository found by
/// searching.
#[test]
fn bare_repositories_gitfiles_and_git_dir_as_git_judges_them() {
    let other = second_user_or_skip!();
    let world = World::new();
    let theirs = world.repo("theirs");
    let bare = world.root.join("bare.git");
    let o = git_command(&world.root)
        .args(["clone", "-q", "--bare"])
        .arg(&theirs)
        .arg(&bare)
        .output()
        .expect("clone");
    assert!(o.status.success());
    allow_all(&bare);
    // A work tree of root's whose `.git` file names the other user's git
    // directory.
    let linked = world.root.join("linked");
    std::fs::create_dir(&linked).expect("mkdir");
    std::fs::write(linked.join(".git"), format!("gitdir: {}\n", bare.display())).expect("write");
    allow_all(&linked);
    let root = As::root();
    for (case, dir) in [
        ("bare, root's", &bare),
        ("bare, in refs", &bare.join("refs")),
    ] {
        assert!(git_verdict(&world, &root, dir).is_ok(), "{case}");
        assert_decides_as_git(
            &world,
            &root,
            dir,
            &["fingerprint", "--no-cache", "HEAD"],
            case,
        );
    }
    chown(&bare, other);
    for (case, dir) in [
        ("bare, the other user's", &bare),
        ("bare, from refs", &bare.join("refs")),
        ("a .git file naming it", &linked),
    ] {
        assert!(git_verdict(&world, &root, dir).is_err(), "{case}");
        assert_decides_as_git(
            &world,
            &root,
            dir,
            &["fingerprint", "--no-cache", "HEAD"],
            case,
        );
    }
    // GIT_DIR set: git checks no owner, and neither does git-simm.
    let explicit = As::root().with("GIT_DIR", &bare.display().to_string());
    assert!(git_verdict(&world, &explicit, &world.root).is_ok());
    let o = explicit.simm(&world, &world.root, &["fingerprint", "--no-cache", "HEAD"]);
    assert!(o.status.success(), "GIT_DIR: {}", lossy(&o.stderr));
    // safe.bareRepository=explicit: root's own bare repository refused
    // when found, in git's words; not a `.git` directory.
    chown(&bare, (0, 0));
    let explicit_only = As::root()
        .with("GIT_CONFIG_COUNT", "4")
        .with("GIT_CONFIG_KEY_3", "safe.bareRepository")
        .with("GIT_CONFIG_VALUE_3", "explicit");
    for dir in [&bare, &theirs.join(".git"), &theirs] {
        assert_decides_as_git(
            &world,
            &explicit_only,
            dir,
            &["fingerprint", "--no-cache", "HEAD"],
            "safe.bareRepository=explicit",
        );
    }
    assert!(git_verdict(&world, &explicit_only, &bare).is_err());
    assert_eq!(world.ran(), "");
}
