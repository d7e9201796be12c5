//! Coates signatures: how fast they are made (MB/s per core, on real
//! text) and how fast two of them are compared (pairs per second per
//! core, on 10 KB files).
//!
//! The corpus is the text files of the pinned corpus (`fixtures/corpus.sh`,
//! cached under `target/fixtures/`), each signed as a separate blob. Set
//! `GIT_SIMM_BENCH_REPO=/path/to/repo` to sign the blobs of that
//! repository's HEAD tree instead (up to 64 MiB). Targets: at least
//! 1 GB/s per core signing text, at least 1,000,000 estimates per second
//! per core on 10 KB files (Coates 2011: 104-135 MB/s, 10,000 pairs/s at
//! c = 100).
//!
//! `GIT_SIMM_BENCH_CPU_TIME=1` also prints the estimate rates per second
//! of CPU time (for a loaded machine).
//!
//! `GIT_SIMM_SIGNATURE_TABLES=1` prints the calibration tables instead
//! (docs/signatures.md): Coates's experiments on corpus files, for three
//! values of `c`.

#[path = "../tests/it/util.rs"]
mod util;

#[path = "signature/tables.rs"]
mod tables;

use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use git_simm::similarity::signature::{Signature, Stored, align, estimate};

fn repo_blobs(repo: &str, budget: usize) -> Vec<Vec<u8>> {
    let list = Command::new("git")
        .args([
            "-C",
            repo,
            "ls-tree",
            "-r",
            "HEAD",
            "--format=%(objectname)",
        ])
        .output()
        .expect("git ls-tree");
    let ids = String::from_utf8_lossy(&list.stdout).into_owned();
    let mut out = Vec::new();
    let mut total = 0;
    for id in ids.lines() {
        let blob = Command::new("git")
            .args(["-C", repo, "cat-file", "blob", id])
            .output()
            .expect("git cat-file");
        total += blob.stdout.len();
        out.push(blob.stdout);
        if total > budget {
            break;
        }
    }
    out
}

fn corpus() -> Vec<Vec<u8>> {
    if let Ok(repo) = std::env::var("GIT_SIMM_BENCH_REPO") {
        return repo_blobs(&repo, 64 << 20);
    }
    util::corpus_files()
        .iter()
        .filter(|p| util::wanted(p))
        .map(|p| std::fs::read(p).expect("read a corpus file"))
        .collect()
}

/// Pairs of signatures of 10 KB files: each corpus file of 10 KB or more
/// cut to 10,000 bytes, against an edited copy (a tenth of its lines
/// replaced) and against the next file.
fn pairs(files: &[Vec<u8>]) -> Vec<(Signature, Signature)> {
    let cut: Vec<&[u8]> = files
        .iter()
        .filter(|f| f.len() >= 10_000 && util::is_text(f))
        .map(|f| &f[..10_000])
        .take(200)
        .collect();
    let mut out = Vec::new();
    for (i, f) in cut.iter().enumerate() {
        let edited: Vec<u8> = f
            .split_inclusive(|&b| b == b'\n')
            .enumerate()
            .flat_map(|(k, l)| if k % 10 == 3 { &b"// changed\n"[..] } else { l })
            .copied()
            .collect();
        let a = Signature::new(f);
        out.push((a.clone(), Signature::new(&edited)));
        out.push((a, Signature::new(cut[(i + 1) % cut.len()])));
    }
    out
}

fn bench(c: &mut Criterion) {
    if std::env::var_os("GIT_SIMM_SIGNATURE_TABLES").is_some() {
        tables::print();
        return;
    }
    let files = corpus();
    let bytes: usize = files.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("signature");
    group.throughput(Throughput::Bytes(bytes as u64));
    // What the fingerprinting read does for every blob: the stored form
    // (symbols only; a large file's sketch keys), into a reused buffer.
    let mut record = Vec::new();
    group.bench_function(
        format!(
            "sign {} files, {} KiB, stored form",
            files.len(),
            bytes / 1024
        ),
        |b| {
            b.iter(|| {
                files
                    .iter()
                    .map(|f| {
                        record.clear();
                        Stored::encode_of(f, &mut record);
                        record.len()
                    })
                    .sum::<usize>()
            })
        },
    );
    // What `compare` does with two contents at hand: every symbol with
    // its chunk's place.
    group.bench_function(
        format!(
            "sign {} files, {} KiB, with positions",
            files.len(),
            bytes / 1024
        ),
        |b| b.iter(|| files.iter().map(|f| Signature::new(f).len()).sum::<usize>()),
    );
    group.finish();

    let pairs = pairs(&files);
    let symbols: usize = pairs.iter().map(|(a, b)| a.len() + b.len()).sum();
    let raw: Vec<(Vec<u8>, Vec<u8>)> = pairs
        .iter()
        .map(|(a, b)| (a.values().collect(), b.values().collect()))
        .collect();
    let mut group = c.benchmark_group("estimate");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function(
        format!(
            "distance, {} pairs of 10 KB files, {:.0} symbols each",
            pairs.len(),
            symbols as f64 / (2 * pairs.len()) as f64
        ),
        |b| {
            b.iter(|| {
                raw.iter()
                    .map(|(x, y)| align::distance(x, y))
                    .sum::<usize>()
            })
        },
    );
    group.bench_function("distance inside (containment)", |b| {
        b.iter(|| {
            raw.iter()
                .map(|(x, y)| align::distance_inside(x, y).0)
                .sum::<usize>()
        })
    });
    let stored: Vec<(Stored, Stored)> = pairs
        .iter()
        .map(|(a, b)| (Stored::from_signature(a), Stored::from_signature(b)))
        .collect();
    if std::env::var_os("GIT_SIMM_BENCH_CPU_TIME").is_some() {
        cpu_time_rates(&stored, &raw, &pairs);
    }
    group.bench_function("estimate from the stored forms (sketches)", |b| {
        b.iter(|| {
            stored
                .iter()
                .map(|(x, y)| estimate::estimate_stored(x, y).symbol_distance)
                .sum::<usize>()
        })
    });
    group.bench_function("estimate (distance, both containments)", |b| {
        b.iter(|| {
            pairs
                .iter()
                .map(|(x, y)| estimate::estimate(x, y).symbol_distance)
                .sum::<usize>()
        })
    });
    group.finish();
}

/// The thread's CPU time so far, in nanoseconds (Linux).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Pairs per second of this thread's CPU time, for a machine shared with
/// other work, where criterion's wall-clock rates count the time other
/// processes hold the core (`GIT_SIMM_BENCH_CPU_TIME=1`, Linux only).
fn cpu_time_rates(
    stored: &[(Stored, Stored)],
    raw: &[(Vec<u8>, Vec<u8>)],
    pairs: &[(Signature, Signature)],
) {
    let rate = |rounds: usize, work: &dyn Fn() -> usize| {
        let start = thread_cpu_ns();
        let sink: usize = (0..rounds).map(|_| work()).sum();
        let ns = thread_cpu_ns().saturating_sub(start).max(1);
        std::hint::black_box(sink);
        (rounds * stored.len()) as f64 / (ns as f64 / 1e9)
    };
    let from_stored = rate(2000, &|| {
        stored
            .iter()
            .map(|(x, y)| estimate::estimate_stored(x, y).symbol_distance)
            .sum()
    });
    let distance = rate(2000, &|| {
        raw.iter().map(|(x, y)| align::distance(x, y)).sum()
    });
    let full = rate(500, &|| {
        pairs
            .iter()
            .map(|(x, y)| estimate::estimate(x, y).symbol_distance)
            .sum()
    });
    eprintln!(
        "pairs per CPU second: estimate from the stored forms {from_stored:.0}, \
         distance {distance:.0}, estimate {full:.0}"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
