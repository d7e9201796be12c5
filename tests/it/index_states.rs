//! What the index's state does to git's diff, and so to `renames`:
//! paths in conflict, stat data fresh or stale, assume-unchanged and
//! skip-worktree entries. git is the oracle; git-simm runs first each
//! time, since `git diff` refreshes stale stat data in the index.

use crate::util;

use std::time::{Duration, SystemTime};

use util::{Repo, lossy};

/// `git simm renames <simm>`, then `git diff --name-status -l0
/// --no-rename-empty <git>`: identical stdout, both succeeding. Returns
/// git's output.
fn same(r: &Repo, simm: &[&str], git: &[&str]) -> String {
    let mut args = vec!["renames"];
    args.extend_from_slice(simm);
    let ours = r.simm(&args);
    let mut full = vec!["diff", "--name-status", "-l0", "--no-rename-empty"];
    full.extend_from_slice(git);
    let theirs = r.git(&full);
    assert!(
        ours.status.success(),
        "git-simm {args:?}: {}",
        lossy(&ours.stderr)
    );
    assert_eq!(
        lossy(&ours.stdout),
        lossy(&theirs),
        "git-simm {args:?} against git {full:?}"
    );
    lossy(&theirs)
}

/// Set the mtime of `rel` an hour back: its stat data in the index no
/// longer match, its content unchanged.
fn stale(r: &Repo, rel: &str) {
    let f = std::fs::File::options()
        .write(true)
        .open(r.path.join(rel))
        .expect("open");
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .expect("set mtime");
}

/// A merge that conflicts on `a.txt` (real text, both sides editing one
/// line), then `git show HEAD:a.txt > c.txt; git add c.txt`.
fn conflicted() -> Repo {
    let t = util::texts(67, 3);
    let r = Repo::new();
    r.write("a.txt", &t[0]);
    r.write("b.txt", &t[1]);
    r.commit_all("base");
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write("a.txt", &util::edit(&t[0], 1000, 1));
    r.commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write("a.txt", &util::edit(&t[0], 1000, 2));
    r.commit_all("main");
    assert!(!r.git_output(&["merge", "-q", "side"]).status.success());
    let head = r.git(&["show", "HEAD:a.txt"]);
    r.write("c.txt", &head);
    r.git(&["add", "c.txt"]);
    r
}

/// Against the index, git takes the HEAD version of a path in conflict as
/// a copy source (diff-lib.c, `do_oneway_diff`): `U a.txt` and `C100
/// a.txt c.txt`, with `-C` and `-C -C`; with `-M` only `A c.txt`.
#[test]
fn an_unmerged_path_is_a_copy_source_against_the_index() {
    let r = conflicted();
    let out = same(&r, &["--cached", "-C"], &["--cached", "-C"]);
    assert_eq!(out, "U\ta.txt\nC100\ta.txt\tc.txt\n");
    let out = same(&r, &["--cached", "-C", "-C"], &["--cached", "-C", "-C"]);
    assert_eq!(out, "U\ta.txt\nC100\ta.txt\tc.txt\n");
    let out = same(&r, &["--cached", "-M"], &["--cached", "-M"]);
    assert_eq!(out, "U\ta.txt\nA\tc.txt\n");
    same(&r, &["--cached", "-B", "-C"], &["--cached", "-B", "-C"]);
}

/// Against the work tree, a path in conflict is its file against HEAD,
/// never up to date: with conflict markers it is modified and a copy
/// source; holding HEAD's content again it is dropped as unchanged
/// (`diffcore_skip_stat_unmatch`) before copy detection, so `c.txt` is
/// added, with `-C -C` too.
#[test]
fn an_unmerged_path_in_the_work_tree_is_compared_by_content() {
    let r = conflicted();
    for flags in [&["-C"][..], &["-C", "-C"]] {
        let simm: Vec<&str> = flags.to_vec();
        let mut git = flags.to_vec();
        git.push("HEAD");
        let out = same(&r, &simm, &git);
        assert_eq!(out, "M\ta.txt\nC100\ta.txt\tc.txt\n", "{flags:?}");
    }
    r.git(&["checkout", "--ours", "a.txt"]);
    for flags in [&["-C"][..], &["-C", "-C"], &["-B", "-C", "-C"]] {
        let simm: Vec<&str> = flags.to_vec();
        let mut git = flags.to_vec();
        git.push("HEAD");
        let out = same(&r, &simm, &git);
        assert_eq!(out, "A\tc.txt\n", "{flags:?}");
    }
    // Stale or fresh, a conflict stays what it is.
    stale(&r, "a.txt");
    assert_eq!(same(&r, &["-C", "-C"], &["-C", "-C", "HEAD"]), "A\tc.txt\n");
}

/// With `--find-copies-harder` against the work tree, an unchanged file
/// is a copy source only while the index's stat data say it is up to
/// date; with a stale mtime git compares it by content, finds it
/// unchanged and drops it before copy detection. Refreshed, it is a
/// source again.
#[test]
fn copy_sources_in_the_work_tree_follow_the_index_stat_data() {
    let t = util::texts(71, 3);
    let r = Repo::new();
    r.write("b.txt", &t[0]);
    r.write("other.txt", &t[1]);
    r.commit_all("base");
    r.write("d.txt", &t[0]);
    r.git(&["add", "d.txt"]);
    r.git(&["update-index", "-q", "--refresh"]);
    let fresh = same(&r, &["-C", "-C"], &["-C", "-C", "HEAD"]);
    assert_eq!(fresh, "C100\tb.txt\td.txt\n");
    stale(&r, "b.txt");
    let out = same(&r, &["-C", "-C"], &["-C", "-C", "HEAD"]);
    assert_eq!(out, "A\td.txt\n");
    // git's diff refreshed the index as it went: a source again.
    assert_eq!(same(&r, &["-C", "-C"], &["-C", "-C", "HEAD"]), fresh);
    // Against the index stat data play no part.
    stale(&r, "b.txt");
    assert_eq!(
        same(&r, &["--cached", "-C", "-C"], &["--cached", "-C", "-C"]),
        fresh
    );
}

/// Entries git does not look for in the work tree: assume-unchanged and
/// skip-worktree ones are their index version, changed or deleted files
/// notwithstanding; with `--find-copies-harder` they are copy sources.
#[test]
fn assume_unchanged_and_skip_worktree_entries_are_their_index_version() {
    let t = util::texts(73, 5);
    let r = Repo::new();
    r.write("assumed.txt", &t[0]);
    r.write("skipped.txt", &t[1]);
    r.write("gone-assumed.txt", &t[2]);
    r.write("moved.txt", &t[3]);
    r.commit_all("base");
    r.git(&[
        "update-index",
        "--assume-unchanged",
        "assumed.txt",
        "gone-assumed.txt",
    ]);
    r.git(&["update-index", "--skip-worktree", "skipped.txt"]);
    r.write("assumed.txt", &t[4]);
    r.write("skipped.txt", &t[4]);
    r.remove("gone-assumed.txt");
    r.git_mv("moved.txt", "new/moved.txt");
    r.write("copy.txt", &t[0]);
    r.git(&["add", "copy.txt"]);
    let out = same(&r, &[], &["-M", "HEAD"]);
    assert_eq!(out, "A\tcopy.txt\nR100\tmoved.txt\tnew/moved.txt\n");
    let out = same(&r, &["-C", "-C"], &["-C", "-C", "HEAD"]);
    assert_eq!(
        out,
        "C100\tassumed.txt\tcopy.txt\nR100\tmoved.txt\tnew/moved.txt\n"
    );
}
