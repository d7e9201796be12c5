//! `.gitattributes` in rename scoring: paths git scores as binary (or as
//! text) by attribute, read from where git reads them, compared with
//! `git diff -l0 --no-rename-empty --name-status` itself.
//!
//! Only the CR of a CRLF counts differently between text and binary, so
//! every history here renames and edits CRLF files (real text of the
//! pinned corpus with CRLF line ends): the percentages git prints change
//! with the decision, and each test first checks that they do, so that it
//! could fail if git-simm ignored the attributes.

use std::path::Path;

use crate::util::{Repo, corpus_files, git_command, is_text, lossy, path_with_simm, succeeded};

/// The option sets every comparison runs.
const OPTION_SETS: &[&[&str]] = &[&["-M"], &["-C"], &["-C", "-C"], &["-M30%"]];

/// `n` real texts of the corpus, 2-12 KiB, with CRLF line ends.
fn crlf_texts(n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in corpus_files() {
        let data = std::fs::read(f).expect("read corpus file");
        if !(2048..12 * 1024).contains(&data.len()) || !is_text(&data) || data.contains(&b'\r') {
            continue;
        }
        let mut crlf = Vec::with_capacity(data.len() * 11 / 10);
        for line in data.split_inclusive(|&b| b == b'\n') {
            match line.strip_suffix(b"\n") {
                Some(body) => {
                    crlf.extend_from_slice(body);
                    crlf.extend_from_slice(b"\r\n");
                }
                None => crlf.extend_from_slice(line),
            }
        }
        out.push(crlf);
        if out.len() == n {
            break;
        }
    }
    assert_eq!(out.len(), n, "the corpus has enough texts");
    out
}

/// `text` with every fifth line replaced and a few lines appended: still
/// well above 50% similar, and its score moves with the CRs counted.
fn edit(text: &[u8], salt: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % 5 == salt % 5 {
            out.extend_from_slice(format!("edited line {i} of {salt}\r\n").as_bytes());
        } else {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(format!("appended {salt}\r\n").as_bytes());
    out
}

/// A text with a NUL in its first 8000 bytes: binary by content.
fn with_nul(text: &[u8]) -> Vec<u8> {
    let mut v = b"\0header\r\n".to_vec();
    v.extend_from_slice(text);
    v
}

/// git's and git-simm's outputs for `args` (after `git diff -l0
/// --no-rename-empty --name-status` / `git-simm renames`), with `pre`
/// before the subcommand on both sides (`--attr-source=X`, `-c k=v`): both
/// run through git, which hands `pre` to git-simm as git does.
fn both(dir: &Path, pre: &[&str], args: &[&str]) -> (String, String) {
    let mut g: Vec<&str> = pre.to_vec();
    g.extend_from_slice(&["diff", "-l0", "--no-rename-empty", "--name-status"]);
    g.extend_from_slice(args);
    let git = lossy(&succeeded(
        &g,
        git_command(dir).args(&g).output().expect("run git"),
    ));
    let mut s: Vec<&str> = pre.to_vec();
    s.extend_from_slice(&["simm", "renames"]);
    s.extend_from_slice(args);
    let out = git_command(dir)
        .env("PATH", path_with_simm())
        .args(&s)
        .output()
        .expect("run git simm");
    assert!(
        out.status.success(),
        "git {s:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (git, lossy(&out.stdout))
}

/// Every option set gives git's output; returns git's outputs, to compare
/// with another attribute setting.
fn agree(dir: &Path, pre: &[&str], revs: &[&str]) -> Vec<String> {
    OPTION_SETS
        .iter()
        .map(|opts| {
            let mut args: Vec<&str> = opts.to_vec();
            args.extend_from_slice(revs);
            let (git, simm) = both(dir, pre, &args);
            assert_eq!(simm, git, "{pre:?} {args:?}");
            git
        })
        .collect()
}

/// A history of CRLF files renamed with edits, under `dirs` (each file
/// once in each directory), plus the same edited blob at two paths whose
/// attributes may differ (`one/same.txt`, `two/same.txt`).
fn crlf_history(r: &Repo, dirs: &[&str]) {
    let texts = crlf_texts(6);
    for d in dirs {
        for (i, t) in texts.iter().enumerate() {
            r.write(format!("{d}/f{i}.txt"), t);
        }
        r.write(format!("{d}/n.dat"), &with_nul(&texts[0]));
    }
    r.write("src/shared.txt", &texts[5]);
    r.commit_all("base");
    for d in dirs {
        for (i, t) in texts.iter().enumerate() {
            r.remove(format!("{d}/f{i}.txt"));
            r.write(format!("{d}/g{i}.txt"), &edit(t, i));
        }
        r.remove(format!("{d}/n.dat"));
        r.write(format!("{d}/m.dat"), &edit(&with_nul(&texts[0]), 1));
    }
    r.remove("src/shared.txt");
    let same = edit(&texts[5], 3);
    r.write("one/same.txt", &same);
    r.write("two/same.txt", &same);
    r.commit_all("renamed and edited");
}

#[test]
fn binary_and_minus_diff_force_binary_as_in_git() {
    let r = Repo::new();
    crlf_history(&r, &["a", "b", "c"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // `binary` (the builtin macro) on a, `-diff` on b, one of the two
    // paths of one blob: the same blob scored both ways in one run.
    r.write(
        ".gitattributes",
        b"a/** binary\nb/*.txt -diff\none/* binary\n",
    );
    let attributed = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(plain, attributed, "the attributes change git's scores");
    assert!(
        attributed[0].contains("one/same.txt") && attributed[0].contains("two/same.txt"),
        "{}",
        attributed[0]
    );
}

#[test]
fn diff_set_forces_text_on_a_nul_file_and_drivers_decide() {
    let r = Repo::new();
    crlf_history(&r, &["a", "b", "c"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // `diff` set: text although there is a NUL; diff=yes: a driver that
    // says binary; diff=no: one that says text; diff=auto: `auto`;
    // diff=cpp: a builtin, content decides; diff=unknown: no such driver,
    // the default one.
    r.write(
        ".gitattributes",
        b"*.dat diff\nb/* diff=yes\nc/*.txt diff=unknown\nc/*.dat diff=no\none/* diff=cpp\ntwo/* diff=auto\n",
    );
    r.git(&["config", "diff.yes.binary", "true"]);
    r.git(&["config", "diff.no.binary", "false"]);
    r.git(&["config", "diff.auto.binary", "auto"]);
    let drivers = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(plain, drivers, "the attributes change git's scores");
    // The default driver decides for unknown drivers and paths without
    // the attribute.
    r.git(&["config", "diff.default.binary", "true"]);
    let default = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(drivers, default, "diff.default.binary changes git's scores");
    // A value git cannot read is an error, as in git.
    r.git(&["config", "diff.yes.binary", "maybe"]);
    let git = r.git_output(&["diff", "-M", "--name-status", "HEAD~", "HEAD"]);
    let simm = r.simm(&["renames", "HEAD~", "HEAD"]);
    assert_eq!(git.status.code(), Some(128));
    assert_eq!(simm.status.code(), Some(128));
    let err = String::from_utf8_lossy(&simm.stderr);
    assert!(
        err.contains("bad boolean config value 'maybe' for 'diff.yes.binary'"),
        "{err}"
    );
}

#[test]
fn textconv_plays_no_part_in_rename_scores() {
    let r = Repo::new();
    crlf_history(&r, &["a"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // A textconv that maps every file to the same line would make every
    // pair 100% similar if rename detection ran it; git does not, and
    // neither does git-simm.
    r.write(".gitattributes", b"* diff=conv\n");
    r.git(&["config", "diff.conv.textconv", "sh -c 'echo same' --"]);
    let conv = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_eq!(plain, conv, "git ignores textconv in rename detection");
    // With `binary` configured too, the driver's binary decides.
    r.git(&["config", "diff.conv.binary", "true"]);
    let binary = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(conv, binary, "diff.conv.binary changes git's scores");
}

#[test]
fn subdirectory_attributes_macros_and_info_attributes() {
    let r = Repo::new();
    crlf_history(&r, &["a", "b", "c"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // A macro defined at the top and used below; a macro defined below is
    // ignored by git ("not allowed"); a deeper file overrides a higher one.
    r.write(".gitattributes", b"[attr]nodiff -diff\n* diff\n");
    r.write("a/.gitattributes", b"*.txt nodiff\n");
    r.write("b/.gitattributes", b"[attr]local -diff\n*.txt local\n");
    r.write("c/.gitattributes", b"g1.txt binary\ng2.txt -diff\n");
    let sub = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(plain, sub, "the attributes change git's scores");
    // $GIT_DIR/info/attributes, above every .gitattributes file.
    r.write(".git/info/attributes", b"c/* diff\na/g3.txt diff\n");
    let info = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    assert_ne!(sub, info, "info/attributes changes git's scores");
}

#[test]
fn staged_attributes_count_for_the_index_not_for_two_trees() {
    let r = Repo::new();
    crlf_history(&r, &["a"]);
    // `* binary` staged, then removed from the work tree: a diff of two
    // trees does not load the index and sees none; `--cached` and the
    // work tree read the index where the work tree has no file.
    r.write(".gitattributes", b"* binary\n");
    r.git(&["add", ".gitattributes"]);
    r.remove(".gitattributes");
    let trees = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    let cached = agree(&r.path, &[], &["--cached", "HEAD~"]);
    let worktree = agree(&r.path, &[], &["HEAD~"]);
    // The work tree's file, when there is one, wins over the index's.
    r.write(".gitattributes", b"* diff\n");
    let both_files = agree(&r.path, &[], &["--cached", "HEAD~"]);
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|s| {
                s.lines()
                    .filter(|l| !l.ends_with(".gitattributes"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect()
    };
    assert_ne!(
        strip(&trees),
        strip(&cached),
        "git reads the staged file for --cached only"
    );
    assert_eq!(strip(&cached), strip(&worktree));
    assert_ne!(strip(&cached), strip(&both_files));
}

#[test]
fn attr_source_environment_and_attr_tree() {
    let r = Repo::new();
    crlf_history(&r, &["a"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // A commit whose tree carries `* binary`, not checked out.
    r.write(".gitattributes", b"* binary\n");
    r.commit_all("attributes");
    r.git(&["rm", "-q", ".gitattributes"]);
    r.commit_all("no attributes");
    let from_tree = agree(&r.path, &["--attr-source=HEAD~"], &["HEAD~3", "HEAD~2"]);
    assert_ne!(
        plain, from_tree,
        "the attribute source changes git's scores"
    );
    assert_eq!(
        agree(&r.path, &["-c", "attr.tree=HEAD~"], &["HEAD~3", "HEAD~2"]),
        from_tree
    );
    // The option of `renames` and the variable, straight to git-simm.
    for (i, opts) in OPTION_SETS.iter().enumerate() {
        let mut args = vec!["renames", "--attr-source", "HEAD~"];
        args.extend_from_slice(opts);
        args.extend_from_slice(&["HEAD~3", "HEAD~2"]);
        assert_eq!(lossy(&succeeded(&args, r.simm(&args))), from_tree[i]);
        let mut env_args = vec!["renames"];
        env_args.extend_from_slice(opts);
        env_args.extend_from_slice(&["HEAD~3", "HEAD~2"]);
        let out = crate::util::simm_command()
            .current_dir(&r.path)
            .env("GIT_ATTR_SOURCE", "HEAD~")
            .args(&env_args)
            .output()
            .expect("run git-simm");
        assert_eq!(lossy(&out.stdout), from_tree[i], "GIT_ATTR_SOURCE");
    }
    // The option overrides the variable, as git's --attr-source does.
    let out = crate::util::simm_command()
        .current_dir(&r.path)
        .env("GIT_ATTR_SOURCE", "no-such-rev")
        .args(["renames", "--attr-source=HEAD~", "HEAD~3", "HEAD~2"])
        .output()
        .expect("run git-simm");
    assert_eq!(lossy(&out.stdout), from_tree[0]);
    // A bad source is fatal (128) in both; a bad attr.tree is ignored.
    let git = r.git_output(&[
        "--attr-source=no-such-rev",
        "diff",
        "-M",
        "HEAD~3",
        "HEAD~2",
    ]);
    let simm = r.simm(&["renames", "--attr-source=no-such-rev", "HEAD~3", "HEAD~2"]);
    assert_eq!(git.status.code(), Some(128));
    assert_eq!(simm.status.code(), Some(128));
    assert!(
        String::from_utf8_lossy(&simm.stderr)
            .contains("fatal: bad --attr-source or GIT_ATTR_SOURCE: 'no-such-rev'"),
        "{}",
        String::from_utf8_lossy(&simm.stderr)
    );
    assert_eq!(
        agree(
            &r.path,
            &["-c", "attr.tree=no-such-rev"],
            &["HEAD~3", "HEAD~2"]
        ),
        plain
    );
}

#[test]
fn bare_repository_reads_no_in_tree_attributes() {
    let r = Repo::new();
    crlf_history(&r, &["a"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    r.write(".gitattributes", b"* binary\n");
    r.commit_all("attributes");
    let bare_dir = r.path.parent().expect("parent").join("bare.git");
    r.git(&[
        "clone",
        "-q",
        "--bare",
        ".",
        bare_dir.to_str().expect("utf-8"),
    ]);
    // git 2.47 reads no .gitattributes in a bare repository, HEAD's
    // neither, unless told where (attr.tree, --attr-source).
    assert_eq!(agree(&bare_dir, &[], &["HEAD~2", "HEAD~"]), plain);
    let head = agree(&bare_dir, &["-c", "attr.tree=HEAD"], &["HEAD~2", "HEAD~"]);
    assert_ne!(head, plain, "attr.tree=HEAD changes git's scores");
    assert_eq!(
        agree(&bare_dir, &["--attr-source=HEAD"], &["HEAD~2", "HEAD~"]),
        head
    );
    // info/attributes counts in a bare repository too.
    std::fs::create_dir_all(bare_dir.join("info")).expect("mkdir");
    std::fs::write(bare_dir.join("info/attributes"), "* binary\n").expect("write");
    assert_eq!(agree(&bare_dir, &[], &["HEAD~2", "HEAD~"]), head);
}

#[test]
fn big_file_threshold_does_not_make_renames_binary() {
    let r = Repo::new();
    crlf_history(&r, &["a"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // git loads both blobs before scoring, and with the data loaded the
    // NUL rule decides whatever the size.
    assert_eq!(
        agree(
            &r.path,
            &["-c", "core.bigFileThreshold=100"],
            &["HEAD~", "HEAD"]
        ),
        plain
    );
}

/// The `C<score>` git's `diff --cached -C -C` gives `path`.
fn git_copy_score(r: &Repo, path: &str) -> u32 {
    let out = r.git_str(&["diff", "--cached", "-l0", "--name-status", "-C", "-C"]);
    let line = out
        .lines()
        .find(|l| l.starts_with('C') && l.ends_with(path))
        .unwrap_or_else(|| panic!("git sees no copy to {path}: {out}"));
    line[1..4].parse().expect("score")
}

#[test]
fn check_scores_near_copies_as_their_attributes_say() {
    let r = Repo::new();
    let text = crlf_texts(1).remove(0);
    r.write("orig/a.txt", &text);
    r.commit_all("base");
    // A light edit: a near-copy whichever way it is scored.
    let mut copy = text.clone();
    copy.extend_from_slice(b"one more line\r\n");
    r.write("dup/b.txt", &copy);
    r.git(&["add", "dup/b.txt"]);
    let plain = git_copy_score(&r, "dup/b.txt");
    // Attributes in the work tree only (not staged), as git reads them
    // for --cached.
    r.write(".gitattributes", b"dup/* binary\norig/* binary\n");
    let binary = git_copy_score(&r, "dup/b.txt");
    assert_ne!(plain, binary, "the attributes change git's score");
    let o = r.simm(&["check", "--staged", "--no-strict"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("'dup/b.txt' is a {binary}% copy of 'orig/a.txt'")),
        "git says {binary}% (without attributes {plain}%): {err}"
    );
}

#[test]
fn similar_scores_each_path_as_its_attributes_say() {
    let r = Repo::new();
    let text = crlf_texts(1).remove(0);
    // One blob at two paths, one of them binary by attribute.
    r.write("bin/x.txt", &text);
    r.write("txt/x.txt", &text);
    r.write(".gitattributes", b"bin/* binary\n");
    r.commit_all("base");
    let query = edit(&text, 2);
    r.write("q/query.txt", &query);
    let o = r.simm(&["similar", "-t", "30", "q/query.txt"]);
    let out = lossy(&succeeded(&["similar"], o));
    // git's score of each pair: the path deleted, the query added. Text
    // against binary shares almost no chunk ("a\r\n" is not "a\n"), so
    // git may pair nothing at all: then similar must not list the path.
    let mut want = Vec::new();
    for path in ["bin/x.txt", "txt/x.txt"] {
        r.git(&["rm", "-q", "--cached", path]);
        r.git(&["add", "q/query.txt"]);
        let diff = r.git_str(&["diff", "--cached", "-l0", "--name-status", "-M30%"]);
        r.git(&["reset", "-q"]);
        let pct = diff
            .lines()
            .find(|l| l.starts_with('R'))
            .map(|l| l[1..4].trim_start_matches('0').to_owned());
        want.push((path, pct));
    }
    assert_ne!(
        want[0].1, want[1].1,
        "the attributes change git's score: {want:?}"
    );
    for (path, pct) in &want {
        let got = out
            .lines()
            .find(|l| l.ends_with(&format!("\t{path}")))
            .map(|l| l.split('%').next().unwrap_or_default().to_owned());
        assert_eq!(&got, pct, "{path}: similar printed {out}");
    }
}

#[test]
fn attributes_of_thousands_of_paths_as_in_git() {
    // With copies harder, every unchanged path is a source whose
    // attributes are looked up: past a couple of thousand paths, the
    // lookups are split over two threads, each half with its own copy of
    // the attribute stack. Sources under a/ are in the first half, those
    // under z/ and every destination in the second; attributes reach
    // both, from the top-level file and from files below. Past four
    // thousand changes (unchanged paths count with copies harder), the
    // output is built on every thread too.
    let r = Repo::new();
    for i in 0..4200 {
        r.write(
            format!("m/{}/u{i}.txt", i % 40),
            format!("unchanged file {i}\r\nof the tree\r\n").as_bytes(),
        );
    }
    crlf_history(&r, &["a", "z"]);
    let plain = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    r.write(".gitattributes", b"a/f1.txt -diff\nz/g1.txt binary\n");
    r.write("a/.gitattributes", b"f2.txt -diff\n");
    r.write("z/.gitattributes", b"g2.txt -diff\nf3.txt binary\n");
    let attributed = agree(&r.path, &[], &["HEAD~", "HEAD"]);
    // Destinations are all in the second half: the attributes read there
    // must change what git prints for them.
    let line = |out: &str, path: &str| out.lines().find(|l| l.ends_with(path)).map(str::to_owned);
    for path in ["\tz/g1.txt", "\tz/g2.txt"] {
        assert_ne!(
            line(&plain[2], path),
            line(&attributed[2], path),
            "{path}: its attributes change git's score with copies harder"
        );
    }
}
