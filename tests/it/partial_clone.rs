//! Partial clones: a repository of real text served
//! from a `file://` remote with `uploadpack.allowFilter`, cloned with
//! `--filter=blob:none` and `--filter=blob:limit=<n>`, so the blobs a
//! command needs are missing and must come from the promisor remote.
//!
//! Before the fix `renames` stopped with "object ... is missing" where
//! `git diff` fetched what it needed, and `pack-order` ran a `git rev-list`
//! that fetched missing blobs one by one (it never finished in 120 s on a
//! real repository and left 46 packs). Here every command must answer as
//! git (or as in a full clone), fetch at most one batch (counted as `git
//! fetch` processes in a `GIT_TRACE2_EVENT` log), fetch exactly the blobs
//! git's own rename detection fetches, and the pack commands must never
//! fetch.

use crate::util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use util::{Repo, git_command, path_with_simm, simm_command, stderr, stdout};

/// The served repository: tags v1, v2, v3 over real text.
///
/// v1 -> v2 has an exact rename, renames with edits under the same
/// basename (git's basename pass), renames with edits under new names (the
/// inexact matrix), a copy of a modified file, a deletion, an edit and an
/// unrelated addition. v2 -> v3 has only same-basename renames and a
/// deletion: git fetches the renamed pairs and never the deleted file,
/// and so must git-simm.
fn server() -> Repo {
    let r = Repo::new();
    let t = util::texts(13, 26);
    for (i, d) in t.iter().take(24).enumerate() {
        r.write(format!("src/a{i}.txt"), d);
    }
    r.commit_all("one");
    r.git(&["tag", "v1"]);
    r.git_mv("src/a0.txt", "lib/a0.txt");
    r.git_mv("src/a1.txt", "lib/a1.txt");
    r.write("lib/a1.txt", &util::edit(&t[1], 10, 1));
    r.git_mv("src/a2.txt", "lib/a2.txt");
    r.write("lib/a2.txt", &util::edit(&t[2], 6, 2));
    r.git_mv("src/a3.txt", "lib/b3.txt");
    r.write("lib/b3.txt", &util::edit(&t[3], 10, 3));
    r.git_mv("src/a4.txt", "new/c4.txt");
    r.write("new/c4.txt", &util::edit(&t[4], 4, 4));
    r.write("lib/copy5.txt", &util::edit(&t[5], 9, 55));
    r.write("src/a5.txt", &util::edit(&t[5], 12, 5));
    r.remove("src/a6.txt");
    r.write("src/a7.txt", &util::edit(&t[7], 5, 7));
    r.write("new/n.txt", &t[24]);
    r.commit_all("two");
    r.git(&["tag", "v2"]);
    r.git_mv("src/a8.txt", "final/a8.txt");
    r.write("final/a8.txt", &util::edit(&t[8], 10, 8));
    r.git_mv("src/a11.txt", "other/a11.txt");
    r.write("other/a11.txt", &util::edit(&t[11], 10, 11));
    r.remove("src/a9.txt");
    r.commit_all("three");
    r.git(&["tag", "v3"]);
    r.git(&["config", "uploadpack.allowFilter", "true"]);
    r.git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    r
}

/// A new clone of `server` next to it: partial with `filter` (None: a
/// full clone), with or without a checkout.
fn clone(server: &Repo, filter: Option<&str>, checkout: bool) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = server.path.parent().expect("parent");
    let dest = base.join(format!("clone{}", N.fetch_add(1, Ordering::Relaxed)));
    let url = format!("file://{}", server.path.display());
    let mut args = vec!["clone".to_owned(), "-q".to_owned()];
    match filter {
        Some(f) => args.push(format!("--filter={f}")),
        // Objects copied over the protocol, as a partial clone gets them.
        None => args.push("--no-local".to_owned()),
    }
    if !checkout {
        args.push("--no-checkout".to_owned());
    }
    args.push(url);
    args.push(dest.to_string_lossy().into_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = git_command(base).args(&args).output().expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    dest
}

/// Run `cmd` with git's trace2 events logged; its output and the number
/// of `git fetch` processes it started (git's lazy fetches, or
/// git-simm's).
fn traced(mut cmd: Command) -> (Output, usize) {
    let log = tempfile::NamedTempFile::new().expect("temp file");
    let o = cmd
        .env("GIT_TRACE2_EVENT", log.path())
        .output()
        .expect("run");
    let events = std::fs::read_to_string(log.path()).unwrap_or_default();
    let fetches = events
        .lines()
        .filter(|l| l.contains(r#""event":"cmd_name""#) && l.contains(r#""name":"fetch""#))
        .count();
    (o, fetches)
}

fn git_traced(dir: &Path, args: &[&str]) -> (Output, usize) {
    let mut cmd = git_command(dir);
    cmd.args(args);
    traced(cmd)
}

fn simm_traced(dir: &Path, args: &[&str]) -> (Output, usize) {
    let mut cmd = simm_command();
    cmd.current_dir(dir).args(args);
    traced(cmd)
}

/// The objects stored in the clone at `dir`, never fetching.
fn present(dir: &Path) -> BTreeSet<String> {
    let o = git_command(dir)
        .env("GIT_NO_LAZY_FETCH", "1")
        .args([
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ])
        .output()
        .expect("run git");
    assert!(o.status.success(), "cat-file: {}", stderr(&o));
    stdout(&o).lines().map(str::to_owned).collect()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = git_command(dir).args(args).output().expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// `git simm renames <args>` against `git diff --name-status -l0
/// --no-rename-empty <git args>`, each in a fresh clone of its own.
const RENAME_CASES: &[(&[&str], &[&str])] = &[
    (&["-M", "v1", "v2"], &["v1", "v2"]),
    (&["-M", "v2", "v3"], &["v2", "v3"]),
    (&["-M", "v1", "v3"], &["v1", "v3"]),
    (&["-M30%", "v1", "v3"], &["-M30%", "v1", "v3"]),
    (&["-C", "v1", "v2"], &["-C", "v1", "v2"]),
    (&["-C", "-C", "v1", "v2"], &["-C", "-C", "v1", "v2"]),
    // Break detection reads both sides of every modified blob first; at
    // the first one missing git fetches every blob of the diff at once.
    (&["-B", "-M", "v1", "v2"], &["-B", "v1", "v2"]),
    (
        &["-B", "-C", "-C", "v1", "v3"],
        &["-B", "-C", "-C", "v1", "v3"],
    ),
];

#[test]
fn renames_match_git_and_fetch_what_git_fetches_in_one_batch() {
    let server = server();
    let mut report = Vec::new();
    for filter in ["blob:none", "blob:limit=8k"] {
        for (git_args, simm_args) in RENAME_CASES {
            let a = clone(&server, Some(filter), false);
            let b = clone(&server, Some(filter), false);
            let before = present(&b);
            let mut args = vec!["diff", "--name-status", "-l0", "--no-rename-empty"];
            args.extend_from_slice(git_args);
            let (theirs, git_fetches) = git_traced(&a, &args);
            assert!(theirs.status.success(), "git {args:?}: {}", stderr(&theirs));
            let mut args = vec!["renames"];
            args.extend_from_slice(simm_args);
            let (ours, fetches) = simm_traced(&b, &args);
            let case = format!("{filter}: renames {simm_args:?}");
            assert!(ours.status.success(), "{case}: {}", stderr(&ours));
            assert_eq!(stdout(&ours), stdout(&theirs), "{case}");
            let after = present(&b);
            // Exactly the blobs git's rename detection fetched.
            assert_eq!(
                after,
                present(&a),
                "{case}: objects fetched differ from git's"
            );
            let fetched = after.len() - before.len();
            assert_eq!(
                fetches,
                usize::from(fetched > 0),
                "{case}: {fetches} fetches for {fetched} objects"
            );
            report.push(format!(
                "{case}: {fetched} objects, git {git_fetches} fetch(es), git-simm {fetches}"
            ));
            // Everything is there now: a second run fetches nothing.
            let (again, fetches) = simm_traced(&b, &args);
            assert_eq!(stdout(&again), stdout(&theirs), "{case}, again");
            assert_eq!(fetches, 0, "{case}, again");
        }
    }
    // The blob:none cases must have had something to fetch, or the test
    // shows nothing.
    assert!(
        report
            .iter()
            .filter(|l| l.starts_with("blob:none"))
            .all(|l| !l.contains(": 0 objects")),
        "{report:#?}"
    );
    eprintln!("{}", report.join("\n"));
}

#[test]
fn renames_of_the_index_and_work_tree_match_git() {
    let server = server();
    let setup = |dir: &Path| {
        std::fs::create_dir_all(dir.join("w")).expect("mkdir");
        // A staged move with edits, and an unstaged edit, against v1,
        // whose blobs a checkout of main never fetched.
        ok(dir, &["mv", "final/a8.txt", "w/a8-moved.txt"]);
        let moved = dir.join("w/a8-moved.txt");
        let text = std::fs::read(&moved).expect("read");
        std::fs::write(&moved, util::edit(&text, 7, 88)).expect("write");
        ok(dir, &["add", "-A"]);
        let edited = dir.join("lib/a2.txt");
        let text = std::fs::read(&edited).expect("read");
        std::fs::write(&edited, util::edit(&text, 9, 22)).expect("write");
    };
    for (git_args, simm_args) in [
        (&["--cached", "v1"][..], &["--cached", "v1"][..]),
        (&["v1"], &["v1"]),
    ] {
        let a = clone(&server, Some("blob:none"), true);
        let b = clone(&server, Some("blob:none"), true);
        setup(&a);
        setup(&b);
        let mut args = vec!["diff", "-M", "--name-status", "-l0", "--no-rename-empty"];
        args.extend_from_slice(git_args);
        let (theirs, _) = git_traced(&a, &args);
        assert!(theirs.status.success(), "git {args:?}: {}", stderr(&theirs));
        let mut args = vec!["renames"];
        args.extend_from_slice(simm_args);
        let (ours, fetches) = simm_traced(&b, &args);
        assert!(ours.status.success(), "{args:?}: {}", stderr(&ours));
        assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
        assert!(stdout(&ours).contains("R0"), "{args:?}: no rename to show");
        assert_eq!(fetches, 1, "{args:?}");
        assert_eq!(
            present(&b),
            present(&a),
            "{args:?}: fetched otherwise than git"
        );
    }
}

/// A clone of `server` with `--filter=blob:none --sparse`: nothing at
/// the top level, so every path is a skip-worktree entry whose blob was
/// never fetched.
fn sparse_clone(server: &Repo, name: &str) -> PathBuf {
    let base = server.path.parent().expect("parent");
    let dest = base.join(name);
    let url = format!("file://{}", server.path.display());
    let o = git_command(base)
        .args(["clone", "-q", "--filter=blob:none", "--sparse", &url])
        .arg(&dest)
        .output()
        .expect("run git");
    assert!(o.status.success(), "sparse clone: {}", stderr(&o));
    dest
}

/// In a sparse checkout of a blob-less clone, git's diff takes a
/// skip-worktree entry as its index version without reading it
/// (`do_oneway_diff`): with nothing changed `git diff HEAD -M` prints
/// nothing and fetches nothing, and `renames` stopped with "object ... is
/// missing". A staged change outside the cone is compared by id; under
/// `-B` its blobs are read, and git fetches every blob of the diff in one
/// batch, which `renames` must match.
#[test]
fn sparse_checkout_of_a_partial_clone_matches_git() {
    let server = server();
    let a = sparse_clone(&server, "sparse-git");
    let b = sparse_clone(&server, "sparse-simm");
    let listed = ok(&b, &["ls-files", "-t"]);
    assert!(
        listed.lines().all(|l| l.starts_with("S ")),
        "all skip-worktree: {listed}"
    );
    let compare = |git_args: &[&str], simm_args: &[&str], what: &str| {
        let before = present(&b);
        let mut args = vec!["diff", "--name-status", "-l0", "--no-rename-empty"];
        args.extend_from_slice(git_args);
        let (theirs, git_fetches) = git_traced(&a, &args);
        assert!(theirs.status.success(), "git {args:?}: {}", stderr(&theirs));
        let mut args = vec!["renames"];
        args.extend_from_slice(simm_args);
        let (ours, fetches) = simm_traced(&b, &args);
        assert!(ours.status.success(), "{what}: {}", stderr(&ours));
        assert_eq!(stdout(&ours), stdout(&theirs), "{what}");
        assert_eq!(present(&b), present(&a), "{what}: fetched otherwise");
        let fetched = present(&b).len() - before.len();
        assert_eq!(fetches, usize::from(fetched > 0), "{what}");
        assert_eq!(git_fetches, fetches, "{what}: batches");
        stdout(&ours)
    };
    assert_eq!(compare(&["-M", "HEAD"], &[], "nothing changed"), "");
    assert_eq!(compare(&["-C", "-C", "HEAD"], &["-C", "-C"], "-C -C"), "");
    assert_eq!(compare(&["--cached", "-M"], &["--cached"], "cached"), "");

    // A staged rewrite of a path outside the cone, and a new file at the
    // top holding another one's content (an exact copy: no blob read).
    let stage = |dir: &Path| {
        let rewrite = util::texts(13, 26)[25].clone();
        let mut hash = git_command(dir)
            .args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("hash-object");
        std::io::Write::write_all(&mut hash.stdin.take().expect("stdin"), &rewrite).expect("feed");
        let id = String::from_utf8(hash.wait_with_output().expect("wait").stdout).expect("utf8");
        let info = format!("100644,{},src/a7.txt", id.trim());
        ok(dir, &["update-index", "--cacheinfo", &info]);
        // A new entry has no skip-worktree bit of its own.
        ok(dir, &["update-index", "--skip-worktree", "src/a7.txt"]);
        let copied = ok(dir, &["rev-parse", "HEAD:src/a10.txt"]);
        let info = format!("100644,{},top-copy.txt", copied.trim());
        ok(dir, &["update-index", "--add", "--cacheinfo", &info]);
        ok(dir, &["checkout-index", "top-copy.txt"]);
    };
    stage(&a);
    stage(&b);
    let out = compare(&["-M", "HEAD"], &[], "a staged change outside the cone");
    assert!(out.contains("M\tsrc/a7.txt"), "{out}");
    let out = compare(&["-C", "-C", "HEAD"], &["-C", "-C"], "a copy from outside");
    assert!(out.contains("C100\tsrc/a10.txt\ttop-copy.txt"), "{out}");
    let out = compare(&["-B", "-M", "HEAD"], &["-B"], "-B");
    assert!(
        out.lines()
            .any(|l| l.len() > 4 && l.starts_with('M') && l.ends_with("\tsrc/a7.txt")),
        "a rewrite: {out}"
    );
}

#[test]
fn fingerprint_similar_and_check_answer_as_in_a_full_clone() {
    let server = server();
    let full = clone(&server, None, false);
    for args in [
        &["fingerprint", "v1"][..],
        &["fingerprint", "v2:lib/a1.txt"],
        &["similar", "v3:lib/a1.txt", "v1"],
        &["similar", "--json", "v2:new/c4.txt", "v1"],
    ] {
        let b = clone(&server, Some("blob:none"), false);
        let (ours, fetches) = simm_traced(&b, args);
        let (theirs, _) = simm_traced(&full, args);
        assert!(ours.status.success(), "{args:?}: {}", stderr(&ours));
        assert_eq!(stdout(&ours), stdout(&theirs), "{args:?}");
        assert!(!stdout(&ours).is_empty(), "{args:?}");
        assert_eq!(fetches, 1, "{args:?}: one batch");
    }

    // fingerprint --all: the blobs that are there, nothing fetched.
    let b = clone(&server, Some("blob:limit=8k"), false);
    let before = present(&b);
    let (ours, fetches) = simm_traced(&b, &["fingerprint", "--all"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert_eq!(fetches, 0);
    let listed: BTreeSet<String> = stdout(&ours)
        .lines()
        .filter_map(|l| l.rsplit(' ').next().map(str::to_owned))
        .collect();
    let blobs: BTreeSet<String> = ok(
        &b,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ],
    )
    .lines()
    .filter_map(|l| l.strip_suffix(" blob").map(str::to_owned))
    .collect();
    assert!(!blobs.is_empty());
    assert_eq!(listed, blobs);
    // git records the filter as it understood it (`blob:limit=8192`).
    let filter = ok(&b, &["config", "remote.origin.partialclonefilter"]);
    assert!(
        stderr(&ours).contains(&format!(
            "partial clone (filter {}): fingerprinting the {} blobs present",
            filter.trim(),
            blobs.len()
        )),
        "{}",
        stderr(&ours)
    );
    assert_eq!(present(&b), before);

    // check --staged: a move with edits staged over HEAD, whose blobs a
    // clone without checkout lacks; the same findings as in a full clone.
    let stage = |dir: &Path| {
        ok(dir, &["read-tree", "HEAD"]);
        let old = ok(dir, &["cat-file", "-p", "HEAD:lib/b3.txt"]);
        let new = util::edit(old.as_bytes(), 3, 33);
        let mut hash = git_command(dir)
            .args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("hash-object");
        std::io::Write::write_all(&mut hash.stdin.take().expect("stdin"), &new).expect("feed");
        let id = String::from_utf8(hash.wait_with_output().expect("wait").stdout).expect("utf8");
        ok(dir, &["rm", "-q", "--cached", "lib/b3.txt"]);
        let info = format!("100644,{},moved/b3-renamed.txt", id.trim());
        ok(dir, &["update-index", "--add", "--cacheinfo", &info]);
        // A verbatim copy of a file of HEAD, which `check` reports.
        let copied = ok(dir, &["rev-parse", "HEAD:src/a10.txt"]);
        let info = format!("100644,{},copies/a10.txt", copied.trim());
        ok(dir, &["update-index", "--add", "--cacheinfo", &info]);
    };
    let full = clone(&server, None, false);
    let b = clone(&server, Some("blob:none"), false);
    stage(&full);
    stage(&b);
    let (theirs, _) = simm_traced(&full, &["check", "--staged"]);
    let (ours, fetches) = simm_traced(&b, &["check", "--staged"]);
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{}",
        stderr(&ours)
    );
    assert_eq!(stdout(&ours), stdout(&theirs));
    assert_eq!(stderr(&ours), stderr(&theirs));
    assert!(
        stderr(&theirs).contains("copies/a10.txt"),
        "{}",
        stderr(&theirs)
    );
    // More files added than deleted: the copy pass against every file of
    // HEAD is sure to run, so its blobs come with the rename pass's.
    assert_eq!(fetches, 1);
}

#[test]
fn repack_keeps_promisor_packs_and_never_fetches() {
    let server = server();
    let dir = clone(&server, Some("blob:none"), true);
    // Local work on top of the partial clone: new and edited blobs, loose.
    let f = dir.join("lib/a1.txt");
    let text = std::fs::read(&f).expect("read");
    std::fs::write(&f, util::edit(&text, 4, 14)).expect("write");
    std::fs::write(dir.join("local.txt"), util::edit(&text, 3, 15)).expect("write");
    ok(&dir, &["add", "-A"]);
    ok(&dir, &["commit", "-q", "-m", "local"]);
    let missing_blob = ok(&dir, &["rev-parse", "v1:src/a3.txt"]).trim().to_owned();
    let before = present(&dir);
    assert!(
        !before.contains(&missing_blob),
        "v1's blobs are not fetched"
    );
    let pack_dir = dir.join(".git/objects/pack");
    let promisor_packs = || -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&pack_dir)
            .expect("pack dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.with_extension("promisor").exists())
            .map(|p| {
                let name = p.file_name().expect("name").to_string_lossy().into_owned();
                (name, std::fs::read(&p).expect("read"))
            })
            .collect();
        v.sort();
        v
    };
    let kept = promisor_packs();
    assert!(!kept.is_empty());

    // pack-order lists what git repack -a puts in its main pack, and with
    // revisions the objects that are there, without fetching.
    let ids = |text: &str| -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| l.split(' ').next())
            .map(str::to_owned)
            .collect()
    };
    let (o, fetches) = simm_traced(&dir, &["pack-order"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fetches, 0);
    let git_local = ids(&ok(
        &dir,
        &[
            "rev-list",
            "--objects",
            "--all",
            "--reflog",
            "--indexed-objects",
            "--exclude-promisor-objects",
        ],
    ));
    assert!(!git_local.is_empty());
    assert_eq!(ids(&stdout(&o)), git_local);
    let (o, fetches) = simm_traced(&dir, &["pack-order", "v1..v3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(fetches, 0);
    let git_present = ids(&ok(
        &dir,
        &[
            "rev-list",
            "--objects",
            "--missing=allow-promisor",
            "v1..v3",
        ],
    ));
    assert_eq!(ids(&stdout(&o)), git_present);
    // git-simm's list feeds pack-objects, which must not fetch either.
    let mut pack = git_command(&dir)
        .env("GIT_NO_LAZY_FETCH", "1")
        .args(["pack-objects", "--stdout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pack-objects");
    std::io::Write::write_all(&mut pack.stdin.take().expect("stdin"), &o.stdout).expect("feed");
    let packed = pack.wait_with_output().expect("wait");
    assert!(packed.status.success(), "{}", stderr(&packed));

    for bases in ["--bases=git", "--bases=simm"] {
        let (o, fetches) = simm_traced(&dir, &["repack", "-q", bases]);
        assert!(o.status.success(), "{bases}: {}", stderr(&o));
        assert_eq!(fetches, 0, "{bases}");
        assert_eq!(promisor_packs(), kept, "{bases}: promisor packs changed");
        assert_eq!(present(&dir), before, "{bases}: objects changed");
        let loose = ok(&dir, &["count-objects", "-v"]);
        assert!(loose.contains("\ncount: 0\n") || loose.starts_with("count: 0\n"));
        let fsck = git_command(&dir)
            .args(["fsck", "--no-progress"])
            .output()
            .expect("fsck");
        assert!(fsck.status.success(), "{bases}: fsck: {}", stderr(&fsck));
    }
    // One non-promisor pack holds the local objects.
    let packs: Vec<_> = std::fs::read_dir(&pack_dir)
        .expect("pack dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .filter(|p| !p.with_extension("promisor").exists())
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");

    // The clone still works as one: a missing blob is fetched lazily.
    let o = git_command(&dir)
        .args(["cat-file", "-p", &missing_blob])
        .output()
        .expect("cat-file");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        o.stdout,
        server.git(&["cat-file", "-p", &missing_blob]),
        "lazy fetch after repack"
    );
}

#[test]
fn lazy_fetch_disabled_is_a_clear_error() {
    let server = server();
    let dir = clone(&server, Some("blob:none"), false);
    // The first blob detection needs, in git's order of ids.
    let before = present(&dir);
    let mut cmd = simm_command();
    cmd.current_dir(&dir)
        .env("GIT_NO_LAZY_FETCH", "1")
        .args(["renames", "v1", "v2"]);
    let (o, fetches) = traced(cmd);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert_eq!(fetches, 0);
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    let line = err.lines().next().unwrap_or_default();
    assert!(line.starts_with("fatal: could not fetch "), "{err}");
    let id = line["fatal: could not fetch ".len()..]
        .split(' ')
        .next()
        .unwrap_or_default();
    assert!(!before.contains(id), "{id} is not missing");
    let kind = ok(&dir, &["cat-file", "-t", id]);
    assert_eq!(kind.trim(), "blob", "{id} names a blob");
    assert!(err.contains("filter blob:none"), "{err}");
    assert!(err.contains("lazy fetching is disabled"), "{err}");
    assert_eq!(present(&dir).len(), before.len() + 1, "cat-file fetched it");

    // As git users disable it: `git --no-lazy-fetch simm ...`.
    let o = git_command(&dir)
        .env("PATH", path_with_simm())
        .args(["--no-lazy-fetch", "simm", "renames", "v1", "v2"])
        .output()
        .expect("run git simm");
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("lazy fetching is disabled"),
        "{}",
        stderr(&o)
    );
}
