//! Repository formats git-simm must read as git does: reftable
//! reference storage (`git init --ref-format=reftable`), which gix cannot
//! read, and SHA-256 object ids (`git init --object-format=sha256`).
//!
//! Each format is built by the real git with the same content as an
//! ordinary repository (loose refs, SHA-1), and every command must answer
//! exactly as it does there, or as git itself does where git has an
//! equivalent command. Before the fix a reftable repository's `HEAD` read
//! as unborn (every file "added", a strict check letting a copy through),
//! and a SHA-256 one failed every command with "Object format is not
//! enabled in this build".

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use util::{Repo, Rng, git_command, lossy, path_with_simm, simm_command, stderr, stdout};

/// `text` keeping two lines in five: a rename git's 50% misses and
/// git-simm's check reports.
fn heavy_edit(text: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % 5 < 2 {
            out.extend_from_slice(line);
        } else {
            out.extend_from_slice(&rng.fresh_line());
        }
    }
    out
}

/// The same history in any repository: two commits (the second with
/// pure and edited moves, a copy, a deletion, an edit), an annotated tag
/// and a branch; then a staged move with heavy edits and a staged 100%
/// copy (what `check --staged` warns about), and an unstaged edit in the
/// work tree. Dates are pinned, so a SHA-1 repository gets the same ids
/// whatever its reference storage.
fn build_history(r: &Repo) {
    let t = util::texts(17, 10);
    for (i, d) in t.iter().enumerate() {
        r.write(format!("src/f{i}.txt"), d);
    }
    r.write("small.txt", b"tiny\n");
    r.write("empty", b"");
    r.symlink("src/f0.txt", "link");
    r.commit_all("one");
    r.git(&["tag", "-a", "-m", "first", "v1"]);
    r.git_mv("src/f1.txt", "lib/g1.txt");
    r.git_mv("src/f2.txt", "lib/g2.txt");
    r.write("lib/g2.txt", &util::edit(&t[2], 10, 2));
    r.write("lib/copy3.txt", &t[3]);
    r.remove("src/f4.txt");
    r.write("src/f5.txt", &util::edit(&t[5], 8, 5));
    r.commit_all("two");
    r.git(&["branch", "side", "v1"]);
    r.git_mv("src/f6.txt", "moved/h6.txt");
    r.write("moved/h6.txt", &heavy_edit(&t[6], 6));
    r.write("dup7.txt", &t[7]);
    r.git(&["add", "-A"]);
    r.write("src/f8.txt", &util::edit(&t[8], 7, 8));
}

/// Every command against the history of [`build_history`], revisions
/// named every way that involves references: HEAD, branches, a tag,
/// `~`, `:path`, and revisions that do not exist.
const COMMANDS: &[&[&str]] = &[
    &["fingerprint", "HEAD"],
    &["fingerprint", "main"],
    &["fingerprint", "v1"],
    &["fingerprint", "HEAD~1:src", "side:src/f0.txt"],
    &["fingerprint", "nope"],
    &["similar", "src/f5.txt"],
    &["similar", "HEAD:lib/g2.txt", "v1"],
    &["similar", "--json", "src/f3.txt", "side"],
    &["renames", "HEAD~1", "HEAD"],
    &["renames", "v1", "main"],
    &["renames", "-C", "-C", "side", "HEAD"],
    &["renames", "--json", "HEAD~", "HEAD"],
    &["renames", "--cached"],
    &["renames", "--cached", "v1"],
    &["renames", "-C", "-C", "--cached"],
    &["renames"],
    &["renames", "side"],
    &["renames", "nope", "HEAD"],
    &["check", "--staged"],
    &["check", "--staged", "--strict"],
    &["pack-order"],
];

/// What a command printed and how it ended, with the repository's path
/// replaced (install-hook names it) and an error cut after the revision it
/// names: what follows is gix's reason in one repository and git's in the
/// other.
fn outcome(r: &Repo, o: &Output) -> (Option<i32>, String, String) {
    let repo = r.path.to_string_lossy().into_owned();
    let err: Vec<String> = stderr(o)
        .lines()
        .map(|l| match (l.starts_with("fatal: "), l.find("': ")) {
            (true, Some(at)) => l[..=at].to_owned(),
            _ => l.to_owned(),
        })
        .collect();
    (
        o.status.code(),
        stdout(o).replace(&repo, "<repo>"),
        err.join("\n").replace(&repo, "<repo>"),
    )
}

/// Run `args` in both repositories: the same exit status, output and
/// errors. `pack-order` lists objects in the order of git's own walk,
/// which git does not keep stable between two repositories (it varied
/// with the index's timestamps here): there the same lines are compared,
/// and each repository's order is checked against its own walk.
fn same_in_both(files: &Repo, other: &Repo, args: &[&str]) -> Output {
    let a = files.simm(args);
    let b = other.simm(args);
    let (mut left, mut right) = (outcome(files, &a), outcome(other, &b));
    if args == ["pack-order"] {
        for (r, o) in [(files, &mut left), (other, &mut right)] {
            let walk = r.git_str(&[
                "rev-list",
                "--objects",
                "--all",
                "--reflog",
                "--indexed-objects",
            ]);
            let walked: Vec<&str> = walk
                .lines()
                .map(|l| &l[..l.find(' ').unwrap_or(l.len())])
                .collect();
            let listed: Vec<&str> =
                o.1.lines()
                    .map(|l| &l[..l.find(' ').unwrap_or(l.len())])
                    .collect();
            assert_eq!(listed, walked, "pack-order follows git's walk");
            let mut lines: Vec<&str> = o.1.lines().collect();
            lines.sort_unstable();
            o.1 = lines.join("\n");
        }
    }
    assert_eq!(
        left, right,
        "git-simm {args:?}: files (left) and reftable (right) differ"
    );
    b
}

/// The ids of every object in the repository at `dir`, with their types.
fn object_set(dir: &Path) -> Vec<String> {
    let out = succeeded(
        dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ],
    );
    let mut ids: Vec<String> = lossy(&out).lines().map(str::to_owned).collect();
    ids.sort();
    ids
}

fn succeeded(dir: &Path, args: &[&str]) -> Vec<u8> {
    let o = git_command(dir).args(args).output().expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    o.stdout
}

/// `git fsck --full --strict` finds nothing wrong.
fn fsck_clean(dir: &Path) {
    let o = git_command(dir)
        .args(["fsck", "--full", "--strict"])
        .output()
        .expect("fsck");
    assert!(
        o.status.success(),
        "fsck in {}: {}",
        dir.display(),
        stderr(&o)
    );
    assert!(!stderr(&o).contains("error"), "fsck: {}", stderr(&o));
}

/// `git-simm repack` in `r`, with git's delta bases and then with its
/// own (its pack, index and reverse index written by git-simm): git's
/// fsck clean afterwards and the object set unchanged; returns that set.
fn repack_keeps_everything(r: &Repo) -> Vec<String> {
    let before = object_set(&r.path);
    for bases in ["--bases=git", "--bases=simm"] {
        let o = r.simm(&["repack", "--quiet", bases]);
        assert!(o.status.success(), "repack {bases}: {}", stderr(&o));
        assert_eq!(
            object_set(&r.path),
            before,
            "repack {bases} changed the object set"
        );
        fsck_clean(&r.path);
        // git reads the index git-simm wrote (and checks it against the
        // pack's objects).
        let pack_dir = r.path.join(".git/objects/pack");
        let pack_dir = if pack_dir.is_dir() {
            pack_dir
        } else {
            r.path.join("objects/pack")
        };
        for idx in std::fs::read_dir(&pack_dir).expect("pack dir") {
            let idx = idx.expect("entry").path();
            if idx.extension().is_some_and(|x| x == "idx") {
                succeeded(&r.path, &["verify-pack", &idx.to_string_lossy()]);
            }
        }
    }
    before
}

fn reftable() -> Repo {
    let r = Repo::init(&["--ref-format=reftable"]);
    let storage = r.git_str(&["rev-parse", "--show-ref-format"]);
    assert_eq!(storage.trim(), "reftable");
    r
}

/// Every command in a reftable repository answers as in an ordinary one
/// with the same content: HEAD, branches and tags resolve (before, HEAD
/// read as unborn and `renames --cached` listed every file as added), a
/// strict check refuses the staged copy in both, and repack keeps every
/// object.
#[test]
fn reftable_repository_answers_as_a_files_one() {
    let files = Repo::new();
    let other = reftable();
    build_history(&files);
    build_history(&other);
    assert_eq!(files.rev("HEAD"), other.rev("HEAD"), "same history");
    // gix alone sees no HEAD here: the decoy file git leaves for old tools.
    let decoy = std::fs::read_to_string(other.path.join(".git/HEAD")).expect("HEAD");
    assert_eq!(decoy.trim(), "ref: refs/heads/.invalid");

    for args in COMMANDS {
        same_in_both(&files, &other, args);
    }
    // Not every file added: exactly what git sees staged.
    let cached = stdout(&other.simm(&["renames", "--cached"]));
    let git = other.git_str(&[
        "diff",
        "--cached",
        "-M",
        "-l0",
        "--no-rename-empty",
        "--name-status",
    ]);
    assert_eq!(cached, git);
    assert_eq!(cached.lines().count(), 3, "{cached}");
    let o = same_in_both(&files, &other, &["check", "--staged"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("dup7.txt"), "{}", stderr(&o));

    // simm.strict from the repository's configuration.
    for r in [&files, &other] {
        r.git(&["config", "simm.strict", "true"]);
    }
    let o = same_in_both(&files, &other, &["check", "--staged"]);
    assert_eq!(o.status.code(), Some(1), "strict refuses the copy");
    let o = same_in_both(&files, &other, &["check", "--staged", "--no-strict"]);
    assert_eq!(o.status.code(), Some(0));

    let o = same_in_both(&files, &other, &["install-hook"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(other.path.join(".git/hooks/pre-commit")).expect("hook"),
        util::shipped_hook()
    );
    // The hook, run by git's own commit, refuses in both.
    for r in [&files, &other] {
        let o = git_command(&r.path)
            .env("PATH", path_with_simm())
            .args(["commit", "-q", "-m", "three"])
            .output()
            .expect("git commit");
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains("dup7.txt"), "{}", stderr(&o));
    }

    let a = repack_keeps_everything(&files);
    let b = repack_keeps_everything(&other);
    assert_eq!(a, b, "the same objects in both");
    for args in COMMANDS {
        same_in_both(&files, &other, args);
    }
}

/// An unborn branch in a reftable repository is unborn, as in an
/// ordinary one: what is staged is all added, `HEAD` is no revision.
#[test]
fn reftable_unborn_branch_reads_as_unborn() {
    let files = Repo::new();
    let other = reftable();
    let t = util::texts(17, 2);
    for r in [&files, &other] {
        r.write("a.txt", &t[0]);
        r.write("b.txt", &t[0]);
        r.write("c.txt", &t[1]);
        r.git(&["add", "-A"]);
    }
    for args in [
        &["renames", "--cached"][..],
        &["renames", "-C", "-C", "--cached"],
        &["renames"],
        &["check", "--staged"],
        &["check", "--staged", "--strict"],
        &["fingerprint", "HEAD"],
        &["similar", "a.txt"],
        &["pack-order"],
    ] {
        same_in_both(&files, &other, args);
    }
    let o = other.simm(&["renames", "--cached"]);
    assert_eq!(stdout(&o), "A\ta.txt\nA\tb.txt\nA\tc.txt\n");
    let o = other.simm(&["fingerprint", "HEAD"]);
    assert!(stderr(&o).contains("'HEAD'"), "{}", stderr(&o));
}

/// When git itself cannot be run, a reftable repository's revisions
/// cannot be resolved: the error says why, naming reftable, instead of
/// taking HEAD for unborn. Commands that resolve no revision still work.
#[test]
fn reftable_without_git_fails_naming_reftable() {
    let r = reftable();
    build_history(&r);
    let no_git = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        simm_command()
            .current_dir(&r.path)
            .env("PATH", no_git.path())
            .args(args)
            .output()
            .expect("run git-simm")
    };
    for args in [
        &["renames", "--cached"][..],
        &["renames", "HEAD~1", "HEAD"],
        &["check", "--staged"],
        &["fingerprint", "HEAD"],
        &["similar", "src/f3.txt"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", stdout(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        let e = stderr(&o);
        assert!(
            e.contains("reftable") && e.contains("cannot run git"),
            "{args:?}: {e}"
        );
    }
    for args in [&["fingerprint", "--", "src/f3.txt"][..], &["install-hook"]] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}

/// Where git refuses the repository (the extension in a version 0
/// repository, an unknown format), git-simm refuses it too instead of
/// reading the references as files, as gix would.
#[test]
fn ref_storage_git_refuses_is_refused() {
    let r = reftable();
    build_history(&r);
    let config = r.path.join(".git/config");
    let good = std::fs::read_to_string(&config).expect("config");
    for (from, to, says) in [
        (
            "repositoryformatversion = 1",
            "repositoryformatversion = 0",
            "v1-only extension",
        ),
        ("refstorage = reftable", "refstorage = bogus", "'bogus'"),
    ] {
        assert!(good.contains(from), "{good}");
        std::fs::write(&config, good.replace(from, to)).expect("write config");
        assert!(!r.git_output(&["status"]).status.success(), "git refuses");
        let o = r.simm(&["renames", "--cached"]);
        assert_eq!(o.status.code(), Some(128), "{}", stdout(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
}

/// `includeIf "onbranch:..."` depends on the branch, which gix reads from
/// the decoy HEAD of a reftable repository: git-simm then takes git's own
/// reading of the configuration (`-c` values included), so a strict
/// setting included for the checked-out branch applies, one for another
/// branch does not, as `git config --get` says.
#[test]
fn reftable_onbranch_include_applies_to_the_checked_out_branch() {
    let r = reftable();
    build_history(&r);
    let inc = r.path.parent().expect("parent").join("strict.inc");
    std::fs::write(&inc, "[simm]\n\tstrict = true\n").expect("write include");
    let inc = inc.to_string_lossy().into_owned();
    let strict = || r.git_output(&["config", "--get", "simm.strict"]);

    r.git(&["config", "includeIf.onbranch:side.path", &inc]);
    assert!(!strict().status.success(), "git: not on side");
    assert_eq!(r.simm(&["check", "--staged"]).status.code(), Some(0));

    r.git(&["config", "includeIf.onbranch:main.path", &inc]);
    assert_eq!(stdout(&strict()).trim(), "true");
    assert_eq!(r.simm(&["check", "--staged"]).status.code(), Some(1));
    // A later `-c` still wins, as in git.
    let o = git_command(&r.path)
        .env("PATH", path_with_simm())
        .args(["-c", "simm.strict=false", "simm", "check", "--staged"])
        .output()
        .expect("git simm");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A linked worktree of a reftable repository has references of its own
/// (its HEAD): they resolve too.
#[test]
fn reftable_linked_worktree_resolves_its_own_head() {
    let r = reftable();
    build_history(&r);
    let wt = r.path.parent().expect("parent").join("wt");
    r.git(&["worktree", "add", "-q", &wt.to_string_lossy(), "side"]);
    let here = |args: &[&str]| util::simm_in(&wt, args);
    let o = here(&["renames", "--cached"]);
    assert!(
        o.status.success() && stdout(&o).is_empty(),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let o = here(&["renames", "HEAD", "main"]);
    let git = succeeded(
        &wt,
        &[
            "diff",
            "-M",
            "-l0",
            "--no-rename-empty",
            "--name-status",
            "HEAD",
            "main",
        ],
    );
    assert_eq!(stdout(&o), lossy(&git));
    assert!(!stdout(&o).is_empty());
}

/// `git ls-tree -r -l -z <rev>` as (size, path) of every blob and
/// symlink.
fn ls_tree_sizes(r: &Repo, rev: &str) -> Vec<(u64, String)> {
    let out = r.git(&["ls-tree", "-r", "-l", "-z", rev]);
    out.split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let l = lossy(l);
            let (meta, path) = l.split_once('\t')?;
            let fields: Vec<&str> = meta.split_whitespace().collect();
            (fields[1] == "blob").then(|| (fields[3].parse().expect("size"), path.to_owned()))
        })
        .collect()
}

/// `fingerprint -z` output as (fingerprint, size, path).
fn fingerprint_lines(o: &Output) -> Vec<(String, u64, String)> {
    assert!(o.status.success(), "{}", stderr(o));
    o.stdout
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let l = lossy(l);
            let mut f = l.splitn(3, ' ');
            let fp = f.next().expect("fingerprint").to_owned();
            let size = f.next().expect("size").parse().expect("size");
            (fp, size, f.next().expect("path").to_owned())
        })
        .collect()
}

/// In a SHA-256 repository every command works (before, each failed with
/// "Object format is not enabled in this build") and answers as git does:
/// renames as `git diff -M --name-status` in all three modes, the blobs of
/// a tree as `git ls-tree -r -l`, ids in JSON as `git rev-parse`, every
/// blob of the object database; the rest as in a SHA-1 repository with
/// the same content (fingerprints describe content, not ids).
#[test]
fn sha256_repository_answers_as_git_and_as_a_sha1_one() {
    let sha1 = Repo::new();
    let r = Repo::init(&["--object-format=sha256"]);
    build_history(&sha1);
    build_history(&r);
    assert_eq!(r.rev("HEAD").len(), 64);

    let git_diff = ["-M", "-l0", "--no-rename-empty", "--name-status"];
    for (git_args, simm_args) in [
        (
            &["diff", "HEAD~1", "HEAD"][..],
            &["renames", "HEAD~1", "HEAD"][..],
        ),
        (
            &["diff", "-C", "-C", "v1", "HEAD"],
            &["renames", "-C", "-C", "v1", "HEAD"],
        ),
        (&["diff", "--cached"], &["renames", "--cached"]),
        (
            &["diff", "--cached", "-C", "-C"],
            &["renames", "--cached", "-C", "-C"],
        ),
        (&["diff", "HEAD"], &["renames"]),
    ] {
        let mut args = git_args[..1].to_vec();
        args.extend(git_diff);
        args.extend(&git_args[1..]);
        let want = lossy(&r.git(&args));
        let o = r.simm(simm_args);
        assert!(o.status.success(), "{simm_args:?}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            want,
            "git-simm {simm_args:?} against git {args:?}"
        );
        assert!(!want.is_empty());
    }

    let head = fingerprint_lines(&r.simm(&["fingerprint", "-z", "HEAD"]));
    let sizes: Vec<(u64, String)> = head.iter().map(|(_, s, p)| (*s, p.clone())).collect();
    assert_eq!(sizes, ls_tree_sizes(&r, "HEAD"));
    assert_eq!(
        head,
        fingerprint_lines(&sha1.simm(&["fingerprint", "-z", "HEAD"]))
    );

    let json: serde_json::Value =
        serde_json::from_slice(&r.simm(&["renames", "--json", "HEAD~1", "HEAD"]).stdout)
            .expect("JSON");
    let changes = json["changes"].as_array().expect("changes");
    assert!(changes.len() >= 4, "{json}");
    for c in changes {
        for (side, rev) in [("old", "HEAD~1"), ("new", "HEAD")] {
            if let Some(path) = c[side]["path"].as_str() {
                let blob = c[side]["blob"].as_str().expect("blob");
                assert_eq!(blob, r.rev(&format!("{rev}:{path}")), "{c}");
            }
        }
    }

    // Every blob of the object database, by its SHA-256 id.
    let all = r.simm(&["fingerprint", "--all", "-z"]);
    let listed: BTreeSet<String> = fingerprint_lines(&all).into_iter().map(|l| l.2).collect();
    let blobs: BTreeSet<String> = object_set(&r.path)
        .into_iter()
        .filter_map(|l| l.strip_suffix(" blob").map(str::to_owned))
        .collect();
    assert_eq!(listed, blobs);

    for args in [
        &["similar", "src/f5.txt"][..],
        &["similar", "--threshold", "30%", "HEAD:lib/g2.txt", "v1"],
        &["check", "--staged"],
        &["check", "--staged", "--strict"],
        &["fingerprint", "v1", "side:src/f0.txt"],
        &["install-hook"],
    ] {
        let a = sha1.simm(args);
        let b = r.simm(args);
        assert_eq!(outcome(&sha1, &a), outcome(&r, &b), "{args:?}");
    }
    let o = r.simm(&["similar", "--json", "src/f3.txt"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let first = &json["matches"][0];
    assert_eq!(
        first["blob"].as_str().expect("blob"),
        r.rev(&format!("HEAD:{}", first["path"].as_str().expect("path")))
    );

    // pack-order lists what `git repack -a` would pack, by SHA-256 id.
    let order = r.simm(&["pack-order"]);
    assert!(order.status.success(), "{}", stderr(&order));
    let ordered: BTreeSet<String> = stdout(&order)
        .lines()
        .map(|l| l.split(' ').next().expect("id").to_owned())
        .collect();
    let walked: BTreeSet<String> = lossy(&r.git(&[
        "rev-list",
        "--objects",
        "--all",
        "--reflog",
        "--indexed-objects",
    ]))
    .lines()
    .map(|l| l[..64].to_owned())
    .collect();
    assert_eq!(ordered, walked);
    assert!(ordered.iter().all(|id| id.len() == 64));

    repack_keeps_everything(&r);
    let packs = std::fs::read_dir(r.path.join(".git/objects/pack"))
        .expect("pack dir")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
        .count();
    assert_eq!(packs, 1);
    let after = r.simm(&["renames", "HEAD~1", "HEAD"]);
    assert_eq!(
        stdout(&after),
        lossy(&r.git(&[
            "diff",
            "-M",
            "-l0",
            "--no-rename-empty",
            "--name-status",
            "HEAD~1",
            "HEAD"
        ]))
    );
}

/// A path in conflict that HEAD lacks has the null id of the repository's
/// hash in JSON, as `git diff --raw` shows it: 64 zeros under SHA-256
/// (it was a SHA-1 null id, 40 zeros).
#[test]
fn sha256_unmerged_path_has_a_sha256_null_id() {
    let r = Repo::init(&["--object-format=sha256"]);
    r.write("x.txt", b"base\n");
    r.commit_all("base");
    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("x.txt", b"theirs\n");
    r.commit_all("theirs");
    r.git(&["checkout", "-q", "main"]);
    r.git(&["rm", "-q", "x.txt"]);
    r.commit_index("deleted");
    let merge = r.git_output(&["merge", "-q", "other"]);
    assert!(!merge.status.success(), "a modify/delete conflict");
    let null = "0".repeat(64);
    let raw = r.git_str(&["diff", "--cached", "--raw", "--no-abbrev", "HEAD"]);
    assert!(raw.contains(&null), "{raw}");
    let want = r.git_str(&["diff", "--cached", "--name-status", "HEAD"]);
    let o = r.simm(&["renames", "--cached"]);
    assert_eq!(stdout(&o), want);
    assert_eq!(want, "U\tx.txt\n");
    let o = r.simm(&["renames", "--cached", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let change = &json["changes"][0];
    assert_eq!(change["status"], "U", "{json}");
    assert_eq!(
        change["new"]["blob"].as_str(),
        Some(null.as_str()),
        "{json}"
    );
}

/// A SHA-1 and a SHA-256 repository sharing one `simm.storeDir` keep
/// their fingerprints apart: neither warns about the other's tables nor
/// deletes them, and both answer as with a store of their own.
#[test]
fn sha1_and_sha256_repositories_share_a_store() {
    let store = tempfile::tempdir().expect("tempdir");
    let dir = store.path().to_string_lossy().into_owned();
    let sha1 = Repo::new();
    let sha256 = Repo::init(&["--object-format=sha256"]);
    let tables = || {
        std::fs::read_dir(store.path())
            .map(|d| d.filter_map(Result::ok).count())
            .unwrap_or(0)
    };
    let mut answers = Vec::new();
    for r in [&sha1, &sha256] {
        build_history(r);
        r.git(&["config", "simm.storeDir", &dir]);
        let own = r.simm(&["--no-cache", "fingerprint", "HEAD"]);
        answers.push(stdout(&own));
    }
    let mut seen = 0;
    for round in 0..3 {
        for (r, want) in [&sha1, &sha256].into_iter().zip(&answers) {
            let o = r.simm(&["fingerprint", "--all", "--quiet"]);
            assert!(
                o.status.success() && stderr(&o).is_empty(),
                "{}",
                stderr(&o)
            );
            let o = r.simm(&["fingerprint", "HEAD"]);
            assert_eq!(stderr(&o), "", "round {round}");
            assert_eq!(&stdout(&o), want, "round {round}");
        }
        assert!(tables() >= seen, "tables were deleted");
        seen = tables();
    }
    assert!(seen >= 2, "both repositories wrote tables");
}
