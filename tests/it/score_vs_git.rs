//! git is the oracle for `git_simm::similarity::score`.
//!
//! The point of the score module is that its numbers are git's numbers, so
//! these tests build real repositories with the real `git` binary, let git
//! detect renames, and require the same percentage for every pair git reports,
//! the same accept/reject decision at thresholds, and the same reading of
//! `-M<n>` arguments. Inputs are real text of the pinned corpus (code in
//! three languages and prose, `fixtures/corpus.sh`) with deterministic
//! pseudo-random edits.

use crate::util;

use std::collections::{HashMap, HashSet};

use git_simm::similarity::score::{
    DEFAULT_MIN_SCORE, MAX_SCORE, Spans, parse_rename_score, percent, score,
};
use util::{Repo, Rng, corpus_dir, corpus_files, wanted};

/// Renames git finds between two commits: `(percent, old path, new path)`.
fn renames(repo: &Repo, from: &str, to: &str, m_arg: &str) -> Vec<(u32, String, String)> {
    let m = format!("-M{m_arg}");
    let args = ["diff", "--no-color", &m, "-l0", "--name-status", from, to];
    let out = repo.git_output(&args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "git warned: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("git output is UTF-8");
    stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let status = fields.next()?;
            let pct = status.strip_prefix('R')?;
            let pct: u32 = pct.parse().expect("R is followed by a number");
            let old = fields.next().expect("old path").to_owned();
            let new = fields.next().expect("new path").to_owned();
            Some((pct, old, new))
        })
        .collect()
}

/// Parts of the corpus (`fixtures/corpus.sh`) the pairs are cut from:
/// Rust, C, Python and prose.
const SOURCES: [&str; 4] = [
    "rust/regex-1.11.1/src",
    "rust/libz-sys-1.1.20/src/zlib",
    "python/click-8.1.7/src",
    "python/docutils-0.21.2/docs/user",
];

/// The text files of [`SOURCES`], as lines (each with its LF, if any), in
/// sorted path order.
fn corpus() -> Vec<Vec<u8>> {
    let root = corpus_dir();
    let mut lines = Vec::new();
    for file in corpus_files() {
        if wanted(file) && SOURCES.iter().any(|d| file.starts_with(root.join(d))) {
            let data = std::fs::read(file).expect("read a corpus file");
            lines.extend(data.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec));
        }
    }
    // Tens of thousands: fewer means the corpus is not what it was pinned
    // to be.
    assert!(
        lines.len() >= 20_000,
        "corpus too small: {} lines",
        lines.len()
    );
    lines
}

/// How a pair's destination is derived from its source; one per test pair,
/// chosen round-robin so every kind is covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mode {
    /// Lines deleted and inserted.
    Lines,
    /// Lines edited plus 50-byte substitutions anywhere.
    Substitute,
    /// Edits, then both sides converted to CRLF.
    CrlfBoth,
    /// Light edits, destination alone converted to CRLF.
    CrlfDst,
    /// Both sides CRLF and binary (a NUL early on), so CRs count on both.
    BinaryBoth,
    /// Both CRLF, the destination alone binary: CRs count on one side only.
    BinaryDst,
    /// Both CRLF, a NUL at byte 7999 (binary) or 8000 (still text).
    NulAtLimit,
    /// Lines shuffled, sometimes without any other edit (a non-exact R100).
    Shuffle,
    /// Lines joined into long ones, so chunks end at 64 bytes.
    LongLines,
    /// No final newline, plus substitutions.
    NoFinalNewline,
}

const MODES: [Mode; 10] = [
    Mode::Lines,
    Mode::Substitute,
    Mode::CrlfBoth,
    Mode::CrlfDst,
    Mode::BinaryBoth,
    Mode::BinaryDst,
    Mode::NulAtLimit,
    Mode::Shuffle,
    Mode::LongLines,
    Mode::NoFinalNewline,
];

struct Pair {
    mode: Mode,
    src: Vec<u8>,
    dst: Vec<u8>,
}

/// Build pair number `i`. Most pairs prefix every line with a tag of their
/// own, as in a numbered listing, so that git does not pair one test's source
/// with another test's destination; every seventh keeps the raw text.
fn make_pair(i: usize, corpus: &[Vec<u8>], rng: &mut Rng) -> Pair {
    let mode = MODES[i % MODES.len()];
    let n_lines = if mode == Mode::NulAtLimit {
        400 + rng.below(200)
    } else {
        8 + rng.below(300)
    };
    let start = rng.below(corpus.len());
    let mut lines: Vec<Vec<u8>> = (0..n_lines)
        .map(|k| corpus[(start + k) % corpus.len()].clone())
        .collect();
    if let Some(last) = lines.last_mut()
        && last.last() != Some(&b'\n')
    {
        last.push(b'\n');
    }
    if !i.is_multiple_of(7) {
        for line in &mut lines {
            let mut tagged = format!("{i:03}| ").into_bytes();
            tagged.extend_from_slice(line);
            *line = tagged;
        }
    }
    if mode == Mode::LongLines {
        let mut joined: Vec<Vec<u8>> = Vec::new();
        for (k, line) in lines.into_iter().enumerate() {
            match joined.last_mut() {
                Some(prev) if k % 3 != 0 => {
                    prev.pop();
                    prev.extend_from_slice(&line);
                }
                _ => joined.push(line),
            }
        }
        lines = joined;
    }

    // Edit intensity: 0 keeps everything, 1 replaces most of the file.
    let t = match mode {
        Mode::CrlfDst => rng.unit() * 0.2,
        Mode::Shuffle if i % 20 < 10 => 0.0,
        Mode::Shuffle => rng.unit() * 0.3,
        _ => rng.unit(),
    };
    let mut dst_lines: Vec<Vec<u8>> = Vec::new();
    for line in &lines {
        if !rng.chance(t * 0.8) {
            dst_lines.push(line.clone());
        }
        if rng.chance(t * 0.8) {
            for _ in 0..=rng.below(3) {
                dst_lines.push(rng.fresh_line());
            }
        }
    }
    if mode == Mode::Shuffle {
        for k in (1..dst_lines.len()).rev() {
            dst_lines.swap(k, rng.below(k + 1));
        }
    }
    let src: Vec<u8> = lines.concat();
    let mut dst: Vec<u8> = dst_lines.concat();
    if matches!(
        mode,
        Mode::Substitute | Mode::NoFinalNewline | Mode::LongLines
    ) {
        let subs = (t * dst.len() as f64 / 200.0) as usize;
        for _ in 0..subs {
            if dst.len() > 50 {
                let at = rng.below(dst.len() - 50);
                let patch = rng.printable(50);
                dst[at..at + 50].copy_from_slice(&patch);
            }
        }
    }

    let (mut src, mut dst) = match mode {
        Mode::CrlfBoth | Mode::BinaryBoth | Mode::BinaryDst | Mode::NulAtLimit => {
            (util::to_crlf(&src), util::to_crlf(&dst))
        }
        Mode::CrlfDst => (src, util::to_crlf(&dst)),
        _ => (src, dst),
    };
    match mode {
        Mode::BinaryBoth => {
            let at = rng.below(src.len().min(8000));
            src.insert(at, 0);
            let at = rng.below(dst.len().min(8000));
            dst.insert(at, 0);
        }
        Mode::BinaryDst => {
            let at = rng.below(dst.len().min(8000));
            dst.insert(at, 0);
        }
        Mode::NulAtLimit => {
            let at = if i % 20 < 10 { 7999 } else { 8000 };
            if dst.len() > at {
                dst.insert(at, 0);
            }
        }
        Mode::NoFinalNewline => {
            if src.last() == Some(&b'\n') {
                src.pop();
            }
            if i % 20 < 10 && dst.last() == Some(&b'\n') {
                dst.pop();
            }
        }
        _ => {}
    }
    // git pairs identical blobs without scoring them; keep every pair inexact.
    if dst.is_empty() || dst == src {
        dst.extend_from_slice(&rng.fresh_line());
    }
    Pair { mode, src, dst }
}

fn src_path(i: usize) -> String {
    format!("p{i:03}/old.txt")
}

fn dst_path(i: usize) -> String {
    format!("p{i:03}/new.txt")
}

fn pair_of(path: &str) -> usize {
    path[1..4].parse().expect("pair number in path")
}

/// Every rename git reports for ~160 realistic pairs must carry exactly the
/// percentage we compute, and every intended pair git does not report must be
/// explained by our score or by git's pairing rules.
#[test]
fn percentages_match_git_for_edited_crate_files() {
    const BATCHES: usize = 4;
    const PER_BATCH: usize = 40;
    // -M1%: low enough for heavily edited pairs, and the size pre-filter at
    // this threshold rejects only pairs below 1% anyway.
    const M_ARG: &str = "1%";
    let min = parse_rename_score(M_ARG).expect("valid -M argument");
    assert_eq!(min, 600);

    let corpus = corpus();
    let mut rng = Rng(0x005e_ed0f_5c0e);
    let repo = Repo::new();
    repo.write("README", b"score tests\n");
    repo.commit_all("root");

    let mut compared = 0usize;
    let mut intended_compared = 0usize;
    let mut intended_pcts: Vec<u32> = Vec::new();
    let mut modes_seen: HashMap<Mode, usize> = HashMap::new();
    let mut mismatches: Vec<String> = Vec::new();
    let mut below_threshold = 0usize;

    for batch in 0..BATCHES {
        let ids: Vec<usize> = (batch * PER_BATCH..(batch + 1) * PER_BATCH).collect();
        let pairs: Vec<Pair> = ids
            .iter()
            .map(|&i| make_pair(i, &corpus, &mut rng))
            .collect();
        let mut src_spans: HashMap<String, Spans> = HashMap::new();
        let mut dst_spans: HashMap<String, Spans> = HashMap::new();
        for (&i, pair) in ids.iter().zip(&pairs) {
            repo.write(src_path(i), &pair.src);
            src_spans.insert(src_path(i), Spans::new(&pair.src));
            dst_spans.insert(dst_path(i), Spans::new(&pair.dst));
        }
        let before = repo.commit_all(&format!("sources {batch}"));
        for (&i, pair) in ids.iter().zip(&pairs) {
            repo.remove(src_path(i));
            repo.write(dst_path(i), &pair.dst);
        }
        let after = repo.commit_all(&format!("renames {batch}"));

        let reported = renames(&repo, &before, &after, M_ARG);
        let mut used_src: HashSet<String> = HashSet::new();
        let mut used_dst: HashSet<String> = HashSet::new();
        for (git_pct, old, new) in &reported {
            let ours = percent(score(&src_spans[old], &dst_spans[new], min));
            compared += 1;
            if ours != *git_pct {
                mismatches.push(format!("{old} -> {new}: git R{git_pct:03}, ours {ours}"));
            }
            if pair_of(old) == pair_of(new) {
                intended_compared += 1;
                intended_pcts.push(*git_pct);
                *modes_seen
                    .entry(pairs[pair_of(old) - batch * PER_BATCH].mode)
                    .or_default() += 1;
            }
            used_src.insert(old.clone());
            used_dst.insert(new.clone());
        }

        for &i in &ids {
            let (s, d) = (src_path(i), dst_path(i));
            if used_src.contains(&s) && used_dst.contains(&d) {
                continue;
            }
            let ours = score(&src_spans[&s], &dst_spans[&d], min);
            if ours < min {
                below_threshold += 1;
                continue;
            }
            if used_src.contains(&s) || used_dst.contains(&d) {
                // Taken by a better-scoring pair; git assigns greedily.
                continue;
            }
            // git keeps only the best four sources per destination.
            let better = src_spans
                .values()
                .filter(|other| score(other, &dst_spans[&d], min) > ours)
                .count();
            if better < 4 {
                mismatches.push(format!(
                    "{s} -> {d}: ours {} but git reports no rename",
                    percent(ours)
                ));
            }
        }
    }

    assert!(
        mismatches.is_empty(),
        "{} disagreements with git:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // Guard against a test that silently compares nothing.
    assert!(compared >= 100, "only {compared} renames compared");
    assert!(
        intended_compared >= 100,
        "only {intended_compared} intended pairs reported by git"
    );
    for decile in 1..10 {
        assert!(
            intended_pcts.iter().any(|&p| p / 10 == decile),
            "no pair scored {}..{}%: {intended_pcts:?}",
            decile * 10,
            decile * 10 + 9
        );
    }
    assert!(intended_pcts.contains(&100), "no inexact R100 pair");
    for mode in MODES {
        assert!(
            modes_seen.get(&mode).copied().unwrap_or(0) >= 3,
            "mode {mode:?} compared too rarely: {modes_seen:?}"
        );
    }
    eprintln!(
        "compared {compared} renames ({intended_compared} intended, \
         {below_threshold} intended pairs below 1%)"
    );
}

/// Source text of exactly `size` bytes ending in LF, tagged so that it is
/// unlike every other test file.
fn sized_text(tag: &str, size: usize, corpus: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut k = rng.below(corpus.len());
    loop {
        let mut line = format!("{tag}| ").into_bytes();
        line.extend_from_slice(&corpus[k % corpus.len()]);
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        k += 1;
        if out.len() + line.len() + 8 > size {
            break;
        }
        out.extend_from_slice(&line);
    }
    // The last line takes up the slack, so the size is exact and the file
    // still ends with LF (no chunk can straddle into appended text).
    out.extend_from_slice(format!("{tag}|").as_bytes());
    out.resize(size - 1, b'=');
    out.push(b'\n');
    assert_eq!(out.len(), size);
    out
}

/// `n` bytes of text unlike anything else in the test (fresh lines).
fn filler(n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 64);
    while out.len() < n {
        out.extend_from_slice(&rng.fresh_line());
    }
    out.truncate(n);
    out
}

/// git's decision "rename or not" must follow our score and our reading of
/// the `-M` argument, including pairs that sit exactly on the threshold and
/// exactly on the size pre-filter's boundary.
#[test]
fn thresholds_and_m_arguments_match_git() {
    let corpus = corpus();
    let mut rng = Rng(0x7e57_ab1e);
    let repo = Repo::new();
    repo.write("README", b"threshold tests\n");
    repo.commit_all("root");

    // Pairs "src + x filler bytes" with x chosen so that the score is exactly
    // the threshold (the largest x that still reaches it) or just below it.
    // The source size is a multiple of 9 * 101 so that 10%, 50%, 50.5% and
    // 90% all divide evenly; at 10% and 50% this also puts the pair exactly
    // on the size pre-filter's boundary.
    let mut pairs: Vec<(String, Vec<u8>, Vec<u8>)> = Vec::new();
    for (n, threshold) in [6000u32, 30000, 30300, 54000].into_iter().enumerate() {
        let size = 909 * (3 + n);
        let src = sized_text(&format!("t{n}"), size, &corpus, &mut rng);
        let s = size as u64;
        let x = s * u64::from(MAX_SCORE - threshold) / u64::from(threshold);
        for (variant, extra) in [("at", x), ("below", x + 1)] {
            // Retry until the filler shares no bucket with the source, so
            // that the score is the designed one.
            let mut dst;
            loop {
                dst = src.clone();
                dst.extend_from_slice(&filler(extra as usize, &mut rng));
                let got = score(&Spans::new(&src), &Spans::new(&dst), 0);
                if git_simm::similarity::score::copied(&Spans::new(&src), &Spans::new(&dst)) == s {
                    let expected = s * u64::from(MAX_SCORE) / (s + extra);
                    assert_eq!(u64::from(got), expected);
                    break;
                }
            }
            let got = score(&Spans::new(&src), &Spans::new(&dst), threshold);
            if variant == "at" {
                assert_eq!(got, threshold, "pair t{n} is not on the threshold");
            } else {
                assert!(got < threshold);
            }
            pairs.push((format!("t{n}-{variant}"), src.clone(), dst));
        }
    }
    // Reordered lines copy every byte: R100 without being an exact rename.
    let shuffled_src = sized_text("shuf", 3000, &corpus, &mut rng);
    let mut lines: Vec<&[u8]> = shuffled_src.split_inclusive(|&b| b == b'\n').collect();
    lines.reverse();
    let shuffled_dst = lines.concat();
    assert_ne!(shuffled_src, shuffled_dst);
    pairs.push(("shuffled".to_owned(), shuffled_src, shuffled_dst));
    // A low, ordinary score.
    let mid_src = sized_text("mid", 4000, &corpus, &mut rng);
    let mut mid_dst = mid_src[..2500].to_vec();
    mid_dst.extend_from_slice(&filler(2000, &mut rng));
    pairs.push(("mid".to_owned(), mid_src, mid_dst));

    let args = [
        "", "0", "1", "5", "9", "50", "50%", "100", "0.1", "0.5", ".5", "1%", "10%", "9.9%",
        "10.1%", "90%", "90", "0.9", "89.99%", "50.5%", "50.4%", "50.6%", "505", "5050", "0.505",
        "99%", "100%", "1.5", "99.999%", "99999999", "1000",
    ];
    let mut decisions = 0usize;
    let mut reported_count = 0usize;
    for (name, src, dst) in &pairs {
        let old = format!("{name}/old.txt");
        let new = format!("{name}/new.txt");
        repo.write(&old, src);
        let before = repo.commit_all(&format!("add {name}"));
        repo.remove(&old);
        repo.write(&new, dst);
        let after = repo.commit_all(&format!("rename {name}"));
        let (src_spans, dst_spans) = (Spans::new(src), Spans::new(dst));
        for arg in args {
            let parsed = parse_rename_score(arg).expect("git accepts this argument");
            // git reads 0 as "the default", and skips inexact detection
            // altogether when only exact renames can qualify.
            let min = if parsed == 0 {
                DEFAULT_MIN_SCORE
            } else {
                parsed
            };
            let ours = score(&src_spans, &dst_spans, min);
            let expect = (min < MAX_SCORE && ours >= min).then(|| percent(ours));
            let git = renames(&repo, &before, &after, arg);
            let got = match git.as_slice() {
                [] => None,
                [(pct, o, n)] if *o == old && *n == new => Some(*pct),
                other => panic!("unexpected renames for {name}: {other:?}"),
            };
            assert_eq!(
                got, expect,
                "{name} with -M{arg:?}: git {got:?}, ours score {ours} at min {min}"
            );
            decisions += 1;
            reported_count += usize::from(got.is_some());
        }
    }
    assert_eq!(decisions, pairs.len() * args.len());
    // Both outcomes must occur often, or the comparison proves little.
    assert!(
        reported_count >= 50,
        "only {reported_count} renames reported"
    );
    assert!(
        decisions - reported_count >= 50,
        "only {} pairs rejected",
        decisions - reported_count
    );
}

/// Arguments git refuses for `-M` are errors for us too.
#[test]
fn invalid_m_arguments_are_rejected_like_git() {
    let repo = Repo::new();
    let (a, b) = (b"one\ntwo\nthree\n", b"one\ntwo\nthree\nfour\n");
    repo.write("a.txt", a);
    repo.commit_all("one");
    repo.remove("a.txt");
    repo.write("b.txt", b);
    repo.commit_all("two");
    for bad in [
        "5x", "50%%", "1.2.3", "-5", "5 ", " 5", "ab", "50%x", "1e3", "+5",
    ] {
        let m = format!("-M{bad}");
        let out = repo.git_output(&["diff", &m, "--name-status", "HEAD~1", "HEAD"]);
        assert!(!out.status.success(), "git accepted -M{bad:?}");
        let err = parse_rename_score(bad).expect_err("we must reject it too");
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
    // And the valid spelling of the same pair is found.
    let out = renames(&repo, "HEAD~1", "HEAD", "50%");
    let ours = percent(score(&Spans::new(a), &Spans::new(b), DEFAULT_MIN_SCORE));
    assert_eq!(ours, 73);
    assert_eq!(out, vec![(ours, "a.txt".to_owned(), "b.txt".to_owned())]);
}
