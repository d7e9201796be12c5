//! Containment: `similar --containment`, and `renames --find-splits`
//! (splits and merges reported after git's own pairing, which stays
//! byte-identical to git's).
//!
//! Oracle: git's rename score of a pair is the bytes copied over the larger
//! file's size, which is exactly the containment of the larger file in the
//! smaller one; the other direction follows from the sizes.

use crate::renames_vs_git::corpus;
use crate::util::{self, Repo, Rng, lossy};
use git_simm::similarity::containment::{Sample, estimate};
use git_simm::similarity::score::{MAX_SCORE, Spans};

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// Light edits: about one line in 25 changed, one in 50 added.
fn lightly_edited(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines(data) {
        match rng.below(50) {
            0 | 1 => out.extend_from_slice(format!("// changed {}\n", rng.next()).as_bytes()),
            2 => {
                out.extend_from_slice(line);
                out.extend_from_slice(format!("// added {}\n", rng.next()).as_bytes());
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

/// `data` cut at line ends into `k` parts of similar sizes (within a factor
/// of about two of each other).
fn cut(data: &[u8], k: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let ls = lines(data);
    let mut weights: Vec<usize> = (0..k).map(|_| 2 + rng.below(3)).collect();
    let total: usize = weights.iter().sum();
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, w) in weights.iter_mut().enumerate() {
        let end = if i + 1 == k {
            ls.len()
        } else {
            (start + ls.len() * *w / total).min(ls.len())
        };
        parts.push(ls[start..end].concat());
        start = end;
    }
    parts
}

/// Real corpus files of at least `min` bytes, spread over the corpus.
fn big_docs(min: usize) -> Vec<&'static [u8]> {
    let c = corpus();
    (0..c.len())
        .map(|i| c[(i * 7919) % c.len()].data.as_slice())
        .filter(|d| d.len() >= min)
        .collect()
}

/// `(status, score, old, new)` of git's R lines.
fn git_renames(r: &Repo, args: &[&str]) -> Vec<(u32, String, String)> {
    lossy(&r.git(args))
        .lines()
        .filter(|l| l.starts_with('R'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0][1..].parse().unwrap(), f[1].to_owned(), f[2].to_owned())
        })
        .collect()
}

#[test]
fn similar_containment_finds_the_parts_and_the_whole() {
    let docs = big_docs(12 * 1024);
    let mut rng = Rng(15);
    let whole = docs[0];
    let parts = cut(whole, 2, &mut rng);
    let r = Repo::new();
    r.write("whole.rs", whole);
    r.write("other/a.rs", docs[1]);
    r.write("other/b.rs", docs[2]);
    r.commit_all("whole");
    r.remove("whole.rs");
    r.write("part_a.rs", &lightly_edited(&parts[0], &mut rng));
    r.write("part_b.rs", &lightly_edited(&parts[1], &mut rng));
    r.commit_all("split");

    // The whole against the tree after the split: both parts, which it
    // holds nearly all of, and nothing else.
    let out = r.simm(&["similar", "--containment", "HEAD~1:whole.rs", "HEAD"]);
    let text = util::stdout(&out);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let rows: Vec<(u32, u32, String)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let pc = |s: &str| s.trim_end_matches('%').parse::<u32>().unwrap();
            (pc(f[0]), pc(f[1]), f[2].to_owned())
        })
        .collect();
    let paths: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(paths.len(), 2, "{text}");
    assert!(paths.contains(&"part_a.rs") && paths.contains(&"part_b.rs"));
    for (in_file, in_query, path) in &rows {
        assert!(*in_query >= 85, "{path} is {in_query}% in the whole");
        assert!(*in_file < 85, "{path} holds {in_file}% of the whole");
        // git's score of whole -> part is the whole's containment in the
        // (smaller) part.
        let renames = git_renames(
            &r,
            &[
                "diff",
                "-M01%",
                "-l0",
                "--name-status",
                "HEAD~1",
                "HEAD",
                "--",
                "whole.rs",
                path,
            ],
        );
        assert_eq!(renames.len(), 1, "{renames:?}");
        assert_eq!(renames[0].0, *in_file, "{path}: git's score");
    }

    // A part against the tree before the split: the whole holds it.
    let out = r.simm(&[
        "similar",
        "--containment",
        "--json",
        "HEAD:part_b.rs",
        "HEAD~1",
    ]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &doc["matches"][0];
    assert_eq!(m["path"], "whole.rs");
    assert_eq!(m["relation"], "contains");
    assert!(m["query_in_file"].as_u64().unwrap() >= 85, "{doc}");
    assert!(m["file_in_query"].as_u64().unwrap() < 85, "{doc}");
    assert_eq!(doc["matches"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["query"], "HEAD:part_b.rs");

    // Nothing holds an unrelated new file: exit 1 with no output, as
    // `similar`.
    r.write("new.txt", b"nothing like the rest\n");
    let out = r.simm(&["similar", "--containment", "new.txt"]);
    assert_eq!(out.status.code(), Some(1), "{}", util::stderr(&out));
    assert!(out.stdout.is_empty());
    let out = r.simm(&["similar", "--containment", "HEAD:nope.rs"]);
    assert_eq!(out.status.code(), Some(128), "{}", util::stderr(&out));
}

/// One repository with real splits (a corpus file cut into 2-6 parts of
/// comparable sizes, each lightly edited), merges (2-4 corpus files of
/// comparable sizes, lightly edited and joined), and ordinary changes:
/// renames edited from lightly to heavily, deletions, unrelated additions.
/// `renames` alone must equal git; `--find-splits` must print git's lines
/// then find at least 95% of the splits and merges, each with exactly its
/// parts, and nothing else.
#[test]
fn find_splits_recalls_splits_and_merges_and_nothing_else() {
    let c = corpus();
    // SPLITS_SEED runs the same test on other draws from the corpus (the
    // figures in the README come from several).
    let seed = std::env::var("SPLITS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5b117);
    let mut rng = Rng(seed);
    let r = Repo::new();
    let mut order: Vec<usize> = (0..c.len()).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    // No file much like one already taken: the corpus ships some files
    // twice, in two packages or versions (zlib in libgit2-sys and libz-sys,
    // license texts), and a near copy of a part is rightly reported in its
    // place, which would make the expected answer ambiguous.
    let mut taken: Vec<Sample> = Vec::new();
    let mut docs = order.iter().map(|&i| &c[i]).filter(move |d| {
        let sample = Sample::with_rate(&Spans::new(&d.data), 1);
        let near = taken.iter().any(|t| {
            estimate(&sample, t).is_some_and(|e| e >= MAX_SCORE / 4)
                || estimate(t, &sample).is_some_and(|e| e >= MAX_SCORE / 4)
        });
        if !near {
            taken.push(sample);
        }
        !near
    });
    let ext = |name: &str| {
        std::path::Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("txt")
            .to_owned()
    };

    // (source, parts) and (destination, sources).
    let mut splits: Vec<(String, Vec<String>)> = Vec::new();
    let mut merges: Vec<(String, Vec<String>)> = Vec::new();
    let mut after: Vec<(String, Vec<u8>)> = Vec::new();
    while splits.len() < 40 {
        let d = docs.next().unwrap();
        if d.data.len() < 8 * 1024 {
            continue;
        }
        let i = splits.len();
        let k = 2 + i % 5;
        let src = format!("big/s{i:02}.{}", ext(&d.name));
        r.write(&src, &d.data);
        let mut parts = Vec::new();
        for (j, part) in cut(&d.data, k, &mut rng).into_iter().enumerate() {
            let p = format!("parts/s{i:02}/p{j}.{}", ext(&d.name));
            after.push((p.clone(), lightly_edited(&part, &mut rng)));
            parts.push(p);
        }
        splits.push((src, parts));
    }
    while merges.len() < 30 {
        let i = merges.len();
        let k = 2 + i % 3;
        let mut sources = Vec::new();
        let mut joined = Vec::new();
        while sources.len() < k {
            let d = docs.next().unwrap();
            if !(3 * 1024..6 * 1024).contains(&d.data.len()) {
                continue;
            }
            let p = format!("small/m{i:02}_{}.{}", sources.len(), ext(&d.name));
            r.write(&p, &d.data);
            joined.extend(lightly_edited(&d.data, &mut rng));
            sources.push(p);
        }
        let dst = format!("joined/m{i:02}.txt");
        after.push((dst.clone(), joined));
        merges.push((dst, sources));
    }
    // Splits out of a file that stays: its first part stays (lightly
    // edited), the others go to new files.
    let mut stays: Vec<(String, Vec<String>)> = Vec::new();
    while stays.len() < 20 {
        let d = docs.next().unwrap();
        if d.data.len() < 8 * 1024 {
            continue;
        }
        let i = stays.len();
        let k = 2 + i % 2;
        let src = format!("stays/t{i:02}.{}", ext(&d.name));
        r.write(&src, &d.data);
        let mut parts = vec![src.clone()];
        for (j, part) in cut(&d.data, k, &mut rng).into_iter().enumerate() {
            let edited = lightly_edited(&part, &mut rng);
            if j == 0 {
                after.push((src.clone(), edited));
            } else {
                let p = format!("out/t{i:02}/p{j}.{}", ext(&d.name));
                after.push((p.clone(), edited));
                parts.push(p);
            }
        }
        stays.push((src, parts));
    }
    // Ordinary changes: 200 renames with edits from light to heavy (git
    // pairs most, not all), 30 deletions, 30 unrelated additions, 30
    // files edited in place from light to heavy, 70 left alone.
    let mut moved = Vec::new();
    for i in 0..360 {
        let d = docs.next().unwrap();
        let p = format!("keep/f{i:03}.{}", ext(&d.name));
        r.write(&p, &d.data);
        moved.push((p, d));
    }
    r.commit_all("before");
    for (i, (p, d)) in moved.iter().enumerate() {
        match i {
            0..200 => {
                r.remove(p);
                let mut data = d.data.clone();
                for _ in 0..(i / 40) {
                    data = lightly_edited(&data, &mut rng);
                }
                r.write(format!("moved/g{i:03}.{}", ext(&d.name)), &data);
            }
            200..230 => r.remove(p),
            230..260 => {
                let mut data = d.data.clone();
                for _ in 0..=((i - 230) / 5) {
                    data = lightly_edited(&data, &mut rng);
                }
                r.write(p, &data);
            }
            _ => {}
        }
    }
    for (i, d) in docs.by_ref().take(30).enumerate() {
        r.write(format!("new/n{i:02}.{}", ext(&d.name)), &d.data);
    }
    for (s, _) in &splits {
        r.remove(s);
    }
    for (_, sources) in &merges {
        for s in sources {
            r.remove(s);
        }
    }
    for (p, data) in &after {
        r.write(p, data);
    }
    r.commit_all("after");

    let git = r.git(&["diff", "-M", "-l0", "--name-status", "HEAD~1", "HEAD"]);
    let plain = r.simm(&["renames", "HEAD~1", "HEAD"]);
    assert!(plain.status.success(), "{}", util::stderr(&plain));
    assert_eq!(
        lossy(&plain.stdout),
        lossy(&git),
        "renames without the flag"
    );
    assert!(
        lossy(&git).lines().filter(|l| l.starts_with('R')).count() >= 150,
        "the ordinary renames are renames"
    );

    let out = r.simm(&["renames", "--find-splits", "HEAD~1", "HEAD"]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let text = lossy(&out.stdout);
    assert!(
        text.starts_with(&lossy(&git)),
        "git's lines come first, unchanged"
    );
    let extra: Vec<Vec<&str>> = text[git.len()..]
        .lines()
        .map(|l| l.split('\t').collect())
        .collect();
    let (mut split_hits, mut merge_hits, mut stay_hits, mut wrong) = (0, 0, 0, Vec::new());
    for f in &extra {
        let covered: u32 = f[0][1..].parse().unwrap();
        assert!(covered >= 80, "{f:?}");
        match f[0].chars().next() {
            Some('S') => {
                let parts: Vec<String> = f[2..].iter().map(|s| s.to_string()).collect();
                match (
                    splits.iter().find(|(s, _)| s == f[1]),
                    stays.iter().find(|(s, _)| s == f[1]),
                ) {
                    (Some((_, want)), _) if sorted(want) == sorted(&parts) => split_hits += 1,
                    // The file that stays is named first among its parts.
                    (_, Some((_, want))) if f[2] == f[1] && sorted(want) == sorted(&parts) => {
                        stay_hits += 1
                    }
                    _ => wrong.push(f.join(" ")),
                }
            }
            Some('J') => {
                let (dst, srcs) = f[1..].split_last().unwrap();
                let srcs: Vec<String> = srcs.iter().map(|s| s.to_string()).collect();
                match merges.iter().find(|(d, _)| d == dst) {
                    Some((_, want)) if sorted(want) == sorted(&srcs) => merge_hits += 1,
                    _ => wrong.push(f.join(" ")),
                }
            }
            _ => wrong.push(f.join(" ")),
        }
    }
    println!(
        "splits found: {split_hits} of {}, out of files that stay: {stay_hits} of {}, \
         merges: {merge_hits} of {}, wrong: {}",
        splits.len(),
        stays.len(),
        merges.len(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "false or partial reports: {wrong:#?}");
    assert!(split_hits * 100 >= splits.len() * 95, "split recall");
    assert!(
        stay_hits * 100 >= stays.len() * 95,
        "recall of splits out of files that stay"
    );
    assert!(merge_hits * 100 >= merges.len() * 95, "merge recall");

    // The JSON document carries the same, with the containments.
    let out = r.simm(&["renames", "--find-splits", "--json", "HEAD~1", "HEAD"]);
    assert!(out.status.success(), "{}", util::stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["splits"].as_array().unwrap().len(),
        split_hits + stay_hits
    );
    assert_eq!(doc["merges"].as_array().unwrap().len(), merge_hits);
    let s = &doc["splits"][0];
    assert!(s["covered"].as_u64().unwrap() >= 80);
    for p in s["parts"].as_array().unwrap() {
        assert!(p["part_in_whole"].as_u64().unwrap() >= 80, "{p}");
        assert!(p["whole_in_part"].as_u64().unwrap() < 80, "{p}");
    }
    let out = r.simm(&["renames", "--json", "HEAD~1", "HEAD"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.get("splits").is_none() && doc.get("merges").is_none());

    // Bad values are usage errors, as git's for -M.
    let out = r.simm(&["renames", "--find-splits=8x", "HEAD~1", "HEAD"]);
    assert_eq!(out.status.code(), Some(129), "{}", util::stderr(&out));
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// libgit2's sources and public headers from the pinned corpus (a real C
/// project: every file behind the same six-line license comment), into a
/// new repository; with `strip`, that comment taken off every file.
fn libgit2_tree(strip: bool) -> Repo {
    const LICENSE: &str = "/*\n * Copyright (C) the libgit2 contributors. All rights reserved.\n *\n * \
                           This file is part of libgit2, distributed under the GNU GPL v2 with\n * \
                           a Linking Exception. For full terms see the included COPYING file.\n */\n";
    let root = util::corpus_dir().join("rust/libgit2-sys-0.17.0+1.8.1/libgit2");
    let r = Repo::new();
    let mut licensed = 0;
    for p in util::corpus_files() {
        let Ok(rel) = p.strip_prefix(&root) else {
            continue;
        };
        let rel = rel.to_str().unwrap();
        if !(rel.starts_with("src/") || rel.starts_with("include/"))
            || !(rel.ends_with(".c") || rel.ends_with(".h"))
        {
            continue;
        }
        let data = std::fs::read(p).unwrap();
        let data = match data.strip_prefix(LICENSE.as_bytes()) {
            Some(rest) => {
                licensed += 1;
                if strip { rest.to_vec() } else { data }
            }
            None => data,
        };
        r.write(rel, &data);
    }
    assert!(licensed > 300, "{licensed} files behind the license");
    r.commit_all("libgit2 1.8.1");
    r
}

/// The paths `similar --containment` lists for `query`, with `args`.
fn containing(r: &Repo, query: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["similar", "--containment", "--limit", "0"];
    all.extend_from_slice(args);
    all.push(query);
    let o = r.simm(&all);
    assert!(o.status.success(), "{}", util::stderr(&o));
    util::stdout(&o)
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().to_owned())
        .filter(|p| p != query)
        .collect()
}

/// Containment without boilerplate: in a C project whose files all carry
/// the same license comment, a short header that is mostly license text
/// was "74-76% in" any large file (it holds the license too). By default
/// the tree's boilerplate is now taken out of both files, as `similar`
/// and `groups` already do for similarity: what is listed is what is
/// listed with the license taken off every file beforehand (nothing
/// contains anything through the license), and `--no-ignore-common`, the
/// same switch as for similarity, gives git's plain containment back.
#[test]
fn containment_does_not_count_license_headers() {
    let licensed = libgit2_tree(false);
    let bare = libgit2_tree(true);
    for query in [
        "src/libgit2/streams/openssl.c",
        "src/libgit2/attr.h",
        "src/util/hash/builtin.h",
    ] {
        let plain = containing(&licensed, query, &["--no-ignore-common"]);
        let without_license = containing(&bare, query, &["--no-ignore-common"]);
        let by_license: Vec<&String> = plain
            .iter()
            .filter(|p| !without_license.contains(p))
            .collect();
        assert!(
            by_license.len() >= 3,
            "{query}: the license makes only {by_license:?} match"
        );
        let default = containing(&licensed, query, &[]);
        for p in &default {
            assert!(
                without_license.contains(p),
                "{query}: {p} is listed only through the license header ({default:?})"
            );
        }
    }
}
