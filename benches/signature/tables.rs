//! The calibration tables of the Coates signature (docs/signatures.md),
//! printed by `GIT_SIMM_SIGNATURE_TABLES=1 cargo bench --bench signature`:
//!
//! - Coates's three experiments on files of the pinned corpus (random
//!   substitutions, inserted blocks of 500 bytes, a text between two
//!   unrelated ones), for three values of `c`: the true
//!   edit distance (exact, bit-parallel over bytes), the estimate, and the
//!   error as a share of the "maximum" (the distance of the file to an
//!   unrelated one of the same size), means over the files;
//! - mean absolute error of those experiments and symbols per KiB, by
//!   `c`;
//! - with `GIT_SIMM_SIGNATURE_REPO=/path/to/repo`, 500 real pairs of that
//!   repository's history (modified files and renames with edits, 1 to
//!   64 KiB): the estimate against git's score (Pearson correlation, the
//!   threshold that keeps 99% of the pairs at 80% or more, and what share
//!   of the pairs under 80% that threshold lets through).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use git_simm::similarity::score::{self, Spans};
use git_simm::similarity::signature::{Shape, Signature, align, estimate};
use rayon::prelude::*;

use super::util::{self, Rng};

/// Files of 12 to 16 KiB of the corpus (Coates used one of 13.5 KB),
/// every one distinct, with unrelated partners.
fn files() -> Vec<Vec<u8>> {
    let mut seen = std::collections::BTreeSet::new();
    util::corpus_files()
        .iter()
        .filter(|p| util::wanted(p))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (12 * 1024..=16 * 1024).contains(&d.len()) && util::is_text(d))
        .filter(|d| seen.insert(d.clone()))
        .step_by(7)
        .take(24)
        .collect()
}

fn shape(c: usize) -> Shape {
    Shape { c, coarse_c: c }
}

/// `text` with a fraction `p` of its bytes replaced by random printable
/// characters.
fn substitute(text: &[u8], p: f64, rng: &mut Rng) -> Vec<u8> {
    let mut out = text.to_vec();
    let k = (text.len() as f64 * p).round() as usize;
    for _ in 0..k {
        let at = rng.below(out.len());
        out[at] = 0x20 + rng.below(95) as u8;
    }
    out
}

/// `text` with `k` blocks of 500 bytes of `other` inserted at random
/// places.
fn insert_blocks(text: &[u8], other: &[u8], k: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = text.to_vec();
    for i in 0..k {
        let at = rng.below(out.len() + 1);
        let from = (i * 500) % (other.len() - 500);
        out.splice(at..at, other[from..from + 500].iter().copied());
    }
    out
}

struct Row {
    truth: f64,
    est: f64,
    max: f64,
}

/// How a text becomes symbols: the stored definition (git's chunks as
/// neighbourhoods) at some `c`, or Coates's original (a rolling sum of
/// the bytes of an `n`-byte window; a symbol where the sum is 0 mod `c`,
/// the symbol a hash of the window), kept here only to measure against.
#[derive(Clone, Copy, Debug)]
enum Method {
    Chunks(usize),
    Window { n: usize, c: usize },
}

impl Method {
    fn label(&self) -> String {
        match self {
            Method::Chunks(c) => format!("git chunks, c = {c}"),
            Method::Window { n, c } => format!("Coates window n = {n}, c = {c}"),
        }
    }

    /// Symbol values, and the bytes a symbol stands for in this pair.
    fn symbols(&self, data: &[u8]) -> Vec<u8> {
        match *self {
            Method::Chunks(c) => Signature::with_shape(data, &shape(c)).values().collect(),
            Method::Window { n, c } => window(data, n, c),
        }
    }

    /// Similarity (0-100) and estimated edit distance of `a` and `b`.
    fn estimate(&self, a: &[u8], b: &[u8]) -> (f64, f64) {
        if let Method::Chunks(c) = *self {
            let (sa, sb) = (
                Signature::with_shape(a, &shape(c)),
                Signature::with_shape(b, &shape(c)),
            );
            let e = estimate::estimate(&sa, &sb);
            return (e.similarity.unwrap_or(0.0) * 100.0, e.edit_distance as f64);
        }
        let (sa, sb) = (self.symbols(a), self.symbols(b));
        let d = align::distance(&sa, &sb) as f64;
        let longer = sa.len().max(sb.len()).max(1) as f64;
        let per = (a.len() + b.len()) as f64 / (sa.len() + sb.len()).max(1) as f64;
        let low = a.len().abs_diff(b.len()) as f64;
        let high = a.len().max(b.len()) as f64;
        ((1.0 - d / longer) * 100.0, (d * per).clamp(low, high))
    }
}

/// Coates's signature: the sum of the bytes of the last `n` is kept
/// rolling; where it is 0 mod `c` (about one byte in `c`), the window's
/// hash (top 6 bits) is a symbol.
fn window(data: &[u8], n: usize, c: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / c + 1);
    let mut sum = 0usize;
    for i in 0..data.len() {
        sum += usize::from(data[i]);
        if i >= n {
            sum -= usize::from(data[i - n]);
        }
        if i + 1 >= n && sum.is_multiple_of(c) {
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for &b in &data[i + 1 - n..=i] {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
            out.push((h >> 58) as u8);
        }
    }
    out
}

/// True and estimated distance of `a` and `b`, and the maximum: the
/// distance of `a` to an unrelated text as long as `b`.
fn measure(a: &[u8], b: &[u8], unrelated: &[u8], method: Method) -> Row {
    let cut = &unrelated[..b.len().min(unrelated.len())];
    Row {
        truth: align::byte_distance(a, b) as f64,
        est: method.estimate(a, b).1,
        max: align::byte_distance(a, cut) as f64,
    }
}

fn mean(rows: &[Row]) -> (f64, f64, f64, f64) {
    let n = rows.len() as f64;
    let t = rows.iter().map(|r| r.truth).sum::<f64>() / n;
    let e = rows.iter().map(|r| r.est).sum::<f64>() / n;
    let m = rows.iter().map(|r| r.max).sum::<f64>() / n;
    let err = rows.iter().map(|r| (r.est - r.truth) / r.max).sum::<f64>() / n;
    (t, e, m, err)
}

fn mean_abs_error(rows: &[Row]) -> f64 {
    rows.iter()
        .map(|r| ((r.est - r.truth) / r.max).abs())
        .sum::<f64>()
        / rows.len() as f64
}

/// The experiments' rows for one method: (label, rows) per case.
fn experiments(files: &[Vec<u8>], method: Method) -> Vec<(String, Vec<Row>)> {
    let mut cases: Vec<(String, Vec<Row>)> = Vec::new();
    let pick = |i: usize| &files[(i + files.len() / 2) % files.len()];
    for p in [1, 5, 10, 20, 30] {
        let rows = (0..files.len())
            .into_par_iter()
            .map(|i| {
                let mut rng = Rng(1000 + i as u64 * 31 + p);
                let b = substitute(&files[i], p as f64 / 100.0, &mut rng);
                measure(&files[i], &b, pick(i), method)
            })
            .collect();
        cases.push((format!("{p}% of the bytes substituted"), rows));
    }
    for k in [1, 5, 10] {
        let rows = (0..files.len())
            .into_par_iter()
            .map(|i| {
                let mut rng = Rng(2000 + i as u64 * 31 + k as u64);
                let b = insert_blocks(&files[i], pick(i), k, &mut rng);
                measure(&files[i], &b, pick(i + 1), method)
            })
            .collect();
        cases.push((format!("{k} blocks of 500 bytes inserted"), rows));
    }
    let rows = (0..files.len())
        .into_par_iter()
        .map(|i| {
            let (l, r) = (pick(i), pick(i + 1));
            let len = files[i].len();
            let b = [
                &l[..len.min(l.len())],
                &files[i][..],
                &r[..len.min(r.len())],
            ]
            .concat();
            measure(&files[i], &b, pick(i + 2), method)
        })
        .collect();
    cases.push(("between two unrelated texts".to_owned(), rows));
    cases
}

pub fn print() {
    let files = files();
    let bytes: usize = files.iter().map(Vec::len).sum();
    println!(
        "Coates's experiments on {} corpus files of 12-16 KiB (mean {} bytes); \
         means over the files; error = (estimate - true) / max, max = the exact distance to \
         an unrelated file of the same size\n",
        files.len(),
        bytes / files.len()
    );
    for c in [16, 32, 64] {
        println!("| c | case | true distance | estimate | max | error |");
        println!("|---:|---|---:|---:|---:|---:|");
        for (label, rows) in experiments(&files, Method::Chunks(c)) {
            let (t, e, m, err) = mean(&rows);
            println!("| {c} | {label} | {t:.0} | {e:.0} | {m:.0} | {err:+.4} |");
        }
        println!();
    }
    println!("Mean |error| over all cases above, by method and c (symbols per KiB of text):\n");
    let cs = [16, 32, 64, 128];
    println!(
        "| method | {} |",
        cs.iter()
            .map(|c| format!("c = {c}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---:|".repeat(cs.len()));
    let methods: [fn(usize) -> Method; 4] = [
        Method::Chunks,
        |c| Method::Window { n: 8, c },
        |c| Method::Window { n: 16, c },
        |c| Method::Window { n: 32, c },
    ];
    for make in methods {
        let mut cells = Vec::new();
        for &c in &cs {
            let m = make(c);
            let all: Vec<Row> = experiments(&files, m)
                .into_iter()
                .flat_map(|(_, r)| r)
                .collect();
            let symbols: usize = files.iter().map(|f| m.symbols(f).len()).sum();
            cells.push(format!(
                "{:.4} ({:.1})",
                mean_abs_error(&all),
                symbols as f64 * 1024.0 / bytes as f64
            ));
        }
        let label = make(0).label();
        let label = label.split(", c").next().unwrap_or_default();
        println!("| {label} | {} |", cells.join(" | "));
    }
    println!();
    if let Ok(repo) = std::env::var("GIT_SIMM_SIGNATURE_REPO") {
        history(&repo);
    }
}

/// Modified and renamed-and-edited text files of `repo`'s history, 1 to
/// 64 KiB: 500 pairs, a seeded sample.
fn history_pairs(repo: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let log = Command::new("git")
        .args([
            "-C",
            repo,
            "log",
            "--format=",
            "--raw",
            "--no-abbrev",
            "-M",
            "--diff-filter=MR",
        ])
        .output()
        .expect("git log");
    let mut pairs: Vec<(String, String)> = Vec::new();
    for line in String::from_utf8_lossy(&log.stdout).lines() {
        // ":100644 100644 <old> <new> M\tpath"
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 5
            && f[0].starts_with(":100")
            && f[1].starts_with("100")
            && !f[4].starts_with("R100")
        {
            pairs.push((f[2].to_owned(), f[3].to_owned()));
        }
    }
    let mut rng = Rng(500);
    let mut chosen = Vec::new();
    let mut cat = Command::new("git")
        .args(["-C", repo, "cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git cat-file");
    let mut input = cat.stdin.take().expect("stdin");
    let mut output = BufReader::new(cat.stdout.take().expect("stdout"));
    let mut read = |id: &str| -> Vec<u8> {
        writeln!(input, "{id}").expect("write");
        input.flush().expect("flush");
        let mut header = String::new();
        output.read_line(&mut header).expect("header");
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut data = vec![0u8; size + 1];
        output.read_exact(&mut data).expect("blob");
        data.truncate(size);
        data
    };
    let mut tries = 0;
    while chosen.len() < 500 && tries < 20_000 && !pairs.is_empty() {
        tries += 1;
        let (old, new) = pairs.swap_remove(rng.below(pairs.len()));
        let (a, b) = (read(&old), read(&new));
        let ok = |d: &[u8]| (1024..=64 * 1024).contains(&d.len()) && util::is_text(d);
        if ok(&a) && ok(&b) {
            chosen.push((a, b));
        }
    }
    drop(input);
    let _ = cat.wait();
    chosen
}

fn history(repo: &str) {
    let pairs = history_pairs(repo);
    let git: Vec<f64> = pairs
        .par_iter()
        .map(|(a, b)| {
            f64::from(score::percent(score::score(
                &Spans::new(a),
                &Spans::new(b),
                0,
            )))
        })
        .collect();
    let at80 = git.iter().filter(|&&g| g >= 80.0).count();
    println!(
        "{} real pairs of {repo}'s history (modified files, renames with edits; 1-64 KiB), {} at \
         git score 80% or more:\n",
        pairs.len(),
        at80
    );
    println!(
        "| method | correlation with git's score | threshold keeping 99% of pairs at 80% | \
         pairs under 80% above it |"
    );
    println!("|---|---:|---:|---:|");
    let mut methods: Vec<Method> = [16, 32, 64].map(Method::Chunks).to_vec();
    methods.extend([16, 32, 64].map(|c| Method::Window { n: 16, c }));
    for m in methods {
        let est: Vec<f64> = pairs.par_iter().map(|(a, b)| m.estimate(a, b).0).collect();
        let r = pearson(&git, &est);
        let mut kept: Vec<f64> = git
            .iter()
            .zip(&est)
            .filter(|(g, _)| **g >= 80.0)
            .map(|(_, e)| *e)
            .collect();
        kept.sort_by(f64::total_cmp);
        let t = kept.get(kept.len() / 100).copied().unwrap_or(0.0);
        let below: Vec<f64> = git
            .iter()
            .zip(&est)
            .filter(|(g, _)| **g < 80.0)
            .map(|(_, e)| *e)
            .collect();
        let through = below.iter().filter(|&&e| e >= t).count();
        println!(
            "| {} | {r:.3} | {t:.1}% | {through} of {} |",
            m.label(),
            below.len()
        );
    }
    println!();
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}
