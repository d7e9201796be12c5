//! `git simm compare`: real files of the pinned corpus with edits planted
//! at known lines, committed with the real git. git is the oracle where it
//! has an answer: its rename score (`git diff -M --name-status`) for the
//! exact score, and its `-U0` hunks for the lines that changed. The
//! estimate is held to a stated tolerance of the true edit distance
//! (computed exactly); the store alone answers in a blob-less partial
//! clone, and a side can come from another repository (`--in`).

use std::collections::BTreeMap;
use std::path::Path;

use git_simm::similarity::signature::align::byte_distance;
use git_simm::similarity::signature::{Stored, estimate};
use serde_json::Value;

use crate::util::*;

/// `text` with `count` lines from line `at` (from 0) replaced by fresh
/// ones, and `extra` fresh lines inserted further down.
fn plant(text: &[u8], at: usize, count: usize, extra: usize, rng: &mut Rng) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let mut out = Vec::new();
    let later = (at + count + 15).min(lines.len());
    for (i, l) in lines.iter().enumerate() {
        if i == later {
            for _ in 0..extra {
                out.extend_from_slice(&rng.fresh_line());
            }
        }
        if (at..at + count).contains(&i) {
            out.extend_from_slice(&rng.fresh_line());
        } else {
            out.extend_from_slice(l);
        }
    }
    out
}

/// `(first line, count)` of each side of each hunk of `git diff -U0`, as
/// git numbers them (a count of 0: nothing on that side, after the line).
type Hunk = ((u64, u64), (u64, u64));

fn hunks(diff: &str) -> Vec<Hunk> {
    let side = |s: &str| -> (u64, u64) {
        let s = &s[1..];
        match s.split_once(',') {
            Some((l, c)) => (l.parse().expect("line"), c.parse().expect("count")),
            None => (s.parse().expect("line"), 1),
        }
    };
    diff.lines()
        .filter(|l| l.starts_with("@@ "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (side(f[1]), side(f[2]))
        })
        .collect()
}

fn compare_json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["compare", "--json"];
    all.extend_from_slice(args);
    let o = simm_in(dir, &all);
    assert!(o.status.success(), "compare {args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// Lines `(from, to)` (from 1, inclusive) of one side of each region.
fn region_lines(doc: &Value, side: &str) -> Vec<(u64, u64)> {
    doc["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .filter(|r| r[side]["lines"].as_u64() > Some(0))
        .map(|r| {
            (
                r[side]["first_line"].as_u64().expect("first"),
                r[side]["last_line"].as_u64().expect("last"),
            )
        })
        .collect()
}

/// Each file's content before and after.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Twelve real files, each with one block of lines replaced and a few
/// lines inserted, renamed in the second commit so that git scores each
/// pair.
fn edited_repo() -> (Repo, Pairs) {
    let r = Repo::new();
    let mut rng = Rng(24);
    let mut pairs = Vec::new();
    for (i, t) in texts(11, 12).iter().enumerate() {
        let lines = t.iter().filter(|&&b| b == b'\n').count();
        let at = 5 + rng.below(lines.saturating_sub(30).max(1));
        let b = plant(t, at, 1 + rng.below(4), rng.below(3), &mut rng);
        r.write(format!("old/f{i}.txt"), t);
        pairs.push((t.clone(), b));
    }
    r.commit_all("v1");
    r.git(&["tag", "v1"]);
    for (i, (_, b)) in pairs.iter().enumerate() {
        r.remove(format!("old/f{i}.txt"));
        r.write(format!("new/f{i}.txt"), b);
    }
    r.commit_all("v2");
    r.git(&["tag", "v2"]);
    (r, pairs)
}

/// git's rename scores of v1 -> v2, by destination path.
fn git_scores(r: &Repo) -> BTreeMap<String, u64> {
    let out = r.git_str(&["diff", "-M1%", "-l0", "--name-status", "v1", "v2"]);
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let score = f[0].strip_prefix('R')?.parse().ok()?;
            Some((f[2].to_owned(), score))
        })
        .collect()
}

#[test]
fn estimate_regions_and_git_score_on_real_edits() {
    let (r, pairs) = edited_repo();
    let scores = git_scores(&r);
    assert_eq!(scores.len(), pairs.len(), "{scores:?}");
    let (mut found, mut changed, mut claimed) = (0u64, 0u64, 0u64);
    for (i, (a, b)) in pairs.iter().enumerate() {
        let (sa, sb) = (format!("v1:old/f{i}.txt"), format!("v2:new/f{i}.txt"));
        let doc = compare_json(&r.path, &[&sa, &sb]);
        // git's exact score, as git's rename detection prints it.
        assert_eq!(
            doc["git_score"].as_u64(),
            scores.get(&format!("new/f{i}.txt")).copied(),
            "{doc:#}"
        );
        assert_eq!(doc["a"]["blob"], r.rev(&sa));
        assert_eq!(doc["b"]["size"], b.len());
        // The estimate within a stated tolerance of the true distance:
        // half of it, plus two chunks of slack.
        let truth = byte_distance(a, b) as f64;
        let est = doc["edit_distance"].as_f64().expect("edit distance");
        assert!(
            (est - truth).abs() <= 0.5 * truth + 128.0,
            "f{i}: estimate {est}, true {truth}"
        );
        // Every line git's diff changed is inside a region, on both
        // sides; regions claim little more.
        let diff = r.git_str(&["diff", "-U0", &sa, &sb]);
        let (ra, rb) = (region_lines(&doc, "a"), region_lines(&doc, "b"));
        for ((la, ca), (lb, cb)) in hunks(&diff) {
            for (first, count, regions) in [(la, ca, &ra), (lb, cb, &rb)] {
                for line in first..first + count {
                    changed += 1;
                    if regions.iter().any(|&(f, l)| (f..=l).contains(&line)) {
                        found += 1;
                    } else {
                        eprintln!("f{i}: line {line} changed by git, in no region: {doc}");
                    }
                }
            }
        }
        claimed += ra.iter().chain(&rb).map(|(f, l)| l - f + 1).sum::<u64>();
    }
    assert_eq!(found, changed, "every changed line in a region");
    // Short lines emit no symbol and widen a region: at most four times
    // the lines git changed.
    assert!(
        claimed <= 4 * changed,
        "{claimed} lines claimed for {changed} changed"
    );
}

#[test]
fn text_output_shows_hunk_headers_of_the_json_regions() {
    let (r, _) = edited_repo();
    let doc = compare_json(&r.path, &["v1:old/f3.txt", "v2:new/f3.txt"]);
    let o = r.simm(&["compare", "v1:old/f3.txt", "v2:new/f3.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let want: Vec<String> = doc["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .map(|reg| {
            let side = |s: &Value| {
                let n = s["lines"].as_u64().expect("lines");
                let first = s["first_line"].as_u64().expect("first");
                if n == 0 {
                    format!("{},0", first - 1)
                } else {
                    format!("{first},{n}")
                }
            };
            format!("@@ -{} +{} @@", side(&reg["a"]), side(&reg["b"]))
        })
        .collect();
    let got: Vec<&str> = text.lines().filter(|l| l.starts_with("@@ ")).collect();
    assert_eq!(got, want, "{text}");
    assert!(!got.is_empty());
    let score = doc["git_score"].as_u64().expect("score");
    assert!(text.contains(&format!("git's score {score}%")), "{text}");
    assert!(text.contains("edit distance: about"), "{text}");
}

#[test]
fn files_on_disk_and_identical_blobs() {
    let (r, pairs) = edited_repo();
    r.write("x.txt", &pairs[0].1);
    // A path on disk against a blob: the same content, the same report.
    let disk = compare_json(&r.path, &["v1:old/f0.txt", "x.txt"]);
    let blob = compare_json(&r.path, &["v1:old/f0.txt", "v2:new/f0.txt"]);
    assert_eq!(disk["regions"], blob["regions"]);
    assert_eq!(disk["git_score"], blob["git_score"]);
    assert_eq!(disk["b"]["blob"], Value::Null);
    let same = compare_json(&r.path, &["v1:old/f0.txt", &r.rev("v1:old/f0.txt")]);
    assert_eq!(same["git_score"], 100);
    assert_eq!(same["similarity"], 100);
    assert_eq!(same["edit_distance"], 0);
    assert_eq!(same["regions"], Value::Array(Vec::new()));

    // Identical contents are one blob for git (R100 by id): two CRLF files
    // on disk, outside any repository, which scoring alone puts below
    // 100% (git's chunks drop the CRs, the sizes keep them).
    let outside = tempfile::tempdir().expect("tempdir");
    let crlf = crate::util::to_crlf(&pairs[0].1);
    std::fs::write(outside.path().join("a.txt"), &crlf).expect("write");
    std::fs::write(outside.path().join("b.txt"), &crlf).expect("write");
    let twins = compare_json(outside.path(), &["a.txt", "b.txt"]);
    assert_eq!(twins["git_score"], 100, "{twins}");
    assert_eq!(twins["regions"], Value::Array(Vec::new()));

    // In a bare repository a name that no revision has is a file on disk,
    // as for git diff --no-index.
    let bare = outside.path().join("bare.git");
    let o = crate::util::git_command(outside.path())
        .args(["clone", "-q", "--bare"])
        .arg(&r.path)
        .arg(&bare)
        .output()
        .expect("run git");
    assert!(o.status.success());
    std::fs::write(bare.join("a.txt"), &pairs[0].0).expect("write");
    let mixed = compare_json(&bare, &["a.txt", "v1:old/f0.txt"]);
    assert_eq!(mixed["git_score"], 100, "{mixed}");
    assert_eq!(mixed["a"]["blob"], Value::Null);
}

#[test]
fn bad_sides_are_clear_errors() {
    let (r, _) = edited_repo();
    for (args, what) in [
        (
            &["compare", "no-such-file", "v1:old/f0.txt"][..],
            "no-such-file",
        ),
        (&["compare", "v1:old", "v1:old/f0.txt"][..], "tree"),
        (&["compare", "HEAD", "v1:old/f0.txt"][..], "commit"),
    ] {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.starts_with("fatal: ") && e.contains(what),
            "{args:?}: {e}"
        );
    }
    let o = r.simm(&["compare", "v1:old/f0.txt"]);
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
}

#[test]
fn a_side_in_another_repository() {
    let (r, pairs) = edited_repo();
    let other = Repo::new();
    other.write("vendor/copy.txt", &pairs[5].1);
    other.commit_all("vendored");
    let doc = compare_json(
        &r.path,
        &[
            "v1:old/f5.txt",
            "--in",
            other.path.to_str().expect("path"),
            "HEAD:vendor/copy.txt",
        ],
    );
    assert_eq!(doc["b"]["blob"], other.rev("HEAD:vendor/copy.txt"));
    assert!(doc["b"]["repository"].is_string());
    // The same content as v2:new/f5.txt here: git's score of that rename.
    assert_eq!(
        doc["git_score"].as_u64(),
        git_scores(&r).get("new/f5.txt").copied()
    );
    // The other repository's store now holds the signature.
    assert!(
        std::fs::read_dir(other.store_dir())
            .expect("store")
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("sig-"))
    );
}

#[test]
fn a_blobless_clone_compares_from_a_store_filled_elsewhere() {
    let (server, _) = edited_repo();
    server.git(&["config", "uploadpack.allowFilter", "true"]);
    server.git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let full = compare_json(&server.path, &["v1:old/f7.txt", "v2:new/f7.txt"]);
    let o = server.simm(&["fingerprint", "--all", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let dest = server.path.parent().expect("parent").join("blobless");
    let url = format!("file://{}", server.path.display());
    let o = git_command(&server.path)
        .args(["clone", "-q", "--filter=blob:none", "--no-checkout", &url])
        .arg(&dest)
        .output()
        .expect("git clone");
    assert!(o.status.success(), "{}", stderr(&o));
    let present = |dir: &Path| {
        let o = git_command(dir)
            .env("GIT_NO_LAZY_FETCH", "1")
            .args([
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ])
            .output()
            .expect("git cat-file");
        stdout(&o)
    };
    let before = present(&dest);
    let compare = |dir: &Path| {
        simm_command()
            .current_dir(dir)
            .env("GIT_NO_LAZY_FETCH", "1")
            .args(["compare", "--json", "v1:old/f7.txt", "v2:new/f7.txt"])
            .output()
            .expect("git-simm")
    };
    // Without a store, the blobs are needed and absent: a clear error.
    let o = compare(&dest);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("fatal: "), "{}", stderr(&o));

    // The server's store copied in: the estimate from the stored
    // signatures (as the library makes it from the two contents), no
    // regions and no git score (they need the contents), nothing fetched.
    let store = dest.join(".git/simm");
    std::fs::create_dir_all(&store).expect("mkdir");
    for e in std::fs::read_dir(server.store_dir()).expect("store") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), store.join(e.file_name())).expect("copy");
    }
    let o = compare(&dest);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(doc["git_score"], Value::Null);
    assert_eq!(doc["regions"], Value::Null);
    assert!(full["regions"].is_array(), "{full:#}");
    let (x, y) = (
        server.git(&["cat-file", "blob", "v1:old/f7.txt"]),
        server.git(&["cat-file", "blob", "v2:new/f7.txt"]),
    );
    let want = estimate::estimate_stored(&Stored::of(&x), &Stored::of(&y));
    let pct = |v: Option<f64>| v.map(|v| (v * 100.0).clamp(0.0, 100.0) as u64);
    assert_eq!(doc["edit_distance"], want.edit_distance);
    assert_eq!(doc["signature_distance"], want.symbol_distance);
    assert_eq!(doc["similarity"].as_u64(), pct(want.similarity));
    assert_eq!(doc["a_in_b"].as_u64(), pct(want.a_in_b));
    assert_eq!(doc["b_in_a"].as_u64(), pct(want.b_in_a));
    // Near the estimate from the contents.
    let (s, f) = (doc["similarity"].as_i64(), full["similarity"].as_i64());
    assert!(
        s.zip(f).is_some_and(|(s, f)| (s - f).abs() <= 15),
        "{doc} {full}"
    );
    let text = simm_command()
        .current_dir(&dest)
        .env("GIT_NO_LAZY_FETCH", "1")
        .args(["compare", "v1:old/f7.txt", "v2:new/f7.txt"])
        .output()
        .expect("git-simm");
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(stdout(&text).contains("regions: not shown (they need both blobs"));
    assert_eq!(present(&dest), before, "nothing fetched");
}

/// A line edited in place (one letter for another, the length kept) in a
/// small file, whose chunk emits two symbols at the fine level: one of the
/// edited chunk's symbols equals, by chance, its counterpart in the other
/// file (same value, length and line end), so the alignment matches it.
/// The chunk is still changed, and the region must hold its line on both
/// sides, as git's hunk does; a region that stops at the chance match is
/// empty on both sides, beside the line. Each edit: a corpus file, the
/// line (from 1) and the byte of that line changed to the next letter.
#[test]
fn a_chunk_with_one_symbol_matched_by_chance_is_in_its_region() {
    let edits = [
        (
            "python/docutils-0.21.2/test/test_parsers/test_rst/test_directives/test_line_blocks.py",
            21,
            19,
        ),
        (
            "python/markdown-3.7/tests/test_syntax/extensions/test_attr_list.py",
            25,
            14,
        ),
        ("rust/gimli-0.34.0/src/write/section.rs", 2, 12),
    ];
    let r = Repo::new();
    for (i, (rel, line, col)) in edits.iter().enumerate() {
        let old = corpus_text(rel);
        assert!(old.len() < 8192, "{rel}: a file signed at the fine level");
        let mut new = old.clone();
        let start = old
            .split_inclusive(|&b| b == b'\n')
            .take(line - 1)
            .map(<[u8]>::len)
            .sum::<usize>();
        let at = start + col;
        assert!(new[at].is_ascii_alphabetic() && new[at] != b'z', "{rel}");
        new[at] += 1;
        r.write(format!("old{i}.txt"), &old);
        r.write(format!("new{i}.txt"), &new);
    }
    r.commit_all("pairs");
    for (i, (rel, _, _)) in edits.iter().enumerate() {
        let (sa, sb) = (format!("HEAD:old{i}.txt"), format!("HEAD:new{i}.txt"));
        let doc = compare_json(&r.path, &[&sa, &sb]);
        let diff = r.git_str(&["diff", "-U0", &sa, &sb]);
        let hunks = hunks(&diff);
        assert_eq!(hunks.len(), 1, "{diff}");
        let (ra, rb) = (region_lines(&doc, "a"), region_lines(&doc, "b"));
        for ((la, ca), (lb, cb)) in hunks {
            for (first, count, regions) in [(la, ca, &ra), (lb, cb, &rb)] {
                for line in first..first + count {
                    assert!(
                        regions.iter().any(|&(f, l)| (f..=l).contains(&line)),
                        "{rel}: line {line} changed by git, in no region: {doc}"
                    );
                }
            }
        }
    }
}

/// Files of 8 KiB and more keep only coarse symbols in the store (one per
/// 64 bytes), which most chunks lack; with both contents at hand the
/// regions still find a letter changed in place in any line of 16 bytes or
/// more (every such chunk emits a fine symbol), as git's hunks show it.
#[test]
fn in_place_edits_of_large_files_are_in_regions() {
    let r = Repo::new();
    let large: Vec<Vec<u8>> = corpus_files()
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (8192..=16384).contains(&d.len()) && is_text(d))
        .step_by(41)
        .take(12)
        .collect();
    assert_eq!(large.len(), 12);
    for (i, t) in large.iter().enumerate() {
        // A letter in the middle of a line of 24 bytes or more, half-way
        // down the file, becomes the next one: the length is kept.
        let mut at = t.len() / 2;
        let mut line_start = t[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        loop {
            let end = line_start
                + t[line_start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .expect("LF");
            let mid = line_start + (end - line_start) / 2;
            if end - line_start >= 24 && t[mid].is_ascii_lowercase() && t[mid] != b'z' {
                at = mid;
                break;
            }
            line_start = end + 1;
        }
        let mut new = t.clone();
        new[at] += 1;
        r.write(format!("old{i}.txt"), t);
        r.write(format!("new{i}.txt"), &new);
    }
    r.commit_all("pairs");
    for i in 0..large.len() {
        let (sa, sb) = (format!("HEAD:old{i}.txt"), format!("HEAD:new{i}.txt"));
        let doc = compare_json(&r.path, &[&sa, &sb]);
        let diff = r.git_str(&["diff", "-U0", &sa, &sb]);
        let (ra, rb) = (region_lines(&doc, "a"), region_lines(&doc, "b"));
        let ((la, ca), (lb, cb)) = hunks(&diff)[0];
        assert_eq!((ca, cb), (1, 1), "{diff}");
        for (line, regions) in [(la, &ra), (lb, &rb)] {
            assert!(
                regions.iter().any(|&(f, l)| (f..=l).contains(&line)),
                "old{i}.txt: line {line} changed by git, in no region: {doc}"
            );
        }
    }
}

/// Signatures kept in the store: one record per table row, the count in
/// the table's name (`sig-<crc>-<count>.table`).
fn signed_records(r: &Repo) -> u64 {
    std::fs::read_dir(r.store_dir())
        .expect("store")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let count = name.strip_prefix("sig-")?.strip_suffix(".table")?;
            u64::from_str_radix(count.rsplit('-').next()?, 16).ok()
        })
        .sum()
}

/// `renames` fingerprints without signing; `fingerprint --all` afterwards
/// signs those blobs (read again) and every blob it reads itself, each
/// once: as many signatures as the repository has blobs.
#[test]
fn fingerprint_signs_what_renames_fingerprinted_and_what_it_reads() {
    let (r, _) = edited_repo();
    let o = r.simm(&["renames", "v1", "v2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(signed_records(&r), 0, "renames signs nothing");
    // A blob neither commit of the rename holds, read by fingerprint.
    r.write("extra/lone.txt", &texts(1, 40)[0]);
    r.commit_all("v3");
    let o = r.simm(&["fingerprint", "--all", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let blobs = r
        .git_str(&[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype)",
        ])
        .lines()
        .filter(|l| *l == "blob")
        .count() as u64;
    assert_eq!(signed_records(&r), blobs);
    // Nothing is signed twice by a second run.
    let o = r.simm(&["fingerprint", "--all", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(signed_records(&r), blobs);
}

/// `--no-signatures` and `simm.signatures=false` leave signatures out of
/// the store; `compare` answers the same without them (signing the blobs
/// it reads) as with them; a value git would not take for a boolean
/// stops the command as git stops.
#[test]
fn fingerprint_without_signatures_stores_none_and_compare_answers_alike() {
    let (r, _) = edited_repo();
    let o = r.simm(&["fingerprint", "--all", "--quiet", "--no-signatures"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(signed_records(&r), 0, "--no-signatures signs nothing");
    r.git(&["config", "simm.signatures", "false"]);
    r.write("extra/lone.txt", &texts(1, 40)[0]);
    r.commit_all("v3");
    let o = r.simm(&["fingerprint", "--all", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(signed_records(&r), 0, "simm.signatures=false signs nothing");
    let compare = |r: &Repo| {
        let o = r.simm(&["compare", "--json", "v1:old/f3.txt", "v2:new/f3.txt"]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let unsigned = compare(&r);
    r.git(&["config", "simm.signatures", "maybe"]);
    for args in [
        &["fingerprint", "--all", "--quiet"][..],
        &["fingerprint", "v2"],
    ] {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}");
        assert!(
            stderr(&o).contains("bad boolean config value 'maybe' for 'simm.signatures'"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // A file on disk is never signed: the setting is not read.
    let o = r.simm(&["fingerprint", "--", "extra/lone.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    r.git(&["config", "simm.signatures", "yes"]);
    let o = r.simm(&["fingerprint", "--all", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(signed_records(&r) > 0, "simm.signatures=yes signs");
    assert_eq!(
        compare(&r),
        unsigned,
        "the stored signatures change no answer"
    );
}
