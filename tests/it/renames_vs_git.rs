//! git is the oracle for `git-simm renames`.
//!
//! Every test builds a real repository with the real `git`, runs
//! `git-simm renames ...` and the matching `git diff --name-status ...`, and
//! requires the two outputs to be identical byte for byte. The one intended
//! difference is that git-simm does not pair empty files unless asked
//! (`--rename-empty`), so the default is compared with
//! `git diff -M -l0 --no-rename-empty`.
//!
//! Inputs are real text: files of the pinned corpus (code in three
//! languages and prose, `fixtures/corpus.sh`), with deterministic
//! pseudo-random edits. Edits that must land in a given score band are
//! tuned with git itself as the judge. Every comparison also checks that
//! git's output has the interesting lines (renames, copies, ...), so no test
//! passes on an empty diff.

use crate::util;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use util::{Repo, Rng, corpus_dir, corpus_files, corpus_text, lossy, wanted};

// ---------------------------------------------------------------------------
// Comparing with git (repositories and the environment: util.rs).

/// `git diff --no-color --name-status <args>`: stdout, asserting success.
fn git_diff(r: &Repo, args: &[&str]) -> Vec<u8> {
    let mut full = vec!["diff", "--no-color", "--no-ext-diff", "--name-status"];
    full.extend_from_slice(args);
    r.git(&full)
}

/// Lines present in one output and not the other, for failure messages.
fn line_diff(git: &[u8], ours: &[u8], z: bool) -> String {
    let sep = if z { 0u8 } else { b'\n' };
    let records = |b: &[u8]| -> Vec<String> {
        if z {
            // Group -z fields into records: a status, then one or two paths.
            let fields: Vec<&[u8]> = b.split(|&c| c == sep).collect();
            let mut out = Vec::new();
            let mut i = 0;
            while i < fields.len() {
                let st = lossy(fields[i]);
                if st.is_empty() {
                    i += 1;
                    continue;
                }
                let n = if st.starts_with('R') || st.starts_with('C') {
                    2
                } else {
                    1
                };
                let mut rec = st.clone();
                for k in 1..=n {
                    if let Some(f) = fields.get(i + k) {
                        rec.push_str(&format!(" | {:?}", lossy(f)));
                    }
                }
                out.push(rec);
                i += n + 1;
            }
            out
        } else {
            b.split(|&c| c == sep)
                .filter(|l| !l.is_empty())
                .map(lossy)
                .collect()
        }
    };
    let g = records(git);
    let o = records(ours);
    let gs: HashSet<&String> = g.iter().collect();
    let os: HashSet<&String> = o.iter().collect();
    let mut msg = String::new();
    for l in &g {
        if !os.contains(l) {
            msg.push_str(&format!("  only in git : {l}\n"));
        }
    }
    for l in &o {
        if !gs.contains(l) {
            msg.push_str(&format!("  only in ours: {l}\n"));
        }
    }
    if msg.is_empty() {
        msg.push_str("  same lines, different order or bytes\n");
    }
    msg
}

thread_local! {
    /// Disagreements found so far by the running test.
    static MISMATCHES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Fails the test at its end if any comparison disagreed, listing all of
/// them: one disagreement does not hide the others.
struct Mismatches;

impl Mismatches {
    fn guard() -> Mismatches {
        MISMATCHES.with(|m| m.borrow_mut().clear());
        Mismatches
    }
}

impl Drop for Mismatches {
    fn drop(&mut self) {
        let all = MISMATCHES.with(|m| std::mem::take(&mut *m.borrow_mut()));
        if !all.is_empty() && !std::thread::panicking() {
            panic!(
                "{} comparison(s) with git disagree:\n\n{}",
                all.len(),
                all.join("\n")
            );
        }
    }
}

/// Run `git-simm renames <simm>` and `git diff --name-status <git>`; their
/// stdout must be identical (a difference is recorded and fails the test
/// when it ends). Returns git's output.
fn agree(r: &Repo, simm: &[&str], git: &[&str]) -> Vec<u8> {
    let theirs = git_diff(r, git);
    let mut args = vec!["renames"];
    args.extend_from_slice(simm);
    let ours = r.simm(&args);
    let code = ours.status.code();
    let z = simm.contains(&"-z");
    let failure = if !(code == Some(0) || (code == Some(1) && ours.stdout.is_empty())) {
        Some(format!(
            "git-simm {args:?} failed ({code:?}): {}--- git diff --name-status {git:?}:\n{}",
            lossy(&ours.stderr),
            lossy(&theirs).replace('\0', "\\0\n"),
        ))
    } else if ours.stdout != theirs {
        Some(format!(
            "git-simm {args:?} differs from git diff --name-status {git:?}\n\
             {}--- git:\n{}--- git-simm:\n{}--- git-simm stderr:\n{}",
            line_diff(&theirs, &ours.stdout, z),
            lossy(&theirs).replace('\0', "\\0\n"),
            lossy(&ours.stdout).replace('\0', "\\0\n"),
            lossy(&ours.stderr),
        ))
    } else {
        None
    };
    if let Some(f) = failure {
        eprintln!("MISMATCH: {f}");
        MISMATCHES.with(|m| m.borrow_mut().push(f));
    }
    theirs
}

/// Lines of a name-status output.
fn lines(out: &[u8]) -> Vec<String> {
    lossy(out).lines().map(str::to_owned).collect()
}

/// How many lines start with `status` (e.g. "R", "R100", "C", "D").
fn count(out: &[u8], status: &str) -> usize {
    lines(out)
        .iter()
        .filter(|l| l.split('\t').next().unwrap_or("").starts_with(status))
        .count()
}

fn has_line(out: &[u8], line: &str) -> bool {
    lines(out).iter().any(|l| l == line)
}

/// The line whose last field is `dst`.
fn line_for<'a>(out: &'a [String], dst: &str) -> Option<&'a String> {
    out.iter().find(|l| l.rsplit('\t').next() == Some(dst))
}

/// The score of the R/C line whose destination is `dst`.
fn score_of(out: &[u8], dst: &str) -> Option<u32> {
    let ls = lines(out);
    let l = line_for(&ls, dst)?;
    let st = l.split('\t').next()?;
    if st.starts_with('R') || st.starts_with('C') {
        st[1..].parse().ok()
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// Real content.

/// A real file of the corpus (`fixtures/corpus.sh`).
pub(crate) struct Doc {
    /// Its path in the corpus.
    pub(crate) name: String,
    pub(crate) data: Vec<u8>,
}

/// Text files (source code and prose, 1 to 48 KiB, UTF-8, no NUL, 20
/// lines or more) of the corpus, each content once, in sorted path order.
pub(crate) fn corpus() -> &'static [Doc] {
    static CORPUS: OnceLock<Vec<Doc>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = corpus_dir();
        let mut seen = HashSet::new();
        let mut docs = Vec::new();
        for f in corpus_files().iter().filter(|f| wanted(f)) {
            let Ok(data) = std::fs::read(f) else {
                continue;
            };
            if data.len() < 1024
                || data.len() > 48 * 1024
                || data.contains(&0)
                || std::str::from_utf8(&data).is_err()
                || data.iter().filter(|&&b| b == b'\n').count() < 20
            {
                continue;
            }
            if !seen.insert(data.clone()) {
                continue;
            }
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            docs.push(Doc { name: rel, data });
        }
        assert!(
            docs.len() >= 2000,
            "the corpus under {} has only {} usable files",
            root.display(),
            docs.len()
        );
        docs
    })
}

/// The `i`-th of a spread of corpus files (files far apart in the sorted
/// corpus come from different packages).
fn pick(i: usize) -> &'static [u8] {
    let c = corpus();
    &c[(i * 7919) % c.len()].data
}

/// A real license text: the Apache License 2.0 as a crate of the corpus
/// ships it.
fn license_text() -> Vec<u8> {
    corpus_text("rust/regex-1.11.1/LICENSE-APACHE")
}

// ---------------------------------------------------------------------------
// Deterministic edits.

fn split_lines(data: &[u8]) -> Vec<Vec<u8>> {
    data.split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Replace each line with probability `p` by junk of about the same length.
/// The set of replaced lines only grows with `p` (fixed seed), so the score
/// against the original only falls: a binary search can tune it.
fn rewrite_lines(data: &[u8], p: f64, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(data.len());
    for line in split_lines(data) {
        let u = rng.unit();
        let junk_seed = rng.next();
        if u < p {
            let mut j = Rng(junk_seed).junk(line.len().saturating_sub(1).max(8));
            j.push(b'\n');
            out.extend_from_slice(&j);
        } else {
            out.extend_from_slice(&line);
        }
    }
    out
}

/// Change exactly the lines at the given indexes (light edits).
fn edit_lines(data: &[u8], at: &[usize], seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut ls = split_lines(data);
    let n = ls.len();
    for &i in at {
        let i = i % n;
        let mut j = b"    // edited: ".to_vec();
        j.extend_from_slice(&rng.junk(30));
        j.push(b'\n');
        ls[i] = j;
    }
    ls.concat()
}

/// A mix of line deletions, line insertions and 50-byte substitutions:
/// about `intensity` × (number of lines) operations.
fn mixed_edit(data: &[u8], intensity: f64, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut ls = split_lines(data);
    let ops = (ls.len() as f64 * intensity).round() as usize;
    for _ in 0..ops {
        match rng.below(3) {
            0 if ls.len() > 2 => {
                let i = rng.below(ls.len());
                ls.remove(i);
            }
            1 => {
                let i = rng.below(ls.len() + 1);
                let n = 20 + rng.below(40);
                let mut j = rng.junk(n);
                j.push(b'\n');
                ls.insert(i, j);
            }
            _ => {
                let i = rng.below(ls.len());
                let line = &mut ls[i];
                let body = line.len().saturating_sub(1);
                let j = rng.junk(50);
                if body <= 50 {
                    let mut l = j;
                    l.push(b'\n');
                    *line = l;
                } else {
                    let at = rng.below(body - 50);
                    line[at..at + 50].copy_from_slice(&j);
                }
            }
        }
    }
    ls.concat()
}

/// Pseudo-random binary data (with NULs), for the binary cases.
fn binary(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..len).map(|_| (rng.next() >> 24) as u8).collect()
}

/// git's rename score (the number after R) of `new` against `old`, by
/// letting git detect the rename at -M1%; 0 when git does not pair them.
struct GitScorer {
    repo: Repo,
}

impl GitScorer {
    fn new(old: &[u8]) -> GitScorer {
        let repo = Repo::new();
        repo.write("old.txt", old);
        repo.commit_all("old");
        repo.remove("old.txt");
        GitScorer { repo }
    }

    fn score(&self, new: &[u8]) -> u32 {
        self.repo.write("new.txt", new);
        self.repo.git(&["add", "-A"]);
        let out = git_diff(&self.repo, &["--cached", "-M1%", "-l0"]);
        score_of(&out, "new.txt").unwrap_or(0)
    }
}

/// Edit `base` (whole lines rewritten) so that git scores the result in
/// `lo..hi` percent against it.
fn tune(base: &[u8], lo: u32, hi: u32, seed: u64) -> (Vec<u8>, u32) {
    let scorer = GitScorer::new(base);
    for s in 0..8u64 {
        let seed = seed.wrapping_add(s * 1_000_003);
        let (mut a, mut b) = (0.0f64, 1.0f64);
        for _ in 0..40 {
            let p = (a + b) / 2.0;
            let cand = rewrite_lines(base, p, seed);
            let sc = scorer.score(&cand);
            if sc >= hi {
                a = p;
            } else if sc < lo {
                b = p;
            } else {
                return (cand, sc);
            }
        }
    }
    panic!("could not tune an edit into {lo}..{hi}%");
}

// ---------------------------------------------------------------------------
// The default comparisons.

const DEF: [&str; 3] = ["-M", "-l0", "--no-rename-empty"];

fn with<'a>(flags: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = flags.to_vec();
    v.extend_from_slice(rest);
    v
}

// ---------------------------------------------------------------------------
// 1. Pure renames.

#[test]
fn pure_renames_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let files: Vec<(&str, Vec<u8>)> = vec![
        (
            "lib/engine/core.rs",
            corpus_text("rust/tokio-1.41.1/src/sync/batch_semaphore.rs"),
        ),
        (
            "lib/engine/store.rs",
            corpus_text("rust/serde_json-1.0.133/src/value/ser.rs"),
        ),
        (
            "lib/engine/nested/fp.rs",
            corpus_text("rust/serde_json-1.0.133/src/raw.rs"),
        ),
        (
            "tools/cli_tests.rs",
            corpus_text("rust/toml-0.8.19/tests/testsuite/serde.rs"),
        ),
        (
            "tools/score_tests.rs",
            corpus_text("rust/toml-0.8.19/src/macros.rs"),
        ),
        ("a/util.rs", pick(1).to_vec()),
        ("b/util.rs", pick(2).to_vec()),
        ("docs/guide.md", pick(3).to_vec()),
        ("docs/notes.md", pick(4).to_vec()),
        ("stay/keep.rs", pick(5).to_vec()),
        ("stay/edit.rs", pick(6).to_vec()),
        (
            "Cargo.toml",
            corpus_text("rust/quote-1.0.47/Cargo.toml.orig"),
        ),
    ];
    for (p, d) in &files {
        r.write(p, d);
    }
    let c1 = r.commit_all("one");
    // A directory move.
    r.mv("lib/engine/core.rs", "crates/engine/src/core.rs");
    r.mv("lib/engine/store.rs", "crates/engine/src/store.rs");
    r.mv("lib/engine/nested/fp.rs", "crates/engine/src/nested/fp.rs");
    // New basenames.
    r.mv("tools/cli_tests.rs", "tests/end_to_end.rs");
    r.mv("tools/score_tests.rs", "tests/oracle.rs");
    r.mv("docs/guide.md", "GUIDE.md");
    // The same basename in new directories (util.rs twice: not unique).
    r.mv("a/util.rs", "x/y/util.rs");
    r.mv("b/util.rs", "z/util.rs");
    r.mv("docs/notes.md", "book/src/notes.md");
    // Something that is not a rename, for contrast.
    r.write("stay/edit.rs", &edit_lines(pick(6), &[3, 9], 1));
    r.write("added.rs", pick(7));
    let c2 = r.commit_all("two");

    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert_eq!(count(&out, "R100"), 9, "{}", lossy(&out));
    assert!(has_line(
        &out,
        "R100\tlib/engine/nested/fp.rs\tcrates/engine/src/nested/fp.rs"
    ));
    assert!(has_line(&out, "M\tstay/edit.rs"));
    assert!(has_line(&out, "A\tadded.rs"));
    // The same with -z, --find-renames spelled out, and without renames.
    let z = agree(&r, &["-z", &c1, &c2], &with(&DEF, &["-z", &c1, &c2]));
    assert!(z.windows(5).any(|w| w == b"R100\0"));
    agree(&r, &["--find-renames", &c1, &c2], &with(&DEF, &[&c1, &c2]));
    let none = agree(&r, &["--no-renames", &c1, &c2], &["--no-renames", &c1, &c2]);
    assert_eq!(count(&none, "R"), 0);
    assert_eq!(count(&none, "D"), 9);
    // Reversed: every rename the other way.
    let back = agree(&r, &[&c2, &c1], &with(&DEF, &[&c2, &c1]));
    assert_eq!(count(&back, "R100"), 9);
    // Tree-ishes other than commit ids.
    agree(&r, &["HEAD~1", "HEAD"], &with(&DEF, &["HEAD~1", "HEAD"]));
    agree(
        &r,
        &["main~", "main^{tree}"],
        &with(&DEF, &["main~", "main^{tree}"]),
    );
}

/// git pairs a destination with a source of the same basename first (when
/// both are the only ones of that name and the score is high enough), even
/// when another source scores higher. Copy detection turns that off.
#[test]
fn same_basename_preference_agrees() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let base = corpus_text("rust/toml-0.8.19/src/macros.rs");
    let scorer = GitScorer::new(&base);
    // `near` is very close to the destination, `named` less so but shares
    // its basename.
    let near = edit_lines(&base, &[10, 50, 90], 7);
    let (named, named_score) = tune(&base, 78, 86, 11);
    let near_score = scorer.score(&near);
    assert!(
        near_score > named_score + 5,
        "{near_score} vs {named_score}"
    );
    r.write("old1/engine.rs", &named);
    r.write("old2/driver.rs", &near);
    r.write("unrelated.rs", pick(20));
    let c1 = r.commit_all("one");
    r.remove("old1/engine.rs");
    r.remove("old2/driver.rs");
    r.write("new/engine.rs", &base);
    let c2 = r.commit_all("two");
    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    // git's basename pass pairs the less similar file of the same name.
    assert!(
        lines(&out)
            .iter()
            .any(|l| l.starts_with('R') && l.ends_with("\told1/engine.rs\tnew/engine.rs")),
        "{}",
        lossy(&out)
    );
    assert!(has_line(&out, "D\told2/driver.rs"), "{}", lossy(&out));
    let c = agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    // With copies, no basename pass: the best score wins.
    assert!(
        lines(&c)
            .iter()
            .any(|l| l.starts_with('R') && l.ends_with("\told2/driver.rs\tnew/engine.rs")),
        "{}",
        lossy(&c)
    );
    assert!(has_line(&c, "D\told1/engine.rs"), "{}", lossy(&c));
}

// ---------------------------------------------------------------------------
// 2. Renames with edits, and 6. thresholds.

struct EditsFixture {
    repo: Repo,
    c1: String,
    c2: String,
    mid_score: u32,
    under_score: u32,
}

fn edits_fixture() -> EditsFixture {
    let r = Repo::new();
    let light = corpus_text("rust/serde_json-1.0.133/src/value/ser.rs");
    let mid = pick(30).to_vec();
    let under = pick(31).to_vec();
    let low = pick(32).to_vec();
    let (mid_new, mid_score) = tune(&mid, 50, 60, 21);
    let (under_new, under_score) = tune(&under, 45, 50, 22);
    let (low_new, _) = tune(&low, 30, 40, 23);
    let (high_new, _) = tune(pick(33), 90, 96, 24);
    r.write("src/light.rs", &light);
    r.write("src/mid.rs", &mid);
    r.write("src/under.rs", &under);
    r.write("src/low.rs", &low);
    r.write("src/high.rs", pick(33));
    r.write("src/exact.rs", pick(34));
    r.write("src/exact2.md", pick(35));
    r.write("src/modified.rs", pick(36));
    let c1 = r.commit_all("one");
    r.remove("src/light.rs");
    r.write("lib/light_renamed.rs", &edit_lines(&light, &[5, 40, 41], 3));
    r.remove("src/mid.rs");
    r.write("lib/mid_renamed.rs", &mid_new);
    r.remove("src/under.rs");
    r.write("lib/under_renamed.rs", &under_new);
    r.remove("src/low.rs");
    r.write("lib/low_renamed.rs", &low_new);
    r.remove("src/high.rs");
    r.write("lib/high_renamed.rs", &high_new);
    r.mv("src/exact.rs", "lib/exact.rs");
    r.mv("src/exact2.md", "doc/exact2.md");
    r.write("src/modified.rs", &edit_lines(pick(36), &[1, 2, 3], 4));
    let c2 = r.commit_all("two");
    EditsFixture {
        repo: r,
        c1,
        c2,
        mid_score,
        under_score,
    }
}

#[test]
fn renames_with_light_and_heavy_edits_agree() {
    let _mismatches = Mismatches::guard();
    let f = edits_fixture();
    let (r, c1, c2) = (&f.repo, f.c1.as_str(), f.c2.as_str());
    let out = agree(r, &[c1, c2], &with(&DEF, &[c1, c2]));
    let light = score_of(&out, "lib/light_renamed.rs").expect("light edit is a rename");
    assert!((90..100).contains(&light), "{}", lossy(&out));
    assert_eq!(
        score_of(&out, "lib/mid_renamed.rs"),
        Some(f.mid_score),
        "{}",
        lossy(&out)
    );
    assert!((50..60).contains(&f.mid_score));
    // Just under 50%: a deletion and an addition.
    assert!(has_line(&out, "D\tsrc/under.rs"), "{}", lossy(&out));
    assert!(has_line(&out, "A\tlib/under_renamed.rs"), "{}", lossy(&out));
    assert!(has_line(&out, "M\tsrc/modified.rs"));
    agree(r, &["-z", c1, c2], &with(&DEF, &["-z", c1, c2]));
}

#[test]
fn thresholds_agree() {
    let _mismatches = Mismatches::guard();
    let f = edits_fixture();
    let (r, c1, c2) = (&f.repo, f.c1.as_str(), f.c2.as_str());
    let base = agree(r, &[c1, c2], &with(&DEF, &[c1, c2]));

    let m30 = agree(
        r,
        &["-M30%", c1, c2],
        &["-M30%", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(
        score_of(&m30, "lib/under_renamed.rs"),
        Some(f.under_score),
        "{}",
        lossy(&m30)
    );
    assert!(
        score_of(&m30, "lib/low_renamed.rs").is_some(),
        "{}",
        lossy(&m30)
    );
    assert!(count(&m30, "R") > count(&base, "R"));

    let m90 = agree(
        r,
        &["-M90%", c1, c2],
        &["-M90%", "-l0", "--no-rename-empty", c1, c2],
    );
    assert!(
        score_of(&m90, "lib/high_renamed.rs").is_some(),
        "{}",
        lossy(&m90)
    );
    assert!(score_of(&m90, "lib/mid_renamed.rs").is_none());
    assert!(count(&m90, "R") < count(&base, "R"));

    // -M5 means 50%, like -M50% and -M0.5.
    let m5 = agree(
        r,
        &["-M5", c1, c2],
        &["-M5", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(m5, base);
    let m05 = agree(
        r,
        &["--find-renames=0.5", c1, c2],
        &["--find-renames=0.5", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(m05, base);
    let m30long = agree(
        r,
        &["--find-renames=30%", c1, c2],
        &["--find-renames=30%", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(m30long, m30);

    let m100 = agree(
        r,
        &["-M100%", c1, c2],
        &["-M100%", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(count(&m100, "R100"), 2, "{}", lossy(&m100));
    assert_eq!(count(&m100, "R"), 2, "{}", lossy(&m100));

    let none = agree(r, &["--no-renames", c1, c2], &["--no-renames", c1, c2]);
    assert_eq!(count(&none, "R"), 0);

    let rc = agree(
        r,
        &["--diff-filter=RC", c1, c2],
        &with(&DEF, &["--diff-filter=RC", c1, c2]),
    );
    assert_eq!(count(&rc, "R"), lines(&rc).len());
    assert!(count(&rc, "R") >= 4);
    let nod = agree(
        r,
        &["--diff-filter=d", c1, c2],
        &with(&DEF, &["--diff-filter=d", c1, c2]),
    );
    assert_eq!(count(&nod, "D"), 0);
    assert!(count(&nod, "A") >= 1 && count(&nod, "R") >= 4);
    let am = agree(
        r,
        &["--diff-filter=AM", c1, c2],
        &with(&DEF, &["--diff-filter=AM", c1, c2]),
    );
    assert!(count(&am, "A") >= 1 && count(&am, "M") == 1);
}

/// With an explicit `-l<n>`, the same limit as git's `-l<n>` (documented in
/// `git-simm renames --help`); without one there is no limit.
#[test]
fn explicit_rename_limit_agrees_with_git_limit() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    for i in 0..7 {
        r.write(format!("old/f{i}.rs"), pick(40 + i));
    }
    r.write("exact/a.rs", pick(47));
    let c1 = r.commit_all("one");
    for i in 0..7 {
        r.remove(format!("old/f{i}.rs"));
        r.write(
            format!("new/g{i}.rs"),
            &edit_lines(pick(40 + i), &[2, 7, 11], i as u64),
        );
    }
    r.mv("exact/a.rs", "moved/a.rs");
    let c2 = r.commit_all("two");
    let l5 = agree(
        &r,
        &["-l5", &c1, &c2],
        &["-M", "-l5", "--no-rename-empty", &c1, &c2],
    );
    // Exact renames survive the limit; inexact ones do not.
    assert_eq!(count(&l5, "R"), 1, "{}", lossy(&l5));
    let l10 = agree(
        &r,
        &["-M", "-l10", &c1, &c2],
        &["-M", "-l10", "--no-rename-empty", &c1, &c2],
    );
    assert_eq!(count(&l10, "R"), 8, "{}", lossy(&l10));
}

// ---------------------------------------------------------------------------
// 3. Copies.

struct CopiesFixture {
    repo: Repo,
    c1: String,
    c2: String,
}

fn copies_fixture() -> CopiesFixture {
    let r = Repo::new();
    let orig = corpus_text("rust/serde_json-1.0.133/src/raw.rs");
    let stable = pick(50).to_vec();
    let multi = pick(51).to_vec();
    let other = pick(52).to_vec();
    r.write("src/orig.rs", &orig);
    r.write("src/stable.rs", &stable);
    r.write("src/multi.rs", &multi);
    r.write("src/other.rs", &other);
    r.write("README.md", pick(53));
    let c1 = r.commit_all("one");
    // Source modified in the same commit, and copied with an edit.
    r.write("src/orig.rs", &edit_lines(&orig, &[0, 1], 1));
    r.write("src/orig_copy.rs", &edit_lines(&orig, &[100, 101, 102], 2));
    // Unmodified source copied: only --find-copies-harder sees it.
    r.write("vendor/stable.rs", &stable);
    r.write("vendor/stable_edited.rs", &edit_lines(&stable, &[4, 8], 3));
    // One source copied three times, then deleted: C, C, then R.
    r.remove("src/multi.rs");
    r.write("m/one.rs", &edit_lines(&multi, &[3], 4));
    r.write("m/three.rs", &edit_lines(&multi, &[5, 6], 5));
    r.write("m/two.rs", &edit_lines(&multi, &[9], 6));
    r.write("m/zzz_exact.rs", &multi);
    r.write("new.rs", pick(54));
    let c2 = r.commit_all("two");
    CopiesFixture { repo: r, c1, c2 }
}

#[test]
fn copies_agree() {
    let _mismatches = Mismatches::guard();
    let f = copies_fixture();
    let (r, c1, c2) = (&f.repo, f.c1.as_str(), f.c2.as_str());
    let cflags = ["-C", "-l0", "--no-rename-empty"];

    let m = agree(r, &[c1, c2], &with(&DEF, &[c1, c2]));
    assert_eq!(count(&m, "C"), 0);
    assert_eq!(count(&m, "R"), 1, "{}", lossy(&m));

    let c = agree(r, &["-C", c1, c2], &with(&cflags, &[c1, c2]));
    assert!(
        lines(&c)
            .iter()
            .any(|l| l.starts_with('C') && l.ends_with("\tsrc/orig.rs\tsrc/orig_copy.rs")),
        "{}",
        lossy(&c)
    );
    assert!(
        !lines(&c).iter().any(|l| l.contains("src/stable.rs")),
        "{}",
        lossy(&c)
    );
    // Copies from the deleted source, the last use a rename.
    assert_eq!(
        lines(&c)
            .iter()
            .filter(|l| l.contains("\tsrc/multi.rs\t"))
            .count(),
        4,
        "{}",
        lossy(&c)
    );
    assert_eq!(count(&c, "R"), 1, "{}", lossy(&c));
    assert!(count(&c, "C") >= 4, "{}", lossy(&c));

    let harder = agree(
        r,
        &["--find-copies-harder", c1, c2],
        &with(&cflags, &["--find-copies-harder", c1, c2]),
    );
    assert!(
        has_line(&harder, "C100\tsrc/stable.rs\tvendor/stable.rs"),
        "{}",
        lossy(&harder)
    );
    assert!(score_of(&harder, "vendor/stable_edited.rs").is_some());
    let cc = agree(
        r,
        &["-C", "-C", c1, c2],
        &["-C", "-C", "-l0", "--no-rename-empty", c1, c2],
    );
    assert_eq!(cc, harder);
    agree(
        r,
        &["--find-copies", "--find-copies", c1, c2],
        &["-C", "-C", "-l0", "--no-rename-empty", c1, c2],
    );
    // A copy threshold (also the rename threshold, as in git).
    let c90 = agree(
        r,
        &["-C99%", "--find-copies-harder", c1, c2],
        &[
            "-C99%",
            "--find-copies-harder",
            "-l0",
            "--no-rename-empty",
            c1,
            c2,
        ],
    );
    assert!(count(&c90, "C100") >= 1, "{}", lossy(&c90));
    agree(
        r,
        &["--find-copies=70%", c1, c2],
        &["--find-copies=70%", "-l0", "--no-rename-empty", c1, c2],
    );
    // -M with -C.
    agree(
        r,
        &["-M70%", "-C", c1, c2],
        &["-M70%", "-C", "-l0", "--no-rename-empty", c1, c2],
    );
    let zc = agree(
        r,
        &["-z", "-C", "-C", c1, c2],
        &["-z", "-C", "-C", "-l0", "--no-rename-empty", c1, c2],
    );
    assert!(zc.windows(2).any(|w| w == b"\0C"));
    let rc = agree(
        r,
        &["-C", "-C", "--diff-filter=C", c1, c2],
        &[
            "-C",
            "-C",
            "-l0",
            "--no-rename-empty",
            "--diff-filter=C",
            c1,
            c2,
        ],
    );
    assert!(count(&rc, "C") >= 5 && count(&rc, "C") == lines(&rc).len());
}

// ---------------------------------------------------------------------------
// 4. Many identical files, boilerplate, swaps, reuse of an old path.

#[test]
fn many_identical_files_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let license = license_text();
    for i in 0..20 {
        r.write(format!("crates/c{i:02}/LICENSE"), &license);
        r.write(format!("crates/c{i:02}/src/lib.rs"), pick(60 + i));
    }
    let c1 = r.commit_all("one");
    for i in 0..20 {
        r.remove(format!("crates/c{i:02}/LICENSE"));
        let data = if i % 7 == 3 {
            edit_lines(&license, &[i, i + 30, i + 60], i as u64)
        } else {
            license.clone()
        };
        // Half keep the basename, half do not.
        let to = if i % 2 == 0 {
            format!("third_party/c{i:02}/LICENSE")
        } else {
            format!("third_party/c{i:02}/LICENSE-APACHE")
        };
        r.write(&to, &data);
        r.mv(
            format!("crates/c{i:02}/src/lib.rs"),
            format!("third_party/c{i:02}/src/lib.rs"),
        );
    }
    let c2 = r.commit_all("two");
    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert_eq!(count(&out, "R"), 40, "{}", lossy(&out));
    assert!(count(&out, "R100") >= 37, "{}", lossy(&out));
    agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    let cc = agree(
        &r,
        &["-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    // Copies may reuse a source: R and C lines together cover the 40.
    assert_eq!(count(&cc, "R") + count(&cc, "C"), 40, "{}", lossy(&cc));
    assert!(count(&cc, "C") >= 1, "{}", lossy(&cc));

    // Some identical copies stay: new identical files are then copies of
    // kept ones (-C -C) or additions.
    let c3 = {
        for i in 0..5 {
            r.write(format!("more/m{i}/COPYING"), &license);
        }
        r.remove("third_party/c00/LICENSE");
        r.commit_all("three")
    };
    let out = agree(&r, &[&c2, &c3], &with(&DEF, &[&c2, &c3]));
    assert_eq!(count(&out, "R100"), 1, "{}", lossy(&out));
    let cc = agree(
        &r,
        &["--find-copies-harder", &c2, &c3],
        &["--find-copies-harder", "-l0", "--no-rename-empty", &c2, &c3],
    );
    assert!(count(&cc, "C100") >= 4, "{}", lossy(&cc));
}

/// git's exact pass meets one id's sources in source order, except where
/// its hash table grows as the last source goes in (205 sources, 3,277,
/// ...), which reverses them: of two identical deleted `LICENSE` files,
/// the destination takes the first with 204 or 206 sources and the last
/// with 205 (found on git-lfs's history, where 205 files were deleted).
#[test]
fn identical_sources_are_met_in_gits_table_order() {
    let _mismatches = Mismatches::guard();
    let license = license_text();
    let mut taken = Vec::new();
    for sources in [204usize, 205, 206] {
        let r = Repo::new();
        r.write("a/LICENSE", &license);
        r.write("b/LICENSE", &license);
        for i in 0..sources - 2 {
            let mut data = pick(i).to_vec();
            data.extend_from_slice(format!("\n// filler {i}\n").as_bytes());
            r.write(format!("old/f{i:03}.txt"), &data);
        }
        let c1 = r.commit_all("one");
        r.remove("a/LICENSE");
        r.remove("b/LICENSE");
        for i in 0..sources - 2 {
            r.remove(format!("old/f{i:03}.txt"));
        }
        r.write("c/LICENSE", &license);
        let c2 = r.commit_all("two");
        let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
        agree(
            &r,
            &["-C", "-C", &c1, &c2],
            &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
        );
        let line = line_for(&lines(&out), "c/LICENSE")
            .cloned()
            .unwrap_or_default();
        taken.push(line);
    }
    // The fixture is where git's choice turns: 205 sources differ from
    // their neighbours.
    assert_ne!(taken[1], taken[0], "{taken:?}");
    assert_eq!(taken[0], taken[2], "{taken:?}");
}

/// The detection options apply one after another, as git's option
/// callbacks do: -M detects renames only and sets the score, -C sets the
/// score and detects copies (harder when it already did), --no-renames
/// turns detection off, --find-copies-harder counts wherever it stands,
/// and options given twice are taken (the last -l wins).
#[test]
fn detection_options_apply_in_the_order_given() {
    let _mismatches = Mismatches::guard();
    let answers = distinct_answers(
        &[],
        &[
            "-M30% -C",
            "-C -M30%",
            "-C30% -M",
            "-C30% -C",
            "-C50% -M40% -C",
            "--no-renames -M30%",
            "-C --no-renames",
            "-C -C --no-renames",
            "--find-copies-harder --no-renames",
            "-M --find-copies-harder",
            "-M -M",
            "-M30% -M",
            "--no-renames --no-renames",
            "-l5 -l0",
        ],
    );
    // The sequences lead to different answers, not one.
    assert!(answers >= 4, "{answers}");
}

/// Each of `flag_sets` (flags separated by spaces, after `first`) on the
/// copies fixture, against git's answer; how many different answers.
fn distinct_answers(first: &[&str], flag_sets: &[&str]) -> usize {
    let CopiesFixture { repo: r, c1, c2 } = copies_fixture();
    let mut outputs = std::collections::HashSet::new();
    for flags in flag_sets {
        let mut simm = first.to_vec();
        simm.extend(flags.split(' '));
        simm.extend([c1.as_str(), c2.as_str()]);
        let mut git = vec!["-l0", "--no-rename-empty"];
        git.extend(&simm);
        outputs.insert(agree(&r, &simm, &git));
    }
    outputs.len()
}

/// `--diff-filter` as git reads it: given twice its letters add up, a
/// class both selected and excluded leaves no filter at all (`aA` shows
/// everything), excluding letters alone select every other class, and
/// `*` shows all or nothing.
#[test]
fn diff_filters_combine_as_in_git() {
    let _mismatches = Mismatches::guard();
    let answers = distinct_answers(
        &["-C"],
        &[
            "--diff-filter=aA",
            "--diff-filter=*",
            "--diff-filter=R*",
            "--diff-filter=X*",
            "--diff-filter=R --diff-filter=A",
            "--diff-filter=d --diff-filter=m",
            "--diff-filter=a",
            "--diff-filter=Rr",
            "--diff-filter=CR",
        ],
    );
    assert!(answers >= 5, "{answers}");
}

#[test]
fn boilerplate_headers_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let license = license_text();
    let mut header = Vec::new();
    for l in split_lines(&license).into_iter().take(40) {
        header.extend_from_slice(b"// ");
        header.extend_from_slice(&l);
    }
    let bodies: Vec<Vec<u8>> = (0..10)
        .map(|i| {
            let ls = split_lines(pick(80 + i));
            let start = ls.len() / 3;
            ls[start..(start + 12).min(ls.len())].concat()
        })
        .collect();
    for (i, b) in bodies.iter().enumerate() {
        r.write(format!("src/m{i}.rs"), &[header.as_slice(), b].concat());
    }
    let c1 = r.commit_all("one");
    for (i, b) in bodies.iter().enumerate() {
        r.remove(format!("src/m{i}.rs"));
        let body = if i % 3 == 0 {
            edit_lines(b, &[i], 9)
        } else {
            b.clone()
        };
        // New names that do not follow the old order.
        r.write(
            format!("lib/{}_mod.rs", (b'j' - i as u8) as char),
            &[header.as_slice(), &body].concat(),
        );
    }
    let c2 = r.commit_all("two");
    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert_eq!(count(&out, "R"), 10, "{}", lossy(&out));
    assert!(count(&out, "R100") >= 6, "{}", lossy(&out));
    for flags in [["-M80%"], ["-M95%"], ["-M30%"]] {
        let mut g = vec![flags[0], "-l0", "--no-rename-empty"];
        g.extend([c1.as_str(), c2.as_str()]);
        let o = agree(&r, &[flags[0], &c1, &c2], &g);
        assert!(count(&o, "R") >= 6, "{}", lossy(&o));
    }
    agree(
        &r,
        &["-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
}

#[test]
fn swaps_and_reused_paths_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let a = corpus_text("rust/tokio-1.41.1/src/sync/batch_semaphore.rs");
    let b = corpus_text("rust/serde_json-1.0.133/src/value/ser.rs");
    let c = pick(90).to_vec();
    r.write("a.rs", &a);
    r.write("b.rs", &b);
    r.write("c.rs", &c);
    r.write("d.rs", pick(91));
    let c1 = r.commit_all("one");
    // Swap a and b.
    r.write("a.rs", &b);
    r.write("b.rs", &a);
    // c renamed, and a new unrelated c.rs at its old path.
    r.write("moved/c.rs", &c);
    r.write("c.rs", pick(92));
    // d renamed and d.rs recreated with nearly the same content.
    r.mv("d.rs", "e.rs");
    r.write("d.rs", &edit_lines(pick(91), &[0], 1));
    let c2 = r.commit_all("two");
    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    // Without break detection git sees modifications and additions.
    assert!(has_line(&out, "M\ta.rs") && has_line(&out, "M\tb.rs"));
    assert!(has_line(&out, "M\tc.rs") && has_line(&out, "A\tmoved/c.rs"));
    assert_eq!(count(&out, "R"), 0);
    let cp = agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    assert!(has_line(&cp, "C100\tc.rs\tmoved/c.rs"), "{}", lossy(&cp));
    assert!(count(&cp, "C") >= 2, "{}", lossy(&cp));
    agree(
        &r,
        &["-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
}

// ---------------------------------------------------------------------------
// 5. Types, modes, submodules, symlinks, empty and binary files, odd paths.

/// Two commits with type and mode changes, symlinks, empty and binary files
/// and, if `gitlinks`, submodule entries (commits not in the repository,
/// as usual for submodules).
fn types_fixture(gitlinks: bool) -> (Repo, String, String) {
    let r = Repo::new();
    r.write(
        "tool.sh",
        &corpus_text("rust/toml-0.8.19/examples/decode.rs"),
    );
    r.write(
        "script.rs",
        &corpus_text("rust/serde_json-1.0.133/src/lexical/shift.rs"),
    );
    r.symlink("src/target.rs", "link_a");
    r.symlink("other", "link_b");
    r.symlink("yet/another/target", "link_c");
    r.write("text-as-link", b"src/x");
    r.write("e1.txt", b"");
    r.write("e2.txt", b"");
    r.write("data/blob.bin", &binary(8192, 1));
    r.write("data/blob2.bin", &binary(8192, 2));
    r.write("data/blob3.bin", &binary(6000, 3));
    r.write("data/keep.rs", pick(100));
    r.git(&["add", "-A"]);
    let sub1 = "1111111111111111111111111111111111111111";
    let sub2 = "2222222222222222222222222222222222222222";
    if gitlinks {
        r.git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub1},vendor/sub1"),
        ]);
        r.git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub2},vendor/sub2"),
        ]);
    }
    let c1 = r.commit_index("one");

    // file -> symlink, chmod +x
    r.remove("tool.sh");
    r.symlink("src/main.rs", "tool.sh");
    r.chmod("script.rs", 0o755);
    // symlink renamed (exact), symlink renamed with a new target
    r.mv("link_a", "links/link_a");
    r.remove("link_b");
    r.symlink("other2", "links/link_b");
    // symlink -> regular file (T)
    r.remove("link_c");
    r.write("link_c", b"yet/another/target");
    // a file whose blob equals a new symlink's: modes differ, no pair
    r.remove("text-as-link");
    r.symlink("src/x", "lnk");
    // empty files moved
    r.mv("e1.txt", "empty/e1.txt");
    r.mv("e2.txt", "empty/e2_renamed.txt");
    r.write("empty/new_empty.txt", b"");
    // binaries
    r.mv("data/blob.bin", "bin/blob.bin");
    r.remove("data/blob2.bin");
    let mut b2 = binary(8192, 2);
    b2[4000..4400].copy_from_slice(&binary(400, 9));
    r.write("bin/b2.bin", &b2);
    r.remove("data/blob3.bin");
    let mut b3 = binary(6000, 3);
    b3[500..5000].copy_from_slice(&binary(4500, 10));
    r.write("bin/b3.bin", &b3);
    r.git(&["add", "-A"]);
    // gitlinks: one moved, one updated in place
    if gitlinks {
        r.git(&["update-index", "--force-remove", "vendor/sub1"]);
        r.git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub1},deps/sub1"),
        ]);
        r.git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            "160000,3333333333333333333333333333333333333333,vendor/sub2",
        ]);
    }
    let c2 = r.commit_index("two");
    (r, c1, c2)
}

/// Submodule entries: a moved gitlink is an exact rename (R100), a changed
/// one is M; their commits are not in the repository and must not be read.
#[test]
fn gitlinks_agree() {
    let _mismatches = Mismatches::guard();
    let (r, c1, c2) = types_fixture(true);
    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert!(
        has_line(&out, "R100\tvendor/sub1\tdeps/sub1"),
        "{}",
        lossy(&out)
    );
    assert!(has_line(&out, "M\tvendor/sub2"), "{}", lossy(&out));
    let c = agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    assert!(
        has_line(&c, "R100\tvendor/sub1\tdeps/sub1"),
        "{}",
        lossy(&c)
    );
    let cc = agree(
        &r,
        &["-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    assert!(
        has_line(&cc, "R100\tvendor/sub1\tdeps/sub1"),
        "{}",
        lossy(&cc)
    );
    agree(
        &r,
        &["--rename-empty", "-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--rename-empty", &c1, &c2],
    );
    agree(&r, &["-z", &c1, &c2], &with(&DEF, &["-z", &c1, &c2]));
    agree(&r, &["--no-renames", &c1, &c2], &["--no-renames", &c1, &c2]);
}

#[test]
fn types_modes_links_and_binaries_agree() {
    let _mismatches = Mismatches::guard();
    let (r, c1, c2) = types_fixture(false);

    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    eprintln!("{}", lossy(&out));
    assert!(has_line(&out, "T\ttool.sh"), "{}", lossy(&out));
    assert!(has_line(&out, "T\tlink_c"), "{}", lossy(&out));
    assert!(has_line(&out, "M\tscript.rs"), "{}", lossy(&out));
    assert!(
        has_line(&out, "R100\tlink_a\tlinks/link_a"),
        "{}",
        lossy(&out)
    );
    assert!(has_line(&out, "D\tlink_b") && has_line(&out, "A\tlinks/link_b"));
    assert!(has_line(&out, "D\ttext-as-link") && has_line(&out, "A\tlnk"));
    assert!(has_line(&out, "D\te1.txt") && has_line(&out, "A\tempty/e1.txt"));
    assert!(has_line(&out, "R100\tdata/blob.bin\tbin/blob.bin"));
    assert!(score_of(&out, "bin/b2.bin").is_some_and(|s| s < 100));
    assert!(has_line(&out, "D\tdata/blob3.bin") && has_line(&out, "A\tbin/b3.bin"));

    // Empty files paired only with --rename-empty (git's default).
    let re = agree(
        &r,
        &["--rename-empty", &c1, &c2],
        &["-M", "-l0", "--rename-empty", &c1, &c2],
    );
    assert_eq!(
        lines(&re)
            .iter()
            .filter(|l| l.starts_with("R100\te"))
            .count(),
        2,
        "{}",
        lossy(&re)
    );
    let gd = git_diff(&r, &["-M", "-l0", &c1, &c2]);
    assert_eq!(re, gd, "git's default pairs empty files");
    agree(
        &r,
        &["--no-rename-empty", &c1, &c2],
        &with(&DEF, &[&c1, &c2]),
    );
    agree(
        &r,
        &["--rename-empty", "-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--rename-empty", &c1, &c2],
    );
    agree(
        &r,
        &["-C", "-C", &c1, &c2],
        &["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    agree(&r, &["-z", &c1, &c2], &with(&DEF, &["-z", &c1, &c2]));
    let t = agree(
        &r,
        &["--diff-filter=T", &c1, &c2],
        &with(&DEF, &["--diff-filter=T", &c1, &c2]),
    );
    assert_eq!(count(&t, "T"), 2);
    agree(&r, &["--no-renames", &c1, &c2], &["--no-renames", &c1, &c2]);
}

#[test]
fn odd_paths_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    let names: Vec<(&[u8], &[u8])> = vec![
        (b"dir with space/file one.rs", b"other dir/file two.rs"),
        (b"tab\tname.rs", b"moved/tab\there.rs"),
        (b"new\nline.rs", b"moved/new\nline2.rs"),
        (b"quo\"te.rs", b"moved/q\"2.rs"),
        (b"back\\slash.rs", b"moved/b\\2.rs"),
        (b"latin1-\xe9.rs", b"moved/\xe9t\xe9.rs"),
        ("caf\u{e9}.rs".as_bytes(), "moved/na\u{ef}ve.rs".as_bytes()),
        (b" leading space.rs", b"moved/trailing space .rs"),
        (b"plain.rs", b"moved/\x01ctl.rs"),
        (b"star*and?.rs", b"moved/[brackets].rs"),
    ];
    for (i, (from, _)) in names.iter().enumerate() {
        r.write(from, pick(110 + i));
    }
    r.write(b"gone\tfile.rs", pick(130));
    r.write(b"kept \"file\".rs", pick(131));
    let c1 = r.commit_all("one");
    for (i, (from, to)) in names.iter().enumerate() {
        r.remove(from);
        let data = if i % 2 == 0 {
            pick(110 + i).to_vec()
        } else {
            edit_lines(pick(110 + i), &[1, 5], i as u64)
        };
        r.write(to, &data);
    }
    r.remove(b"gone\tfile.rs");
    r.write(b"added\xff\nfile.rs", pick(132));
    r.write(b"kept \"file\".rs", &edit_lines(pick(131), &[2], 1));
    r.write(b"copy of \"kept\".rs", pick(131));
    let c2 = r.commit_all("two");

    let out = agree(&r, &[&c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert_eq!(count(&out, "R"), names.len(), "{}", lossy(&out));
    assert!(
        lines(&out).iter().any(|l| l.starts_with('R')
            && l.ends_with("\t\"latin1-\\351.rs\"\t\"moved/\\351t\\351.rs\"")),
        "{}",
        lossy(&out)
    );
    assert!(
        lines(&out)
            .iter()
            .any(|l| l.contains("\"moved/new\\nline2.rs\"")),
        "{}",
        lossy(&out)
    );
    let z = agree(&r, &["-z", &c1, &c2], &with(&DEF, &["-z", &c1, &c2]));
    assert!(
        z.windows(b"moved/new\nline2.rs\0".len())
            .any(|w| w == b"moved/new\nline2.rs\0")
    );
    let cz = agree(
        &r,
        &["-z", "-C", &c1, &c2],
        &["-z", "-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    assert!(cz.windows(2).any(|w| w == b"\0C") || cz.starts_with(b"C"));
    agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    agree(
        &r,
        &["-z", "--no-renames", &c1, &c2],
        &["-z", "--no-renames", &c1, &c2],
    );
}

// ---------------------------------------------------------------------------
// 7. Index and work tree.

#[test]
fn cached_and_work_tree_agree() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    for i in 0..10 {
        r.write(format!("src/f{i}.rs"), pick(140 + i));
    }
    r.write(
        "big.rs",
        &corpus_text("rust/toml-0.8.19/tests/testsuite/serde.rs"),
    );
    r.write("empty.txt", b"");
    let c1 = r.commit_all("one");
    // A second commit so `HEAD~1` is a meaningful tree-ish.
    r.write("src/f9.rs", &edit_lines(pick(149), &[4], 1));
    r.git_mv("src/f8.rs", "src/f8_first.rs");
    r.commit_all("two");

    // Staged: renames with edits, a deletion, a copy, an addition.
    r.git_mv("src/f0.rs", "lib/zero.rs");
    r.git_mv("src/f1.rs", "lib/one.rs");
    r.write("lib/one.rs", &edit_lines(pick(141), &[1, 2, 3], 2));
    r.git(&["add", "lib/one.rs"]);
    r.git(&["rm", "-q", "src/f2.rs"]);
    r.write("src/f3_copy.rs", &edit_lines(pick(143), &[7], 3));
    r.write("src/f3.rs", &edit_lines(pick(143), &[20], 4));
    r.git_mv("empty.txt", "moved_empty.txt");
    r.git(&["add", "-A"]);
    // Unstaged: more edits to a renamed file, a rename of a file with
    // unstaged edits, a plain `mv` (the new name is untracked), a file
    // deleted on disk, a file only touched.
    r.write("lib/zero.rs", &tune(pick(140), 55, 70, 5).0);
    r.git_mv("src/f4.rs", "lib/four.rs");
    r.write("lib/four.rs", &edit_lines(pick(144), &[0, 10], 6));
    r.mv("src/f5.rs", "untracked_f5.rs");
    r.remove("src/f6.rs");
    r.write("src/f7.rs", pick(147));
    r.chmod("big.rs", 0o755);

    let cached = agree(&r, &["--cached"], &with(&DEF, &["--cached"]));
    assert!(
        has_line(&cached, "R100\tsrc/f0.rs\tlib/zero.rs"),
        "{}",
        lossy(&cached)
    );
    assert!(score_of(&cached, "lib/one.rs").is_some_and(|s| s < 100));
    assert!(has_line(&cached, "D\tsrc/f2.rs"));
    assert!(has_line(&cached, "D\tempty.txt") && has_line(&cached, "A\tmoved_empty.txt"));
    agree(
        &r,
        &["--cached", "HEAD"],
        &with(&DEF, &["--cached", "HEAD"]),
    );
    let c1cached = agree(&r, &["--cached", &c1], &with(&DEF, &["--cached", &c1]));
    assert_eq!(score_of(&c1cached, "src/f8_first.rs"), Some(100));
    assert!(line_for(&lines(&cached), "src/f8_first.rs").is_none());
    assert!(count(&c1cached, "R") > count(&cached, "R"));
    let cc = agree(
        &r,
        &["--cached", "-C"],
        &["-C", "-l0", "--no-rename-empty", "--cached"],
    );
    assert!(count(&cc, "C") >= 1, "{}", lossy(&cc));
    agree(
        &r,
        &["--cached", "--rename-empty"],
        &["-M", "-l0", "--rename-empty", "--cached"],
    );
    // `--cached` reads the tree through the index's cache-tree: the same
    // answers whatever state git left it in. `git add -A` invalidated the
    // touched directories above; write-tree makes every node valid (for
    // the index's tree, not HEAD's); then none at all.
    let cached_states = |state: &str| {
        let runs: [(&[&str], Vec<&str>); 3] = [
            (&["--cached"], with(&DEF, &["--cached"])),
            (
                &["--cached", "-C"],
                vec!["-C", "-l0", "--no-rename-empty", "--cached"],
            ),
            (&["--cached", &c1], with(&DEF, &["--cached", &c1])),
        ];
        for (simm, git) in runs {
            let out = agree(&r, simm, &git);
            assert!(!out.is_empty(), "{state}: {simm:?}");
        }
    };
    cached_states("partly valid");
    r.git(&["write-tree"]);
    assert!(util::cache_tree(&r.path).is_some_and(|t| t.num_entries.is_some()));
    cached_states("valid for the index's tree");
    util::drop_cache_tree(&r.path);
    assert!(util::cache_tree(&r.path).is_none());
    cached_states("no cache-tree");

    let wt = agree(&r, &[], &with(&DEF, &["HEAD"]));
    let zero = score_of(&wt, "lib/zero.rs").expect("renamed in the work tree");
    assert!((55..70).contains(&zero), "{}", lossy(&wt));
    assert!(has_line(&wt, "D\tsrc/f5.rs") && has_line(&wt, "D\tsrc/f6.rs"));
    assert!(has_line(&wt, "M\tbig.rs"), "{}", lossy(&wt));
    assert!(
        !lines(&wt)
            .iter()
            .any(|l| l.contains("f7") || l.contains("untracked"))
    );
    agree(&r, &["HEAD"], &with(&DEF, &["HEAD"]));
    agree(&r, &["HEAD~1"], &with(&DEF, &["HEAD~1"]));
    agree(&r, &[&c1], &with(&DEF, &[&c1]));
    agree(&r, &["-z"], &with(&DEF, &["-z", "HEAD"]));
    let wc = agree(
        &r,
        &["-C", "-C"],
        &["-C", "-C", "-l0", "--no-rename-empty", "HEAD"],
    );
    assert!(count(&wc, "C") >= 1, "{}", lossy(&wc));
    agree(
        &r,
        &["-M30%"],
        &["-M30%", "-l0", "--no-rename-empty", "HEAD"],
    );
    agree(&r, &["--no-renames"], &["--no-renames", "HEAD"]);
    agree(
        &r,
        &["--rename-empty"],
        &["-M", "-l0", "--rename-empty", "HEAD"],
    );
}

/// During a merge conflict: git prints `U` for the unmerged path with
/// `--cached`, and compares the work tree file otherwise.
#[test]
fn unmerged_index_agrees() {
    let _mismatches = Mismatches::guard();
    let r = Repo::new();
    r.write(
        "a.rs",
        &corpus_text("rust/serde_json-1.0.133/src/lexical/shift.rs"),
    );
    r.write("b.rs", pick(150));
    r.write("c.rs", pick(151));
    r.commit_all("one");
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write(
        "a.rs",
        &edit_lines(
            &corpus_text("rust/serde_json-1.0.133/src/lexical/shift.rs"),
            &[1],
            1,
        ),
    );
    r.commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write(
        "a.rs",
        &edit_lines(
            &corpus_text("rust/serde_json-1.0.133/src/lexical/shift.rs"),
            &[1],
            2,
        ),
    );
    r.git_mv("b.rs", "moved/b.rs");
    r.commit_all("main");
    let merge = r.git_output(&["merge", "-q", "side"]);
    assert!(!merge.status.success(), "the merge conflicts");
    r.git_mv("c.rs", "moved/c.rs");
    let cached = agree(&r, &["--cached"], &with(&DEF, &["--cached"]));
    assert!(has_line(&cached, "U\ta.rs"), "{}", lossy(&cached));
    assert!(
        has_line(&cached, "R100\tc.rs\tmoved/c.rs"),
        "{}",
        lossy(&cached)
    );
    let wt = agree(&r, &[], &with(&DEF, &["HEAD"]));
    assert!(count(&wt, "R100") == 1, "{}", lossy(&wt));
}

// ---------------------------------------------------------------------------
// --json

/// One change, as both outputs can express it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Change {
    status: char,
    score: Option<u32>,
    old: Option<String>,
    new: String,
}

fn changes_from_lines(out: &[u8]) -> BTreeSet<Change> {
    lines(out)
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let status = f[0].chars().next().expect("status");
            match status {
                'R' | 'C' => Change {
                    status,
                    score: Some(f[0][1..].parse().expect("score")),
                    old: Some(f[1].to_owned()),
                    new: f[2].to_owned(),
                },
                _ => Change {
                    status,
                    score: None,
                    old: None,
                    new: f[1].to_owned(),
                },
            }
        })
        .collect()
}

fn json_str(o: &serde_json::Map<String, serde_json::Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match o.get(*k)? {
        serde_json::Value::String(s) => Some(s.clone()),
        // `{"path": ..., "blob": ..., "size": ...}`
        serde_json::Value::Object(side) => side.get("path")?.as_str().map(str::to_owned),
        _ => None,
    })
}

/// Read the JSON document leniently: an array of change objects, at the top
/// level or under the first array-valued field; each with a status (a
/// letter, a git status like "R087", or a word like "renamed"), a score and
/// the paths under the usual names.
fn changes_from_json(doc: &serde_json::Value) -> BTreeSet<Change> {
    let arr = match doc {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => ["changes", "entries", "renames", "pairs", "files"]
            .iter()
            .find_map(|k| o.get(*k).and_then(|v| v.as_array()))
            .or_else(|| o.values().find_map(|v| v.as_array()))
            .unwrap_or_else(|| panic!("no array of changes in {doc:#}")),
        _ => panic!("unexpected JSON {doc:#}"),
    };
    arr.iter()
        .map(|e| {
            let o = e
                .as_object()
                .unwrap_or_else(|| panic!("change is not an object: {e}"));
            let st = json_str(o, &["status", "kind", "type", "change"])
                .unwrap_or_else(|| panic!("no status in {e}"));
            let status = match st.to_ascii_lowercase().as_str() {
                "added" | "add" | "addition" => 'A',
                "deleted" | "delete" | "deletion" => 'D',
                "modified" | "modify" | "modification" => 'M',
                "renamed" | "rename" => 'R',
                "copied" | "copy" => 'C',
                "typechange" | "type-change" | "type_change" | "type-changed" | "type_changed"
                | "typechanged" => 'T',
                s => s.chars().next().expect("status").to_ascii_uppercase(),
            };
            let score = ["score", "similarity", "percent"]
                .iter()
                .find_map(|k| o.get(*k).and_then(|v| v.as_u64()))
                .map(|s| s as u32)
                .or_else(|| st.get(1..).and_then(|s| s.parse().ok()));
            let old = json_str(
                o,
                &[
                    "old", "old_path", "oldPath", "source", "src", "from", "src_path",
                ],
            );
            let new = json_str(
                o,
                &[
                    "new",
                    "new_path",
                    "newPath",
                    "destination",
                    "dest",
                    "dst",
                    "to",
                    "dst_path",
                    "path",
                ],
            );
            let (old, new) = match status {
                'R' | 'C' => (old, new.or_else(|| panic!("no destination in {e}"))),
                // A deletion names the old path only, perhaps.
                _ => (None, new.or(old).or_else(|| panic!("no path in {e}"))),
            };
            Change {
                status,
                score: if matches!(status, 'R' | 'C') {
                    score
                } else {
                    None
                },
                old,
                new: new.unwrap(),
            }
        })
        .collect()
}

#[test]
fn json_carries_the_same_changes() {
    let f = copies_fixture();
    let (r, c1, c2) = (&f.repo, f.c1.as_str(), f.c2.as_str());
    let cases: Vec<Vec<&str>> = vec![
        vec![c1, c2],
        vec!["-C", c1, c2],
        vec!["--find-copies-harder", c1, c2],
        vec!["-M90%", c1, c2],
    ];
    for args in cases {
        let text = r.simm(&with(&["renames"], &args));
        assert!(text.status.success(), "{}", lossy(&text.stderr));
        let json = r.simm(&with(&["renames", "--json"], &args));
        assert!(
            json.status.success(),
            "--json {args:?}: {}",
            lossy(&json.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| {
            panic!("--json {args:?} is not JSON ({e}): {}", lossy(&json.stdout))
        });
        let from_lines = changes_from_lines(&text.stdout);
        let from_json = changes_from_json(&doc);
        assert!(
            from_lines.iter().any(|c| c.status == 'R'),
            "{}",
            lossy(&text.stdout)
        );
        assert_eq!(
            from_json,
            from_lines,
            "--json {args:?} disagrees with the lines\n--- json:\n{}\n--- lines:\n{}",
            lossy(&json.stdout),
            lossy(&text.stdout)
        );
    }
}

/// Regression: a heavily edited file among many edited siblings (like
/// linux-raw-sys's `*/if_packet.rs`, one per architecture) is about as far
/// in fingerprint from each sibling as from unrelated files, so which
/// siblings make a destination's nearest candidates is luck. git-simm once
/// paired such a destination with a sibling that did (53%) and never scored
/// git's choice (55%), left out; the exhaustive fallback then served only
/// destinations no candidate paired.
#[test]
fn best_sibling_left_out_of_the_nearest_candidates_is_found() {
    use git_simm::similarity::fingerprint::fingerprint;
    use git_simm::similarity::score::Spans;
    let _mismatches = Mismatches::guard();
    // Fixtures are drawn until two have the shape that was missed, judged
    // with the library's fingerprints and git-exact scores: git's choice
    // (the best-scoring sibling) has at least 64 siblings nearer than it, so
    // no candidate list holds it, while a sibling among the 32 nearest
    // scores 50% or more, so the destination is paired without it. About
    // one draw in 120 has it: on the pinned corpus, draws 36 (libgit2's
    // transaction.c) and 213 (a tokio test) are the first two.
    let draws = 400;
    let mut compared = 0;
    for seed in 0..draws {
        let Some(base) = (0..50)
            .map(|i| pick(i + seed as usize * 13))
            .find(|d| (6_000..20_000).contains(&d.len()))
        else {
            continue;
        };
        let mut rng = Rng(0x51b1_0000 + seed);
        let siblings: Vec<Vec<u8>> = (0..100)
            .map(|_| {
                let p = 0.15 + 0.35 * rng.unit();
                rewrite_lines(base, p, rng.next())
            })
            .collect();
        let dest = rewrite_lines(base, 0.3, rng.next());
        let (Some(dest_fp), dest_spans) = (fingerprint(&dest), Spans::new(&dest)) else {
            continue;
        };
        let mut ranked: Vec<(u32, u32)> = siblings
            .iter()
            .filter_map(|s| {
                let d = fingerprint(s)?.distance(&dest_fp);
                Some((d, util::exact(&Spans::new(s), &dest_spans)))
            })
            .collect();
        ranked.sort_unstable();
        let best = ranked.iter().map(|&(_, sc)| sc).max().unwrap_or(0);
        let Some(at) = ranked.iter().position(|&(_, sc)| sc == best) else {
            continue;
        };
        let unique = ranked.iter().filter(|&&(_, sc)| sc == best).count() == 1;
        let nearer = ranked.iter().filter(|&&(d, _)| d < ranked[at].0).count();
        let lesser_pairs = ranked[..32].iter().any(|&(_, sc)| (50..best).contains(&sc));
        if !(unique && best >= 50 && nearer >= 64 && lesser_pairs) {
            continue;
        }

        let r = Repo::new();
        for (k, s) in siblings.iter().enumerate() {
            r.write(format!("arch{k:02}/sib.rs"), s);
        }
        let c1 = r.commit_all("siblings");
        // Deleted, so that -M sees them as sources too.
        for k in 0..siblings.len() {
            r.remove(format!("arch{k:02}/sib.rs"));
        }
        r.write("dest.rs", &dest);
        let c2 = r.commit_all("one heavily edited sibling left");
        for opts in [&["-M"][..], &["-C", "-C"]] {
            let out = agree(
                &r,
                &with(opts, &[&c1, &c2]),
                &with(opts, &["-l0", "--no-rename-empty", &c1, &c2]),
            );
            assert_eq!(score_of(&out, "dest.rs"), Some(best), "{}", lossy(&out));
        }
        compared += 1;
        if compared == 2 {
            return;
        }
    }
    panic!("only {compared} fixture(s) of the missed shape in {draws} draws");
}

// ---------------------------------------------------------------------------
// A larger real corpus.

/// `(status letter, score)` by `(source, destination)` for R/C lines, and
/// the other lines as they are.
/// (old, new) pairs with their status and score, and every other line.
type Parsed = (BTreeMap<(String, String), (char, u32)>, BTreeSet<String>);

fn parse_pairs(out: &[u8]) -> Parsed {
    let mut pairs = BTreeMap::new();
    let mut rest = BTreeSet::new();
    for l in lines(out) {
        let f: Vec<&str> = l.split('\t').collect();
        if f[0].starts_with('R') || f[0].starts_with('C') {
            let st = f[0].chars().next().unwrap();
            let sc: u32 = f[0][1..].parse().expect("score");
            pairs.insert((f[1].to_owned(), f[2].to_owned()), (st, sc));
        } else {
            rest.insert(l.clone());
        }
    }
    (pairs, rest)
}

#[test]
fn pairs_agree_on_a_larger_real_corpus() {
    let c = corpus();
    let mut order: Vec<usize> = (0..c.len()).collect();
    let mut rng = Rng(0x5eed_cafe);
    for i in (1..order.len()).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    let n = 1500;
    let r = Repo::new();
    let path_of = |i: usize| format!("tree/{}", c[order[i]].name);
    for i in 0..n {
        r.write(path_of(i), &c[order[i]].data);
    }
    let c1 = r.commit_all("corpus");

    let mut rng = Rng(0x00de_c0de);
    // 600 moves: 500 to new basenames, 100 keeping theirs; the first 200
    // edited with intensities spread so scores go from ~100% to ~30%.
    for i in 0..600 {
        let doc = &c[order[i]];
        let p = Path::new(&doc.name);
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("txt");
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("f");
        let base = p.file_name().and_then(|s| s.to_str()).unwrap_or("f");
        let to = if i < 500 {
            format!("moved/d{:02}/{stem}_{i:04}.{ext}", i % 37)
        } else {
            format!("relocated/r{:02}/{base}", i % 53)
        };
        // Two docs may share a basename and land in the same directory.
        let to = if Path::new(&r.path.join(&to)).exists() {
            format!("relocated/x{i:04}/{base}")
        } else {
            to
        };
        r.remove(path_of(i));
        let data = if i < 200 {
            let intensity = 0.02 + 1.1 * (i as f64 / 200.0);
            mixed_edit(&doc.data, intensity, rng.next())
        } else {
            doc.data.clone()
        };
        r.write(&to, &data);
    }
    // 50 deleted.
    for i in 600..650 {
        r.remove(path_of(i));
    }
    // 50 copied with edits; the first 20 sources also modified in place, so
    // plain -C sees them.
    for i in 650..700 {
        let doc = &c[order[i]];
        let ext = Path::new(&doc.name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("txt");
        let intensity = 0.3 * ((i - 650) as f64 / 50.0);
        r.write(
            format!("copies/c{i:04}.{ext}"),
            &mixed_edit(&doc.data, intensity, rng.next()),
        );
        if i < 670 {
            r.write(path_of(i), &mixed_edit(&doc.data, 0.02, rng.next()));
        }
    }
    // 50 new, unrelated.
    for k in 0..50 {
        let doc = &c[order[n + k]];
        r.write(format!("added/{}", doc.name), &doc.data);
    }
    let c2 = r.commit_all("reorganise");

    let runs: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("-M", vec![&c1, &c2], with(&DEF, &[&c1, &c2])),
        (
            "-M30%",
            vec!["-M30%", &c1, &c2],
            vec!["-M30%", "-l0", "--no-rename-empty", &c1, &c2],
        ),
        (
            "-C",
            vec!["-C", &c1, &c2],
            vec!["-C", "-l0", "--no-rename-empty", &c1, &c2],
        ),
        (
            "-C -C",
            vec!["-C", "-C", &c1, &c2],
            vec!["-C", "-C", "-l0", "--no-rename-empty", &c1, &c2],
        ),
    ];
    let mut failures = Vec::new();
    for (label, simm, git) in runs {
        let theirs = git_diff(&r, &git);
        let t0 = std::time::Instant::now();
        let ours = r.simm(&with(&["renames"], &simm));
        let took = t0.elapsed();
        assert!(
            ours.status.success(),
            "git-simm renames {simm:?}: {}",
            lossy(&ours.stderr)
        );
        let (gp, grest) = parse_pairs(&theirs);
        let (op, orest) = parse_pairs(&ours.stdout);
        let common: Vec<_> = op.keys().filter(|k| gp.contains_key(*k)).collect();
        let same_score = common.iter().filter(|k| op[**k] == gp[**k]).count();
        let precision = common.len() as f64 / op.len().max(1) as f64;
        let recall = common.len() as f64 / gp.len().max(1) as f64;
        let scores = same_score as f64 / common.len().max(1) as f64;
        let mut hist = [0usize; 11];
        for (_, sc) in gp.values() {
            hist[(*sc / 10) as usize] += 1;
        }
        eprintln!(
            "{label}: git {} pairs, ours {}, common {}; precision {:.4} recall {:.4}, \
             identical status+score {:.4}; other lines git {} ours {} (same: {}); \
             git score histogram by tens {hist:?}; git-simm took {took:?}",
            gp.len(),
            op.len(),
            common.len(),
            precision,
            recall,
            scores,
            grest.len(),
            orest.len(),
            grest == orest,
        );
        // Sanity: the fixture does what it says.
        match label {
            "-M" => {
                assert!(gp.len() >= 500, "{}", gp.len());
                assert!(hist[3] + hist[4] == 0 && hist[5] > 0 && hist[10] > 0);
            }
            "-M30%" => assert!(hist[3] + hist[4] > 0, "{hist:?}"),
            "-C" => assert!(gp.values().filter(|(s, _)| *s == 'C').count() >= 10),
            _ => assert!(gp.values().filter(|(s, _)| *s == 'C').count() >= 40),
        }
        if ours.stdout != theirs {
            let mut d = line_diff(&theirs, &ours.stdout, false);
            if d.len() > 6000 {
                d.truncate(6000);
                d.push_str("...\n");
            }
            failures.push(format!("{label}: git-simm renames {simm:?}\n{d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Ordinary renames, copies, deletions and additions hold no split or
    // merge: `--find-splits` prints git's lines and nothing more.
    for args in [vec![&c1[..], &c2[..]], vec!["-C", &c1, &c2]] {
        let theirs = git_diff(&r, &with(&["-l0", "--no-rename-empty"], &args));
        let ours = r.simm(&with(&["renames", "--find-splits"], &args));
        assert!(ours.status.success(), "{}", lossy(&ours.stderr));
        assert_eq!(
            lossy(&ours.stdout),
            lossy(&theirs),
            "--find-splits {args:?}"
        );
    }
}

/// Lines of `data` of at least 20 bytes, the first `n`.
fn long_lines(data: &[u8], n: usize) -> Vec<Vec<u8>> {
    split_lines(data)
        .into_iter()
        .filter(|l| l.len() >= 20)
        .take(n)
        .collect()
}

#[test]
fn tie_replay_keeps_a_reordered_copy_scored_exactly() {
    // Found in review: git scores lines as a bag, so a file with its lines
    // swapped around is a 100% copy while its fingerprint is far away
    // (about 106 bits). Here `d` is such a copy of the modified file `s`
    // (a source only with -C), and five deleted files score an equal 93%
    // against it, so equals straddle git's cut at 4 and the row is
    // replayed. A replay that bounded `s` by its fingerprint distance
    // skipped it, though its exact score was already known, and paired
    // `d` with one of the 93% files instead of git's `C100 s d`.
    let _mismatches = Mismatches::guard();
    let base = long_lines(
        &corpus_text("rust/regex-syntax-0.8.12/src/hir/print.rs"),
        150,
    );
    assert!(base.len() == 150);
    let mut rng = Rng(1);
    let mut swapped = base.clone();
    for _ in 0..90 {
        let (i, j) = (rng.below(150), rng.below(150));
        swapped.swap(i, j);
    }
    // Every 15th line replaced by a unique line of the same length: the
    // same score for each variant.
    let variant = |v: usize| -> Vec<u8> {
        let mut out = base.clone();
        for k in (0..150).step_by(15) {
            let len = out[k].len() - 1;
            let mut l: Vec<u8> = format!("// x{v} line {k} ").into_bytes();
            l.resize(len, b'z');
            l.push(b'\n');
            out[k] = l;
        }
        out.concat()
    };
    let r = Repo::new();
    for v in 1..=5 {
        r.write(format!("a{v}"), &variant(v));
    }
    r.write("s", &swapped.concat());
    let c1 = r.commit_all("one");
    for v in 1..=5 {
        r.remove(format!("a{v}"));
    }
    for v in 1..=4 {
        r.write(format!("b{v}"), &variant(v));
    }
    r.write("d", &base.concat());
    r.write("s", b"changed\n");
    let c2 = r.commit_all("two");
    let out = agree(
        &r,
        &["-C", &c1, &c2],
        &["-C", "-l0", "--no-rename-empty", &c1, &c2],
    );
    assert!(has_line(&out, "C100\ts\td"), "{}", lossy(&out));
}

#[test]
fn tie_straddling_the_cut_is_judged_when_the_walk_reaches_it() {
    // Found in review: `d` has two 80% sources and four equal 60% ones, so
    // git keeps two of the four, by its slot history (the later 80% ones
    // evict the first two 60% ones). The 80% sources and three of the 60%
    // ones are taken by better pairs; the fourth is free when git's walk
    // reaches `d`'s 60% entries, and only a later, weaker pair (`e2`, 55%)
    // would take it. Whether it is free must be judged then, not after the
    // walk.
    let _mismatches = Mismatches::guard();
    let mut rng = Rng(7);
    let mut line = |tag: &str| -> Vec<u8> {
        let mut l = format!("{tag} ").into_bytes();
        while l.len() < 38 {
            l.push(b"abcdefghijklmnopqrstuvwxyz "[rng.below(27)]);
        }
        l.truncate(38);
        l.push(b'\n');
        l
    };
    let mut lines = |tag: &str, n: usize| -> Vec<Vec<u8>> {
        (0..n).map(|i| line(&format!("{tag}{i}"))).collect()
    };
    let k = lines("k", 60);
    let dd = lines("dd", 40);
    let u: Vec<Vec<Vec<u8>>> = ["a", "b", "c", "d"]
        .iter()
        .map(|x| lines(&format!("u{x}"), 40))
        .collect();
    let uy = lines("uy", 20);
    let uz = lines("uz", 20);
    let fresh = lines("fresh", 45);
    let mut edits = lines("e", 50).into_iter();
    let cat = |parts: &[&[Vec<u8>]]| -> Vec<Vec<u8>> { parts.concat() };
    let old = [
        ("p1", cat(&[&k, &u[0]])),
        ("p2", cat(&[&k, &u[1]])),
        ("p3", cat(&[&k, &u[2]])),
        ("p4", cat(&[&k, &u[3]])),
        ("p5", cat(&[&k, &dd[..20], &uy])),
        ("p6", cat(&[&k, &dd[..20], &uz])),
    ];
    let r = Repo::new();
    for (p, ls) in &old {
        r.write(p, &ls.concat());
    }
    let c1 = r.commit_all("one");
    for (p, _) in &old {
        r.remove(p);
    }
    r.write("d", &cat(&[&k, &dd]).concat());
    for (src, dst) in [
        ("p1", "r_a"),
        ("p2", "r_b"),
        ("p4", "r_d"),
        ("p5", "r_y"),
        ("p6", "r_z"),
    ] {
        let mut ls = old
            .iter()
            .find(|(p, _)| *p == src)
            .map(|(_, l)| l.clone())
            .unwrap();
        for i in [0, 10, 20, 30, 40, 65, 75, 85, 90, 95] {
            ls[i] = edits.next().unwrap();
        }
        r.write(dst, &ls.concat());
    }
    r.write("e2", &cat(&[&u[2], &k[..15], &fresh]).concat());
    let c2 = r.commit_all("two");
    let out = agree(&r, &["-M", &c1, &c2], &with(&DEF, &[&c1, &c2]));
    assert!(has_line(&out, "R060\tp3\td"), "{}", lossy(&out));
    assert!(has_line(&out, "A\te2"), "{}", lossy(&out));
}
