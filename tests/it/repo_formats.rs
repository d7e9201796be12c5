//! Repository formats git-simm must read as git does (issue 12): SHA-256
//! object ids (`git init --object-format=sha256`).
//!
//! Each format is built by the real git with the same content as an
//! ordinary (SHA-1) repository, and every command must answer exactly as
//! it does there, or as git itself does where git has an equivalent
//! command. Before the fix a SHA-256 repository failed every command with
//! "Object format is not enabled in this build".

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use util::{Repo, Rng, git_command, lossy, stderr, stdout};

/// `n` distinct real texts of 2 to 16 KiB from the pinned corpus.
fn texts(n: usize) -> Vec<Vec<u8>> {
    let mut seen = BTreeSet::new();
    let all: Vec<Vec<u8>> = util::corpus_files()
        .iter()
        .filter(|p| util::wanted(p))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (2048..=16384).contains(&d.len()) && util::is_text(d))
        .filter(|d| seen.insert(d.clone()))
        .collect();
    assert!(all.len() >= n * 20, "{} texts", all.len());
    all.into_iter().step_by(17).take(n).collect()
}

/// `text` with one line in `every` replaced by a new one.
fn edit(text: &[u8], every: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % every == 0 {
            out.extend_from_slice(&rng.fresh_line());
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

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
    let t = texts(10);
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
    r.write("lib/g2.txt", &edit(&t[2], 10, 2));
    r.write("lib/copy3.txt", &t[3]);
    r.remove("src/f4.txt");
    r.write("src/f5.txt", &edit(&t[5], 8, 5));
    r.commit_all("two");
    r.git(&["branch", "side", "v1"]);
    r.git_mv("src/f6.txt", "moved/h6.txt");
    r.write("moved/h6.txt", &heavy_edit(&t[6], 6));
    r.write("dup7.txt", &t[7]);
    r.git(&["add", "-A"]);
    r.write("src/f8.txt", &edit(&t[8], 7, 8));
}

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

/// `git-simm repack` in `r`: git's fsck clean afterwards and the object
/// set unchanged; returns that set.
fn repack_keeps_everything(r: &Repo) -> Vec<String> {
    let before = object_set(&r.path);
    let o = r.simm(&["repack", "--quiet"]);
    assert!(o.status.success(), "repack: {}", stderr(&o));
    assert_eq!(object_set(&r.path), before, "repack changed the object set");
    fsck_clean(&r.path);
    before
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
