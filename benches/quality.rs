//! Quality report: how well the Hamming distance of two gsimm fingerprints
//! tracks git's exact rename score on real text.
//!
//! Not a timing benchmark: `cargo bench --bench quality` prints markdown
//! tables (they go into README's Performance section):
//!
//! - (a) the distance distribution of unrelated pairs (exact score < 10%);
//! - (b) Manber's experiment: k random 50-byte substitutions (text from an
//!   unrelated file) against distance, exact score and estimate;
//! - (c) the estimate's error by exact-score bucket over pairs made with
//!   edits of every intensity, and the recall and false-positive rate of the
//!   pruning cut `similar` uses ([`MAX_DISTANCE`]).
//!
//! The corpus is real text: every source code and prose file (see
//! `util::wanted`) of 1 to 64 KiB of the pinned corpus that
//! `fixtures/corpus.sh` downloads (crates and Python source distributions,
//! cached under `target/fixtures/`), with identical contents kept once. Set
//! `GIT_SIMM_QUALITY_REPO=/path/to/repo` to use the text blobs (no NUL in
//! the first 8000 bytes) of 1 to 64 KiB of that repository's HEAD instead.
//! Edits are drawn from a fixed-seed splitmix64, so a corpus always gives
//! the same report.

#[path = "../tests/it/util.rs"]
mod util;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use git_simm::similar::MAX_DISTANCE;
use git_simm::similarity::fingerprint::{Fingerprinter, estimate_similarity};
use git_simm::similarity::score::Spans;
use util::{
    Doc, MAX_FILE, MIN_FILE, Rng, SUB_LEN, corpus_dir, corpus_files, exact, is_text, mean, sd,
    unrelated, wanted,
};

/// The corpus's text files, sorted by path.
fn disk_corpus() -> (String, Vec<Vec<u8>>) {
    let files = corpus_files()
        .iter()
        .filter(|p| wanted(p))
        .map(|p| std::fs::read(p).expect("read a corpus file"))
        .collect();
    (format!("the corpus at {}", corpus_dir().display()), files)
}

/// The blobs of HEAD of `repo`, read with one `git cat-file --batch`.
fn repo_corpus(repo: &str) -> (String, Vec<Vec<u8>>) {
    let list = Command::new("git")
        .args(["-C", repo, "ls-tree", "-r", "-z", "HEAD"])
        .output()
        .expect("run git ls-tree");
    assert!(list.status.success(), "git ls-tree failed in {repo}");
    let mut ids = Vec::new();
    for entry in list.stdout.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        // "<mode> SP <type> SP <id> TAB <path>"
        let meta = entry.split(|&b| b == b'\t').next().unwrap_or_default();
        let fields: Vec<&[u8]> = meta.split(|&b| b == b' ').collect();
        if fields.len() == 3 && fields[1] == b"blob" && fields[0] != b"120000" {
            ids.push(String::from_utf8_lossy(fields[2]).into_owned());
        }
    }
    let mut child = Command::new("git")
        .args(["-C", repo, "cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run git cat-file --batch");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = {
        let ids = ids.clone();
        std::thread::spawn(move || {
            for id in ids {
                writeln!(stdin, "{id}").expect("write to git cat-file");
            }
        })
    };
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut files = Vec::with_capacity(ids.len());
    for _ in &ids {
        let mut header = String::new();
        reader.read_line(&mut header).expect("read header");
        let size: usize = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad cat-file header {header:?}"));
        let mut data = vec![0u8; size + 1];
        reader.read_exact(&mut data).expect("read blob");
        data.pop();
        files.push(data);
    }
    writer.join().expect("writer thread");
    let _ = child.wait();
    (format!("HEAD of {repo}"), files)
}

fn corpus() -> (String, Vec<Doc>) {
    let (what, files) = match std::env::var("GIT_SIMM_QUALITY_REPO") {
        Ok(repo) if !repo.is_empty() => repo_corpus(&repo),
        _ => disk_corpus(),
    };
    let mut seen = HashSet::new();
    let mut fpr = Fingerprinter::new();
    let docs: Vec<Doc> = files
        .into_iter()
        .filter(|d| (MIN_FILE..=MAX_FILE).contains(&d.len()) && is_text(d))
        .filter(|d| seen.insert(d.clone()))
        .map(|data| Doc::new(data, &mut fpr))
        .collect();
    assert!(
        docs.len() >= 100,
        "corpus too small ({} files) from {what}",
        docs.len()
    );
    (what, docs)
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// Where foreign text for the edits of one file comes from: a few files
/// unrelated to it, split into lines once.
struct Donors<'a> {
    texts: Vec<&'a [u8]>,
    lines: Vec<Vec<&'a [u8]>>,
}

impl<'a> Donors<'a> {
    fn new(docs: &'a [Doc], i: usize, rng: &mut Rng) -> Donors<'a> {
        let texts: Vec<&[u8]> = (0..4)
            .map(|_| docs[unrelated(docs, i, rng)].data.as_slice())
            .collect();
        let lines = texts.iter().map(|t| lines(t)).collect();
        Donors { texts, lines }
    }

    /// `n` (<= 1024) consecutive bytes at a random offset of a random donor.
    fn bytes(&self, n: usize, rng: &mut Rng) -> &'a [u8] {
        let t = self.texts[rng.below(self.texts.len())];
        let at = rng.below(t.len() - n + 1);
        &t[at..at + n]
    }

    /// `n` consecutive lines (fewer at the end) of a random donor.
    fn hunk(&self, n: usize, rng: &mut Rng) -> Vec<u8> {
        let l = &self.lines[rng.below(self.lines.len())];
        let at = rng.below(l.len());
        l[at..(at + n).min(l.len())].concat()
    }
}

/// `k` substitutions of 50 bytes at random offsets of `data`, each with 50
/// bytes from a random offset of an unrelated file.
fn substitute(data: &[u8], k: usize, donors: &Donors, rng: &mut Rng) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..k {
        let at = rng.below(out.len() - SUB_LEN + 1);
        out[at..at + SUB_LEN].copy_from_slice(donors.bytes(SUB_LEN, rng));
    }
    out
}

/// Delete about a fraction `p` of the lines, in runs of 1 to `run` lines.
fn delete_lines(data: &[u8], p: f64, run: usize, rng: &mut Rng) -> Vec<u8> {
    let l = lines(data);
    let mut gone = vec![false; l.len()];
    let mut n = 0;
    while (n as f64) < p * l.len() as f64 {
        let at = rng.below(l.len());
        for g in gone.iter_mut().skip(at).take(1 + rng.below(run)) {
            n += usize::from(!*g);
            *g = true;
        }
    }
    l.iter()
        .zip(&gone)
        .filter(|(_, g)| !**g)
        .flat_map(|(l, _)| l.iter().copied())
        .collect()
}

/// Insert about `p` times as many foreign lines as `data` has, in runs of
/// 1 to `run` consecutive lines of a donor, at random line boundaries.
fn insert_lines(data: &[u8], p: f64, run: usize, donors: &Donors, rng: &mut Rng) -> Vec<u8> {
    let l = lines(data);
    let mut after: Vec<Vec<u8>> = vec![Vec::new(); l.len() + 1];
    let mut n = 0;
    while (n as f64) < p * l.len() as f64 {
        let len = 1 + rng.below(run);
        after[rng.below(l.len() + 1)].extend(donors.hunk(len, rng));
        n += len;
    }
    let mut out = after[0].clone();
    for (line, extra) in l.iter().zip(&after[1..]) {
        out.extend_from_slice(line);
        out.extend_from_slice(extra);
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Edit {
    Substitute,
    DeleteLines,
    DeleteHunks,
    InsertLines,
    InsertHunks,
    Append,
    Mixed,
}

const EDITS: [Edit; 7] = [
    Edit::Substitute,
    Edit::DeleteLines,
    Edit::DeleteHunks,
    Edit::InsertLines,
    Edit::InsertHunks,
    Edit::Append,
    Edit::Mixed,
];

impl Edit {
    fn name(self) -> &'static str {
        match self {
            Edit::Substitute => "50-byte substitutions",
            Edit::DeleteLines => "single lines deleted",
            Edit::DeleteHunks => "hunks of 1-20 lines deleted",
            Edit::InsertLines => "single unrelated lines inserted",
            Edit::InsertHunks => "hunks of 1-20 unrelated lines inserted",
            Edit::Append => "unrelated text appended",
            Edit::Mixed => "mixed",
        }
    }
}

/// `docs[i]` edited with random intensity.
fn edit(docs: &[Doc], i: usize, kind: Edit, rng: &mut Rng) -> Vec<u8> {
    let data = &docs[i].data;
    let donors = Donors::new(docs, i, rng);
    match kind {
        // Up to as many substitutions as the file has 50-byte slots.
        Edit::Substitute => {
            let k = (rng.unit() * (data.len() / SUB_LEN) as f64) as usize;
            substitute(data, k, &donors, rng)
        }
        Edit::DeleteLines => delete_lines(data, rng.unit() * 0.95, 1, rng),
        Edit::DeleteHunks => delete_lines(data, rng.unit() * 0.95, 20, rng),
        Edit::InsertLines => insert_lines(data, rng.unit() * 3.0, 1, &donors, rng),
        Edit::InsertHunks => insert_lines(data, rng.unit() * 3.0, 20, &donors, rng),
        Edit::Append => {
            // Up to 4 times the file's length of unrelated text, each part
            // from a fresh file so no text repeats.
            let want = data.len() + (rng.unit() * 4.0 * data.len() as f64) as usize;
            let mut out = data.clone();
            while out.len() < want {
                let donor = &docs[unrelated(docs, i, rng)].data;
                out.extend_from_slice(&donor[..donor.len().min(want - out.len())]);
            }
            out
        }
        Edit::Mixed => {
            let k = (rng.unit() * 0.3 * (data.len() / SUB_LEN) as f64) as usize;
            let out = substitute(data, k, &donors, rng);
            let out = delete_lines(&out, rng.unit() * 0.4, 1 + rng.below(20), rng);
            insert_lines(&out, rng.unit() * 0.6, 1 + rng.below(20), &donors, rng)
        }
    }
}

/// Unrelated pairs: different files whose exact score is below 10%.
fn unrelated_pairs(docs: &[Doc], rng: &mut Rng, want: usize) -> Vec<u32> {
    let mut d = Vec::with_capacity(want);
    let mut tried = 0usize;
    while d.len() < want {
        tried += 1;
        let (i, j) = (rng.below(docs.len()), rng.below(docs.len()));
        if i != j && exact(&docs[i].spans, &docs[j].spans) < 10 {
            d.push(docs[i].fp.distance(&docs[j].fp));
        }
    }
    println!(
        "{} pairs of {} tried had an exact score below 10%.\n",
        want, tried
    );
    d
}

fn report_unrelated(d: &[u32]) {
    let mut sorted = d.to_vec();
    sorted.sort_unstable();
    let v: Vec<f64> = d.iter().map(|&x| f64::from(x)).collect();
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
    println!(
        "| pairs | mean | sd | min | 0.1th pct | 1st pct | median | max | <= {MAX_DISTANCE} |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let below = d.iter().filter(|&&x| x <= MAX_DISTANCE).count();
    println!(
        "| {} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {:.3}% |",
        d.len(),
        mean(&v),
        sd(&v),
        sorted[0],
        at(0.001),
        at(0.01),
        at(0.5),
        sorted[sorted.len() - 1],
        100.0 * below as f64 / d.len() as f64
    );
    println!("\n(Independent fair bits would give mean 128, sd 8, 1st percentile 109.)\n");
}

fn manber(docs: &[Doc], rng: &mut Rng) {
    let big: Vec<usize> = (0..docs.len())
        .filter(|&i| docs[i].data.len() >= 4096)
        .collect();
    let files = 400.min(big.len());
    let mut chosen = Vec::with_capacity(files);
    let mut pool = big.clone();
    for _ in 0..files {
        chosen.push(pool.swap_remove(rng.below(pool.len())));
    }
    let sizes: Vec<f64> = chosen.iter().map(|&i| docs[i].data.len() as f64).collect();
    println!(
        "{} files of 4 KiB and more (mean {:.1} KiB); each row uses the files with \
         k * 50 <= size / 2, so the largest k are large files only.\n",
        files,
        mean(&sizes) / 1024.0
    );
    println!(
        "| k | files | replaced | mean distance | sd | mean exact score | mean estimate | mean abs. error |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut fpr = Fingerprinter::new();
    let mut k = 0usize;
    loop {
        let mut dist = Vec::new();
        let mut ex = Vec::new();
        let mut est = Vec::new();
        let mut err = Vec::new();
        let mut frac = Vec::new();
        for &i in &chosen {
            let len = docs[i].data.len();
            if k * SUB_LEN > len / 2 {
                continue;
            }
            let donors = Donors::new(docs, i, rng);
            let edited = substitute(&docs[i].data, k, &donors, rng);
            let fp = fpr.fingerprint(&edited).expect("same size as the original");
            let d = docs[i].fp.distance(&fp);
            // git pairs identical blobs at 100% without scoring them.
            let e = if edited == docs[i].data {
                100.0
            } else {
                f64::from(exact(&docs[i].spans, &Spans::new(&edited)))
            };
            let s = 100.0 * estimate_similarity(d);
            dist.push(f64::from(d));
            ex.push(e);
            est.push(s);
            err.push((s - e).abs());
            frac.push((k * SUB_LEN) as f64 / len as f64);
        }
        if dist.is_empty() {
            break;
        }
        println!(
            "| {k} | {} | {:.1}% | {:.1} | {:.1} | {:.1}% | {:.1}% | {:.1} |",
            dist.len(),
            100.0 * mean(&frac),
            mean(&dist),
            sd(&dist),
            mean(&ex),
            mean(&est),
            mean(&err)
        );
        k = if k == 0 { 1 } else { k * 2 };
    }
    println!(
        "\n\"replaced\": k * 50 bytes over the file size (substitutions may overlap). \
         Scores in percent; error in percentage points.\n"
    );
}

fn estimate_table(docs: &[Doc], unrelated_d: &[u32], rng: &mut Rng) {
    let mut fpr = Fingerprinter::new();
    // (exact %, distance, kind)
    let mut pairs: Vec<(u32, u32, Edit)> = Vec::new();
    let wanted = 40_000;
    let mut skipped = 0;
    while pairs.len() < wanted {
        let i = rng.below(docs.len());
        let kind = EDITS[pairs.len() % EDITS.len()];
        let edited = edit(docs, i, kind, rng);
        let Some(fp) = fpr.fingerprint(&edited) else {
            skipped += 1;
            continue;
        };
        let e = if edited == docs[i].data {
            100
        } else {
            exact(&docs[i].spans, &Spans::new(&edited))
        };
        pairs.push((e, docs[i].fp.distance(&fp), kind));
    }
    println!(
        "{} pairs: a corpus file and an edited copy. Edits, round-robin: 50-byte \
         substitutions (0 to size/50 of them); deletion of 0-95% of the lines, \
         singly or in runs of 1-20; insertion of 0-3 times as many unrelated lines, \
         singly or in runs of 1-20 consecutive lines; appending 0-4 times the size \
         of unrelated text; and a mix (substitutions, then deletions, then \
         insertions). {} copies left under 192 bytes were skipped.\n",
        pairs.len(),
        skipped
    );
    println!(
        "| exact score | pairs | mean estimate | mean abs. error | distance min | median | max |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for b in 0..10u32 {
        let mut ds: Vec<u32> = Vec::new();
        let mut est = Vec::new();
        let mut err = Vec::new();
        for &(e, d, _) in &pairs {
            if (e / 10).min(9) != b {
                continue;
            }
            let s = 100.0 * estimate_similarity(d);
            ds.push(d);
            est.push(s);
            err.push((s - f64::from(e)).abs());
        }
        if ds.is_empty() {
            println!("| {}-{}% | 0 | | | | | |", b * 10, b * 10 + 10);
            continue;
        }
        ds.sort_unstable();
        println!(
            "| {}-{}% | {} | {:.1}% | {:.1} | {} | {} | {} |",
            b * 10,
            b * 10 + 10,
            ds.len(),
            mean(&est),
            mean(&err),
            ds[0],
            ds[ds.len() / 2],
            ds[ds.len() - 1]
        );
    }
    println!("\nBy kind of edit, pairs with exact score 50% and more:\n");
    println!(
        "| edit | pairs | mean exact | mean estimate | mean abs. error | distance <= {MAX_DISTANCE} |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for kind in EDITS {
        let sel: Vec<(u32, u32)> = pairs
            .iter()
            .filter(|p| p.2 == kind && p.0 >= 50)
            .map(|p| (p.0, p.1))
            .collect();
        let ex: Vec<f64> = sel.iter().map(|p| f64::from(p.0)).collect();
        let est: Vec<f64> = sel
            .iter()
            .map(|p| 100.0 * estimate_similarity(p.1))
            .collect();
        let err: Vec<f64> = ex.iter().zip(&est).map(|(a, b)| (a - b).abs()).collect();
        let kept = sel.iter().filter(|p| p.1 <= MAX_DISTANCE).count();
        let name = kind.name();
        println!(
            "| {name} | {} | {:.1}% | {:.1}% | {:.1} | {:.2}% |",
            sel.len(),
            mean(&ex),
            mean(&est),
            mean(&err),
            100.0 * kept as f64 / sel.len().max(1) as f64
        );
    }

    let similar: Vec<u32> = pairs.iter().filter(|p| p.0 >= 50).map(|p| p.1).collect();
    let boundary: Vec<u32> = pairs
        .iter()
        .filter(|p| (50..60).contains(&p.0))
        .map(|p| p.1)
        .collect();
    println!("\nThe pruning cut of `similar` (distance <= {MAX_DISTANCE}) and nearby cuts:\n");
    println!(
        "| cut | recall, exact >= 50% ({} pairs) | recall, exact 50-59% ({} pairs) | false positives, exact < 10% ({} unrelated pairs) |",
        similar.len(),
        boundary.len(),
        unrelated_d.len()
    );
    println!("|---:|---:|---:|---:|");
    let frac = |v: &[u32], cut: u32| {
        100.0 * v.iter().filter(|&&d| d <= cut).count() as f64 / v.len().max(1) as f64
    };
    for cut in [90, 95, 100, 105, MAX_DISTANCE, 115, 120] {
        let mark = if cut == MAX_DISTANCE { "**" } else { "" };
        println!(
            "| {mark}{cut}{mark} | {:.2}% | {:.2}% | {:.3}% |",
            frac(&similar, cut),
            frac(&boundary, cut),
            frac(unrelated_d, cut)
        );
    }
    let missed: Vec<(u32, u32)> = pairs
        .iter()
        .filter(|p| p.0 >= 50 && p.1 > MAX_DISTANCE)
        .map(|p| (p.0, p.1))
        .collect();
    if !missed.is_empty() {
        println!(
            "\nPairs at 50% and more beyond the cut (exact %, distance): {:?}",
            &missed[..missed.len().min(20)]
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // then there is nothing to test here.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let start = Instant::now();
    let (what, docs) = corpus();
    let bytes: usize = docs.iter().map(|d| d.data.len()).sum();
    println!("# gsimm fingerprint quality\n");
    println!(
        "Corpus: {} distinct text files of 1-64 KiB ({:.1} MiB) from {what}.\n",
        docs.len(),
        bytes as f64 / (1 << 20) as f64
    );
    let mut rng = Rng(0x7175_616c_6974_7931);

    println!("## (a) Unrelated pairs\n");
    let unrelated_d = unrelated_pairs(&docs, &mut rng, 200_000);
    report_unrelated(&unrelated_d);

    println!("## (b) Manber's experiment: k random 50-byte substitutions\n");
    manber(&docs, &mut rng);

    println!("## (c) Estimate error by exact score\n");
    estimate_table(&docs, &unrelated_d, &mut rng);

    println!(
        "\nestimate = estimate_similarity(d) = cos(pi * d / 256), 0 from d = 128; \
         report took {:.1} s.",
        start.elapsed().as_secs_f64()
    );
}
