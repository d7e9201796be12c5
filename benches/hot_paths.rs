//! The hot paths the README's rename and check figures depend on, each on
//! its own, on real text from the pinned corpus (`fixtures/corpus.sh`,
//! cached under `target/fixtures/`):
//!
//! - candidate search: fingerprint distances from every destination to
//!   every source of its size window, and the selection of the nearest
//!   (`candidates::Search`), 2,000 destinations against 10,000 sources;
//! - exact scoring: git's chunk histograms of a file (`Spans::new`, MB/s)
//!   and the score of a pair, merged (`score::score`) and with the
//!   destination spread in a dense array (`Dense`, as rename detection
//!   scores a destination against its candidates);
//! - store lookups: `get_many` of 10,000 ids (sorted walk) and single
//!   `get`s in a store of 100,000 blobs, `sizes` as `check` asks;
//! - the lossless candidate search (`prefix::PrefixIndex`): an index of
//!   3,000 sources built at git's default minimum score, and each of
//!   3,000 edited copies probed at it, as rename detection does after a
//!   large move;
//! - loose objects: the corpus's files as `git add` writes them (zlib
//!   level 1), each read back with its checks (`repo::inflate_loose`),
//!   beside zlib-rs inflating the same files without them, the decoder
//!   gix reads loose objects with.
//!
//! Run with `cargo bench --bench hot_paths`.

#[path = "../tests/it/util.rs"]
mod util;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use git_simm::similarity::candidates::{self, Search};
use git_simm::similarity::fingerprint::{Sketch, fingerprint};
use git_simm::similarity::prefix::{PrefixIndex, Probe};
use git_simm::similarity::score::{self, Dense, Spans};
use git_simm::similarity::store::Store;
use gix::ObjectId;

/// Text files of the corpus, 1 to 64 KiB, in corpus order.
fn texts() -> Vec<Vec<u8>> {
    util::corpus_files()
        .iter()
        .filter(|p| util::wanted(p))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (util::MIN_FILE..=util::MAX_FILE).contains(&d.len()) && util::is_text(d))
        .collect()
}

/// `n` sketches from the corpus: its files, then edited copies of them
/// (a line changed every `k` lines), so that sizes and distances spread
/// as in a real move.
fn sketches(texts: &[Vec<u8>], n: usize) -> Vec<Sketch> {
    let mut out = Vec::with_capacity(n);
    let mut round = 0usize;
    while out.len() < n {
        for t in texts {
            if out.len() == n {
                break;
            }
            let data: Vec<u8> = if round == 0 {
                t.clone()
            } else {
                edited(t, round + 2, b"edited line\n")
            };
            out.push(Sketch {
                size: data.len() as u64,
                fingerprint: fingerprint(&data),
            });
        }
        round += 1;
    }
    out
}

fn candidate_search(c: &mut Criterion) {
    let texts = texts();
    let sources = sketches(&texts, 10_000);
    let destinations: Vec<Sketch> = sources.iter().step_by(5).copied().collect();
    let opts = candidates::Options::default();
    let mut group = c.benchmark_group("candidates");
    group.throughput(Throughput::Elements(destinations.len() as u64));
    group.bench_function("index 10,000 sources", |b| b.iter(|| Search::new(&sources)));
    let search = Search::new(&sources);
    group.bench_function("nearest of 2,000 destinations among 10,000", |b| {
        b.iter(|| search.nearest(&destinations, &opts))
    });
    group.finish();
}

fn exact_scoring(c: &mut Criterion) {
    let texts = texts();
    let bytes: usize = texts.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("score");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("chunk histograms (Spans::new)", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| Spans::new(t).bucket_count())
                .sum::<usize>()
        })
    });
    // Pairs as rename detection meets them: a file against an edited
    // version of itself and against its corpus neighbours.
    let spans: Vec<Spans> = texts.iter().take(400).map(|t| Spans::new(t)).collect();
    let edited: Vec<Spans> = texts
        .iter()
        .take(400)
        .map(|t| Spans::new(&edited(t, 4, b"changed\n")))
        .collect();
    let pairs = spans.len() * 9;
    group.throughput(Throughput::Elements(pairs as u64));
    let min = score::DEFAULT_MIN_SCORE;
    group.bench_function("score pairs, merged", |b| {
        b.iter(|| {
            let mut total = 0u64;
            for (i, d) in spans.iter().enumerate() {
                total += u64::from(score::score(&edited[i], d, min));
                for k in 1..9 {
                    total += u64::from(score::score(&spans[(i + k) % spans.len()], d, min));
                }
            }
            total
        })
    });
    group.bench_function("score pairs, dense destination", |b| {
        let mut dense = Dense::default();
        b.iter(|| {
            let mut total = 0u64;
            for (i, d) in spans.iter().enumerate() {
                total += dense.with(d, |loaded| {
                    let mut t = u64::from(loaded.score(&edited[i], min));
                    for k in 1..9 {
                        t += u64::from(loaded.score(&spans[(i + k) % spans.len()], min));
                    }
                    t
                });
            }
            total
        })
    });
    group.finish();
}

/// A blob id from a number: distinct, spread over the id space as real
/// ids are.
fn id(n: u64) -> ObjectId {
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    h.update(&n.to_le_bytes());
    h.try_finalize().expect("sha1")
}

fn store_lookups(c: &mut Criterion) {
    let texts = texts();
    let prints = sketches(&texts, 2_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path(), 20).expect("open store");
    let entries: Vec<(ObjectId, Sketch)> = (0..100_000u64)
        .map(|n| (id(n), prints[n as usize % prints.len()]))
        .collect();
    store.insert(entries).expect("insert");
    store.compact().expect("compact");
    let wanted: Vec<ObjectId> = (0..10_000u64).map(|n| id(n * 7 + 3)).collect();
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(wanted.len() as u64));
    group.bench_function("get_many 10,000 of 100,000", |b| {
        b.iter_batched(
            || Store::open(dir.path(), 20).expect("open store"),
            |mut s| s.get_many(&wanted),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("get one by one, 10,000 of 100,000", |b| {
        let mut s = Store::open(dir.path(), 20).expect("open store");
        b.iter(|| wanted.iter().filter_map(|i| s.get(i)).count())
    });
    group.bench_function("sizes 10,000 of 100,000", |b| {
        let mut s = Store::open(dir.path(), 20).expect("open store");
        b.iter(|| s.sizes(&wanted))
    });
    group.finish();
}

/// A file with one line in `every` replaced, as an edited copy.
fn edited(text: &[u8], every: usize, with: &'static [u8]) -> Vec<u8> {
    text.split_inclusive(|&b| b == b'\n')
        .enumerate()
        .flat_map(|(i, l)| if i % every == 0 { with } else { l })
        .copied()
        .collect()
}

fn prefix_index(c: &mut Criterion) {
    let texts = texts();
    let n = texts.len().min(3000);
    // Sources: the corpus's files; destinations: an edited copy of each,
    // which a probe must find among files that share its skeleton.
    let sources: Vec<Spans> = texts.iter().take(n).map(|t| Spans::new(t)).collect();
    let destinations: Vec<Spans> = texts
        .iter()
        .take(n)
        .map(|t| Spans::new(&edited(t, 3, b"an edited line\n")))
        .collect();
    let refs: Vec<Option<&Spans>> = sources.iter().map(Some).collect();
    let min = score::DEFAULT_MIN_SCORE;
    let mut group = c.benchmark_group("prefix");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("index 3,000 sources", |b| {
        b.iter(|| PrefixIndex::build(&refs, min).len())
    });
    let index = PrefixIndex::build(&refs, min);
    group.bench_function("probe 3,000 destinations", |b| {
        let mut probe = Probe::default();
        let mut out = Vec::new();
        b.iter(|| {
            let mut proposed = 0;
            for d in &destinations {
                out.clear();
                index.probe_reach(d, min, &[], &mut probe, &mut out);
                proposed += out.len();
            }
            proposed
        })
    });
    group.finish();
}

fn loose_objects(c: &mut Criterion) {
    use gix::zlib::stream::deflate::Compress;
    use gix::zlib::{Compression, Decompress, FlushDecompress, Status};
    let texts = texts();
    let files: Vec<Vec<u8>> = texts
        .iter()
        .map(|t| {
            let mut raw = format!("blob {}\0", t.len()).into_bytes();
            raw.extend_from_slice(t);
            let mut file = Vec::new();
            git_simm::pack::write::deflate_into(
                &mut Compress::new(Compression::BEST_SPEED),
                &raw,
                &mut file,
            )
            .expect("deflate");
            file
        })
        .collect();
    let inflated: usize = texts.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("loose objects");
    group.throughput(Throughput::Bytes(inflated as u64));
    group.bench_function(format!("inflate_loose, {} files", files.len()), |b| {
        let mut zlib = git_simm::repo::LooseInflater::new();
        let mut out = Vec::new();
        b.iter(|| {
            for f in &files {
                git_simm::repo::inflate_loose(f, &mut zlib, &mut out).expect("inflate");
            }
        })
    });
    group.bench_function(format!("zlib-rs, {} files", files.len()), |b| {
        let mut zlib = Decompress::new();
        let mut out = vec![0u8; 1 << 20];
        b.iter(|| {
            for f in &files {
                zlib.reset();
                let status = zlib
                    .decompress(f, &mut out, FlushDecompress::Finish)
                    .expect("inflate");
                assert_eq!(status, Status::StreamEnd);
            }
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    candidate_search,
    exact_scoring,
    store_lookups,
    prefix_index,
    loose_objects
);
criterion_main!(benches);
