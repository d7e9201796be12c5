//! Fingerprint throughput on real text, per core.
//!
//! The corpus is real source and prose: the text files of the pinned corpus
//! that `fixtures/corpus.sh` downloads (crates and Python source
//! distributions, cached under `target/fixtures/`), each fingerprinted as a
//! separate blob so per-blob setup is paid as it is in a repository. Set
//! `GIT_SIMM_BENCH_REPO=/path/to/repo` to use the blobs of that
//! repository's HEAD tree instead (up to 64 MiB), e.g. a clone of git.git.
//! Target: at least 500 MB/s per core.

#[path = "../tests/it/util.rs"]
mod util;

use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use git_simm::similarity::fingerprint::Fingerprinter;

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

fn bench(c: &mut Criterion) {
    let files = corpus();
    let bytes: usize = files.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("fingerprint");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(
        format!("{} files, {} KiB", files.len(), bytes / 1024),
        |b| {
            let mut fpr = Fingerprinter::new();
            b.iter(|| {
                let mut n = 0u32;
                for f in &files {
                    if let Some(fp) = fpr.fingerprint(f) {
                        n ^= fp.words[0] as u32;
                    }
                }
                n
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
