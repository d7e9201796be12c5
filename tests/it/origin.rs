//! `origin`: an "upstream" repository with tagged releases made of real
//! corpus text, and a "vendoring" repository that copied one release's
//! directory and patched it. The right release must rank first, and the
//! file lists must match what `git ls-tree` says of the two sides, the
//! scores what `git diff --no-index -M` says of each pair.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::{self, Repo, lossy, stderr, stdout};

struct Fixture {
    upstream: Repo,
    vendoring: Repo,
}

/// Five releases of `src/` (each editing, adding and deleting files),
/// untagged commits between and after them; the vendoring repository
/// copies v1.2's `src/` into `third_party/x/`, patches three files,
/// deletes one and adds one.
fn fixture() -> Fixture {
    let texts = util::texts(7, 60);
    let upstream = Repo::new();
    let mut next = 0usize;
    let mut take = || {
        next += 1;
        texts[next - 1].clone()
    };
    for i in 0..30 {
        upstream.write(format!("src/f{i:02}.txt"), &take());
    }
    upstream.write("src/sub/inner.txt", &take());
    upstream.write("README", &take());
    upstream.write("tests/t1.txt", &take());
    upstream.commit_all("initial");
    for release in 0..5u64 {
        // Two untagged commits, then the release.
        for k in 0..2u64 {
            let f = format!("src/f{:02}.txt", (release * 5 + k * 2) % 30);
            let old = std::fs::read(upstream.abs(f.as_bytes())).unwrap();
            upstream.write(&f, &util::edit(&old, 9, release * 10 + k));
            upstream.commit_all(&format!("work {release}.{k}"));
        }
        let f = format!("src/f{:02}.txt", (release * 7 + 3) % 30);
        let old = std::fs::read(upstream.abs(f.as_bytes())).unwrap();
        upstream.write(&f, &util::edit(&old, 11, release + 100));
        upstream.write(format!("src/new{release}.txt"), &take());
        upstream.write("tests/t1.txt", &take());
        upstream.commit_all(&format!("release 1.{release}"));
        upstream.git(&["tag", "-a", "-m", "release", &format!("v1.{release}")]);
    }
    upstream.write("src/after.txt", &take());
    upstream.commit_all("after the last release");

    let vendoring = Repo::new();
    vendoring.write("main.txt", &take());
    let listing = upstream.git_str(&["ls-tree", "-r", "--name-only", "v1.2:src"]);
    for name in listing.lines() {
        let data = upstream.git(&["cat-file", "blob", &format!("v1.2:src/{name}")]);
        vendoring.write(format!("third_party/x/{name}"), &data);
    }
    vendoring.commit_all("vendor x 1.2");
    for (k, name) in ["f04.txt", "f17.txt", "sub/inner.txt"].iter().enumerate() {
        let p = format!("third_party/x/{name}");
        let old = std::fs::read(vendoring.abs(p.as_bytes())).unwrap();
        vendoring.write(&p, &util::edit(&old, 15, 500 + k as u64));
    }
    vendoring.remove("third_party/x/f09.txt");
    vendoring.write("third_party/x/local.txt", &take());
    vendoring.commit_all("patch x");
    Fixture {
        upstream,
        vendoring,
    }
}

/// `path -> blob` of `git ls-tree -r <tree>`.
fn ls_tree(r: &Repo, tree: &str) -> BTreeMap<String, String> {
    r.git_str(&["ls-tree", "-r", tree])
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').unwrap();
            (path.to_owned(), meta.split(' ').nth(2).unwrap().to_owned())
        })
        .collect()
}

/// git's similarity of two blobs, as `git diff --no-index -M` prints it
/// for a rename between two directories.
fn git_score(dir: &Path, old: &[u8], new: &[u8]) -> u32 {
    let a = dir.join("a");
    let b = dir.join("b");
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
    util::write(&a, b"old-name", old);
    util::write(&b, b"new-name", new);
    let o = util::git_command(dir)
        .args(["diff", "--no-index", "-M1%", "--name-status", "a", "b"])
        .output()
        .unwrap();
    let out = lossy(&o.stdout);
    let line = out.lines().next().unwrap_or_default();
    assert!(line.starts_with('R'), "git saw no rename: {out}");
    line[1..4].parse().unwrap()
}

fn json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

fn paths(v: &serde_json::Value) -> Vec<String> {
    let mut p: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    p.sort();
    p
}

#[test]
fn origin_ranks_the_vendored_release_first_with_the_right_files() {
    let f = fixture();
    let up = f.upstream.path.to_str().unwrap();
    let o = f.vendoring.simm(&["origin", "third_party/x", "--in", up]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let first = text.lines().next().unwrap();
    assert_eq!(first.split('\t').nth(2), Some("v1.2:src"), "{text}");

    let doc = json(
        &f.vendoring
            .simm(&["origin", "--json", "third_party/x", "--in", up]),
    );
    let best = &doc["matches"][0];
    assert_eq!(best["commit"], f.upstream.rev("v1.2^{commit}"));
    assert_eq!(best["tag"], "v1.2");
    assert_eq!(best["path"], "src");

    // Ground truth from the two trees, by path and blob id.
    let upstream = ls_tree(&f.upstream, "v1.2:src");
    let local = ls_tree(&f.vendoring, "HEAD:third_party/x");
    let mut identical = Vec::new();
    let mut modified = Vec::new();
    for (p, id) in &local {
        match upstream.get(p) {
            Some(u) if u == id => identical.push(p.clone()),
            Some(_) => modified.push(p.clone()),
            None => {}
        }
    }
    let missing: Vec<String> = upstream
        .keys()
        .filter(|p| !local.contains_key(*p))
        .cloned()
        .collect();
    let added: Vec<String> = local
        .keys()
        .filter(|p| !upstream.contains_key(*p))
        .cloned()
        .collect();
    assert_eq!(modified, ["f04.txt", "f17.txt", "sub/inner.txt"]);
    assert_eq!(paths(&best["identical"]), identical);
    assert_eq!(paths(&best["modified"]), modified);
    assert_eq!(paths(&best["missing"]), missing);
    assert_eq!(paths(&best["added"]), added);

    let scratch = tempfile::tempdir().unwrap();
    for m in best["modified"].as_array().unwrap() {
        let p = m["path"].as_str().unwrap();
        let old = f
            .upstream
            .git(&["cat-file", "blob", &format!("v1.2:src/{p}")]);
        let new = f
            .vendoring
            .git(&["cat-file", "blob", &format!("HEAD:third_party/x/{p}")]);
        assert_eq!(m["score"], git_score(scratch.path(), &old, &new), "{p}");
        assert_eq!(m["upstream"]["blob"], upstream[p]);
        assert_eq!(m["blob"], local[p]);
    }
    // The text's file lines are the same lists, as name-status.
    let detail: Vec<&str> = text.lines().skip_while(|l| !l.is_empty()).skip(2).collect();
    let mut expected: Vec<String> = missing.iter().map(|p| format!("D\t{p}")).collect();
    expected.extend(added.iter().map(|p| format!("A\t{p}")));
    for m in best["modified"].as_array().unwrap() {
        expected.push(format!(
            "M{:03}\t{}",
            m["score"].as_u64().unwrap(),
            m["path"].as_str().unwrap()
        ));
    }
    expected.sort_by(|a, b| a.split('\t').nth(1).cmp(&b.split('\t').nth(1)));
    assert_eq!(detail, expected, "{text}");

    // A tree of this repository names the same directory.
    let doc_tree = json(
        &f.vendoring
            .simm(&["origin", "--json", "HEAD:third_party/x", "--in", up]),
    );
    assert_eq!(doc_tree["matches"][0]["commit"], best["commit"]);
    assert_eq!(doc_tree["matches"][0]["identical"], best["identical"]);
}

#[test]
fn origin_range_limits_the_candidates() {
    let f = fixture();
    let up = f.upstream.path.to_str().unwrap();
    let doc = json(&f.vendoring.simm(&[
        "origin",
        "--json",
        "third_party/x",
        "--in",
        up,
        "v1.3..main",
    ]));
    let in_range = f.upstream.git_str(&["rev-list", "v1.3..main"]);
    let matches = doc["matches"].as_array().unwrap();
    assert!(!matches.is_empty());
    for m in matches {
        assert!(
            in_range.contains(m["commit"].as_str().unwrap()),
            "{} outside the range",
            m["commit"]
        );
        assert_eq!(m["tag"], serde_json::Value::Null);
    }
    // The nearest state in the range is the oldest one (v1.2 plus edits).
    let oldest = in_range.lines().last().unwrap();
    assert_eq!(matches[0]["commit"], oldest);
}

#[test]
fn origin_refuses_bad_input_as_git_does() {
    let f = fixture();
    let up = f.upstream.path.to_str().unwrap();
    let not_repo = tempfile::tempdir().unwrap();
    let o = f.vendoring.simm(&[
        "origin",
        "third_party/x",
        "--in",
        not_repo.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: not a git repository: '"),
        "{}",
        stderr(&o)
    );

    std::fs::create_dir_all(f.vendoring.path.join("empty")).unwrap();
    let o = f.vendoring.simm(&["origin", "empty", "--in", up]);
    assert_eq!(o.status.code(), Some(128));
    assert_eq!(stderr(&o), "fatal: 'empty' has no files to compare\n");

    let outside = f.vendoring.path.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    util::write(&outside, b"a.txt", b"text\n");
    let o = f.vendoring.simm(&["origin", "../outside", "--in", up]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).contains("'../outside' is outside repository at '"),
        "{}",
        stderr(&o)
    );

    let o = f
        .vendoring
        .simm(&["origin", "third_party/x", "--in", up, "v9.9..main"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(stderr(&o).contains("v9.9"), "{}", stderr(&o));

    let o = f.vendoring.simm(&["origin", "no/such/dir", "--in", up]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));

    let o = f.vendoring.simm(&["origin", "third_party/x"]);
    assert_eq!(o.status.code(), Some(129));

    // An upstream without a commit.
    let empty = Repo::new();
    let o = f.vendoring.simm(&[
        "origin",
        "third_party/x",
        "--in",
        empty.path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: no commits to compare with in "),
        "{}",
        stderr(&o)
    );

    // Nothing shared: exit 1, as a search that found nothing.
    util::write(&f.vendoring.path, b"alone/a.txt", b"nothing upstream has\n");
    let o = f.vendoring.simm(&["origin", "alone", "--in", up]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn origin_pairs_moved_files_by_blob_and_by_content() {
    let f = fixture();
    let up = f.upstream.path.to_str().unwrap();
    let v = &f.vendoring;
    // One file moved unchanged, one moved and patched (a new name, so only
    // its content can pair it).
    v.mv("third_party/x/f06.txt", "third_party/x/other/f06b.txt");
    let old = std::fs::read(v.abs(b"third_party/x/f05.txt")).unwrap();
    v.remove("third_party/x/f05.txt");
    v.write("third_party/x/moved/renamed.txt", &util::edit(&old, 20, 77));
    v.commit_all("reorganise");

    let doc = json(&v.simm(&["origin", "--json", "third_party/x", "--in", up]));
    let best = &doc["matches"][0];
    assert_eq!(best["tag"], "v1.2");
    let find = |list: &str, path: &str| -> serde_json::Value {
        best[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("{path} not in {list}: {best}"))
    };
    let same = find("identical", "other/f06b.txt");
    assert_eq!(same["upstream"]["path"], "f06.txt");
    let moved = find("modified", "moved/renamed.txt");
    assert_eq!(moved["upstream"]["path"], "f05.txt");
    let new = std::fs::read(v.abs(b"third_party/x/moved/renamed.txt")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    assert_eq!(moved["score"], git_score(scratch.path(), &old, &new));
    assert!(
        paths(&best["missing"])
            .iter()
            .all(|p| p != "f05.txt" && p != "f06.txt")
    );

    let text = stdout(&v.simm(&["origin", "third_party/x", "--in", up]));
    assert!(text.contains("\nR100\tf06.txt\tother/f06b.txt\n"), "{text}");
    assert!(
        text.contains(&format!(
            "\nR{:03}\tf05.txt\tmoved/renamed.txt\n",
            moved["score"].as_u64().unwrap()
        )),
        "{text}"
    );
}

#[test]
fn origin_reads_a_directory_outside_any_repository() {
    let f = fixture();
    let up = f.upstream.path.to_str().unwrap();
    let plain = tempfile::tempdir().unwrap();
    let listing = f
        .upstream
        .git_str(&["ls-tree", "-r", "--name-only", "v1.3:src"]);
    for name in listing.lines() {
        let data = f
            .upstream
            .git(&["cat-file", "blob", &format!("v1.3:src/{name}")]);
        util::write(&plain.path().join("lib"), name.as_bytes(), &data);
    }
    let o = util::simm_in(plain.path(), &["origin", "--json", "lib", "--in", up]);
    let doc = json(&o);
    let best = &doc["matches"][0];
    assert_eq!(best["tag"], "v1.3");
    assert_eq!(best["resemblance"], 100);
    assert_eq!(
        paths(&best["identical"]).len(),
        listing.lines().count(),
        "every file identical"
    );
}

/// A partial clone as upstream: the first pass needs only trees; the
/// blobs of the states compared come in one fetch per state, and the
/// answer is the full clone's.
#[test]
fn origin_in_a_partial_clone_answers_as_in_the_full_one() {
    let f = fixture();
    f.upstream
        .git(&["config", "uploadpack.allowFilter", "true"]);
    f.upstream
        .git(&["config", "uploadpack.allowAnySHA1InWant", "true"]);
    let base = f.upstream.path.parent().unwrap();
    let partial = base.join("partial");
    let url = format!("file://{}", f.upstream.path.display());
    let o = util::git_command(base)
        .args(["clone", "-q", "--bare", "--filter=blob:none", &url])
        .arg(&partial)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let full = json(&f.vendoring.simm(&[
        "origin",
        "--json",
        "third_party/x",
        "--in",
        f.upstream.path.to_str().unwrap(),
    ]));
    let from_partial = json(&f.vendoring.simm(&[
        "origin",
        "--json",
        "third_party/x",
        "--in",
        partial.to_str().unwrap(),
    ]));
    assert_eq!(from_partial["matches"], full["matches"]);
}

/// An upstream library whose later releases add optional back ends: `lib/`
/// has 24 core files of real text; each of four releases (two untagged
/// commits editing core files before it) edits one more, adds four back
/// ends under `lib/backends/` and a build script outside `lib/`.
fn growing_upstream() -> Repo {
    let texts = util::texts(11, 60);
    let mut next = texts.iter();
    let mut take = || next.next().unwrap().clone();
    let up = Repo::new();
    for i in 0..24 {
        up.write(format!("lib/core{i:02}.txt"), &take());
    }
    up.write("README", &take());
    up.write("tests/t.txt", &take());
    up.commit_all("initial");
    let edit = |up: &Repo, i: u64, seed: u64| {
        let f = format!("lib/core{:02}.txt", i % 24);
        let old = std::fs::read(up.abs(f.as_bytes())).unwrap();
        up.write(&f, &util::edit(&old, 9, seed));
    };
    for release in 0..4u64 {
        for k in 0..2u64 {
            edit(&up, release * 5 + k * 2, release * 10 + k);
            up.commit_all(&format!("work {release}.{k}"));
        }
        edit(&up, release * 7 + 3, release + 100);
        for k in 0..4 {
            up.write(format!("lib/backends/b{release}{k}.txt"), &take());
        }
        up.write(format!("build/script{release}"), &take());
        up.commit_all(&format!("release 2.{release}"));
        up.git(&["tag", "-a", "-m", "release", &format!("v2.{release}")]);
    }
    edit(&up, 20, 900);
    up.write("lib/backends/late.txt", &take());
    up.commit_all("after the last release");
    up
}

/// `third_party/lib/` of a new repository: the files of `<rev>:lib` that
/// `keep` keeps, the `patched` ones edited; returns the files dropped.
fn vendor_subset(
    up: &Repo,
    rev: &str,
    keep: impl Fn(usize, &str) -> bool,
    patched: &[&str],
) -> (Repo, Vec<String>) {
    let v = Repo::new();
    v.write("main.txt", b"the project's own file\n");
    let mut dropped = Vec::new();
    let listing = up.git_str(&["ls-tree", "-r", "--name-only", &format!("{rev}:lib")]);
    for (i, name) in listing.lines().enumerate() {
        if !keep(i, name) {
            dropped.push(name.to_owned());
            continue;
        }
        let data = up.git(&["cat-file", "blob", &format!("{rev}:lib/{name}")]);
        let data = if patched.contains(&name) {
            util::edit(&data, 13, 7000 + i as u64)
        } else {
            data
        };
        v.write(format!("third_party/lib/{name}"), &data);
    }
    v.commit_all("vendor lib 2.2");
    (v, dropped)
}

/// A vendored subset of a release: a third of its files dropped (the
/// optional back ends, or every third file), none edited, or a few
/// patched. Upstream's later releases add files the copy leaves out, and
/// its earlier states lack files the copy left out anyway, so the
/// resemblance of the two directories as wholes favours the wrong states:
/// the release must still come first, ranked by how much of the copy it
/// explains, and an exact subset must be said so.
#[test]
fn origin_names_the_release_a_vendored_subset_came_from() {
    let up = growing_upstream();
    let url = up.path.to_str().unwrap();
    type Keep = fn(usize, &str) -> bool;
    let drops: [(&str, Keep); 2] = [
        ("the back ends", |_, n| !n.starts_with("backends/")),
        ("every third file", |i, _| i % 3 != 0),
    ];
    for (what, keep) in drops {
        for patched in [&[][..], &["core01.txt", "core05.txt", "core10.txt"][..]] {
            let (v, dropped) = vendor_subset(&up, "v2.2", keep, patched);
            let case = format!("{what} dropped, {} patched", patched.len());
            let total = up
                .git_str(&["ls-tree", "-r", "--name-only", "v2.2:lib"])
                .lines()
                .count();
            assert_eq!(dropped.len(), total / 3, "{case}");
            let doc = json(&v.simm(&["origin", "--json", "third_party/lib", "--in", url]));
            let best = &doc["matches"][0];
            let names: Vec<String> = doc["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| format!("{}:{}", m["tag"], m["commit"]))
                .collect();
            assert_eq!(best["tag"], "v2.2", "{case}: ranked {names:?}");
            assert_eq!(best["path"], "lib", "{case}");
            assert_eq!(paths(&best["missing"]), dropped, "{case}");
            assert_eq!(
                paths(&best["modified"]),
                patched.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                "{case}"
            );
            assert_eq!(best["exact"], patched.is_empty(), "{case}");
            // Every other state compared explains less of the copy, or
            // as much and adds more.
            for m in doc["matches"].as_array().unwrap().iter().skip(1) {
                let key = |m: &serde_json::Value| {
                    (
                        m["identical"].as_array().unwrap().len(),
                        m["contained"].as_u64().unwrap(),
                    )
                };
                assert!(key(m) <= key(best), "{case}: {names:?}");
            }

            let o = v.simm(&["origin", "third_party/lib", "--in", url]);
            let text = stdout(&o);
            let first: Vec<&str> = text.lines().next().unwrap().split('\t').collect();
            assert_eq!(
                first[..3],
                [
                    &*format!("{}%", best["contained"]),
                    &*format!("{}%", best["resemblance"]),
                    "v2.2:lib"
                ],
                "{case}: {text}"
            );
            let exact = text.lines().find(|l| l.starts_with("exact: "));
            if patched.is_empty() {
                let kept = total - dropped.len();
                let expected = format!(
                    "exact: the copy is byte for byte a subset of v2.2:lib ({kept} of its {total} files; {} not copied)",
                    dropped.len()
                );
                assert_eq!(
                    exact.map(|l| l.split(';').take(2).collect::<Vec<_>>().join(";")),
                    Some(expected),
                    "{case}: {text}"
                );
            } else {
                assert_eq!(exact, None, "{case}: {text}");
            }
        }
    }
}

/// The whole release copied byte for byte is said to be it.
#[test]
fn origin_says_when_the_copy_is_a_release_byte_for_byte() {
    let up = growing_upstream();
    let (v, dropped) = vendor_subset(&up, "v2.1", |_, _| true, &[]);
    assert!(dropped.is_empty());
    let text = stdout(&v.simm(&[
        "origin",
        "third_party/lib",
        "--in",
        up.path.to_str().unwrap(),
    ]));
    assert!(text.starts_with("100%\t100%\tv2.1:lib\t"), "{text}");
    assert!(
        text.contains("\nexact: the copy is byte for byte v2.1:lib\n"),
        "{text}"
    );
}
