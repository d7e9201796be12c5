//! `git_simm::repo` checked against the real `git` binary on repositories
//! built in temporary directories.
//!
//! Unix only: the fixtures need symlinks, executable bits and file names that
//! are not valid UTF-8.
#![cfg(unix)]

use crate::util;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use git_simm::progress::Feedback;
use git_simm::repo::{Entry, EntryKind, Repo, RepoError};
use gix::ObjectId;
use util::{cache_tree, drop_cache_tree, git_command, path_of, succeeded, write};

/// Run git in `dir`, isolated by [`util::git_env`], and return its output,
/// whether it succeeded or not. Its repositories are made with `git init`
/// here, so the branch name and line-ending settings come on the command
/// line.
fn git_output(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = git_command(dir);
    cmd.args(["-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"])
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("git runs");
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input)
            .expect("write to git");
    }
    child.wait_with_output().expect("git finishes")
}

fn git_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Vec<u8> {
    succeeded(args, git_output(dir, args, stdin))
}

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    git_in(dir, args, None)
}

fn git_str(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(git(dir, args))
        .expect("utf-8")
        .trim_end()
        .to_owned()
}

fn oid(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex.as_bytes()).expect("valid hex id")
}

fn set_executable(dir: &Path, name: &[u8], exec: bool) {
    use std::os::unix::fs::PermissionsExt;
    let path = path_of(dir, name);
    let mut perms = std::fs::metadata(&path).expect("stat").permissions();
    perms.set_mode(if exec { 0o755 } else { 0o644 });
    std::fs::set_permissions(path, perms).expect("chmod");
}

fn mode_of(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Regular => "100644",
        EntryKind::Executable => "100755",
        EntryKind::Symlink => "120000",
        EntryKind::Submodule => "160000",
    }
}

/// A fresh repository with awkward paths of every kind, committed, plus a
/// submodule gitlink and an annotated tag `v1`.
fn fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("repo");
    std::fs::create_dir(&dir).expect("mkdir");
    git(&dir, &["init", "-q"]);
    write(&dir, b"README", b"hello\n");
    write(&dir, b"a b.txt", b"spaces in the name\n");
    write(&dir, b"new\nline.txt", b"newline in the name\n");
    write(&dir, b"bad\xff\xfe.txt", b"not utf-8 in the name\n");
    write(&dir, b"run.sh", b"#!/bin/sh\necho hi\n");
    set_executable(&dir, b"run.sh", true);
    write(&dir, b"dir/sub/deep.txt", b"deep\n");
    write(&dir, b"dir/z.txt", b"z\n");
    // `dir.txt` sorts before `dir/` in git's tree order, `dir-a` even earlier.
    write(&dir, b"dir.txt", b"dot\n");
    write(&dir, b"dir-a", b"dash\n");
    write(&dir, b"empty", b"");
    write(&dir, b"other/file.txt", b"outside the sparse cone\n");
    std::os::unix::fs::symlink("a b.txt", dir.join("link")).expect("symlink");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    let first = git_str(&dir, &["rev-parse", "HEAD"]);
    let cacheinfo = format!("160000,{first},sub");
    git(&dir, &["update-index", "--add", "--cacheinfo", &cacheinfo]);
    write(&dir, b"README", b"hello again\n");
    // Not `add -A`: that would stage the gitlink's absence from disk.
    git(&dir, &["add", "README"]);
    git(&dir, &["commit", "-q", "-m", "second"]);
    git(&dir, &["tag", "-a", "-m", "tagged", "v1"]);
    (tmp, dir)
}

/// `(mode, id, path)` records of `git ls-tree -r -z` or `git ls-files -s -z`.
fn parse_listing(out: &[u8], with_type: bool) -> Vec<(String, ObjectId, Vec<u8>)> {
    out.split(|&b| b == 0)
        .filter(|rec| !rec.is_empty())
        .map(|rec| {
            let tab = rec.iter().position(|&b| b == b'\t').expect("tab");
            let meta = std::str::from_utf8(&rec[..tab]).expect("ascii");
            let fields: Vec<&str> = meta.split(' ').collect();
            let id = if with_type { fields[2] } else { fields[1] };
            (fields[0].to_owned(), oid(id), rec[tab + 1..].to_vec())
        })
        .collect()
}

#[test]
fn tree_entries_match_ls_tree() {
    let (_tmp, dir) = fixture();
    let repo = Repo::discover(&dir).expect("discover");
    for spec in ["HEAD", "HEAD~1", "v1", "HEAD^{tree}"] {
        let tree = repo.resolve_tree(spec).expect("resolve");
        assert_eq!(
            tree,
            oid(&git_str(&dir, &["rev-parse", &format!("{spec}^{{tree}}")])),
            "{spec}"
        );
        let ours: Vec<_> = repo
            .tree_entries(tree)
            .expect("tree entries")
            .into_iter()
            .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
            .collect();
        let theirs = parse_listing(&git(&dir, &["ls-tree", "-r", "-z", spec]), true);
        assert_eq!(ours, theirs, "{spec}");
    }
    let entries = repo
        .tree_entries(repo.resolve_tree("HEAD").expect("HEAD"))
        .expect("entries");
    let kind_of = |path: &[u8]| {
        entries
            .iter()
            .find(|e| e.path == path)
            .map(|e| e.kind)
            .expect("path listed")
    };
    assert_eq!(kind_of(b"link"), EntryKind::Symlink);
    assert_eq!(kind_of(b"run.sh"), EntryKind::Executable);
    assert_eq!(kind_of(b"sub"), EntryKind::Submodule);
    assert_eq!(kind_of(b"bad\xff\xfe.txt"), EntryKind::Regular);
    assert_eq!(kind_of(b"new\nline.txt"), EntryKind::Regular);

    // A subdirectory as tree-ish, and the empty tree even though no commit
    // stores it.
    let sub = repo.resolve_tree("HEAD:dir").expect("HEAD:dir");
    let ours: Vec<_> = repo
        .tree_entries(sub)
        .expect("entries")
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(ours, vec![b"sub/deep.txt".to_vec(), b"z.txt".to_vec()]);
    let empty_tree = ObjectId::empty_tree(gix::hash::Kind::Sha1);
    assert!(
        repo.tree_entries(empty_tree)
            .expect("empty tree")
            .is_empty()
    );
}

/// A diff of two trees reads only the subtrees that differ
/// (`Repo::tree_entries_differing`): its listings must give the diff of
/// the full listings, which is git's `diff --raw`, through directories
/// that change into files and back, names that sort around a directory
/// (`dir-a`, `dir.txt`, `dir/`, `dir0`), a submodule, a symlink and the
/// empty tree; and they leave out what both trees hold alike.
#[test]
fn tree_entries_differing_diff_as_the_full_listings() {
    let (_tmp, dir) = fixture();
    write(&dir, b"dir/sub/deep.txt", b"deeper\n");
    std::fs::remove_file(dir.join("dir-a")).expect("rm dir-a");
    write(&dir, b"dir-a/x", b"a file where one was\n");
    std::fs::remove_dir_all(dir.join("other")).expect("rm other");
    write(&dir, b"other", b"a file where a directory was\n");
    write(&dir, b"dir0/y", b"after dir/\n");
    std::fs::remove_file(dir.join("dir.txt")).expect("rm dir.txt");
    git(&dir, &["add", "-A", "."]);
    git(&dir, &["commit", "-q", "-m", "third"]);
    write(&dir, b"dir/z.txt", b"z again\n");
    git(&dir, &["add", "-A", "."]);
    git(&dir, &["commit", "-q", "-m", "fourth"]);
    let repo = Repo::discover(&dir).expect("discover");
    let tree = |spec: &str| repo.resolve_tree(spec).expect("tree");
    let empty = ObjectId::empty_tree(gix::hash::Kind::Sha1);
    let paths = |changes: Vec<git_simm::repo::changes::Change>| -> Vec<Vec<u8>> {
        changes
            .into_iter()
            .map(|c| c.new.or(c.old).expect("a side").path)
            .collect()
    };
    for (a, b) in [
        ("HEAD~3", "HEAD"),
        ("HEAD", "HEAD~3"),
        ("HEAD~1", "HEAD"),
        ("HEAD~2", "HEAD~1"),
        ("HEAD", "HEAD"),
    ] {
        let (ta, tb) = (tree(a), tree(b));
        let (old, new) = repo.tree_entries_differing(ta, tb).expect("differing");
        let (full_old, full_new) = (
            repo.tree_entries(ta).expect("old"),
            repo.tree_entries(tb).expect("new"),
        );
        for (some, all) in [(&old, &full_old), (&new, &full_new)] {
            assert!(
                some.windows(2).all(|w| w[0].path < w[1].path),
                "{a} {b}: order"
            );
            assert!(some.iter().all(|e| all.contains(e)), "{a} {b}: not listed");
        }
        let sides = |changes: &[git_simm::repo::changes::Change]| -> Vec<_> {
            changes
                .iter()
                .map(|c| (c.kind, c.old.clone(), c.new.clone()))
                .collect()
        };
        let ours = git_simm::repo::changes::diff(&old, &new, false);
        let full = git_simm::repo::changes::diff(&full_old, &full_new, false);
        assert_eq!(sides(&ours), sides(&full), "{a} {b}");
        let theirs: Vec<Vec<u8>> = git(&dir, &["diff", "--raw", "--no-renames", "-z", a, b])
            .split(|&c| c == 0)
            .filter(|f| !f.is_empty() && f[0] != b':')
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(paths(ours), theirs, "{a} {b}: git diff --raw");
    }
    // Only `dir/z.txt` changed in the last commit: the rest of `dir`, the
    // subtree `dir/sub` and every other entry are left out.
    let (old, new) = repo
        .tree_entries_differing(tree("HEAD~1"), tree("HEAD"))
        .expect("differing");
    let listed: Vec<&[u8]> = old.iter().chain(&new).map(|e| e.path.as_slice()).collect();
    assert_eq!(
        listed,
        vec![b"dir/z.txt".as_slice(), b"dir/z.txt".as_slice()]
    );
    let (old, new) = repo
        .tree_entries_differing(empty, tree("HEAD"))
        .expect("from the empty tree");
    assert!(old.is_empty());
    assert_eq!(new, repo.tree_entries(tree("HEAD")).expect("HEAD"));
}

/// `Repo::staged` reads HEAD's tree only where the index's cache-tree does
/// not vouch for it and takes the rest from the index. Put back together,
/// its answer must be `git ls-tree -r HEAD` whatever git left in the
/// cache-tree: fully valid, valid but for another tree, partly
/// invalidated, invalidated to the root, absent, or sparse.
#[test]
fn staged_is_the_tree_whatever_the_cache_tree() {
    let (_tmp, dir) = fixture();
    for d in ["p", "q", "q/r", "s/t/u"] {
        write(&dir, format!("{d}/f.txt").as_bytes(), d.as_bytes());
        write(&dir, format!("{d}/g.txt").as_bytes(), b"g\n");
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "more directories"]);
    let repo = Repo::discover(&dir).expect("discover");
    let head = repo.resolve_tree("HEAD").expect("HEAD");
    let expected = parse_listing(&git(&dir, &["ls-tree", "-r", "-z", "HEAD"]), true);
    // The tree's entries taken from the index, and those read.
    let check = |what: &str| -> (usize, usize) {
        let staged = repo.staged(Some(head)).expect("staged");
        let listing = |entries: Vec<Entry>| -> Vec<_> {
            entries
                .into_iter()
                .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
                .collect()
        };
        let index = staged.index.to_vec();
        assert_eq!(
            listing(index.clone()),
            listing(repo.index_entries().expect("index")),
            "{what}: the index as index_entries lists it"
        );
        assert!(
            staged.tree.windows(2).all(|w| w[0].path < w[1].path),
            "{what}: tree entries in path order"
        );
        assert!(
            staged.same.windows(2).all(|w| w[0].end <= w[1].start),
            "{what}: ranges in order: {:?}",
            staged.same
        );
        let mut whole: Vec<_> = staged.tree.clone();
        for r in &staged.same {
            whole.extend(index[r.clone()].iter().cloned());
        }
        whole.sort_by(|a, b| a.path.cmp(&b.path));
        let whole: Vec<_> = whole
            .into_iter()
            .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
            .collect();
        assert_eq!(whole, expected, "{what}");
        let taken = staged.same.iter().map(|r| r.len()).sum();
        (taken, staged.tree.len())
    };

    // After a commit, git's cache-tree is valid and is HEAD's tree: nothing
    // needs reading.
    assert!(cache_tree(&dir).is_some_and(|t| t.num_entries.is_some()));
    assert_eq!(check("as committed"), (expected.len(), 0));
    assert!(
        repo.staged(None).expect("unborn").tree.is_empty(),
        "no tree, no tree entries"
    );

    // `git add` invalidates the directories of what it stages, up to the
    // root; the untouched ones are still vouched for.
    write(&dir, b"q/r/f.txt", b"changed\n");
    write(&dir, b"p/new.txt", b"new\n");
    git(&dir, &["add", "q/r/f.txt", "p/new.txt"]);
    assert!(cache_tree(&dir).is_some_and(|t| t.num_entries.is_none()));
    let (taken, read) = check("partly invalidated");
    assert!(
        taken > 0 && read > 0 && read < expected.len(),
        "{taken} {read}"
    );

    // What `git commit` leaves for the pre-commit hook: every node valid
    // again (written with write-tree), the root no longer HEAD's.
    git(&dir, &["write-tree"]);
    assert!(cache_tree(&dir).is_some_and(|t| t.num_entries.is_some()));
    let (taken, read) = check("valid for another tree");
    assert!(
        taken > 0 && read > 0 && read < expected.len(),
        "{taken} {read}"
    );

    // An intent-to-add entry has no blob: git invalidates every directory
    // above it, and it is no entry of the index here.
    write(&dir, b"s/t/u/later.txt", b"later\n");
    git(&dir, &["add", "-N", "s/t/u/later.txt"]);
    check("intent to add");

    // An index written by plumbing has no cache-tree at all: the whole tree
    // is read.
    drop_cache_tree(&dir);
    assert_eq!(check("no cache-tree"), (0, expected.len()));

    // A sparse index: directories outside the cone are single entries
    // (git leaves a directory with changes or untracked files expanded).
    git(&dir, &["reset", "-q", "--hard"]);
    git(&dir, &["clean", "-q", "-f", "-d"]);
    let sparse = git_output(
        &dir,
        &["sparse-checkout", "set", "--cone", "--sparse-index", "q"],
        None,
    );
    assert!(sparse.status.success(), "{sparse:?}");
    let sparse_listing = git(&dir, &["ls-files", "--sparse", "-z"]);
    assert!(
        sparse_listing.split(|&b| b == 0).any(|p| p == b"s/"),
        "{}",
        String::from_utf8_lossy(&sparse_listing)
    );
    write(&dir, b"q/r/f.txt", b"changed again\n");
    git(&dir, &["add", "q/r/f.txt"]);
    let (taken, _) = check("sparse");
    assert!(taken > 0, "{taken}");
}

#[test]
fn resolve_object_reports_kind() {
    let (_tmp, dir) = fixture();
    let repo = Repo::discover(&dir).expect("discover");
    let (id, kind) = repo.resolve_object("HEAD:a b.txt").expect("blob spec");
    assert_eq!(kind, gix::object::Kind::Blob);
    assert_eq!(id, oid(&git_str(&dir, &["rev-parse", "HEAD:a b.txt"])));
    let (by_hex, kind) = repo.resolve_object(&id.to_string()).expect("hex id");
    assert_eq!((by_hex, kind), (id, gix::object::Kind::Blob));
    let (_, kind) = repo.resolve_object("v1").expect("tag");
    assert_eq!(kind, gix::object::Kind::Tag);
    let (_, kind) = repo.resolve_object("HEAD").expect("commit");
    assert_eq!(kind, gix::object::Kind::Commit);
}

#[test]
fn index_entries_match_ls_files() {
    let (_tmp, dir) = fixture();
    // Staged but uncommitted changes, and an intent-to-add entry, which
    // has no blob yet and must not be listed.
    write(&dir, b"staged.txt", b"staged\n");
    git(&dir, &["add", "staged.txt"]);
    write(&dir, b"intent.txt", b"later\n");
    git(&dir, &["add", "-N", "intent.txt"]);
    let repo = Repo::discover(&dir).expect("discover");
    let ours: Vec<_> = repo
        .index_entries()
        .expect("index")
        .into_iter()
        .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
        .collect();
    let theirs: Vec<_> = parse_listing(&git(&dir, &["ls-files", "-s", "-z"]), false)
        .into_iter()
        .filter(|(_, _, path)| path != b"intent.txt")
        .collect();
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|(_, _, p)| p == b"staged.txt"));
}

/// The index is read as git reads it: its trailing checksum is not
/// verified (only `git fsck` does). A truncated index is an error naming
/// it (git's `ls-files` lists what it can make of it).
#[test]
fn index_checksum_is_not_verified_but_damage_is_an_error() {
    let (_tmp, dir) = fixture();
    let path = dir.join(".git/index");
    let good = std::fs::read(&path).expect("index");
    let listing = |dir: &Path| {
        let repo = Repo::discover(dir).expect("discover");
        repo.index_entries().map(|entries| {
            entries
                .into_iter()
                .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
                .collect::<Vec<_>>()
        })
    };
    let mut bad_sum = good.clone();
    let last = bad_sum.len() - 1;
    bad_sum[last] ^= 0xff;
    std::fs::write(&path, &bad_sum).expect("write index");
    let theirs = parse_listing(&git(&dir, &["ls-files", "-s", "-z"]), false);
    assert_eq!(listing(&dir).expect("read like git"), theirs);

    std::fs::write(&path, &good[..good.len() / 2]).expect("write index");
    let err = listing(&dir).expect_err("truncated index");
    assert!(matches!(err, RepoError::Index { .. }), "{err:?}");
    assert!(err.to_string().contains(".git/index"), "{err}");
}

#[test]
fn sparse_index_is_expanded() {
    let (_tmp, dir) = fixture();
    let sparse = git_output(
        &dir,
        &["sparse-checkout", "set", "--cone", "--sparse-index", "dir"],
        None,
    );
    assert!(sparse.status.success(), "{sparse:?}");
    let repo = Repo::discover(&dir).expect("discover");
    let ours: Vec<_> = repo
        .index_entries()
        .expect("index")
        .into_iter()
        .map(|e| (mode_of(e.kind).to_owned(), e.id, e.path))
        .collect();
    // `git ls-tree` of HEAD is the full list whatever the sparse index holds.
    let theirs = parse_listing(&git(&dir, &["ls-tree", "-r", "-z", "HEAD"]), true);
    assert_eq!(ours, theirs);
    // Files outside the sparse checkout are absent from disk, yet their
    // work tree version is the index version.
    assert!(!dir.join("other/file.txt").exists());
    // And the index really is sparse, or this test proves nothing.
    let sparse_listing = git(&dir, &["ls-files", "--sparse", "-z"]);
    assert!(
        sparse_listing.split(|&b| b == 0).any(|p| p == b"other/"),
        "{}",
        String::from_utf8_lossy(&sparse_listing)
    );
    let worktree = repo.worktree_entries().expect("worktree");
    let other = worktree
        .iter()
        .find(|(e, _)| e.path == b"other/file.txt")
        .expect("skip-worktree entry kept");
    assert_eq!(other.1, b"outside the sparse cone\n");
    assert_eq!(
        other.0.id,
        oid(&git_str(&dir, &["rev-parse", "HEAD:other/file.txt"]))
    );
}

#[test]
fn unmerged_index_is_an_error() {
    let (_tmp, dir) = fixture();
    git(&dir, &["checkout", "-q", "-b", "side"]);
    write(&dir, b"README", b"side\n");
    git(&dir, &["commit", "-q", "-am", "side"]);
    git(&dir, &["checkout", "-q", "main"]);
    write(&dir, b"README", b"main\n");
    git(&dir, &["commit", "-q", "-am", "main"]);
    let merge = git_output(&dir, &["merge", "-q", "side"], None);
    assert!(!merge.status.success(), "merge must conflict");
    let repo = Repo::discover(&dir).expect("discover");
    let err = repo.index_entries().expect_err("conflict");
    assert!(
        matches!(&err, RepoError::Unmerged { path } if path == "README"),
        "{err:?}"
    );
    let staged = repo.staged(None).expect_err("conflict");
    assert!(
        matches!(&staged, RepoError::Unmerged { path } if path == "README"),
        "{staged:?}"
    );
    assert!(err.to_string().contains("'README'"), "{err}");
    assert!(
        err.to_string().contains("resolve your current index"),
        "{err}"
    );
}

#[test]
fn worktree_entries_hash_like_git() {
    let (_tmp, dir) = fixture();
    write(&dir, b"README", b"changed in the work tree\n");
    write(&dir, b"a b.txt", b"changed too\n");
    std::fs::remove_file(path_of(&dir, b"dir.txt")).expect("rm");
    set_executable(&dir, b"run.sh", false);
    set_executable(&dir, b"dir-a", true);
    write(&dir, b"intent.txt", b"intent to add\n");
    git(&dir, &["add", "-N", "intent.txt"]);
    // Untracked files are not the index's business.
    write(&dir, b"untracked.txt", b"nobody asked\n");
    // An unpopulated submodule is an empty directory; without it git calls
    // the gitlink deleted.
    std::fs::create_dir(dir.join("sub")).expect("mkdir sub");

    let repo = Repo::discover(&dir).expect("discover");
    let worktree = repo.worktree_entries().expect("worktree");
    let paths: Vec<&[u8]> = worktree.iter().map(|(e, _)| e.path.as_slice()).collect();
    assert!(
        !paths.contains(&b"dir.txt".as_slice()),
        "deleted file skipped"
    );
    assert!(!paths.contains(&b"untracked.txt".as_slice()));
    assert!(paths.contains(&b"intent.txt".as_slice()));
    let index_paths: Vec<Vec<u8>> = parse_listing(&git(&dir, &["ls-files", "-s", "-z"]), false)
        .into_iter()
        .map(|(_, _, p)| p)
        .filter(|p| p != b"dir.txt")
        .collect();
    assert_eq!(
        paths,
        index_paths.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        "index order"
    );

    for (entry, data) in &worktree {
        let path = path_of(&dir, &entry.path);
        match entry.kind {
            EntryKind::Submodule => {
                assert_eq!(entry.path, b"sub");
                assert_eq!(entry.id, oid(&git_str(&dir, &["rev-parse", ":sub"])));
                assert!(data.is_empty());
            }
            EntryKind::Symlink => {
                assert_eq!(data, b"a b.txt");
                let expected = git_in(&dir, &["hash-object", "--stdin"], Some(data));
                assert_eq!(entry.id, oid(String::from_utf8_lossy(&expected).trim()));
            }
            EntryKind::Regular | EntryKind::Executable => {
                assert_eq!(data, &std::fs::read(&path).expect("read"));
                // The id of what git would store, as hash-object hashes
                // a path (this repository converts nothing, so the bytes
                // are the file's).
                let out = git_command(&dir)
                    .args(["hash-object", "--"])
                    .arg(OsStr::from_bytes(&entry.path))
                    .output()
                    .expect("git hash-object");
                assert!(out.status.success());
                let expected = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                assert_eq!(entry.id, oid(&expected), "{:?}", entry.path);
            }
        }
    }
    let kind_of = |path: &[u8]| {
        worktree
            .iter()
            .find(|(e, _)| e.path == path)
            .map(|(e, _)| e.kind)
            .expect("listed")
    };
    assert_eq!(kind_of(b"run.sh"), EntryKind::Regular, "exec bit dropped");
    assert_eq!(kind_of(b"dir-a"), EntryKind::Executable, "exec bit added");
    assert_eq!(kind_of(b"link"), EntryKind::Symlink);

    // The mapping form sees the same files in index order, and the same
    // bytes where it reads them (a file whose stat data match the index's
    // keeps the index's blob unread, as in git).
    let mapped = repo
        .map_worktree(None, |_, read| read.data.map(<[u8]>::to_vec))
        .expect("map");
    assert_eq!(
        mapped.iter().map(|(e, _)| e.id).collect::<Vec<_>>(),
        worktree.iter().map(|(e, _)| e.id).collect::<Vec<_>>()
    );
    for ((entry, read), (_, data)) in mapped.iter().zip(&worktree) {
        if let Some(read) = read {
            assert_eq!(read, data, "{:?}", entry.path);
        }
    }
}

/// `(id, size)` of every blob, as `git cat-file --batch-all-objects` sees them.
fn git_all_blobs(dir: &Path) -> Vec<(ObjectId, u64)> {
    git_all_of_kind(dir, "blob")
}

/// `(id, size)` of every object of `kind`, as `git cat-file
/// --batch-all-objects` sees them.
fn git_all_of_kind(dir: &Path, kind: &str) -> Vec<(ObjectId, u64)> {
    let out = git(
        dir,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype) %(objectname) %(objectsize)",
        ],
    );
    String::from_utf8(out)
        .expect("ascii")
        .lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            (f.next() == Some(kind)).then(|| {
                let id = oid(f.next().expect("id"));
                (id, f.next().expect("size").parse().expect("size"))
            })
        })
        .collect()
}

fn loose_path(dir: &Path, id: &ObjectId) -> PathBuf {
    let hex = id.to_string();
    dir.join(".git/objects").join(&hex[..2]).join(&hex[2..])
}

#[test]
fn all_blobs_match_cat_file_with_loose_and_packed() {
    let (_tmp, dir) = fixture();
    // Several versions of a file so the pack has delta chains.
    let mut text = String::new();
    for round in 0..12 {
        for line in 0..200 {
            text.push_str(&format!("round {round} line {line} of a file that grows\n"));
        }
        write(&dir, b"grow.txt", text.as_bytes());
        git(&dir, &["add", "grow.txt"]);
        git(&dir, &["commit", "-q", "-m", &format!("round {round}")]);
    }
    // A loose copy of an object that is about to be packed: the store then
    // holds it twice and all_blobs must list it once.
    let readme = oid(&git_str(&dir, &["rev-parse", "HEAD:README"]));
    let readme_file = loose_path(&dir, &readme);
    let readme_bytes = std::fs::read(&readme_file).expect("loose README blob");
    git(
        &dir,
        &["repack", "-a", "-d", "-q", "--depth=50", "--window=10"],
    );
    assert!(
        !readme_file.exists(),
        "repack -d prunes packed loose objects"
    );
    std::fs::create_dir_all(readme_file.parent().expect("fan-out dir")).expect("mkdir");
    std::fs::write(&readme_file, readme_bytes).expect("restore loose copy");
    // New loose objects after the pack, including an unreachable blob.
    write(&dir, b"later.txt", b"written after the repack\n");
    git(&dir, &["add", "later.txt"]);
    git(&dir, &["commit", "-q", "-m", "later"]);
    let dangling = git_in(&dir, &["hash-object", "-w", "--stdin"], Some(b"dangling\n"));
    let dangling = oid(String::from_utf8_lossy(&dangling).trim());
    assert!(loose_path(&dir, &dangling).exists());

    let repo = Repo::discover(&dir).expect("discover");
    let ours = repo.all_blobs().expect("all blobs");
    let mut theirs = git_all_blobs(&dir);
    theirs.sort();
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|(id, _)| *id == dangling));
    // The ids alone (no delta inflated for a size): the same blobs.
    assert_eq!(
        repo.all_blob_ids().expect("blob ids"),
        theirs.iter().map(|(id, _)| *id).collect::<Vec<_>>()
    );
    let (blobs, trees) = repo.all_blobs_and_trees().expect("blobs and trees");
    assert_eq!(blobs, theirs);
    let mut git_trees = git_all_of_kind(&dir, "tree");
    git_trees.sort();
    assert_eq!(trees, git_trees);

    // Reading them all back: bytes hash to their ids, sizes agree, results
    // come in input order. In a pack this small blobs are well over the
    // traversal threshold, so this goes through the delta-tree traversal
    // for the packed blobs and one-by-one reads for the loose ones.
    let ids: Vec<ObjectId> = ours.iter().rev().map(|(id, _)| *id).collect();
    let got = repo
        .map_blobs(&ids, &Feedback::none(), |i, data| {
            let id = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::object::Kind::Blob, data)
                .expect("hash");
            (i, id, data.len() as u64)
        })
        .expect("map blobs");
    for (pos, (i, id, len)) in got.iter().enumerate() {
        assert_eq!(*i, pos);
        assert_eq!(*id, ids[pos]);
        let size = ours.iter().find(|(o, _)| o == id).map(|(_, s)| *s);
        assert_eq!(Some(*len), size);
    }
    // The same object asked for twice is delivered twice.
    let twice = repo
        .map_blobs(&[readme, readme], &Feedback::none(), |i, d| (i, d.to_vec()))
        .expect("twice");
    assert_eq!(
        twice,
        vec![
            (0, b"hello again\n".to_vec()),
            (1, b"hello again\n".to_vec())
        ]
    );

    // One blob out of a pack goes the one-by-one way.
    let grow = oid(&git_str(&dir, &["rev-parse", "HEAD~1:grow.txt"]));
    let one = repo
        .map_blobs(&[grow], &Feedback::none(), |_, d| d.to_vec())
        .expect("one");
    assert_eq!(one[0], text.as_bytes());
    let mut reader = repo.reader();
    assert_eq!(reader.blob(&grow).expect("blob"), text.as_bytes());
    let mut buf = b"stale contents".to_vec();
    reader.blob_into(&readme, &mut buf).expect("blob_into");
    assert_eq!(buf, b"hello again\n");
    assert_eq!(
        reader.header(&grow).expect("header"),
        (gix::object::Kind::Blob, text.len() as u64)
    );
}

#[test]
fn readers_work_from_many_threads() {
    let (_tmp, dir) = fixture();
    git(&dir, &["repack", "-a", "-d", "-q"]);
    let repo = Repo::discover(&dir).expect("discover");
    let blobs = repo.all_blobs().expect("blobs");
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut reader = repo.reader();
                for (id, size) in &blobs {
                    assert_eq!(reader.blob(id).expect("blob").len() as u64, *size);
                }
            });
        }
    });
}

#[test]
fn map_blobs_rejects_non_blobs() {
    let (_tmp, dir) = fixture();
    git(&dir, &["repack", "-a", "-d", "-q"]);
    let repo = Repo::discover(&dir).expect("discover");
    let tree = repo.resolve_tree("HEAD").expect("tree");
    // Alone, the tree is read one by one ...
    let err = repo
        .map_blobs(&[tree], &Feedback::none(), |_, _| ())
        .expect_err("a tree");
    assert!(
        matches!(err, RepoError::WrongKind { id, actual: gix::object::Kind::Tree, .. } if id == tree),
        "{err:?}"
    );
    // ... among many, the pack is traversed; same error.
    let mut ids: Vec<ObjectId> = repo
        .all_blobs()
        .expect("blobs")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    ids.push(tree);
    let err = repo
        .map_blobs(&ids, &Feedback::none(), |_, _| ())
        .expect_err("a tree");
    assert!(
        matches!(err, RepoError::WrongKind { id, actual: gix::object::Kind::Tree, .. } if id == tree),
        "{err:?}"
    );
    assert!(err.to_string().contains(&tree.to_string()), "{err}");
    let mut reader = repo.reader();
    assert!(matches!(
        reader.blob(&tree),
        Err(RepoError::WrongKind { .. })
    ));
    let blob = repo.resolve_object("HEAD:README").expect("blob").0;
    assert!(matches!(
        repo.tree_entries(blob),
        Err(RepoError::WrongKind {
            expected: gix::object::Kind::Tree,
            ..
        })
    ));
}

#[test]
fn discover_from_subdirectories_and_worktrees() {
    let (tmp, dir) = fixture();
    let canon = |p: &Path| p.canonicalize().expect("canonicalize");
    let repo = Repo::discover(&dir.join("dir/sub")).expect("discover from subdir");
    assert_eq!(canon(repo.work_dir().expect("work dir")), canon(&dir));
    assert_eq!(canon(repo.common_dir()), canon(&dir.join(".git")));
    assert_eq!(repo.object_hash(), gix::hash::Kind::Sha1);

    let wt = tmp.path().join("linked");
    git(
        &dir,
        &[
            "worktree",
            "add",
            "-q",
            wt.to_str().expect("utf-8"),
            "HEAD~1",
        ],
    );
    let linked = Repo::discover(&wt).expect("discover linked worktree");
    assert_eq!(canon(linked.work_dir().expect("work dir")), canon(&wt));
    assert_eq!(canon(linked.common_dir()), canon(&dir.join(".git")));
    // The linked worktree has its own index and HEAD.
    assert_eq!(
        linked.resolve_tree("HEAD").expect("HEAD"),
        oid(&git_str(&wt, &["rev-parse", "HEAD^{tree}"]))
    );
    assert_eq!(
        linked.index_entries().expect("index").len(),
        parse_listing(&git(&wt, &["ls-files", "-s", "-z"]), false).len()
    );

    let bare = tmp.path().join("bare.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            dir.to_str().expect("utf-8"),
            "bare.git",
        ],
    );
    let bare_repo = Repo::discover(&bare).expect("discover bare");
    assert!(bare_repo.work_dir().is_none());
    assert_eq!(canon(bare_repo.common_dir()), canon(&bare));
    // No index: nothing staged, as git reads it (`git diff --cached` lists
    // every file as deleted); one written into the bare repository is read.
    assert!(bare_repo.index_entries().expect("no index").is_empty());
    git(&bare, &["read-tree", "HEAD"]);
    assert_eq!(
        Repo::discover(&bare)
            .expect("discover bare")
            .index_entries()
            .expect("index")
            .len(),
        parse_listing(&git(&bare, &["ls-files", "-s", "-z"]), false).len()
    );
    assert!(matches!(
        bare_repo.worktree_entries(),
        Err(RepoError::NoWorkTree)
    ));
    assert_eq!(
        bare_repo.resolve_tree("v1").expect("tag in bare repo"),
        repo.resolve_tree("v1").expect("tag")
    );
}

#[test]
fn not_a_repository() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = match Repo::discover(tmp.path()) {
        Ok(_) => panic!("a bare temp dir is no repository"),
        Err(err) => err,
    };
    assert!(matches!(err, RepoError::NotARepository { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("not a git repository (or any of the parent directories): "),
        "{msg}"
    );
    assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");

    let gone = tmp.path().join("does-not-exist");
    let err = match Repo::discover(&gone) {
        Ok(_) => panic!("no such directory"),
        Err(err) => err,
    };
    assert!(matches!(err, RepoError::BadDirectory { .. }), "{err:?}");
    assert!(err.to_string().starts_with("cannot change to '"), "{err}");
}

#[test]
fn revision_errors_read_like_git() {
    let (_tmp, dir) = fixture();
    let repo = Repo::discover(&dir).expect("discover");

    let err = repo.resolve_tree("nosuch").expect_err("unknown");
    assert!(matches!(err, RepoError::UnknownRevision { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "unknown revision or path not in the working tree: 'nosuch'"
    );
    let err = repo
        .resolve_object("HEAD:no/such/path")
        .expect_err("no path");
    assert!(matches!(err, RepoError::UnknownRevision { .. }), "{err:?}");

    let err = repo.resolve_tree("HEAD:README").expect_err("blob");
    assert!(matches!(err, RepoError::NotATreeish { .. }), "{err:?}");
    assert_eq!(err.to_string(), "'HEAD:README' is a blob, not a tree-ish");
}

#[test]
fn missing_and_corrupt_objects() {
    let (_tmp, dir) = fixture();
    let repo = Repo::discover(&dir).expect("discover");

    let missing = git_in(
        &dir,
        &["hash-object", "-w", "--stdin"],
        Some(b"soon gone\n"),
    );
    let missing = oid(String::from_utf8_lossy(&missing).trim());
    std::fs::remove_file(loose_path(&dir, &missing)).expect("delete loose object");
    let mut reader = repo.reader();
    let err = reader.blob(&missing).expect_err("missing");
    assert!(
        matches!(err, RepoError::MissingObject { id } if id == missing),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("object {missing} is missing from the object database")
    );
    let err = repo
        .map_blobs(&[missing], &Feedback::none(), |_, _| ())
        .expect_err("missing");
    assert!(matches!(err, RepoError::MissingObject { .. }), "{err:?}");

    let corrupt = git_in(
        &dir,
        &["hash-object", "-w", "--stdin"],
        Some(b"soon corrupt\n"),
    );
    let corrupt = oid(String::from_utf8_lossy(&corrupt).trim());
    let file = loose_path(&dir, &corrupt);
    std::fs::remove_file(&file).expect("rm read-only object");
    std::fs::write(&file, b"this is not zlib data at all").expect("corrupt object");
    let err = repo.reader().blob(&corrupt).expect_err("corrupt");
    // Named with its file, as git's "loose object ... is corrupt".
    assert!(
        matches!(&err, RepoError::CorruptLoose { id, path, .. } if *id == corrupt && *path == file),
        "{err:?}"
    );
    assert!(err.to_string().contains(&corrupt.to_string()), "{err}");
    // git fails too, so listing every object is an error, not a silent gap.
    assert!(repo.all_blobs().is_err());
}

#[test]
fn worktree_skips_files_behind_symlinked_dirs() {
    let (tmp, dir) = fixture();
    // `dir` becomes a symlink to a copy elsewhere: git considers everything
    // under it deleted rather than following the link out of the work tree.
    let outside = tmp.path().join("outside");
    std::fs::rename(dir.join("dir"), &outside).expect("move dir away");
    std::os::unix::fs::symlink(&outside, dir.join("dir")).expect("symlink dir");
    // A tracked file replaced by a directory is deleted too.
    std::fs::remove_file(dir.join("empty")).expect("rm");
    std::fs::create_dir(dir.join("empty")).expect("mkdir");

    let repo = Repo::discover(&dir).expect("discover");
    let ours: Vec<Vec<u8>> = repo
        .worktree_entries()
        .expect("worktree")
        .into_iter()
        .map(|(e, _)| e.path)
        .collect();
    let deleted: Vec<&[u8]> = {
        // Not `ls-files --deleted`: that one follows leading symlinks; the
        // index-to-work-tree diff is what git-simm mirrors.
        let out = git(&dir, &["diff", "--name-only", "-z", "--diff-filter=D"]);
        let owned: Vec<Vec<u8>> = out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        assert!(
            owned.iter().any(|p| p == b"dir/z.txt"),
            "git sees it deleted"
        );
        assert!(owned.iter().any(|p| p == b"empty"), "git sees it deleted");
        ours.iter()
            .filter(|p| owned.contains(p))
            .map(Vec::as_slice)
            .collect()
    };
    assert!(deleted.is_empty(), "listed although deleted: {deleted:?}");
    assert!(ours.iter().any(|p| p == b"README"));
}

#[test]
fn handles_are_shareable() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Repo>();
    send::<git_simm::repo::Reader>();
    send_sync::<RepoError>();
}

/// Run one of the `child_*` tests below in a fresh process with `env`, since
/// the test process's own environment must not be changed while other tests
/// run.
fn run_child(test: &str, cwd: &Path, env: &[(&str, &OsStr)]) {
    // Tests are named by their path inside the test crate (`it`).
    let test = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    };
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([&test, "--exact", "--ignored", "--test-threads=1"])
        .current_dir(cwd)
        .envs(env.iter().copied())
        .env("GIT_SIMM_TEST_CHILD", "1")
        .output()
        .expect("run child test");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "child test did not run"
    );
}

#[test]
fn git_dir_is_honoured() {
    let (tmp, dir) = fixture();
    let tree = git_str(&dir, &["rev-parse", "HEAD^{tree}"]);
    let git_dir = dir.join(".git");
    run_child(
        "child_git_dir",
        tmp.path(),
        &[
            ("GIT_DIR", git_dir.as_os_str()),
            ("GIT_SIMM_EXPECT_TREE", OsStr::new(&tree)),
        ],
    );
    let bogus = tmp.path().join("no-such-git-dir");
    run_child(
        "child_bad_git_dir",
        tmp.path(),
        &[("GIT_DIR", bogus.as_os_str())],
    );
}

#[test]
#[ignore = "run by git_dir_is_honoured in a child process"]
fn child_git_dir() {
    // `cargo test -- --ignored` alone runs this without its setup.
    let Ok(expected) = std::env::var("GIT_SIMM_EXPECT_TREE") else {
        return;
    };
    // The current directory is outside the repository: only GIT_DIR finds it.
    let repo = Repo::discover(Path::new(".")).expect("discover via GIT_DIR");
    assert_eq!(repo.resolve_tree("HEAD").expect("HEAD"), oid(&expected));
}

#[test]
#[ignore = "run by git_dir_is_honoured in a child process"]
fn child_bad_git_dir() {
    if std::env::var_os("GIT_SIMM_TEST_CHILD").is_none() {
        return;
    }
    let err = match Repo::discover(Path::new(".")) {
        Ok(_) => panic!("GIT_DIR points nowhere"),
        Err(err) => err,
    };
    assert!(matches!(err, RepoError::BadGitDir { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("not a git repository: '"),
        "{err}"
    );
}

/// Interrupted (its flag set after 100 blobs), fingerprinting stops with
/// `Interrupted` and stores what it computed, which the next run reuses.
#[test]
fn interrupted_fingerprinting_stops_and_keeps_what_it_computed() {
    use git_simm::progress::Discard;
    use git_simm::similarity::compute::{self, ComputeError};
    use git_simm::similarity::store::Store;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let r = util::moved_files_repo(3000, 30);
    let repo = Repo::discover(&r.path).expect("discover");
    let ids: Vec<ObjectId> = repo
        .all_blobs()
        .expect("blobs")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let dir = r.path.join(".git/simm");
    let mut store = Store::open(&dir, 20).expect("store");
    let flag = AtomicBool::new(false);
    let feedback = Feedback::new(&Discard, &flag);
    let read = AtomicUsize::new(0);
    let signing = compute::Signing::Sign;
    let err =
        compute::fingerprint_blobs_with(&repo, &mut store, &ids, &feedback, signing, |_, _| {
            if read.fetch_add(1, Ordering::Relaxed) + 1 == 100 {
                flag.store(true, Ordering::Relaxed);
            }
        })
        .expect_err("interrupted");
    assert!(matches!(err, ComputeError::Interrupted(_)), "{err:?}");
    let mut store = Store::open(&dir, 20).expect("store reopens");
    let kept = store.get_many(&ids).iter().flatten().count();
    let read = read.load(Ordering::Relaxed);
    assert!(
        kept >= 100 && kept == read && kept < ids.len(),
        "{kept} kept of {read} read, {} blobs",
        ids.len()
    );
    let (_, outcome) =
        compute::fingerprint_blobs(&repo, &mut store, &ids, &Feedback::none()).expect("resumed");
    assert_eq!((outcome.cached, outcome.computed), (kept, ids.len() - kept));

    // Already interrupted, reading stops before the first blob.
    let err = repo
        .map_blobs(&ids, &feedback, |_, _| ())
        .expect_err("interrupted");
    assert!(matches!(err, RepoError::Interrupted(_)), "{err:?}");
    assert!(git_simm::progress::is_interrupted(&err));
}
