//! `renames -B` (git's break detection) against git's own output.
//!
//! Each test builds a repository of real text (the pinned corpus) whose
//! changes exercise one part of diffcore-break.c and its interplay with
//! rename and copy detection (the scenarios of git's t4008 and t4023, the
//! thresholds, the size limit, empty sides, type changes, the sources git
//! stops culling), and compares `git simm renames` with `git diff
//! --name-status -l0 --no-rename-empty` in the three modes: the work tree
//! (with the index's stat data fresh and stale), the index, and two
//! trees. git-simm runs first each time: `git diff` refreshes stale stat
//! data in the index, which changes what the next run sees.

use crate::util;

use std::time::{Duration, SystemTime};

use util::{Repo, lossy};

/// `git simm renames <simm>`, then `git diff --name-status -l0
/// --no-rename-empty -M <git>` (the `-M` first, so that a later `-C` or
/// `--no-renames` overrides it, as on git's command line): identical
/// stdout, and both succeed. Returns git's output.
fn same(r: &Repo, simm: &[&str], git: &[&str]) -> String {
    let mut args = vec!["renames"];
    args.extend_from_slice(simm);
    let ours = r.simm(&args);
    let mut full = vec![
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--name-status",
        "-l0",
        "--no-rename-empty",
        "-M",
    ];
    full.extend_from_slice(git);
    let theirs = r.git(&full);
    assert!(
        ours.status.success(),
        "git-simm {args:?} failed: {}",
        lossy(&ours.stderr)
    );
    assert_eq!(
        lossy(&ours.stdout),
        lossy(&theirs),
        "git-simm {args:?} differs from git {full:?}"
    );
    lossy(&theirs)
}

/// Every tracked regular file of the work tree an hour older, so the
/// index's stat data no longer match and git (and git-simm) compare by
/// content.
fn make_stale(r: &Repo) {
    let listed = r.git_str(&["ls-files", "-s"]);
    let then = SystemTime::now() - Duration::from_secs(3600);
    for line in listed.lines() {
        let Some((meta, path)) = line.split_once('\t') else {
            continue;
        };
        if meta.starts_with("120000") || meta.starts_with("160000") {
            continue;
        }
        let p = r.path.join(path);
        if let Ok(f) = std::fs::File::options().write(true).open(&p) {
            f.set_modified(then).expect("set mtime");
        }
    }
}

/// The changes staged (the caller ran `git add -A`), compare with every
/// flag set in the three modes: the work tree against HEAD with fresh
/// stat data and again with stale ones, the index against HEAD, then,
/// after a commit, HEAD~1 against HEAD. Returns git's outputs by mode
/// (`"worktree"`, `"stale"`, `"cached"`, `"trees"`) and flags.
fn in_every_mode(r: &Repo, flag_sets: &[&[&str]]) -> Vec<(String, Vec<String>, String)> {
    let mut out = Vec::new();
    let mut record = |mode: &str, flags: &[&str], simm_extra: &[&str], git_extra: &[&str]| {
        let simm: Vec<&str> = flags.iter().chain(simm_extra).copied().collect();
        let git: Vec<&str> = flags.iter().chain(git_extra).copied().collect();
        let theirs = same(r, &simm, &git);
        out.push((
            mode.to_owned(),
            flags.iter().map(|s| s.to_string()).collect(),
            theirs,
        ));
    };
    r.git(&["update-index", "-q", "--refresh"]);
    for flags in flag_sets {
        record("worktree", flags, &[], &["HEAD"]);
    }
    for flags in flag_sets {
        make_stale(r);
        record("stale", flags, &[], &["HEAD"]);
    }
    for flags in flag_sets {
        record("cached", flags, &["--cached"], &["--cached"]);
    }
    r.commit_index("changes");
    for flags in flag_sets {
        record("trees", flags, &["HEAD~1", "HEAD"], &["HEAD~1", "HEAD"]);
    }
    out
}

/// git's output for `mode` and `flags`, from [`in_every_mode`]'s result.
fn output<'a>(all: &'a [(String, Vec<String>, String)], mode: &str, flags: &[&str]) -> &'a str {
    all.iter()
        .find(|(m, f, _)| m == mode && f.iter().map(String::as_str).eq(flags.iter().copied()))
        .map(|(_, _, o)| o.as_str())
        .unwrap_or_else(|| panic!("no output for {mode} {flags:?}"))
}

/// Whether `out` has the line `line`.
fn has(out: &str, line: &str) -> bool {
    out.lines().any(|l| l == line)
}

/// The number after `letter` on the line of `out` that ends with the
/// tab-separated `paths`: `Some(None)` for a bare letter, `None` when
/// there is no such line.
fn number(out: &str, letter: char, paths: &str) -> Option<Option<u32>> {
    out.lines().find_map(|l| {
        let (status, rest) = l.split_once('\t')?;
        let n = status.strip_prefix(letter)?;
        (rest == paths).then(|| n.parse().ok())
    })
}

/// Whether `out` reports `path` as a rewrite: `letter` with a score.
fn rewritten(out: &str, letter: char, path: &str) -> bool {
    matches!(number(out, letter, path), Some(Some(_)))
}

/// `n` real texts of 2 to 16 KiB, none similar to another.
fn texts(step: usize, n: usize) -> Vec<Vec<u8>> {
    util::texts(step, n)
}

/// `text` with its lines from `keep` of the way on replaced by the lines
/// of `other`: the first part of the old content kept, the rest new.
fn keep_head(text: &[u8], keep: f64, other: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let cut = (lines.len() as f64 * keep) as usize;
    let mut out: Vec<u8> = lines[..cut].concat();
    let others: Vec<&[u8]> = other.split_inclusive(|&b| b == b'\n').collect();
    out.extend(
        others
            .iter()
            .cycle()
            .take(lines.len() - cut)
            .copied()
            .flatten(),
    );
    out
}

/// git's t4008: a file rewritten to look like one deleted (a rename
/// across the rewrite), two files swapped (two renames), a file rewritten
/// and a copy of its old content added, beside a light edit that is
/// never broken.
#[test]
fn rewrites_pair_with_other_paths_as_in_git() {
    let t = texts(41, 8);
    let r = Repo::new();
    r.write("file0.txt", &t[0]);
    r.write("file1.txt", &t[1]);
    r.write("swap/a.txt", &t[2]);
    r.write("swap/b.txt", &t[3]);
    r.write("kept.txt", &t[4]);
    r.write("rewritten.txt", &t[5]);
    r.commit_all("base");
    r.remove("file0.txt");
    r.write("file1.txt", &util::edit(&t[0], 12, 1));
    r.write("swap/a.txt", &t[3]);
    r.write("swap/b.txt", &t[2]);
    r.write("kept.txt", &util::edit(&t[4], 9, 2));
    r.write("rewritten.txt", &t[6]);
    r.write("saved/old.txt", &t[5]);
    r.git(&["add", "-A"]);
    let all = in_every_mode(
        &r,
        &[
            &["-B"],
            &["-B", "-M"],
            &["-B", "-C"],
            &["-B", "-C", "-C"],
            &["--no-renames", "-B"],
            &["-M"],
            &["-C"],
            &["-B", "--diff-filter=B"],
            &["-B", "--diff-filter=M"],
            &["-B", "--diff-filter=bd"],
            &["-B", "-z"],
            &["--break-rewrites=50%/60%", "-C"],
        ],
    );
    for mode in ["worktree", "stale", "cached", "trees"] {
        let broken_only = output(&all, mode, &["--no-renames", "-B"]);
        assert!(has(broken_only, "D\tfile0.txt"), "{mode}: {broken_only}");
        assert!(has(broken_only, "M\tkept.txt"), "{mode}: {broken_only}");
        for path in ["file1.txt", "swap/a.txt", "swap/b.txt", "rewritten.txt"] {
            assert!(
                rewritten(broken_only, 'M', path),
                "{mode}: {path}: {broken_only}"
            );
        }
        let renames = output(&all, mode, &["-B", "-M"]);
        assert!(
            renames
                .lines()
                .any(|l| l.starts_with('R') && l.ends_with("\tfile0.txt\tfile1.txt")),
            "{mode}: {renames}"
        );
        assert!(
            has(renames, "R100\tswap/b.txt\tswap/a.txt"),
            "{mode}: {renames}"
        );
        assert!(
            has(renames, "R100\tswap/a.txt\tswap/b.txt"),
            "{mode}: {renames}"
        );
        // The rewritten file stays (joined again), so its old content
        // went to a copy.
        assert!(
            rewritten(renames, 'M', "rewritten.txt"),
            "{mode}: {renames}"
        );
        assert!(
            has(renames, "C100\trewritten.txt\tsaved/old.txt"),
            "{mode}: {renames}"
        );
        let plain = output(&all, mode, &["-M"]);
        assert!(has(plain, "M\tswap/a.txt"), "{mode}: {plain}");
        assert!(has(plain, "A\tsaved/old.txt"), "{mode}: {plain}");
        // B selects exactly the rewrites, M the plain modifications.
        let rewrites = output(&all, mode, &["-B", "--diff-filter=B"]);
        assert_eq!(
            rewrites.lines().collect::<Vec<_>>(),
            [number(renames, 'M', "rewritten.txt")
                .flatten()
                .map(|n| format!("M{n:03}\trewritten.txt"))
                .unwrap_or_default()],
            "{mode}"
        );
        let modified = output(&all, mode, &["-B", "--diff-filter=M"]);
        assert_eq!(modified, "M\tkept.txt\n", "{mode}");
    }
}

/// The thresholds: files keeping from 10% to 90% of their old content,
/// some with new lines appended, under `-B<n>/<m>` variants, in git's
/// number syntax. Across them git breaks and joins back, reports plain
/// modifications and rewrites with scores below 100.
#[test]
fn break_and_merge_thresholds_as_in_git() {
    let t = texts(43, 12);
    let r = Repo::new();
    let shares = [0.1, 0.3, 0.42, 0.5, 0.58, 0.66, 0.75, 0.9];
    for (i, _) in shares.iter().enumerate() {
        r.write(format!("keep{i}.txt"), &t[i]);
        r.write(format!("grow{i}.txt"), &t[i]);
    }
    r.commit_all("base");
    for (i, share) in shares.iter().enumerate() {
        let kept = keep_head(&t[i], *share, &t[8 + i % 4]);
        r.write(format!("keep{i}.txt"), &kept);
        let mut grown = keep_head(&t[i], *share, &t[8 + (i + 1) % 4]);
        grown.extend_from_slice(&t[8 + (i + 2) % 4]);
        r.write(format!("grow{i}.txt"), &grown);
    }
    r.git(&["add", "-A"]);
    let flag_sets: &[&[&str]] = &[
        &["-B"],
        &["-B/70%"],
        &["-B/40%"],
        &["-B30%"],
        &["-B70%"],
        &["-B30%/45%"],
        &["-B0.3/0.8"],
        &["-B100%/100%"],
        &["-B5"],
        &["-B/"],
        &["--no-renames", "-B/80%"],
        &["-B", "-C"],
    ];
    let all = in_every_mode(&r, flag_sets);
    let everything: String = all.iter().map(|(_, _, o)| o.as_str()).collect();
    let statuses: std::collections::BTreeSet<&str> = everything
        .lines()
        .filter_map(|l| l.split('\t').next())
        .collect();
    assert!(statuses.contains("M"), "{statuses:?}");
    assert!(
        statuses.iter().filter(|s| s.starts_with("M0")).count() >= 3,
        "rewrites with several scores: {statuses:?}"
    );
    // The merge score decides between a rewrite and a plain M.
    assert_ne!(
        output(&all, "trees", &["-B"]),
        output(&all, "trees", &["-B/70%"])
    );
}

/// Sizes and empty sides: pairs whose larger side is under 400 bytes
/// (git's `MINIMUM_BREAK_SIZE`) are never broken, 400 is; an empty old
/// side never is; an emptied file is, and without `--rename-empty` its
/// empty new half is no destination, where git then looks at the next
/// destination (here an exact rename) and prints the half alone (`A100`).
#[test]
fn sizes_and_empty_sides_as_in_git() {
    let t = texts(47, 6);
    let cut = |i: usize, n: usize| -> Vec<u8> { t[i][..n].to_vec() };
    let r = Repo::new();
    r.write("a-tiny.txt", &cut(0, 300));
    r.write("b-399.txt", &cut(1, 399));
    r.write("c-400.txt", &cut(2, 400));
    r.write("d-grow.txt", &cut(3, 100));
    r.write("e-from-empty.txt", b"");
    r.write("f-emptied.txt", &t[4]);
    r.write("g-old.txt", &t[5]);
    r.commit_all("base");
    r.write("a-tiny.txt", &cut(5, 300));
    r.write("b-399.txt", &cut(5, 399));
    r.write("c-400.txt", &cut(5, 400));
    r.write("d-grow.txt", &cut(0, 600));
    r.write("e-from-empty.txt", &t[1]);
    r.write("f-emptied.txt", b"");
    r.remove("g-old.txt");
    r.write("g-new.txt", &t[5]);
    r.git(&["add", "-A"]);
    let all = in_every_mode(
        &r,
        &[
            &["-B"],
            &["--no-renames", "-B"],
            &["-B", "-C", "-C"],
            &["-B", "--rename-empty"],
            &["-B", "-C", "--rename-empty"],
        ],
    );
    for mode in ["worktree", "stale", "cached", "trees"] {
        let out = output(&all, mode, &["-B"]);
        for line in [
            "M\ta-tiny.txt",
            "M\tb-399.txt",
            "M\te-from-empty.txt",
            "R100\tg-old.txt\tg-new.txt",
        ] {
            assert!(has(out, line), "{mode}: {line}\n{out}");
        }
        assert!(rewritten(out, 'M', "c-400.txt"), "{mode}: {out}");
        assert!(rewritten(out, 'M', "d-grow.txt"), "{mode}: {out}");
        // git knows an empty file by its id only where the index's stat
        // data are fresh; compared by content, it is a destination.
        let emptied = if mode == "stale" {
            "M100\tf-emptied.txt"
        } else {
            "A100\tf-emptied.txt"
        };
        assert!(has(out, emptied), "{mode}: {out}");
        let out = output(&all, mode, &["-B", "--rename-empty"]);
        assert!(has(out, "M100\tf-emptied.txt"), "{mode}: {out}");
    }
}

/// Where git 2.47 itself fails (an emptied file under `-B
/// --no-rename-empty` with no destination after it: "BUG: tracking failed
/// somehow"), `renames` reports the rewrite, as git does with
/// `--rename-empty`.
#[test]
fn an_emptied_file_alone_is_a_rewrite() {
    let t = texts(47, 2);
    let r = Repo::new();
    r.write("emptied.txt", &t[0]);
    r.commit_all("base");
    r.write("emptied.txt", b"");
    r.commit_all("emptied");
    let git = r.git_output(&[
        "diff",
        "--name-status",
        "-B",
        "-M",
        "--no-rename-empty",
        "HEAD~1",
        "HEAD",
    ]);
    let ours = r.simm(&["renames", "-B", "HEAD~1", "HEAD"]);
    assert!(ours.status.success(), "{}", lossy(&ours.stderr));
    assert_eq!(lossy(&ours.stdout), "M100\temptied.txt\n");
    let with_empty = r.git_str(&[
        "diff",
        "--name-status",
        "-B",
        "-M",
        "--rename-empty",
        "HEAD~1",
        "HEAD",
    ]);
    assert_eq!(with_empty, "M100\temptied.txt\n");
    // Should git stop failing, it must agree.
    if git.status.success() {
        assert_eq!(lossy(&git.stdout), lossy(&ours.stdout));
    }
}

/// An empty file that became a symlink breaks (a type change), and its
/// empty deletion half is no source without `--rename-empty`: git 2.47
/// stops there ("BUG: tracking failed somehow") whenever renames are
/// detected. When the symlink is a copy of another one, the deletion goes,
/// as git's write-back means it to and does with `--rename-empty`; when
/// nothing pairs it, the halves are joined again (`T100`).
#[test]
fn an_empty_file_turned_symlink_follows_git_with_rename_empty() {
    let r = Repo::new();
    r.write("e", b"");
    r.symlink("target", "s");
    r.commit_all("base");
    r.remove("e");
    r.symlink("target", "e");
    r.commit_all("empty file to symlink");
    for flags in [&["-B", "-M"][..], &["-B", "-C", "-C"], &["-B", "-C"]] {
        let mut args = vec!["diff", "--name-status", "-l0", "--rename-empty"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["HEAD~1", "HEAD"]);
        let want = r.git_str(&args);
        let mut ours = vec!["renames"];
        ours.extend_from_slice(flags);
        ours.extend_from_slice(&["HEAD~1", "HEAD"]);
        let out = r.simm(&ours);
        assert!(out.status.success(), "{flags:?}: {}", lossy(&out.stderr));
        assert_eq!(lossy(&out.stdout), want, "{flags:?}");
        // Should git stop failing without --rename-empty, it must agree.
        args[3] = "--no-rename-empty";
        let git = r.git_output(&args);
        if git.status.success() {
            assert_eq!(lossy(&git.stdout), want, "{flags:?}");
        }
    }
}

/// git's t4008 #5-#7 and t4023: a file that became a symlink is always
/// broken (`T100`, whatever its size), so its old content can be copied
/// elsewhere; a symlink that became a file; a rewrite that also set the
/// executable bit.
#[test]
fn type_changes_break_as_in_git() {
    let t = texts(53, 5);
    let r = Repo::new();
    r.write("file0.txt", &t[0]);
    r.symlink("file0.txt", "link");
    r.write("small.txt", b"x\n");
    r.write("run.sh", &t[1]);
    r.commit_all("base");
    r.remove("file0.txt");
    r.symlink("elsewhere", "file0.txt");
    r.write("copy.txt", &t[0]);
    r.remove("link");
    r.write("link", &t[2]);
    r.remove("small.txt");
    r.symlink("tiny", "small.txt");
    r.write("run.sh", &t[3]);
    r.chmod("run.sh", 0o755);
    r.git(&["add", "-A"]);
    let all = in_every_mode(
        &r,
        &[
            &["-B"],
            &["-B", "-C"],
            &["-B", "-C", "-C"],
            &["--no-renames", "-B"],
            &["-M"],
            &["-B", "--diff-filter=T"],
        ],
    );
    for mode in ["worktree", "stale", "cached", "trees"] {
        let out = output(&all, mode, &["-B"]);
        for line in [
            "T100\tfile0.txt",
            "C100\tfile0.txt\tcopy.txt",
            "T100\tlink",
            "T100\tsmall.txt",
        ] {
            assert!(has(out, line), "{mode}: {line}\n{out}");
        }
        assert!(rewritten(out, 'M', "run.sh"), "{mode}: {out}");
        let plain = output(&all, mode, &["-M"]);
        assert!(has(plain, "T\tfile0.txt"), "{mode}: {plain}");
        assert!(has(plain, "A\tcopy.txt"), "{mode}: {plain}");
    }
}

/// A broken pair whose rewrite score is under the merge score "did not
/// really want to get broken": its old half counts as used from the
/// start, so renames cannot take it and only copies can; and once a
/// broken half is a source, git keeps sources already used by exact
/// renames in the matrix (no culling), where four of them can fill a
/// destination's slots ahead of the source it would otherwise take.
#[test]
fn broken_sources_as_git_uses_them() {
    let t = texts(59, 6);
    let r = Repo::new();
    // About half the lines replaced: broken (half the file edited) but
    // with a rewrite score under 60%.
    r.write("half.txt", &t[0]);
    for i in 1..=4 {
        r.write(format!("same/x{i}.txt"), &t[1]);
    }
    r.write("z.txt", &util::edit(&t[1], 3, 7));
    r.write("unrelated.txt", &t[2]);
    r.commit_all("base");
    r.write("half.txt", &keep_head(&t[0], 0.46, &t[3]));
    r.write("copy-of-half.txt", &t[0]);
    for i in 1..=4 {
        r.mv(format!("same/x{i}.txt"), format!("moved/x{i}.txt"));
    }
    r.remove("z.txt");
    r.write("near.txt", &util::edit(&t[1], 10, 8));
    r.write("unrelated.txt", &t[4]);
    r.git(&["add", "-A"]);
    let all = in_every_mode(
        &r,
        &[
            &["-M"],
            &["-C"],
            &["-B"],
            &["-B", "-C"],
            &["-B", "-C", "-C"],
            &["-B/40%"],
        ],
    );
    for mode in ["worktree", "stale", "cached", "trees"] {
        let plain = output(&all, mode, &["-M"]);
        assert!(
            plain
                .lines()
                .any(|l| l.starts_with('R') && l.ends_with("\tz.txt\tnear.txt")),
            "{mode}: without -B, near.txt is z.txt renamed\n{plain}"
        );
        let broken = output(&all, mode, &["-B"]);
        for line in [
            "A\tnear.txt",
            "D\tz.txt",
            "A\tcopy-of-half.txt",
            "M\thalf.txt",
        ] {
            assert!(has(broken, line), "{mode}: {line}\n{broken}");
        }
        let copies = output(&all, mode, &["-B", "-C"]);
        assert!(
            has(copies, "C100\thalf.txt\tcopy-of-half.txt"),
            "{mode}: {copies}"
        );
    }
}

/// `--json` under `-B`: a rewrite's number as `dissimilarity`, R and C
/// keeping theirs in `score`, and how many pairs were broken; the same
/// changes as git's name-status lines.
#[test]
fn json_reports_rewrites() {
    let t = texts(61, 4);
    let r = Repo::new();
    r.write("a.txt", &t[0]);
    r.write("b.txt", &t[1]);
    r.commit_all("base");
    r.write("a.txt", &t[2]);
    r.write("c.txt", &t[0]);
    r.remove("b.txt");
    r.write("d.txt", &util::edit(&t[1], 10, 3));
    r.commit_all("changes");
    let git = same(&r, &["-B", "HEAD~1", "HEAD"], &["-B", "HEAD~1", "HEAD"]);
    let o = r.simm(&["renames", "-B", "--json", "HEAD~1", "HEAD"]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let lines: Vec<String> = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            let status = c["status"].as_str().expect("status");
            let number = c["score"].as_u64().or(c["dissimilarity"].as_u64());
            let mut line = match number {
                Some(n) => format!("{status}{n:03}"),
                None => status.to_owned(),
            };
            let path = |side: &str| c[side]["path"].as_str().map(str::to_owned);
            let paths = if "RC".contains(status) {
                vec![path("old"), path("new")]
            } else {
                vec![path("old").or(path("new"))]
            };
            for p in paths.into_iter().flatten() {
                line.push('\t');
                line.push_str(&p);
            }
            line
        })
        .collect();
    let expected: Vec<&str> = git.lines().collect();
    assert_eq!(lines, expected);
    let n = number(&git, 'M', "a.txt")
        .flatten()
        .expect("a.txt rewritten");
    let rewrite = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["status"] == "M" && c["new"]["path"] == "a.txt")
        .expect("a.txt");
    assert_eq!(rewrite["dissimilarity"], n);
    assert!(rewrite["score"].is_null());
    assert_eq!(doc["stats"]["broken"], 1);
    assert!(has(&git, "C100\ta.txt\tc.txt"), "{git}");
}

/// Break detection counts bytes as the rename score does, text or binary
/// as the path's attributes say: a file whose CRLF line endings became LF
/// lost only its CRs as text (a plain `M`), but every line as binary
/// (`-diff`: a rewrite).
#[test]
fn attributes_decide_text_or_binary_as_in_git() {
    let t = texts(79, 1);
    let crlf: Vec<u8> = t[0]
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|l| match l.strip_suffix(b"\n") {
            Some(body) => [body, b"\r\n"].concat(),
            None => l.to_vec(),
        })
        .collect();
    let r = Repo::new();
    r.write(".gitattributes", b"*.dat -diff\n");
    r.write("text.txt", &crlf);
    r.write("data.dat", &crlf);
    r.commit_all("base");
    r.write("text.txt", &t[0]);
    r.write("data.dat", &t[0]);
    r.git(&["add", "-A"]);
    let all = in_every_mode(&r, &[&["-B"], &["--no-renames", "-B"], &["-B", "-C", "-C"]]);
    for mode in ["worktree", "stale", "cached", "trees"] {
        let out = output(&all, mode, &["-B"]);
        assert!(has(out, "M\ttext.txt"), "{mode}: {out}");
        assert!(rewritten(out, 'M', "data.dat"), "{mode}: {out}");
    }
}
