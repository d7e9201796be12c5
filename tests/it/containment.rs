//! Containment: `similar --containment`, and `renames --find-splits`
//! (splits and merges reported after git's own pairing, which stays
//! byte-identical to git's).
//!
//! Oracle: git's rename score of a pair is the bytes copied over the larger
//! file's size, which is exactly the containment of the larger file in the
//! smaller one; the other direction follows from the sizes.

use crate::renames_vs_git::corpus;
use crate::util::{self, Repo, Rng, lossy};

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
                "diff", "-M01%", "-l0", "--name-status", "HEAD~1", "HEAD", "--", "whole.rs", path,
            ],
        );
        assert_eq!(renames.len(), 1, "{renames:?}");
        assert_eq!(renames[0].0, *in_file, "{path}: git's score");
    }

    // A part against the tree before the split: the whole holds it.
    let out = r.simm(&["similar", "--containment", "--json", "HEAD:part_b.rs", "HEAD~1"]);
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
