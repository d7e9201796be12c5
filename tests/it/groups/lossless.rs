//! `groups` finds every pair at the threshold whatever the fingerprints
//! say: families of files sharing a skeleton, where the pairs that score
//! at or above the threshold sit far behind dozens of nearer siblings that
//! score under it, and repetitive files. A search that scores the nearest
//! fingerprints only misses them; the groups must equal the connected
//! components of every pair scored exhaustively.

use std::collections::HashMap;

use git_simm::similarity::fingerprint::fingerprint;
use git_simm::similarity::score::{self, MAX_SCORE, Spans};
use serde_json::Value;

use super::{components, corpus_texts, groups_json, groups_of, true_pairs};
use crate::util::*;

/// Siblings per skeleton: each shares about 70% of its skeleton's lines,
/// in the skeleton's order.
const SIBLINGS: usize = 40;

/// Skeletons: real texts of 3 to 8 KiB made of short lines (under 40
/// bytes on average), so that a 48-byte fingerprint window spans a line
/// end almost everywhere.
fn skeletons(texts: &[(String, Vec<u8>)], n: usize) -> Vec<Vec<u8>> {
    let fit: Vec<&Vec<u8>> = texts
        .iter()
        .map(|(_, d)| d)
        .filter(|d| {
            let lines = d.iter().filter(|&&c| c == b'\n').count();
            (3072..=8192).contains(&d.len()) && lines >= 100 && d.len() / lines.max(1) < 40
        })
        .collect();
    assert!(fit.len() >= n * 10, "only {} skeleton texts", fit.len());
    fit.iter()
        .step_by(fit.len() / n)
        .take(n)
        .map(|d| d.to_vec())
        .collect()
}

/// Lines of `data`, each with its newline.
fn lines_of(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&c| c == b'\n').collect()
}

/// `skeleton` with a share `share` of its lines replaced by lines of
/// `donor` (consecutive ones, from a random start), in three runs at
/// random places: a member of a family of files that share a skeleton,
/// such as test cases made from one template.
fn sibling(skeleton: &[u8], share: f64, donor: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines = lines_of(skeleton);
    let donors = lines_of(donor);
    let k = (lines.len() as f64 * share).round() as usize;
    let mut from = rng.below(donors.len());
    for run in [k / 3, k / 3, k - 2 * (k / 3)] {
        let start = rng.below(lines.len() - run);
        for line in &mut lines[start..start + run] {
            *line = donors[from % donors.len()];
            from += 1;
        }
    }
    lines.concat()
}

/// `data` with its lines shuffled (as sorting a data file or reordering
/// definitions does) and one of them replaced by `line`: git's score,
/// a bag of lines, barely moves; the 48-byte windows fingerprints are
/// made of nearly all change.
fn shuffled(data: &[u8], line: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines = lines_of(data);
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i + 1));
    }
    let at = rng.below(lines.len());
    lines[at] = line;
    lines.concat()
}

/// A tree of real text: 4 skeletons with [`SIBLINGS`] siblings each,
/// and per skeleton two planted pairs (a sibling and a shuffled copy of
/// it); a family of repetitive files (a long run of one character
/// before a sibling of a short skeleton) with one planted pair of runs of
/// 18,000 and 17,000 characters, the older one's body unrelated text; and
/// 300 unrelated corpus files. Returns
/// the repository, the files and the planted pairs (paths).
fn skeleton_tree() -> super::Planted {
    let texts = corpus_texts();
    let skeletons = skeletons(&texts, 5);
    let mut rng = Rng(0x736b_656c_6574_6f6e);
    let donor = |rng: &mut Rng| &texts[rng.below(texts.len())].1;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut planted = Vec::new();
    for (s, skeleton) in skeletons[..4].iter().enumerate() {
        for k in 0..SIBLINGS {
            let data = sibling(skeleton, 0.3, donor(&mut rng), &mut rng);
            files.push((format!("t{s}/case{k:02}.txt"), data));
        }
        for k in 0..2 {
            let x = sibling(skeleton, 0.3, donor(&mut rng), &mut rng);
            let line = lines_of(donor(&mut rng))[0].to_vec();
            let y = shuffled(&x, &line, &mut rng);
            let (a, b) = (
                format!("t{s}/pair{k}.txt"),
                format!("t{s}/sorted/pair{k}.txt"),
            );
            files.push((a.clone(), x));
            files.push((b.clone(), y));
            planted.push((a, b));
        }
    }
    // Repetitive files: runs of one character before a sibling of the
    // short skeleton (its first 40 lines), all under 80% against each
    // other and against the long pair; the long pair's older file has a
    // body of unrelated text, so its fingerprint is far from the newer's.
    let short: Vec<u8> = lines_of(&skeletons[4])[..40].concat();
    let run = |n: usize| {
        let mut v = vec![b'='; n];
        v.push(b'\n');
        v
    };
    for k in 0..SIBLINGS {
        let body = sibling(&short, 0.3, donor(&mut rng), &mut rng);
        let n = 4000 + rng.below(9500);
        files.push((format!("rep/case{k:02}.txt"), [run(n), body].concat()));
    }
    let body = sibling(&short, 0.3, donor(&mut rng), &mut rng);
    files.push(("rep/long.txt".to_owned(), [run(18_000), body].concat()));
    let other: Vec<u8> = lines_of(donor(&mut rng))
        .into_iter()
        .take(20)
        .flatten()
        .copied()
        .collect();
    files.push(("rep/long-old.txt".to_owned(), [run(17_000), other].concat()));
    planted.push(("rep/long-old.txt".to_owned(), "rep/long.txt".to_owned()));
    for (p, d) in texts.iter().step_by(texts.len() / 300).take(300) {
        files.push((format!("other/{p}"), d.clone()));
    }
    let repo = Repo::new();
    for (path, data) in &files {
        repo.write(path, data);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "skeletons"]);
    (repo, files, planted)
}

/// git's own score of `a` renamed to `b` (paths of HEAD), in percent:
/// `git diff-tree -M1%` between a tree holding only `a` and one holding
/// only `b`.
fn git_rename_score(repo: &Repo, a: &str, b: &str) -> Option<u32> {
    let tree = |path: &str| {
        let id = repo.rev(&format!("HEAD:{path}"));
        let out = git_command(&repo.path)
            .args(["mktree"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                let mut stdin = child.stdin.take().expect("stdin");
                writeln!(stdin, "100644 blob {id}\tf{}", path.len())?;
                drop(stdin);
                child.wait_with_output()
            })
            .expect("git mktree");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let (ta, tb) = (tree(a), tree(b));
    let out = repo.git_str(&["diff-tree", "-r", "-M1%", "--name-status", &ta, &tb]);
    let status = out.lines().find(|l| l.starts_with('R'))?;
    status[1..].split('\t').next()?.parse().ok()
}

/// Positions of the files of `files` (by path) whose fingerprints are
/// nearer to `x`'s than `y`'s is, and the distance of `x` and `y`.
fn nearer(files: &[(String, Vec<u8>)], x: usize, y: usize) -> (usize, u32) {
    let fx = fingerprint(&files[x].1).expect("a fingerprint");
    let d = |i: usize| fingerprint(&files[i].1).map(|f| f.distance(&fx));
    let far = d(y).expect("a fingerprint");
    let n = (0..files.len())
        .filter(|&i| i != x && i != y)
        .filter(|&i| d(i).is_some_and(|di| di < far))
        .count();
    (n, far)
}

#[test]
fn groups_find_pairs_far_behind_nearer_siblings() {
    let (repo, files, planted) = skeleton_tree();
    let at: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (p.as_str(), i))
        .collect();
    let threshold = 80;
    let min_score = MAX_SCORE / 100 * threshold;

    // The fixture has the shape: every planted pair is a rename at 80% or
    // more for git itself, and its fingerprints are far apart, behind
    // dozens of files nearer to one side (siblings, all under 80%).
    for (a, b) in &planted {
        let (x, y) = (at[a.as_str()], at[b.as_str()]);
        let exact = score::score(&Spans::new(&files[x].1), &Spans::new(&files[y].1), 0);
        assert!(exact >= min_score, "{a} {b}: {}%", score::percent(exact));
        assert_eq!(
            git_rename_score(&repo, a, b),
            Some(score::percent(exact)),
            "{a} {b}"
        );
        // A search of each file's 32 nearest fingerprints within 84 bits
        // does not propose the pair.
        let (before_x, apart) = nearer(&files, x, y);
        let (before_y, _) = nearer(&files, y, x);
        eprintln!(
            "{a} {b}: {}%, {apart} bits apart, {before_x} files nearer to {a}, {before_y} to {b}",
            score::percent(exact)
        );
        assert!(
            apart > 84 || (before_x >= 32 && before_y >= 32),
            "{a} {b}: {}%, {apart} bits apart, {before_x} files nearer to {a}, {before_y} to {b}",
            score::percent(exact)
        );
    }

    // Exhaustive scoring of every pair (the library's scorer, git's
    // score: `score_vs_git` holds it to git), and its components.
    let truth = true_pairs(&files, min_score);
    let expected = components(&files, &truth);
    let doc = groups_json(&repo, &["--no-ignore-common"]);
    let got = groups_of(&doc);
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "groups differ from exhaustive scoring: expected but not found {missing:#?}; found but not expected {extra:#?}"
    );
    for (a, b) in &planted {
        assert!(
            got.iter().any(|g| g.contains(a) && g.contains(b)),
            "{a} not with {b}"
        );
    }
    // The stats show the search: candidates proposed, fewer scored than
    // proposed where files were already joined, none beyond the
    // candidates.
    let stats = &doc["stats"];
    let n = |k: &str| {
        stats[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {stats}"))
    };
    assert_eq!(
        n("scored_pairs") + n("connected_pairs"),
        n("candidate_pairs"),
        "{stats}"
    );
    assert!(n("linked_pairs") <= n("scored_pairs"), "{stats}");

    // With boilerplate out (the default), the same groups as scoring every
    // pair the size filter lets through.
    let default = groups_json(&repo, &[]);
    let out = simm_command()
        .current_dir(&repo.path)
        .env("GIT_SIMM_GROUPS_EXHAUSTIVE", "1")
        .args(["groups", "--json"])
        .output()
        .expect("run git-simm");
    let every: Value = serde_json::from_slice(&succeeded(&["groups"], out)).expect("JSON");
    assert_eq!(groups_of(&default), groups_of(&every));
}
