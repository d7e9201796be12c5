//! Boilerplate: a license header shared by thousands of unrelated real
//! files groups nothing, while edited copies behind it, and copies without
//! it, are grouped; `similar` and `check --staged` agree.

use std::collections::{HashMap, HashSet};

use git_simm::similarity::score::{self, Spans};
use serde_json::Value;

use super::{Planted, corpus_texts, edit, group_of, groups_json, true_pairs};
use crate::util::*;

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
