//! `git simm groups` on real trees: the groups against exhaustive exact
//! scoring of every pair (git's rename score, the library's scorer, which
//! `score_vs_git` checks against git itself), planted edited copies,
//! boilerplate, and the command's edges.

use std::collections::{BTreeSet, HashMap, HashSet};

use git_simm::similarity::score::{self, Spans};
use rayon::prelude::*;
use serde_json::Value;

use crate::util::*;

mod lossless;

/// Text files of the corpus (every kind: code, prose, data, test inputs)
/// of at least 192 bytes (the default `--min-size`) and at most 64 KiB, in
/// path order, with their corpus paths.
fn corpus_texts() -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir();
    corpus_files()
        .iter()
        .filter_map(|p| {
            let data = std::fs::read(p).ok()?;
            let rel = p.strip_prefix(&dir).ok()?.to_str()?.to_owned();
            ((192..=MAX_FILE).contains(&data.len()) && is_text(&data)).then_some((rel, data))
        })
        .collect()
}

/// A copy of `data` with real edits: `k` times, a line inserted (taken
/// from `donor`), deleted, or replaced by a donor line.
fn edit(data: &[u8], k: usize, donor: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = data.split_inclusive(|&c| c == b'\n').collect();
    let donors: Vec<&[u8]> = donor.split_inclusive(|&c| c == b'\n').collect();
    for _ in 0..k {
        if lines.len() < 2 {
            break;
        }
        let at = rng.below(lines.len());
        let line = donors[rng.below(donors.len())];
        match rng.below(3) {
            0 => lines.insert(at, line),
            1 => {
                lines.remove(at);
            }
            _ => lines[at] = line,
        }
    }
    lines.concat()
}

/// `groups --json` in `repo`, parsed; asserting success.
fn groups_json(repo: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["groups", "--json"];
    all.extend_from_slice(args);
    let out = repo.simm(&all);
    let text = succeeded(&all, out);
    serde_json::from_slice(&text).expect("groups --json is JSON")
}

/// The groups of a `--json` document as sets of paths, with each path's
/// group number.
fn group_of(doc: &Value) -> HashMap<String, usize> {
    let mut of = HashMap::new();
    for (g, group) in doc["groups"].as_array().expect("groups").iter().enumerate() {
        for m in group["members"].as_array().expect("members") {
            of.insert(m["path"].as_str().expect("path").to_owned(), g);
        }
    }
    of
}

/// Every link and every member's score in `doc` recomputed from the
/// files' contents (`content` by path) with `scorer`.
fn assert_scores_recomputed(doc: &Value, content: &HashMap<String, Vec<u8>>, threshold: u32) {
    for group in doc["groups"].as_array().expect("groups") {
        let members = group["members"].as_array().expect("members");
        let data = |i: usize| &content[members[i]["path"].as_str().expect("path")];
        let spans = |i: usize| Spans::new(data(i));
        for link in group["links"].as_array().expect("links") {
            let (a, b) = (
                link["a"].as_u64().unwrap() as usize,
                link["b"].as_u64().unwrap() as usize,
            );
            let exact = score::percent(score::score(&spans(a), &spans(b), 0));
            assert_eq!(
                link["score"].as_u64(),
                Some(u64::from(exact)),
                "link {link}"
            );
            assert!(exact >= threshold, "link below the threshold: {link}");
        }
        let rep = spans(0);
        for (i, m) in members.iter().enumerate().skip(1) {
            let exact = if data(i) == data(0) {
                100
            } else {
                score::percent(score::score(&rep, &spans(i), 0))
            };
            assert_eq!(m["score"].as_u64(), Some(u64::from(exact)), "member {m}");
        }
    }
}

/// Every pair of distinct blobs among `files` whose exact score reaches
/// `min_score` (exhaustive, as the ground truth).
fn true_pairs(files: &[(String, Vec<u8>)], min_score: u32) -> Vec<(usize, usize, u32)> {
    let spans: Vec<Spans> = files.par_iter().map(|(_, d)| Spans::new(d)).collect();
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| spans[i].size());
    order
        .par_iter()
        .enumerate()
        .flat_map_iter(|(x, &i)| {
            let mut found = Vec::new();
            let mut dense = score::Dense::default();
            dense.with(&spans[i], |loaded| {
                for &j in &order[x + 1..] {
                    if !score::sizes_compatible(spans[i].size(), spans[j].size(), min_score) {
                        break;
                    }
                    if files[i].1 == files[j].1 {
                        continue;
                    }
                    let s = loaded.score(&spans[j], min_score);
                    if s >= min_score {
                        found.push((i.min(j), i.max(j), s));
                    }
                }
            });
            found
        })
        .collect()
}

/// The groups exhaustive scoring gives: the connected components of the
/// true pairs `truth` (positions in `files`) and of identical contents,
/// those of two files or more, as sorted sets of paths. Files under the
/// default `--min-size` (192 bytes) take no part.
fn components(
    files: &[(String, Vec<u8>)],
    truth: &[(usize, usize, u32)],
) -> BTreeSet<BTreeSet<String>> {
    let big = |i: usize| files[i].1.len() >= 192;
    let mut parent: Vec<usize> = (0..files.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut first_of: HashMap<&[u8], usize> = HashMap::new();
    let same = files
        .iter()
        .enumerate()
        .filter_map(|(i, (_, d))| match first_of.entry(d.as_slice()) {
            std::collections::hash_map::Entry::Occupied(e) => Some((*e.get(), i)),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
                None
            }
        })
        .collect::<Vec<_>>();
    let linked = same
        .into_iter()
        .chain(truth.iter().map(|&(a, b, _)| (a, b)))
        .filter(|&(a, b)| big(a) && big(b));
    for (a, b) in linked {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra] = rb;
    }
    let mut by_root: HashMap<usize, BTreeSet<String>> = HashMap::new();
    for (i, (path, _)) in files.iter().enumerate().filter(|&(i, _)| big(i)) {
        let r = root(&mut parent, i);
        by_root.entry(r).or_default().insert(path.clone());
    }
    by_root.into_values().filter(|g| g.len() > 1).collect()
}

/// The groups of a `--json` document as sorted sets of paths.
fn groups_of(doc: &Value) -> BTreeSet<BTreeSet<String>> {
    doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            g["members"]
                .as_array()
                .expect("members")
                .iter()
                .map(|m| m["path"].as_str().expect("path").to_owned())
                .collect()
        })
        .collect()
}

/// A repository, its files (path, content), and the planted pairs
/// (original path, copy path).
type Planted = (Repo, Vec<(String, Vec<u8>)>, Vec<(String, String)>);

/// The corpus (its 4,800 text files) plus edited copies of 150 of them
/// (1 to 12% of their lines inserted, deleted or replaced, so their
/// scores straddle 80%) and 20 exact copies, committed: a real tree of
/// about 5,000 files. Returns the repository, the files, and the planted
/// pairs (original path, copy path).
fn planted_tree() -> Planted {
    let mut files = corpus_texts();
    files.truncate(5000);
    let mut rng = Rng(0x6772_6f75_7073_2121);
    let mut planted = Vec::new();
    let n = files.len();
    for (k, i) in rng.sample(n, 170).into_iter().enumerate() {
        let (path, data) = files[i].clone();
        let copy_path = format!("planted/{k}/{}", path.rsplit('/').next().unwrap_or("f"));
        let copy = if k < 20 {
            data.clone()
        } else {
            let lines = data.iter().filter(|&&c| c == b'\n').count().max(1);
            let share = 0.01 + 0.11 * rng.unit();
            let donor = files[rng.below(n)].1.clone();
            edit(
                &data,
                ((lines as f64 * share).ceil()) as usize,
                &donor,
                &mut rng,
            )
        };
        planted.push((path, copy_path.clone()));
        files.push((copy_path, copy));
    }
    let repo = Repo::new();
    for (path, data) in &files {
        repo.write(path, data);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tree"]);
    (repo, files, planted)
}

#[test]
fn groups_hold_every_pair_exhaustive_scoring_finds() {
    let (repo, files, planted) = planted_tree();
    let threshold = 80;
    let min_score = score::MAX_SCORE / 100 * threshold;
    let doc = groups_json(&repo, &["--no-ignore-common"]);
    let of = group_of(&doc);
    let content: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
    assert_scores_recomputed(&doc, &content, threshold);

    let truth = true_pairs(&files, min_score);
    assert!(truth.len() >= 150, "only {} true pairs", truth.len());
    let together = |a: &str, b: &str| of.get(a).is_some_and(|g| of.get(b) == Some(g));
    let missed: Vec<String> = truth
        .iter()
        .filter(|&&(a, b, _)| !together(&files[a].0, &files[b].0))
        .take(10)
        .map(|&(a, b, s)| format!("{} {} {}%", files[a].0, files[b].0, score::percent(s)))
        .collect();
    assert!(missed.is_empty(), "true pairs not grouped: {missed:#?}");
    // The groups are exactly the connected components of the true pairs.
    assert_eq!(groups_of(&doc), components(&files, &truth));

    // Every pair of files in one group is connected by true pairs: no
    // group joins what exhaustive scoring keeps apart.
    let mut true_set: HashSet<(String, String)> = HashSet::new();
    for &(a, b, _) in &truth {
        true_set.insert((files[a].0.clone(), files[b].0.clone()));
        true_set.insert((files[b].0.clone(), files[a].0.clone()));
    }
    for group in doc["groups"].as_array().expect("groups") {
        let members = group["members"].as_array().expect("members");
        for link in group["links"].as_array().expect("links") {
            let path = |k: &str| {
                members[link[k].as_u64().unwrap() as usize]["path"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            };
            assert!(
                true_set.contains(&(path("a"), path("b"))),
                "link not a true pair: {link}"
            );
        }
    }

    // Every planted copy at or above the threshold is with its original;
    // exact copies always are.
    for (k, (orig, copy)) in planted.iter().enumerate() {
        let s = score::score(&Spans::new(&content[orig]), &Spans::new(&content[copy]), 0);
        if k < 20 || s >= min_score {
            assert!(
                together(orig, copy),
                "{copy} ({}%) not with {orig}",
                score::percent(s)
            );
        }
    }

    // Groups come most waste first, and waste is every member's bytes but
    // the representative's.
    let groups = doc["groups"].as_array().expect("groups");
    let wastes: Vec<u64> = groups
        .iter()
        .map(|g| g["waste"].as_u64().unwrap())
        .collect();
    assert!(wastes.windows(2).all(|w| w[0] >= w[1]), "{wastes:?}");
    for g in groups {
        let sizes: Vec<u64> = g["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["size"].as_u64().unwrap())
            .collect();
        assert_eq!(g["waste"].as_u64(), Some(sizes[1..].iter().sum::<u64>()));
    }
}

/// The header every file of [`licensed_tree`] starts with: the first 30
/// lines of the Apache license.
fn license_header() -> Vec<u8> {
    corpus_text("rust/regex-1.11.1/LICENSE-APACHE")
        .split_inclusive(|&c| c == b'\n')
        .take(30)
        .flatten()
        .copied()
        .collect()
}

/// 2,000 unrelated real files, each behind the same 30-line license header
/// (the first 30 lines of a real Apache-2.0 license text), and 10 copies
/// with light real edits of the body (1 to 4% of its lines).
fn licensed_tree() -> Planted {
    let header = license_header();
    // Small bodies first: behind a 1.6 KB header they are the files the
    // header makes look alike.
    let mut bodies = corpus_texts();
    bodies.sort_by_key(|(p, d)| (d.len(), p.clone()));
    let mut seen = HashSet::new();
    bodies.retain(|(_, d)| seen.insert(d.clone()));
    bodies.truncate(3000);
    // Unrelated: of every pair of bodies scoring 50% or more (the corpus
    // has real near-duplicates), the second is left out.
    let mut related: Vec<usize> = true_pairs(&bodies, score::DEFAULT_MIN_SCORE)
        .into_iter()
        .map(|(_, b, _)| b)
        .collect();
    related.sort_unstable();
    let bodies: Vec<(String, Vec<u8>)> = bodies
        .into_iter()
        .enumerate()
        .filter(|(i, (_, d))| related.binary_search(i).is_err() && !d.starts_with(&header))
        .map(|(_, f)| f)
        .collect();
    assert!(
        bodies.len() >= 2000,
        "only {} unrelated bodies",
        bodies.len()
    );
    let mut rng = Rng(0x6c69_6365_6e73_6521);
    let mut files: Vec<(String, Vec<u8>)> = bodies
        .iter()
        .take(2000)
        .map(|(p, d)| (format!("src/{p}"), [header.as_slice(), d].concat()))
        .collect();
    let mut planted = Vec::new();
    for k in 0..10 {
        let i = 1000 + rng.below(1000);
        let (path, data) = files[i].clone();
        let body = &data[header.len()..];
        let lines = body.iter().filter(|&&c| c == b'\n').count().max(1);
        let edits = ((lines as f64) * (0.01 + 0.03 * rng.unit())).ceil() as usize;
        let donor = bodies[rng.below(bodies.len())].1.clone();
        let copy = [header.as_slice(), &edit(body, edits, &donor, &mut rng)].concat();
        let copy_path = format!("copies/{k}/{}", path.rsplit('/').next().unwrap_or("f"));
        planted.push((path, copy_path.clone()));
        files.push((copy_path, copy));
    }
    let repo = Repo::new();
    for (path, data) in &files {
        repo.write(path, data);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "licensed"]);
    (repo, files, planted)
}

#[test]
fn a_shared_license_header_makes_no_group_and_edited_copies_are_found() {
    let (repo, files, planted) = licensed_tree();
    let content: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
    let pair_of: HashMap<&str, usize> = planted
        .iter()
        .enumerate()
        .flat_map(|(k, (a, b))| [(a.as_str(), k), (b.as_str(), k)])
        .collect();

    // With git's plain score the header alone groups files: the fixture
    // has the problem the default must solve.
    let plain = groups_json(&repo, &["--no-ignore-common"]);
    let boilerplate_only = plain["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| {
            g["members"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| !pair_of.contains_key(m["path"].as_str().unwrap()))
        })
        .count();
    assert!(
        boilerplate_only > 0,
        "the header alone grouped nothing: the fixture is too weak"
    );

    let doc = groups_json(&repo, &["--show-common"]);
    let of = group_of(&doc);
    assert_only_planted_pairs(&doc, &pair_of);
    for (orig, copy) in &planted {
        assert!(
            of.get(orig)
                .is_some_and(|g| of.get(copy.as_str()) == Some(g)),
            "{copy} not grouped with {orig}"
        );
    }
    // What was treated as boilerplate is shown, and it is the header.
    let header_lines: HashSet<String> = String::from_utf8_lossy(&content[&planted[0].0])
        .split_inclusive('\n')
        .take(30)
        .filter(|l| l.trim().len() > 3)
        .map(str::to_owned)
        .collect();
    let shown: HashSet<String> = doc["common"]
        .as_array()
        .expect("--show-common fills common")
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect();
    let missing: Vec<&String> = header_lines
        .iter()
        .filter(|l| l.len() <= 64 && !shown.contains(*l))
        .collect();
    assert!(
        missing.is_empty(),
        "header lines not shown as common: {missing:?}"
    );

    // The text form lists them too, before the groups.
    let text = stdout(&repo.simm(&["groups", "--show-common"]));
    assert!(text.starts_with("boilerplate: "), "{text}");
    assert!(text.contains("Apache License"), "{text}");
}

#[test]
fn empty_tiny_and_binary_trees_give_empty_output() {
    let repo = Repo::new();
    // Unborn HEAD: an empty tree.
    let out = repo.simm(&["groups"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("no similar files at 80% among 0 files"),
        "{}",
        stderr(&out)
    );
    let doc = groups_json(&repo, &[]);
    assert_eq!(doc["groups"], serde_json::json!([]));
    assert_eq!(doc["stats"]["files"], 0);

    // Tiny files (identical ones too) and identical binary files.
    let binary: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    for k in 0..5 {
        repo.write(format!("tiny{k}.txt"), b"same small text\n");
        repo.write(format!("bin{k}.dat"), &binary);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "tiny and binary"]);
    let out = repo.simm(&["groups"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("among 10 files (5 under 192 bytes, 5 binary)"),
        "{}",
        stderr(&out)
    );
    // With --min-size 1 the tiny copies are a group; the binaries never.
    let doc = groups_json(&repo, &["--min-size", "1"]);
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{doc}");
    assert_eq!(groups[0]["members"].as_array().unwrap().len(), 5);
    assert_eq!(groups[0]["waste"], 4 * 16);
}

#[test]
fn thresholds_out_of_range_are_usage_errors() {
    let repo = Repo::new();
    for bad in ["150%", "0", "1.5", "0%", "x"] {
        let out = repo.simm(&["groups", "--threshold", bad]);
        assert_eq!(
            out.status.code(),
            Some(129),
            "--threshold {bad}: {}",
            stderr(&out)
        );
    }
    repo.git(&["config", "simm.groupThreshold", "150%"]);
    let out = repo.simm(&["groups"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("simm.groupThreshold"),
        "{}",
        stderr(&out)
    );
}

/// A small tree with one exact copy and one edited copy of real files.
fn small_tree() -> (Repo, Vec<u8>, Vec<u8>) {
    let texts = corpus_texts();
    let a = texts
        .iter()
        .find(|(_, d)| d.len() > 4000)
        .unwrap()
        .1
        .clone();
    let b = texts
        .iter()
        .rev()
        .find(|(_, d)| d.len() > 4000)
        .unwrap()
        .1
        .clone();
    let mut rng = Rng(7);
    let edited = edit(&a, 2, &b, &mut rng);
    let repo = Repo::new();
    repo.write("lib/a.rs", &a);
    repo.write("vendor/a.rs", &a);
    repo.write("old/a edited.rs", &edited);
    repo.write("other.rs", &b);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "small"]);
    (repo, a, edited)
}

#[test]
fn text_sarif_and_fail_above() {
    let (repo, a, edited) = small_tree();
    let s = score::percent(score::score(&Spans::new(&a), &Spans::new(&edited), 0));
    let out = repo.simm(&["groups", "--no-ignore-common"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = format!(
        "group 1: 3 files, {} bytes of waste\nrep\t{}\tlib/a.rs\n100%\t{}\tvendor/a.rs\n{s}%\t{}\told/a edited.rs\n",
        a.len() + edited.len(),
        a.len(),
        a.len(),
        edited.len()
    );
    assert_eq!(stdout(&out), want);

    let sarif: Value = serde_json::from_slice(&succeeded(
        &["groups", "--format=sarif"],
        repo.simm(&["groups", "--format=sarif", "--no-ignore-common"]),
    ))
    .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{sarif}");
    let uris: Vec<&str> = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(uris, ["vendor/a.rs", "old/a%20edited.rs"]);
    for r in results {
        assert_eq!(
            r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "lib/a.rs"
        );
    }
    assert_eq!(results[0]["ruleId"], "duplicate-file");
    assert_eq!(results[1]["ruleId"], "near-duplicate-file");
    assert_eq!(results[1]["properties"]["score"], s);

    // Waste share: (a + edited) of (2a + edited + other).
    let doc = groups_json(&repo, &["--no-ignore-common"]);
    let share = doc["stats"]["waste_bytes"].as_f64().unwrap() * 100.0
        / doc["stats"]["total_bytes"].as_f64().unwrap();
    let below = format!("{}", (share - 1.0).floor());
    let above = format!("{}", (share + 1.0).ceil());
    let out = repo.simm(&["groups", "--no-ignore-common", "--fail-above", &below]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("above --fail-above"),
        "{}",
        stderr(&out)
    );
    let out = repo.simm(&["groups", "--no-ignore-common", "--fail-above", &above]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = repo.simm(&["groups", "--fail-above", "101"]);
    assert_eq!(out.status.code(), Some(129), "{}", stderr(&out));
}

#[test]
fn cached_worktree_and_all_see_their_own_files() {
    let (repo, a, _) = small_tree();
    // The work tree gets a third copy of a.rs; the index a fourth.
    repo.write("wt/a.rs", &a);
    let paths = |doc: &Value| -> Vec<String> {
        let mut v: Vec<String> = group_of(doc).into_keys().collect();
        v.sort();
        v
    };
    let head = groups_json(&repo, &[]);
    assert!(!paths(&head).contains(&"wt/a.rs".to_owned()));
    // The work tree holds tracked files only, as git diff sees them.
    let wt = groups_json(&repo, &["--worktree"]);
    assert_eq!(paths(&wt), paths(&head));
    repo.git(&["add", "wt/a.rs"]);
    let cached = groups_json(&repo, &["--cached"]);
    assert!(paths(&cached).contains(&"wt/a.rs".to_owned()), "{cached}");
    // A tracked file changed in the work tree: its new content counts.
    repo.write("other.rs", &a);
    let wt = groups_json(&repo, &["--worktree"]);
    assert!(paths(&wt).contains(&"other.rs".to_owned()), "{wt}");
    // Every blob: the commit's, and the staged one (same blob as a.rs).
    repo.git(&["add", "other.rs"]);
    repo.git(&["commit", "-q", "-m", "more"]);
    let all = groups_json(&repo, &["--all"]);
    let stats = &all["stats"];
    assert_eq!(stats["files"], 3, "{all}");
    assert_eq!(all["groups"].as_array().unwrap().len(), 1, "{all}");
}

/// `similar` and the pre-commit check use the same boilerplate
/// statistics as `groups`: a new file that shares only the license
/// header with tracked ones is no match and no copy, while git's plain
/// score (`--no-ignore-common`, and git itself) says it is one; a real
/// near-copy is still found by both.
#[test]
fn a_shared_license_header_makes_no_similar_match_and_no_staged_copy() {
    let (repo, files, planted) = licensed_tree();
    let header = license_header();
    let fresh = [
        header.as_slice(),
        b"int fresh(void)\n{\n\treturn 42;\n}\n".as_slice(),
    ]
    .concat();
    repo.write("new/fresh.c", &fresh);
    // A real near-copy: the largest body, one line added.
    let (dup_of, dup_source) = &files[1999];
    repo.write(
        "new/dup.c",
        &[dup_source.as_slice(), b"/* one more line */\n"].concat(),
    );

    let lines = |args: &[&str]| -> Vec<String> {
        let out = repo.simm(args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {}",
            stderr(&out)
        );
        stdout(&out).lines().map(str::to_owned).collect()
    };
    let plain = lines(&["similar", "--no-ignore-common", "new/fresh.c"]);
    assert!(
        !plain.is_empty(),
        "the header alone matched nothing: the fixture is too weak"
    );
    let ignoring = lines(&["similar", "new/fresh.c"]);
    assert!(
        ignoring.is_empty(),
        "boilerplate-only matches: {ignoring:?}"
    );
    let dup = lines(&["similar", "new/dup.c"]);
    assert!(
        dup.first()
            .is_some_and(|l| l.ends_with(&format!("\t{dup_of}"))),
        "{dup:?}"
    );
    let (orig, copy) = &planted[0];
    let found = lines(&["similar", "-n", "0", &format!("HEAD:{copy}")]);
    assert!(
        found.iter().any(|l| l.ends_with(&format!("\t{orig}"))),
        "{found:?}"
    );

    repo.git(&["add", "new/fresh.c", "new/dup.c"]);
    // git itself calls the header-only file a copy at 80% (the check's
    // threshold here: the fixture's smallest bodies keep it under 90%).
    let git = repo.git_str(&[
        "diff",
        "--cached",
        "--name-status",
        "--find-copies-harder",
        "-C80%",
    ]);
    assert!(
        git.lines()
            .any(|l| l.starts_with('C') && l.ends_with("\tnew/fresh.c")),
        "git sees no copy: {git}"
    );
    let check = |extra: &[&str]| -> String {
        let mut args = vec![
            "check",
            "--staged",
            "--no-strict",
            "--copy-threshold",
            "80%",
        ];
        args.extend_from_slice(extra);
        let out = repo.simm(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stderr(&out)
    };
    let plain = check(&["--no-ignore-common"]);
    assert!(plain.contains("'new/fresh.c' is a"), "{plain}");
    assert!(plain.contains("'new/dup.c' is a"), "{plain}");
    let ignoring = check(&[]);
    assert!(!ignoring.contains("'new/fresh.c'"), "{ignoring}");
    assert!(
        ignoring.contains("'new/dup.c' is a") && ignoring.contains(&format!("copy of '{dup_of}'")),
        "{ignoring}"
    );
}

/// A file behind the shared license header and an edited copy of its body
/// without the header: once the header (boilerplate) is out they score
/// above the threshold, but as whole files their sizes and fingerprints
/// are far apart. The search runs on the files without boilerplate, so
/// they are grouped; git's plain score (`--no-ignore-common`) keeps them
/// under the threshold because of the header.
#[test]
fn a_copy_without_the_license_header_is_grouped_with_its_original() {
    let (repo, files, planted) = licensed_tree();
    let header = license_header();
    let header_buckets: Vec<u32> = Spans::new(&header).bucket_ids().collect();
    let min_score = score::MAX_SCORE / 100 * 80;
    let mut rng = Rng(0x6865_6164_6c65_7373);
    let mut bare = Vec::new();
    let bodies: Vec<Vec<u8>> = files[..2000]
        .iter()
        .map(|(_, d)| d[header.len()..].to_vec())
        .collect();
    let mut k = 0;
    while bare.len() < 10 {
        k += 1;
        let i = 300 + rng.below(1700);
        let (path, data) = &files[i];
        let body = &data[header.len()..];
        let lines = body.iter().filter(|&&c| c == b'\n').count().max(1);
        let edits = ((lines as f64) * (0.01 + 0.02 * rng.unit())).ceil() as usize;
        let copy = edit(body, edits, &bodies[rng.below(2000)], &mut rng);
        let (a, b) = (Spans::new(data), Spans::new(&copy));
        let residual = score::score(
            &a.without(&header_buckets),
            &b.without(&header_buckets),
            min_score,
        );
        // Only copies that reach the threshold once the header is out,
        // and that git's plain score keeps under it.
        if residual < min_score || score::score(&a, &b, 0) >= min_score {
            continue;
        }
        let copy_path = format!("bare/{k}/{}", path.rsplit('/').next().unwrap_or("f"));
        repo.write(&copy_path, &copy);
        bare.push((path.clone(), copy_path));
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "copies without the header"]);

    let together = |doc: &Value, a: &str, b: &str| {
        let of = group_of(doc);
        of.get(a).is_some_and(|g| of.get(b) == Some(g))
    };
    // Every copy with its original, and no group but the planted pairs.
    let doc = groups_json(&repo, &[]);
    let pair_of: HashMap<&str, usize> = planted
        .iter()
        .chain(&bare)
        .enumerate()
        .flat_map(|(k, (a, b))| [(a.as_str(), k), (b.as_str(), k)])
        .collect();
    assert_only_planted_pairs(&doc, &pair_of);
    for (orig, copy) in &bare {
        assert!(together(&doc, orig, copy), "{copy} not with {orig}");
    }
    // And git's plain score keeps them apart.
    let plain = groups_json(&repo, &["--no-ignore-common"]);
    assert!(bare.iter().all(|(o, c)| !together(&plain, o, c)));
}

/// Every group of `doc` is one planted pair: its members' paths all map
/// to the same pair in `pair_of`.
fn assert_only_planted_pairs(doc: &Value, pair_of: &HashMap<&str, usize>) {
    for group in doc["groups"].as_array().unwrap() {
        let ks: HashSet<Option<&usize>> = group["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| pair_of.get(m["path"].as_str().unwrap()))
            .collect();
        assert!(
            ks.len() == 1 && !ks.contains(&None),
            "a group that is not one planted copy and its original: {group}"
        );
    }
}
