//! Minimal reproductions of the ways `git-simm renames` has differed from
//! git on git's own test repositories (`benches/git-conformance.sh`) and on
//! real projects: each test builds the smallest repository that shows one
//! class of difference and requires git-simm's stdout and exit status to
//! be git's, byte for byte, in every state that matters (the index fresh or
//! stale, where git's answer depends on it).
//!
//! Every test first checks that git itself prints the line that makes the
//! case interesting, so none passes on a fixture that lost its point.
//!
//! The classes:
//! - a source git scores best (or ties best and comes first in git's slot
//!   order) that git-simm never scores: repetitive content, whose
//!   fingerprint follows its small remainder while git's score follows the
//!   long run (`repetitive_source_*`, `tied_source_*`);
//! - an unmerged path as a copy source: in the index (`--cached`) git takes
//!   it from the tree (diff-lib.c, `do_oneway_diff`); in the work tree an
//!   unmerged path whose content equals HEAD is dropped before detection
//!   (diff.c, `diffcore_skip_stat_unmatch`);
//! - a stale index in the work tree: an unchanged file whose stat data the
//!   index does not vouch for is queued as modified, found unchanged and
//!   dropped, so `-C -C` cannot take it as a source; with a fresh index it
//!   can;
//! - `diff.autoRefreshIndex=false`: stat-only changes are kept (`M`, and
//!   copy sources);
//! - an assume-unchanged entry is compared from the index;
//! - a sparse checkout in a blob-less partial clone: entries outside the
//!   cone are compared from the index, so nothing is read or fetched;
//! - a tree naming the null object id (git's t4054) against a stale index.

use crate::util;

use std::time::{Duration, SystemTime};

use util::{Repo, corpus_text, git_command, lossy, simm_command, stderr};

// ---------------------------------------------------------------------------
// Comparing with git.

/// The comparisons of one test; dropping it fails the test with every
/// disagreement, so one does not hide the others.
#[derive(Default)]
pub(crate) struct Verdicts {
    failures: Vec<String>,
}

/// One run: exit status (None when killed by a signal), stdout, stderr.
struct Run {
    code: Option<i32>,
    out: Vec<u8>,
    err: Vec<u8>,
}

fn run(mut cmd: std::process::Command) -> Run {
    let o = cmd.output().expect("run");
    Run {
        code: o.status.code(),
        out: o.stdout,
        err: o.stderr,
    }
}

impl Verdicts {
    /// `git diff --name-status -l0 --no-rename-empty <flags> <args>` and
    /// `git-simm renames --no-cache <flags> <args>` in `dir`: stdout and
    /// exit status must be the same. `before` runs before each of the two
    /// (to put the index back into the state under test: git's diff of the
    /// work tree rewrites a stale index). Returns git's stdout.
    pub(crate) fn compare_in(
        &mut self,
        dir: &std::path::Path,
        flags: &[&str],
        args: &[&str],
        before: &dyn Fn(),
    ) -> String {
        let mut git = git_command(dir);
        git.args(["diff", "--name-status", "-l0", "--no-rename-empty"])
            .args(flags)
            .args(args);
        before();
        let theirs = run(git);
        let mut simm = simm_command();
        simm.current_dir(dir)
            .args(["renames", "--no-cache"])
            .args(flags)
            .args(args);
        before();
        let ours = run(simm);
        if theirs.code != ours.code || theirs.out != ours.out {
            self.failures.push(format!(
                "git-simm renames --no-cache {flags:?} {args:?} differs from git diff \
                 --name-status -l0 --no-rename-empty (exit {:?} and {:?}):\n{}\
                 --- git's stderr:\n{}--- git-simm's stderr:\n{}",
                theirs.code,
                ours.code,
                line_diff(&lossy(&theirs.out), &lossy(&ours.out)),
                lossy(&theirs.err),
                lossy(&ours.err),
            ));
        }
        lossy(&theirs.out)
    }

    /// [`Verdicts::compare_in`] in the work tree of `r`, nothing run before.
    pub(crate) fn compare(&mut self, r: &Repo, flags: &[&str], args: &[&str]) -> String {
        self.compare_in(&r.path, flags, args, &|| {})
    }
}

/// The lines only one of two outputs has; both outputs whole when they
/// have the same lines (in another order).
fn line_diff(git: &str, ours: &str) -> String {
    let g: std::collections::BTreeSet<&str> = git.lines().collect();
    let o: std::collections::BTreeSet<&str> = ours.lines().collect();
    let mut msg = String::new();
    let only_git = git
        .lines()
        .filter(|l| !o.contains(l))
        .map(|l| ("git     ", l));
    let only_ours = ours
        .lines()
        .filter(|l| !g.contains(l))
        .map(|l| ("git-simm", l));
    let all: Vec<(&str, &str)> = only_git.chain(only_ours).collect();
    for (who, l) in all.iter().take(40) {
        msg.push_str(&format!("  only {who}: {l}\n"));
    }
    if all.len() > 40 {
        msg.push_str(&format!("  ... and {} more lines\n", all.len() - 40));
    }
    if msg.is_empty() {
        msg = format!("--- git:\n{git}--- git-simm:\n{ours}");
    }
    msg
}

impl Drop for Verdicts {
    fn drop(&mut self) {
        if !self.failures.is_empty() && !std::thread::panicking() {
            panic!(
                "{} comparison(s) with git disagree:\n\n{}",
                self.failures.len(),
                self.failures.join("\n")
            );
        }
    }
}

/// Fails unless git's output `out` has the line `line`: the fixture must
/// show what it was built to show.
#[track_caller]
pub(crate) fn git_printed(out: &str, line: &str) {
    assert!(
        out.lines().any(|l| l == line),
        "git no longer prints {line:?} here; the fixture needs a look:\n{out}"
    );
}

// ---------------------------------------------------------------------------
// Content.

/// The first `n` bytes or so of a corpus file, cut after a line end.
pub(crate) fn head(rel: &str, n: usize) -> Vec<u8> {
    let t = corpus_text(rel);
    let cut = t[..n.min(t.len())]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(n, |p| p + 1);
    t[..cut].to_vec()
}

/// `n` bytes of `c`: no line end, so git cuts it into 64-byte chunks that
/// all fall into one bucket, and the fingerprint counts its windows once.
pub(crate) fn repeat(c: u8, n: usize) -> Vec<u8> {
    vec![c; n]
}

const RUST: &str = "rust/regex-1.11.1/src/lib.rs";
const PYTHON: &str = "python/click-8.1.7/src/click/core.py";

// ---------------------------------------------------------------------------
// Sources git scores and git-simm does not.

/// Forty decoys: `a` runs of 13,000 to 15,340 bytes before one short
/// skeleton of real code, each with its own last line. Their fingerprints
/// are the skeleton's (the run votes once), so they are the nearest
/// sources of a new file made of the same skeleton after a longer run, and
/// score 70-85% against it.
fn decoys(r: &Repo, skeleton: &[u8]) {
    for i in 0..40 {
        r.write(format!("d/s{i:03}.txt"), &decoy(skeleton, i));
    }
}

fn decoy(skeleton: &[u8], i: usize) -> Vec<u8> {
    [
        repeat(b'a', 13_000 + 60 * i),
        skeleton.to_vec(),
        format!("// {i}\n").into_bytes(),
    ]
    .concat()
}

/// A new file of 18,000 `a` and a short skeleton; git
/// pairs it at 91% with an old file of 17,000 `a` and unrelated text, whose
/// fingerprint (that of the unrelated text: the run votes once) is at
/// chance distance. The decoys near the skeleton score at most 85%, so a
/// search that trusts fingerprint distance to bound the score never looks
/// at the 91% source (git-simm printed `C085 d/s039.txt new.txt`).
/// Renames (every source deleted), copies from modified files, copies
/// from all files.
#[test]
fn repetitive_source_that_git_scores_best_is_found() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let skeleton = head(RUST, 400);
    let rest = head(PYTHON, 1500);
    decoys(&r, &skeleton);
    r.write("rep17k.txt", &[repeat(b'a', 17_000), rest.clone()].concat());
    r.commit_all("base");
    r.git(&["tag", "base"]);
    let new = [repeat(b'a', 18_000), skeleton.clone()].concat();

    // Copies: every source edited in place (so -C takes its old version
    // as a source), the new file added.
    for i in 0..40 {
        r.write(
            format!("d/s{i:03}.txt"),
            &[decoy(&skeleton, i), b"// edited\n".to_vec()].concat(),
        );
    }
    r.write(
        "rep17k.txt",
        &[repeat(b'a', 17_000), rest, b"# edited\n".to_vec()].concat(),
    );
    r.write("new.txt", &new);
    r.commit_all("copies");
    r.git(&["tag", "copies"]);
    for flags in [&["-C"][..], &["-C", "-C"]] {
        let out = v.compare(&r, flags, &["base", "copies"]);
        git_printed(&out, "C091\trep17k.txt\tnew.txt");
    }

    // Renames: every source deleted.
    r.git(&["checkout", "-q", "-b", "renames", "base"]);
    r.git(&["rm", "-q", "-r", "d", "rep17k.txt"]);
    r.write("new.txt", &new);
    r.commit_all("renames");
    for flags in [&["-M"][..], &["-C"], &["-C", "-C"], &["-M30%"]] {
        let out = v.compare(&r, flags, &["base", "renames"]);
        git_printed(&out, "R091\trep17k.txt\tnew.txt");
    }
}

/// Two sources score exactly the same against a new file (git's raw score
/// too: limited to either one, `-M0.923` keeps the pair and `-M0.924`
/// drops it), and git takes the one that holds the earlier of its four
/// candidate slots (diffcore-rename.c, `record_if_better`, then the stable
/// sort of the matrix): here `a_first.txt`, scored first of all sources.
/// Its fingerprint is at chance distance from the new file's (its text is
/// unrelated; the `a` run votes once), while `m_tie.txt` holds the new
/// file's skeleton: git-simm scored only `m_tie.txt` and printed it.
///
/// Both are built so their scores are equal by construction: `a` runs of
/// whole 64-byte chunks, the skeleton exactly 640 bytes (10 chunks), so
/// `m_tie.txt` trades 10 chunks of `a` for the skeleton, and the unrelated
/// texts have the same length.
#[test]
fn tied_source_first_in_git_order_is_found() {
    let mut v = Verdicts::default();
    let mut skeleton = head(RUST, 640);
    skeleton.truncate(639);
    skeleton.resize(639, b'/');
    skeleton.push(b'\n');
    assert_eq!(skeleton.len(), 640);
    let python = corpus_text(PYTHON);
    let (u1, u2) = (&python[..1500], &python[3000..4500]);
    let chunks = |n: usize| repeat(b'a', 64 * n);
    for first in ["a_first.txt", "z_first.txt"] {
        let r = Repo::new();
        for i in 0..40 {
            r.write(
                format!("d/s{i:03}.txt"),
                &[
                    chunks(150 + 2 * i),
                    skeleton.clone(),
                    format!("// {i}\n").into_bytes(),
                ]
                .concat(),
            );
        }
        r.write(first, &[chunks(281), u1.to_vec()].concat());
        r.write(
            "m_tie.txt",
            &[chunks(271), skeleton.clone(), u2.to_vec()].concat(),
        );
        r.commit_all("base");
        r.git(&["tag", "base"]);
        r.write("new.txt", &[chunks(281), skeleton.clone()].concat());
        r.commit_all("copy");
        // With `z_first.txt` the tie is still decided for it: it replaces
        // a decoy in an earlier slot than `m_tie.txt` did.
        let out = v.compare(&r, &["-C", "-C"], &["base", "main"]);
        git_printed(&out, &format!("C092\t{first}\tnew.txt"));
    }
}

// ---------------------------------------------------------------------------
// Conflicts.

/// A conflicted merge of `a` (a real file edited on both sides), with `b`
/// beside it. Returns the repository in the conflicted state.
fn conflicted() -> Repo {
    let r = Repo::new();
    let text = corpus_text(RUST);
    r.write("a", &text);
    r.write("b", &corpus_text(PYTHON));
    r.commit_all("base");
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write("a", &edit_line(&text, 5, b"side line"));
    r.commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write("a", &edit_line(&text, 5, b"main line"));
    r.commit_all("main");
    let merge = r.git_output(&["merge", "-q", "side"]);
    assert!(!merge.status.success(), "the merge must conflict");
    r
}

/// `text` with line `n` (from 0) replaced by `line`.
pub(crate) fn edit_line(text: &[u8], n: usize, line: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, l) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i == n {
            out.extend_from_slice(line);
            out.push(b'\n');
        } else {
            out.extend_from_slice(l);
        }
    }
    out
}

/// The index: git takes an unmerged path's HEAD version
/// as a copy source (diff-lib.c, `do_oneway_diff`: the unmerged pair's
/// one side is filled from the tree; diffcore-rename.c registers it only
/// when copies are wanted). A copy of HEAD's `a` staged as `c` is
/// `C100 a c` with `-C` and `-C -C` (git-simm printed `A c`), an edited
/// copy `C0nn a e`; with `-M` it stays `A c`.
#[test]
fn unmerged_path_is_a_copy_source_of_the_index() {
    let mut v = Verdicts::default();
    let r = conflicted();
    let head_a = r.git(&["show", "HEAD:a"]);
    r.write("c", &head_a);
    r.write("e", &edit_line(&head_a, 40, b"an edited copy"));
    r.git(&["add", "c", "e"]);
    let out = v.compare(&r, &["-M"], &["--cached"]);
    git_printed(&out, "U\ta");
    git_printed(&out, "A\tc");
    for flags in [&["-C"][..], &["-C", "-C"]] {
        let out = v.compare(&r, flags, &["--cached"]);
        git_printed(&out, "U\ta");
        git_printed(&out, "C100\ta\tc");
        assert!(
            out.lines()
                .any(|l| l.starts_with('C') && l.ends_with("\ta\te")),
            "{out}"
        );
    }
}

/// The index of a repository with every tracked file's stat data either
/// matching (fresh) or not (stale), set up again before every run: git's
/// diff of the work tree refreshes a stale index and writes it when it
/// can, which would make the next run see another state.
pub(crate) struct IndexStates {
    dir: std::path::PathBuf,
    files: Vec<std::path::PathBuf>,
}

/// Long ago, so no entry is racily clean (an entry whose file is as new as
/// the index is smudged when the index is written, and git then treats it
/// as stale).
const FRESH_MTIME: u64 = 1_000_000_000;

impl IndexStates {
    /// The states of the index of `r`.
    pub(crate) fn new(r: &Repo) -> IndexStates {
        let listed = r.git(&["ls-files", "-z"]);
        let mut files: Vec<std::path::PathBuf> = listed
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| r.abs(p))
            .filter(|p| p.is_file())
            .collect();
        files.dedup();
        IndexStates {
            dir: r.path.clone(),
            files,
        }
    }

    fn set_mtimes(&self, secs: u64) {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        for f in &self.files {
            std::fs::File::options()
                .write(true)
                .open(f)
                .and_then(|f| f.set_modified(t))
                .expect("set mtime");
        }
    }

    /// Every file aged, then the index refreshed: its stat data match.
    /// (Setting a time changes the file's ctime, which git compares too,
    /// so the refresh comes after. An unmerged entry stays unmerged:
    /// `update-index` reports it and goes on.)
    pub(crate) fn fresh(&self) {
        self.set_mtimes(FRESH_MTIME);
        let o = git_command(&self.dir)
            .args(["update-index", "-q", "--refresh"])
            .output()
            .expect("run git");
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    }

    /// A fresh index, then every file's mtime changed: none of its stat
    /// data match.
    pub(crate) fn stale(&self) {
        self.fresh();
        self.set_mtimes(FRESH_MTIME + 1000);
    }
}

/// The work tree: an unmerged path whose work-tree file
/// equals HEAD's version is queued as modified (an unmerged entry's stat
/// data are never fresh), found unchanged and dropped before rename
/// detection (diff.c, `diffcore_skip_stat_unmatch`), so a copy of it is
/// `A c` with `-C -C`, whatever the index's state (git-simm printed
/// `C100 a c`). The unchanged `b` and its copy `d` show the index's state
/// at work: fresh, `b` is a source (`C100 b d`); stale, it is dropped like
/// `a` (`A d`).
#[test]
fn unmerged_path_unchanged_in_the_work_tree_is_no_copy_source() {
    let mut v = Verdicts::default();
    let r = conflicted();
    r.git(&["checkout", "--ours", "a"]);
    r.write("c", &r.git(&["show", "HEAD:a"]));
    r.write("d", &corpus_text(PYTHON));
    r.git(&["add", "c", "d"]);
    let states = IndexStates::new(&r);
    for flags in [&["-C"][..], &["-C", "-C"]] {
        let fresh = v.compare_in(&r.path, flags, &["HEAD"], &|| states.fresh());
        git_printed(&fresh, "A\tc");
        let stale = v.compare_in(&r.path, flags, &["HEAD"], &|| states.stale());
        git_printed(&stale, "A\tc");
        if flags.len() == 2 {
            git_printed(&fresh, "C100\tb\td");
            git_printed(&stale, "A\td");
        }
    }
    // The index side is the other rule: the unmerged `a` is a source.
    let cached = v.compare(&r, &["-C", "-C"], &["--cached"]);
    git_printed(&cached, "C100\ta\tc");
}

/// git's t4003, t4005 and t4009 leave such a state: an unchanged file
/// whose stat data the index does not match is no copy source for
/// `-C -C` in the work tree (its pair is dropped as unchanged before
/// detection), while with a fresh index it is: `A` against `C091` for an
/// edited copy, `A` against `C100` for an exact one. Sources that changed
/// are the same in both states.
#[test]
fn stale_index_entry_is_no_copy_source_of_the_work_tree() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let text = corpus_text(PYTHON);
    r.write("COPYING", &text);
    r.write("exact", &corpus_text(RUST));
    r.write("edited", &head("rust/regex-1.11.1/src/error.rs", 4000));
    r.commit_all("base");
    r.write("COPYING.1", &edit_line(&text, 30, b"a line of its own"));
    r.write("exact.copy", &corpus_text(RUST));
    r.write(
        "edited",
        &edit_line(&head("rust/regex-1.11.1/src/error.rs", 4000), 3, b"edited"),
    );
    r.write("edited.copy", &head("rust/regex-1.11.1/src/error.rs", 4000));
    r.git(&["add", "COPYING.1", "exact.copy", "edited.copy"]);
    let states = IndexStates::new(&r);
    let fresh = v.compare_in(&r.path, &["-C", "-C"], &["HEAD"], &|| states.fresh());
    git_printed(&fresh, "C100\texact\texact.copy");
    assert!(
        fresh
            .lines()
            .any(|l| l.starts_with("C0") && l.ends_with("\tCOPYING\tCOPYING.1")),
        "{fresh}"
    );
    let stale = v.compare_in(&r.path, &["-C", "-C"], &["HEAD"], &|| states.stale());
    git_printed(&stale, "A\tCOPYING.1");
    git_printed(&stale, "A\texact.copy");
    git_printed(&stale, "C100\tedited\tedited.copy");
    for flags in [&["-M"][..], &["-C"], &["-M30%"]] {
        v.compare_in(&r.path, flags, &["HEAD"], &|| states.fresh());
        v.compare_in(&r.path, flags, &["HEAD"], &|| states.stale());
    }
    // The index is not the work tree: its sources are the same either way.
    v.compare_in(&r.path, &["-C", "-C"], &["--cached"], &|| states.stale());
}

/// `diff.autoRefreshIndex=false` (git's default is true) turns the
/// dropping of stat-only changes off (builtin/diff.c: `skip_stat_unmatch`
/// is that setting): with a stale index, unchanged files print `M` and,
/// as modified files, are copy sources for `-C` too. git-simm ignored the
/// setting.
#[test]
fn auto_refresh_index_off_keeps_stat_only_changes() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    r.write("a", &corpus_text(PYTHON));
    r.write("b", &corpus_text(RUST));
    r.commit_all("base");
    r.write("c", &corpus_text(PYTHON));
    r.git(&["add", "c"]);
    r.git(&["config", "diff.autoRefreshIndex", "false"]);
    let states = IndexStates::new(&r);
    let stale = v.compare_in(&r.path, &["-C"], &["HEAD"], &|| states.stale());
    git_printed(&stale, "M\ta");
    git_printed(&stale, "M\tb");
    git_printed(&stale, "C100\ta\tc");
    let fresh = v.compare_in(&r.path, &["-C"], &["HEAD"], &|| states.fresh());
    git_printed(&fresh, "A\tc");
    for flags in [&["-M"][..], &["-C", "-C"]] {
        v.compare_in(&r.path, flags, &["HEAD"], &|| states.stale());
        v.compare_in(&r.path, flags, &["HEAD"], &|| states.fresh());
    }
}

/// An assume-unchanged entry (`git update-index --assume-unchanged`) is
/// compared from the index in the work tree as a skip-worktree one is
/// (diff-lib.c, `do_oneway_diff`: `CE_VALID` makes the entry "cached"):
/// an edit on disk does not show. git-simm printed `M b`.
#[test]
fn assume_unchanged_entry_is_taken_from_the_index() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    r.write("a", &corpus_text(PYTHON));
    r.write("b", &corpus_text(RUST));
    r.commit_all("base");
    r.git(&["update-index", "--assume-unchanged", "b"]);
    r.write("b", &edit_line(&corpus_text(RUST), 3, b"edited on disk"));
    r.git(&["mv", "a", "c"]);
    for flags in [&["-M"][..], &["-C"], &["-C", "-C"]] {
        let out = v.compare(&r, flags, &["HEAD"]);
        git_printed(&out, "R100\ta\tc");
        assert!(!out.contains("\tb"), "{out}");
        v.compare(&r, flags, &["--cached"]);
    }
}

// ---------------------------------------------------------------------------
// Sparse checkouts and partial clones.

/// As git's t6421: in a blob-less partial clone with a
/// sparse checkout, the entries outside the cone are skip-worktree: git
/// compares them from the index (diff-lib.c, `do_oneway_diff`: such an
/// entry counts as cached), so `git diff HEAD` reads no blob of them and
/// fetches nothing. git-simm stopped with "fatal: object ... is missing".
#[test]
fn sparse_checkout_of_a_blobless_clone_reads_nothing_outside_the_cone() {
    let mut v = Verdicts::default();
    let server = Repo::new();
    server.write("top.rs", &corpus_text(RUST));
    server.write("sub/core.py", &corpus_text(PYTHON));
    server.write(
        "sub/deep/error.rs",
        &corpus_text("rust/regex-1.11.1/src/error.rs"),
    );
    server.write(
        "other/types.py",
        &corpus_text("python/click-8.1.7/src/click/types.py"),
    );
    server.commit_all("base");
    server.git(&["config", "uploadpack.allowFilter", "true"]);
    server.git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let base = server.path.parent().expect("parent");
    let client = base.join("client");
    let url = format!("file://{}", server.path.display());
    let o = git_command(base)
        .args([
            "clone",
            "-q",
            "--filter=blob:none",
            "--sparse",
            &url,
            "client",
        ])
        .output()
        .expect("run git");
    assert!(o.status.success(), "clone: {}", stderr(&o));
    let skipped = git_command(&client)
        .args(["ls-files", "-t"])
        .output()
        .expect("run git");
    assert!(
        lossy(&skipped.stdout).contains("S sub/core.py"),
        "{}",
        lossy(&skipped.stdout)
    );
    for flags in [&["-M"][..], &["-C"], &["-C", "-C"]] {
        let out = v.compare_in(&client, flags, &["HEAD"], &|| {});
        assert_eq!(out, "", "git printed something");
        v.compare_in(&client, flags, &["--cached"], &|| {});
    }
    // A rename inside the cone is still found.
    let o = git_command(&client)
        .args(["mv", "top.rs", "moved.rs"])
        .output()
        .expect("run git");
    assert!(o.status.success(), "{}", stderr(&o));
    for flags in [&["-M"][..], &["-C", "-C"]] {
        let out = v.compare_in(&client, flags, &["HEAD"], &|| {});
        git_printed(&out, "R100\ttop.rs\tmoved.rs");
        v.compare_in(&client, flags, &["--cached"], &|| {});
    }
}

// ---------------------------------------------------------------------------
// Bogus trees.

/// git's t4054: a tree whose entry names the null object id, against the
/// work tree. git takes a work-tree file whose stat data the index does not
/// match as "object id unknown", which is the null id too, so with a stale
/// index the pair looks unchanged and is skipped: `-M` prints nothing, and
/// `-C -C` (which keeps unchanged pairs as sources) then fails to read the
/// null object (`fatal: unable to read 000...`, exit 128). With a fresh
/// index the entry's id is known: `M foo`. git-simm printed `M foo` in both
/// states.
#[test]
fn tree_naming_the_null_object_against_a_stale_index() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    r.write("foo", b"bar\n");
    r.git(&["add", "foo"]);
    let entry = [b"100644 foo\0".as_slice(), &[0u8; 20]].concat();
    let path = r.path.join("bogus-tree");
    std::fs::write(&path, &entry).expect("write");
    let bogus = r.git_str(&[
        "hash-object",
        "--literally",
        "-w",
        "-t",
        "tree",
        path.to_str().expect("utf-8 path"),
    ]);
    std::fs::remove_file(&path).expect("remove");
    let bogus = bogus.trim();
    let states = IndexStates::new(&r);
    let fresh = v.compare_in(&r.path, &["-M"], &[bogus], &|| states.fresh());
    git_printed(&fresh, "M\tfoo");
    let stale = v.compare_in(&r.path, &["-M"], &[bogus], &|| states.stale());
    assert_eq!(stale, "", "git printed something");
    v.compare_in(&r.path, &["-C", "-C"], &[bogus], &|| states.stale());
    v.compare_in(&r.path, &["-C"], &[bogus], &|| states.stale());
}

// ---------------------------------------------------------------------------
// Damaged objects git never reads.

/// `-C -C` makes every unchanged file a source, but git reads a source
/// only once some destination's size lets it score (diffcore-rename.c,
/// `estimate_similarity()`), so a damaged blob of an unchanged file of
/// another size stops nothing. git-simm read every source to fingerprint
/// it and stopped (`fatal: loose object ... is corrupt`, exit 128).
/// Damaged past its header: git still learns its size, as does
/// git-simm.
#[test]
fn damaged_unchanged_file_outside_every_size_window_is_not_read() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    r.write("big.rs", &corpus_text(RUST));
    r.write("small.py", &head(PYTHON, 3_000));
    r.commit_all("base");
    let mut copy = head(PYTHON, 3_000);
    copy.extend_from_slice(b"# a line of its own\n");
    r.write("copy.py", &copy);
    r.commit_all("copy");
    let id = r.rev("HEAD~:big.rs");
    let loose = r.path.join(".git/objects").join(&id[..2]).join(&id[2..]);
    let mut data = std::fs::read(&loose).expect("big.rs is a loose object");
    for i in (data.len() / 2..data.len() - 8).step_by(7) {
        data[i] ^= 0x55;
    }
    let mut perms = std::fs::metadata(&loose).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&loose, perms).expect("chmod");
    std::fs::write(&loose, &data).expect("damage");
    let out = v.compare(&r, &["-C", "-C"], &["HEAD~", "HEAD"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("C09") && l.ends_with("\tsmall.py\tcopy.py")),
        "{out}"
    );
    // Where a destination's size lets it score, both read it and stop.
    r.write("near.rs", &corpus_text(RUST)[..50_000]);
    r.commit_all("near");
    v.compare(&r, &["-C", "-C"], &["HEAD~2", "HEAD"]);
}

/// `--cached` in a bare repository: git reads the index file if one was
/// written there, else takes none (nothing staged), and lists `HEAD`'s
/// files as deleted. git-simm refused ("must be run in a work tree").
#[test]
fn cached_in_a_bare_repository_reads_its_index_or_none() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    r.write("a.py", &head(PYTHON, 4_000));
    r.write("b.rs", &head(RUST, 5_000));
    r.commit_all("base");
    let bare = r.path.with_file_name("bare.git");
    let o = git_command(&r.path)
        .args(["clone", "-q", "--bare", "."])
        .arg(&bare)
        .output()
        .expect("run git");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = v.compare_in(&bare, &["-M"], &["--cached"], &|| {});
    git_printed(&out, "D\ta.py");
    let o = git_command(&bare)
        .args(["read-tree", "HEAD"])
        .output()
        .expect("run git");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = v.compare_in(&bare, &["-C", "-C"], &["--cached"], &|| {});
    assert_eq!(out, "", "git printed something");
}
