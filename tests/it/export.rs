//! `git simm export`: the Parquet file read back with the arrow reader and
//! compared with git's own listings (`ls-tree`, `cat-file`) and with `git
//! simm fingerprint`; band keys recomputed here from the blobs (git's
//! chunking as REFERENCE.md describes it, MinHash as documented in
//! `similarity::bands`); bad input.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use git_simm::similarity::bands::{BANDS, FILLER, HASHES, MAX_SPACES, MAX_TABS, ROWS, name_key};
use git_simm::similarity::fingerprint::{FINGERPRINT_VERSION, Fingerprint};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::util::*;

/// A repository of real texts, a few small files, a symlink, an
/// executable, a non-UTF-8 path and a submodule entry.
fn export_repo() -> Repo {
    let r = Repo::new();
    for (i, t) in texts(7, 12).iter().enumerate() {
        r.write(format!("src/file{i}.txt"), t);
    }
    r.write("tiny.txt", b"too small to fingerprint\n");
    r.write("empty", b"");
    r.write(b"caf\xe9.txt".as_slice(), &texts(7, 13)[12]);
    r.write("run.sh", b"#!/bin/sh\necho run\n");
    r.chmod("run.sh", 0o755);
    r.symlink("src/file0.txt", "link");
    r.git(&["add", "-A"]);
    // A gitlink, as a submodule leaves in the tree: never a blob.
    let commit_id = "1234567890123456789012345678901234567890";
    r.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{commit_id},sub"),
    ]);
    r.commit_all("first");
    r
}

/// Every record batch of a Parquet file.
fn read(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).expect("open export");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet");
    builder
        .build()
        .expect("reader")
        .collect::<Result<Vec<_>, _>>()
        .expect("batches")
}

/// One exported row, as the test compares it.
#[derive(Debug, PartialEq)]
struct Row {
    version: i32,
    repo: String,
    revision: Option<String>,
    commit: Option<String>,
    tree: Option<String>,
    path: Option<String>,
    blob: String,
    blob_key: i64,
    size: i64,
    fingerprint: Option<[u8; 32]>,
    words: Option<[i64; 4]>,
    bands: Option<Vec<i64>>,
    name_key: Option<i64>,
}

fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let s = |name: &str| {
            b.column_by_name(name)
                .expect(name)
                .as_string::<i32>()
                .clone()
        };
        let i64s = |name: &str| {
            b.column_by_name(name)
                .expect(name)
                .as_primitive::<Int64Type>()
                .clone()
        };
        let version = b
            .column_by_name("version")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone();
        let (repo, revision, commit, tree, path, blob) = (
            s("repo"),
            s("revision"),
            s("commit"),
            s("tree"),
            s("path"),
            s("blob"),
        );
        let size = i64s("size");
        let blob_keys = i64s("blob_key");
        let fp = b
            .column_by_name("fingerprint")
            .unwrap()
            .as_fixed_size_binary()
            .clone();
        let words: Vec<_> = (0..4).map(|i| i64s(&format!("fp{i}"))).collect();
        let bands: Vec<_> = (0..BANDS).map(|i| i64s(&format!("mh{i}"))).collect();
        let names = i64s("name_key");
        let opt =
            |a: &arrow_array::StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_owned());
        for i in 0..b.num_rows() {
            out.push(Row {
                version: version.value(i),
                repo: repo.value(i).to_owned(),
                revision: opt(&revision, i),
                commit: opt(&commit, i),
                tree: opt(&tree, i),
                path: opt(&path, i),
                blob: blob.value(i).to_owned(),
                blob_key: blob_keys.value(i),
                size: size.value(i),
                fingerprint: fp.is_valid(i).then(|| fp.value(i).try_into().unwrap()),
                words: words[0]
                    .is_valid(i)
                    .then(|| [0, 1, 2, 3].map(|w| words[w].value(i))),
                bands: bands[0]
                    .is_valid(i)
                    .then(|| bands.iter().map(|c| c.value(i)).collect()),
                name_key: names.is_valid(i).then(|| names.value(i)),
            });
        }
    }
    out
}

fn export(r: &Repo, args: &[&str]) -> (Vec<Row>, String) {
    let out = r.path.join("../out.parquet");
    let mut full = vec!["export", "-o", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let o = r.simm(&full);
    assert!(o.status.success(), "{}", stderr(&o));
    (rows_of(&read(&out)), stderr(&o))
}

// ---------------------------------------------------------------------------
// The band keys recomputed from a blob's content, independently of the
// library's chunking and hashing: git's chunks and buckets as
// diffcore-delta.c makes them (REFERENCE.md section 2), then MinHash as
// `similarity::bands` documents it.

/// git's chunk buckets of `data`, as a set: a chunk ends at LF or after
/// 64 bytes; in text (no NUL in the first 8000 bytes) a CR before LF is
/// skipped; two 32-bit accumulators, bucket `(a1 + a2 * 0x61) % 107927`.
fn git_buckets(data: &[u8]) -> std::collections::BTreeSet<u32> {
    let text = is_text(data);
    let mut out = std::collections::BTreeSet::new();
    let (mut a1, mut a2, mut n) = (0u32, 0u32, 0);
    for (i, &c) in data.iter().enumerate() {
        if text && c == b'\r' && data.get(i + 1) == Some(&b'\n') {
            continue;
        }
        let old = a1;
        a1 = (a1 << 7) ^ (a2 >> 25);
        a2 = (a2 << 7) ^ (old >> 25);
        a1 = a1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        out.insert(a1.wrapping_add(a2.wrapping_mul(0x61)) % 107_927);
        (a1, a2, n) = (0, 0, 0);
    }
    if n > 0 {
        out.insert(a1.wrapping_add(a2.wrapping_mul(0x61)) % 107_927);
    }
    out
}

/// The buckets of every filler line: each core of `FILLER` (and the empty
/// line) behind up to `MAX_SPACES` spaces or `MAX_TABS` tabs, with and
/// without its LF.
fn filler_buckets() -> std::collections::BTreeSet<u32> {
    let mut indents = vec![String::new()];
    indents.extend((1..=MAX_SPACES).map(|n| " ".repeat(n)));
    indents.extend((1..=MAX_TABS).map(|n| "\t".repeat(n)));
    let mut out = std::collections::BTreeSet::new();
    for indent in &indents {
        for core in std::iter::once("").chain(FILLER.iter().copied()) {
            for end in ["\n", ""] {
                let line = format!("{indent}{core}{end}");
                out.extend(git_buckets(line.as_bytes()));
            }
        }
    }
    out
}

fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 128 minima of the buckets that are not filler: hash `k` of bucket
/// `b` is two multiply-xorshift rounds over `fmix32(b) ^ seed_k`, seed `k`
/// the low half of splitmix64's `k`-th output from 0.
fn minima(data: &[u8]) -> Option<Vec<u32>> {
    let filler = filler_buckets();
    let seeds: Vec<u32> = (1..=HASHES as u64)
        .map(|k| splitmix(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k - 1)) as u32)
        .collect();
    let buckets: Vec<u32> = git_buckets(data)
        .into_iter()
        .filter(|b| !filler.contains(b))
        .collect();
    if buckets.is_empty() {
        return None;
    }
    Some(
        seeds
            .iter()
            .map(|&seed| {
                buckets
                    .iter()
                    .map(|&b| {
                        let mut h = (fmix32(b) ^ seed).wrapping_mul(0x9e37_79b1);
                        h ^= h >> 15;
                        h = h.wrapping_mul(0x85eb_ca77);
                        h ^ (h >> 13)
                    })
                    .min()
                    .unwrap()
            })
            .collect(),
    )
}

/// Band `i`'s key: its four minima folded into `h = splitmix(h ^ m)` from
/// `h = i`, the sign bit cleared.
fn minhash_keys(data: &[u8]) -> Option<Vec<i64>> {
    let m = minima(data)?;
    Some(
        m.chunks(ROWS)
            .enumerate()
            .map(|(i, band)| {
                let h = band
                    .iter()
                    .fold(i as u64, |h, &x| splitmix(h ^ u64::from(x)));
                (h & (u64::MAX >> 1)) as i64
            })
            .collect(),
    )
}

/// The keys of export layout 1: 32 bands of 16 consecutive fingerprint
/// bits, band `i` from bit `8i` on (wrapping after bit 255).
fn bit_bands(fp: &Fingerprint) -> Vec<u32> {
    (0..32)
        .map(|i| {
            (0..16).fold(0u32, |v, j| {
                let p = (i * 8 + j) % 256;
                v | ((((fp.words[p / 64] >> (p % 64)) & 1) as u32) << j)
            })
        })
        .collect()
}

#[test]
fn schema_is_versioned_and_typed() {
    let r = export_repo();
    let out = r.path.join("../s.parquet");
    assert!(
        r.simm(&["export", "-o", out.to_str().unwrap()])
            .status
            .success()
    );
    let file = std::fs::File::open(&out).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = builder.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut expected = vec![
        "version",
        "repo",
        "revision",
        "commit",
        "tree",
        "path",
        "blob",
        "blob_key",
        "size",
        "fingerprint",
        "fp0",
        "fp1",
        "fp2",
        "fp3",
    ];
    let bands: Vec<String> = (0..BANDS).map(|i| format!("mh{i}")).collect();
    expected.extend(bands.iter().map(String::as_str));
    expected.push("name_key");
    expected.extend(["signature", "sketch_level", "sketch", "sketch_next"]);
    assert_eq!(names, expected);
    use arrow_schema::DataType;
    assert_eq!(
        schema.field_with_name("fingerprint").unwrap().data_type(),
        &DataType::FixedSizeBinary(32)
    );
    for name in ["size", "fp0", "fp3", "mh0", "mh31"] {
        assert_eq!(
            schema.field_with_name(name).unwrap().data_type(),
            &DataType::Int64
        );
    }
    let meta = schema.metadata();
    assert_eq!(
        meta.get("git-simm.fingerprint_version"),
        Some(&FINGERPRINT_VERSION.to_string())
    );
    assert_eq!(
        meta.get("git-simm.schema_version"),
        Some(&(3000 + FINGERPRINT_VERSION).to_string())
    );
    assert_eq!(
        meta.get("git-simm.signature_version"),
        Some(&git_simm::similarity::signature::SIGNATURE_VERSION.to_string())
    );
    for name in ["signature", "sketch", "sketch_next"] {
        assert_eq!(
            schema.field_with_name(name).unwrap().data_type(),
            &DataType::Utf8
        );
    }
    assert_eq!(
        schema.field_with_name("sketch_level").unwrap().data_type(),
        &DataType::Int32
    );
    assert_eq!(meta.get("git-simm.bands"), Some(&BANDS.to_string()));
    assert_eq!(meta.get("git-simm.band_rows"), Some(&ROWS.to_string()));
}

#[test]
fn rows_match_ls_tree_and_fingerprint() {
    let r = export_repo();
    let (rows, _) = export(&r, &["--name", "example"]);
    let head = r.rev("HEAD");
    let tree = r.rev("HEAD^{tree}");

    // One row per blob entry of `git ls-tree -r`, in its order, with
    // `git cat-file -s`'s size; the gitlink is left out.
    let listing = r.git(&["ls-tree", "-r", "-z", "HEAD"]);
    let expected: Vec<(String, String)> = listing
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty() && !l.starts_with(b"160000"))
        .map(|l| {
            let tab = l.iter().position(|&b| b == b'\t').unwrap();
            let id = lossy(&l[..tab]).split(' ').nth(2).unwrap().to_owned();
            // A path that is not UTF-8 is written in git's quoted form.
            let path = match std::str::from_utf8(&l[tab + 1..]) {
                Ok(p) => p.to_owned(),
                Err(_) => {
                    assert_eq!(&l[tab + 1..], b"caf\xe9.txt");
                    "\"caf\\351.txt\"".to_owned()
                }
            };
            (path, id)
        })
        .collect();
    assert!(expected.len() >= 16);
    assert!(expected.iter().any(|(p, _)| p.starts_with('"')));
    let got: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.path.clone().unwrap(), r.blob.clone()))
        .collect();
    assert_eq!(got, expected);

    // `git simm fingerprint HEAD` prints the same fingerprints, in hex.
    let printed = stdout(&r.simm(&["fingerprint", "-z", "HEAD"]));
    let by_size_and_print: Vec<(String, i64)> = printed
        .split('\0')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let hex = f.next().unwrap().to_owned();
            (hex, f.next().unwrap().parse().unwrap())
        })
        .collect();
    assert_eq!(by_size_and_print.len(), rows.len());
    let mut fingerprinted = 0;
    for (row, (hex, size)) in rows.iter().zip(&by_size_and_print) {
        assert_eq!(row.version, 3000 + FINGERPRINT_VERSION as i32);
        assert_eq!(row.repo, "example");
        assert_eq!(row.revision.as_deref(), Some("HEAD"));
        assert_eq!(row.commit.as_deref(), Some(head.as_str()));
        assert_eq!(row.tree.as_deref(), Some(tree.as_str()));
        let raw = if row.path.as_deref() == Some("\"caf\\351.txt\"") {
            b"caf\xe9.txt".to_vec()
        } else {
            row.path.clone().unwrap().into_bytes()
        };
        assert_eq!(row.name_key, Some(name_key(&raw)));
        // The first 16 hex digits of the blob id, as a signed integer.
        let prefix = u64::from_str_radix(&row.blob[..16], 16).unwrap();
        assert_eq!(row.blob_key, prefix as i64);
        let cat_size: i64 = r
            .git_str(&["cat-file", "-s", &row.blob])
            .trim()
            .parse()
            .unwrap();
        assert_eq!((row.size, *size), (cat_size, cat_size));
        match row.fingerprint {
            None => {
                assert_eq!(hex, &"0".repeat(64), "{:?}", row.path);
                assert!(row.words.is_none() && row.bands.is_none());
                assert!(row.size < 192);
            }
            Some(bytes) => {
                fingerprinted += 1;
                let fp = Fingerprint::from_hex(hex).unwrap();
                assert_eq!(bytes, fp.to_bytes(), "{:?}", row.path);
                // The four words are the same bits, as signed integers.
                let words = row.words.unwrap();
                assert_eq!(words.map(|w| w as u64), fp.words);
                let content = r.git(&["cat-file", "blob", &row.blob]);
                let keys = minhash_keys(&content).expect("real text is not all filler");
                assert_eq!(
                    row.bands.as_deref(),
                    Some(keys.as_slice()),
                    "{:?}",
                    row.path
                );
            }
        }
    }
    assert!(fingerprinted >= 13, "{fingerprinted}");
}

#[test]
fn all_exports_every_blob_once_without_paths() {
    let r = export_repo();
    r.write("src/file0.txt", &edit(&texts(7, 1)[0], 9, 3));
    r.commit_all("second");
    let (rows, _) = export(&r, &["--all"]);
    let mut expected: Vec<String> = r
        .git_str(&[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype) %(objectname)",
        ])
        .lines()
        .filter_map(|l| l.strip_prefix("blob ").map(str::to_owned))
        .collect();
    expected.sort();
    let got: Vec<String> = rows.iter().map(|r| r.blob.clone()).collect();
    assert_eq!(got, expected);
    assert!(
        rows.iter()
            .all(|r| r.path.is_none() && r.commit.is_none() && r.tree.is_none())
    );
}

#[test]
fn several_tree_ishes_tags_and_subtrees() {
    let r = export_repo();
    r.git(&["tag", "-a", "-m", "v1", "v1"]);
    r.write("src/new.txt", &texts(11, 2)[1]);
    r.commit_all("second");
    let (rows, _) = export(&r, &["v1", "HEAD:src"]);
    let v1: Vec<&Row> = rows
        .iter()
        .filter(|x| x.revision.as_deref() == Some("v1"))
        .collect();
    let sub: Vec<&Row> = rows
        .iter()
        .filter(|x| x.revision.as_deref() == Some("HEAD:src"))
        .collect();
    assert_eq!(v1.len() + sub.len(), rows.len());
    // The tag names the commit behind it; a subtree names no commit.
    assert!(
        v1.iter()
            .all(|x| x.commit.as_deref() == Some(r.rev("v1^{commit}").as_str()))
    );
    assert!(sub.iter().all(|x| x.commit.is_none()));
    assert!(
        sub.iter()
            .all(|x| x.tree.as_deref() == Some(r.rev("HEAD:src").as_str()))
    );
    let paths: Vec<&str> = sub.iter().map(|x| x.path.as_deref().unwrap()).collect();
    let ls = r.git_str(&["ls-tree", "--name-only", "HEAD:src"]);
    assert_eq!(paths, ls.lines().collect::<Vec<_>>());
}

#[test]
fn second_export_fingerprints_only_new_blobs() {
    let r = export_repo();
    let (_, first) = export(&r, &[]);
    assert!(first.contains("0 rows answered by the store"), "{first}");
    r.write("src/added.txt", &texts(13, 2)[1]);
    r.commit_all("one more");
    let (rows, second) = export(&r, &[]);
    assert!(
        second.contains("1 blobs fingerprinted now, 1 chunked now"),
        "{second}"
    );
    assert!(second.contains(&format!("{} rows answered by the store", rows.len() - 1)));
    // The band keys come from the histogram store too: nothing is read.
    let (again, third) = export(&r, &[]);
    assert!(
        third.contains("0 blobs fingerprinted now, 0 chunked now"),
        "{third}"
    );
    assert_eq!(
        again.iter().map(|x| &x.bands).collect::<Vec<_>>(),
        rows.iter().map(|x| &x.bands).collect::<Vec<_>>()
    );
}

#[test]
fn blobs_fingerprinted_before_are_chunked_once() {
    // `fingerprint` stores fingerprints, not histograms: the first export
    // reads the blobs for their keys, the next one does not.
    let r = export_repo();
    assert!(r.simm(&["fingerprint", "HEAD"]).status.success());
    let (rows, first) = export(&r, &[]);
    let keyed: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|x| x.bands.is_some())
        .map(|x| x.blob.as_str())
        .collect();
    assert!(keyed.len() >= 13);
    assert!(
        first.contains(&format!(
            "0 blobs fingerprinted now, {} chunked now",
            keyed.len()
        )),
        "{first}"
    );
    let (_, second) = export(&r, &[]);
    assert!(second.contains("0 chunked now"), "{second}");
}

#[test]
fn default_name_is_the_origin_url_else_the_directory() {
    let r = export_repo();
    let (rows, _) = export(&r, &[]);
    assert_eq!(rows[0].repo, "repo");
    r.git(&[
        "remote",
        "add",
        "origin",
        "https://example.com/team/project.git",
    ]);
    let (rows, _) = export(&r, &[]);
    assert_eq!(rows[0].repo, "example.com/team/project");
    // What a fleet joins on: one name for one repository, however it was
    // cloned, and no credentials.
    for url in [
        "https://me:secret@example.com/team/project.git",
        "git@example.com:team/project.git",
        "ssh://git@Example.com:2222/team/project",
        "https://example.com/team/project/",
    ] {
        r.git(&["remote", "set-url", "origin", url]);
        let (rows, _) = export(&r, &[]);
        assert_eq!(rows[0].repo, "example.com/team/project", "{url}");
    }
    // A clone of a local clone (a mirror's, a cache's) is named by where
    // that one came from.
    let bare = r.path.join("../bare.git");
    r.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);
    let origin = git_command(&bare)
        .args(["config", "remote.origin.url"])
        .output()
        .unwrap();
    assert!(
        !stdout(&origin).contains("example.com"),
        "{}",
        stdout(&origin)
    );
    let out = r.path.join("../b.parquet");
    let o = simm_in(&bare, &["export", "-q", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "-q prints nothing: {}", stderr(&o));
    assert_eq!(rows_of(&read(&out))[0].repo, "example.com/team/project");
    // Without a remote that has a host: the directory name only, not the
    // path of the repository it was cloned from.
    r.git(&["remote", "remove", "origin"]);
    let o = simm_in(&bare, &["export", "-q", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(rows_of(&read(&out))[0].repo, "bare");
}

#[test]
fn stdout_that_is_not_a_terminal_gets_the_parquet_bytes() {
    let r = export_repo();
    let o = r.simm(&["export", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.starts_with(b"PAR1") && o.stdout.ends_with(b"PAR1"));
    let file = r.path.join("../stdout.parquet");
    std::fs::write(&file, &o.stdout).unwrap();
    let out = r.path.join("../out2.parquet");
    assert!(
        r.simm(&["export", "-q", "-o", out.to_str().unwrap()])
            .status
            .success()
    );
    let (a, b) = (read(&file), read(&out));
    assert_eq!(rows_of(&a), rows_of(&b));
}

#[test]
fn bad_input_gets_git_style_errors() {
    let r = export_repo();
    let out = r.path.join("../x.parquet");
    let o = r.simm(&["export", "no-such-rev", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: ambiguous argument 'no-such-rev': unknown revision"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());

    let blob = r.rev("HEAD:tiny.txt");
    let o = r.simm(&["export", &blob, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("fatal: "), "{}", stderr(&o));

    let nowhere = tempfile::tempdir().unwrap();
    let o = simm_in(nowhere.path(), &["export", "-o", "x.parquet"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).contains("not a git repository"),
        "{}",
        stderr(&o)
    );

    let o = r.simm(&["export", "-o", "/nonexistent-dir/x.parquet"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: cannot create '/nonexistent-dir/x.parquet'"),
        "{}",
        stderr(&o)
    );

    // --all with tree-ishes is a usage error.
    let o = r.simm(&["export", "--all", "HEAD"]);
    assert_eq!(o.status.code(), Some(129));

    // A failed write leaves no file and no temporary behind.
    let dir = r.path.join("../empty");
    std::fs::create_dir(&dir).unwrap();
    let before: BTreeMap<_, _> = BTreeMap::new();
    let o = r.simm(&[
        "export",
        "no-such-rev",
        "-o",
        dir.join("x.parquet").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(128));
    let left: BTreeMap<_, _> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| (e.unwrap().file_name(), ()))
        .collect();
    assert_eq!(left, before);
}

/// Binary Parquet is never written to a terminal: `script` gives the
/// command a pseudo-terminal as stdout (skipped where util-linux's
/// `script` is missing).
#[test]
fn a_terminal_is_refused_without_output() {
    let r = export_repo();
    let Ok(probe) = std::process::Command::new("script")
        .arg("--version")
        .output()
    else {
        eprintln!("skipped: no script(1)");
        return;
    };
    if !probe.status.success() {
        eprintln!("skipped: script(1) is not util-linux's");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_git-simm");
    let o = git_command(&r.path)
        .args([] as [&str; 0])
        .output()
        .map(|_| ())
        .and_then(|_| {
            std::process::Command::new("script")
                .current_dir(&r.path)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .args(["-qec", &format!("{bin} export"), "/dev/null"])
                .output()
        })
        .expect("run script");
    assert_eq!(o.status.code(), Some(128), "{}", lossy(&o.stdout));
    let shown = lossy(&o.stdout);
    assert!(
        shown.contains("fatal: refusing to write binary Parquet to a terminal"),
        "{shown}"
    );
    assert!(!shown.contains("PAR1"));
}

#[test]
fn an_edited_copy_far_in_fingerprint_bits_shares_a_band_key() {
    // A real text with every seventh line replaced: git scores the pair
    // above 80%, yet its fingerprints are 62 bits apart and no band of 16
    // fingerprint bits (export layout 1) survives, nor does its name.
    let original = texts(3, 4)[3].clone();
    let edited = edit(&original, 7, 2);
    let r = Repo::new();
    r.write("lib/parser.c", &original);
    r.commit_all("original");
    r.remove("lib/parser.c");
    r.write("vendor/copy/reader.c", &edited);
    r.commit_all("vendored, edited");
    let status = r.git_str(&["diff", "-M80%", "--name-status", "HEAD~", "HEAD"]);
    let score: u32 = status
        .strip_prefix('R')
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("git found no rename: {status}"));
    assert!(score >= 80, "{status}");

    let (rows, _) = export(&r, &["HEAD~", "HEAD"]);
    assert_eq!(rows.len(), 2);
    let (a, b) = (&rows[0], &rows[1]);
    let fp = |row: &Row| Fingerprint::from_hex(&hex(&row.fingerprint.unwrap())).unwrap();
    let (fa, fb) = (fp(a), fp(b));
    let distance: u32 = (0..4)
        .map(|w| (fa.words[w] ^ fb.words[w]).count_ones())
        .sum();
    assert!((50..=84).contains(&distance), "{distance}");
    assert!(
        bit_bands(&fa)
            .iter()
            .zip(bit_bands(&fb))
            .all(|(x, y)| *x != y),
        "a band of fingerprint bits is shared: layout 1 would have found the pair"
    );
    assert_ne!(a.name_key, b.name_key);

    // The exported keys are the ones recomputed from the contents, and at
    // least one band agrees: the query's equi-join meets the pair.
    let (ka, kb) = (a.bands.clone().unwrap(), b.bands.clone().unwrap());
    assert_eq!(Some(&ka), minhash_keys(&original).as_ref());
    assert_eq!(Some(&kb), minhash_keys(&edited).as_ref());
    let shared = ka.iter().zip(&kb).filter(|(x, y)| x == y).count();
    assert!(shared >= 1, "no band key shared");
    // Within git's size window, as the query also requires.
    assert!(a.size * 5 >= b.size * 4 && b.size * 5 >= a.size * 4);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn signature_columns_are_the_signatures_of_the_blobs() {
    use git_simm::similarity::signature::Signature;
    let r = export_repo();
    let out = r.path.join("../sig.parquet");
    // From the blobs (cold store); from a store of fingerprints without
    // signatures (`fingerprint --no-signatures`: the export signs what it
    // reads); then from the store alone.
    for round in 0..3 {
        if round == 1 {
            std::fs::remove_dir_all(r.store_dir()).expect("empty the store");
            let o = r.simm(&["fingerprint", "--all", "--quiet", "--no-signatures"]);
            assert!(o.status.success(), "{}", stderr(&o));
        }
        let o = r.simm(&["export", "-o", out.to_str().expect("path")]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut checked = 0;
        for b in read(&out) {
            let s = |name: &str| {
                b.column_by_name(name)
                    .expect(name)
                    .as_string::<i32>()
                    .clone()
            };
            let (blob, fine) = (s("blob"), s("signature"));
            let (sketch, next) = (s("sketch"), s("sketch_next"));
            let fp = b.column_by_name("fp0").expect("fp0");
            let level = b
                .column_by_name("sketch_level")
                .expect("level")
                .as_primitive::<Int32Type>()
                .clone();
            for i in 0..b.num_rows() {
                if fp.is_null(i) {
                    assert!(fine.is_null(i) && sketch.is_null(i));
                    continue;
                }
                let data = r.git(&["cat-file", "blob", blob.value(i)]);
                let t = Signature::new(&data).texts();
                assert_eq!(t.fine.as_deref(), (!fine.is_null(i)).then(|| fine.value(i)));
                assert_eq!(t.level as i32, level.value(i));
                assert_eq!(
                    (t.sketch.as_str(), t.sketch_next.as_str()),
                    (sketch.value(i), next.value(i))
                );
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked}");
    }
}
