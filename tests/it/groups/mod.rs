//! `git simm groups` on real trees: the groups against exhaustive exact
//! scoring of every pair (git's rename score, the library's scorer, which
//! `score_vs_git` checks against git itself), planted edited copies,
//! boilerplate, and the command's edges.

use std::collections::{BTreeSet, HashMap, HashSet};

use git_simm::similarity::score::{self, Spans};
use rayon::prelude::*;
use serde_json::Value;

use crate::util::*;

mod boilerplate;
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
