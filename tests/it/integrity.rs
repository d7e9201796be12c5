//! Corrupt objects are refused as git refuses them: a damaged loose object
//! (its zlib checksum, its content), a damaged packed object and a damaged
//! delta base, read by `fingerprint`, `renames`, `groups`, `export` and
//! `repack` (both `--bases`), end the command with a `fatal:` that names
//! the object and exit 128, with nothing removed from the object database
//! or the fingerprint store, and nothing in the store computed from the
//! damaged content. git (`git cat-file`) confirms each
//! damage is one git refuses. A loose object whose content is another's
//! (a valid zlib stream under the wrong name) never reaches a new pack.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::{Repo, corpus_text, git_command, lossy, simm_in};

/// `data` without one line in `every`: smaller, so git packs the larger
/// version whole and this one as a delta against it.
fn shrink(data: &[u8], every: usize) -> Vec<u8> {
    data.split_inclusive(|&b| b == b'\n')
        .enumerate()
        .filter(|(i, _)| i % every != 3)
        .flat_map(|(_, l)| l.to_vec())
        .collect()
}

/// One line in `every` rewritten.
fn touch(data: &[u8], every: usize) -> Vec<u8> {
    data.split_inclusive(|&b| b == b'\n')
        .enumerate()
        .flat_map(|(i, l)| {
            if i % every == 5 {
                format!("edited line {i}\n").into_bytes()
            } else {
                l.to_vec()
            }
        })
        .collect()
}

/// The repository every case starts from, and the ids that matter.
struct Shape {
    repo: Repo,
    /// A loose blob of HEAD (`fresh.txt`).
    loose: String,
    /// A packed blob of HEAD stored whole and no base of anything.
    packed: String,
    /// A packed blob stored whole, the base of HEAD's `shrunk.txt`.
    base: String,
    /// HEAD's `shrunk.txt`, a delta against `base`.
    delta: String,
}

/// HEAD holds `lone.txt` (packed whole), `shrunk.txt` (packed as a delta
/// against its larger first version) and `fresh.txt` (loose); the branch
/// `other` holds edited copies of two of them and another file under
/// other names, so `renames other HEAD` reads all of them.
fn shape() -> Shape {
    let repo = Repo::new();
    let big = corpus_text("rust/serde_json-1.0.133/src/value/ser.rs");
    let lone = corpus_text("python/click-8.1.7/src/click/termui.py");
    let fresh = corpus_text("rust/toml-0.8.19/src/ser.rs");
    let filler = corpus_text("rust/memchr-2.8.3/src/memchr.rs");
    repo.write("lone.txt", &lone);
    repo.write("shrunk.txt", &big);
    repo.write("filler.txt", &filler);
    repo.commit_all("first");
    repo.write("shrunk.txt", &shrink(&big, 7));
    repo.commit_all("shrunk");
    repo.git(&["checkout", "-q", "--orphan", "other"]);
    repo.git(&["rm", "-q", "-r", "--cached", "."]);
    for f in ["lone.txt", "shrunk.txt", "filler.txt"] {
        repo.remove(f);
    }
    // Unrelated to lone.txt, which stays no delta's base.
    repo.write(
        "lone-old.txt",
        &corpus_text("python/click-8.1.7/src/click/decorators.py"),
    );
    repo.write("shrunk-old.txt", &touch(&shrink(&big, 7), 9));
    repo.write("fresh-old.txt", &touch(&fresh, 9));
    repo.commit_all("other");
    repo.git(&["checkout", "-q", "-f", "main"]);
    repo.git(&["repack", "-adfq"]);
    repo.write("fresh.txt", &fresh);
    repo.commit_all("fresh");
    let id = |path: &str| repo.rev(&format!("HEAD:{path}"));
    let (loose, packed, delta) = (id("fresh.txt"), id("lone.txt"), id("shrunk.txt"));
    let base = {
        // The shape the cases rely on, as git packed it.
        let entries = pack_entries(&repo.path);
        let of = |id: &str| entries.get(id).unwrap_or_else(|| panic!("{id} not packed"));
        assert_eq!(of(&packed).base, None, "lone.txt is stored whole");
        assert!(
            entries.values().all(|e| e.base.as_deref() != Some(&packed)),
            "lone.txt is no delta base"
        );
        let delta_base = of(&delta).base.clone().expect("shrunk.txt is a delta");
        assert_eq!(of(&delta_base).base, None, "its base is stored whole");
        delta_base
    };
    Shape {
        repo,
        loose,
        packed,
        base,
        delta,
    }
}

/// One entry of `git verify-pack -v`.
struct Entry {
    offset: u64,
    size_in_pack: u64,
    base: Option<String>,
}

fn pack_entries(dir: &Path) -> BTreeMap<String, Entry> {
    let idx = the_pack(dir).with_extension("idx");
    let out = git_command(dir)
        .arg("verify-pack")
        .arg("-v")
        .arg(&idx)
        .output()
        .expect("verify-pack");
    assert!(out.status.success());
    lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 5 && f[0].len() == 40).then(|| {
                (
                    f[0].to_owned(),
                    Entry {
                        size_in_pack: f[3].parse().expect("size"),
                        offset: f[4].parse().expect("offset"),
                        base: f.get(6).map(|b| (*b).to_owned()),
                    },
                )
            })
        })
        .collect()
}

fn the_pack(dir: &Path) -> PathBuf {
    let packs: Vec<PathBuf> = std::fs::read_dir(dir.join(".git/objects/pack"))
        .expect("pack dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    packs[0].clone()
}

fn flip(path: &Path, at: u64) {
    let mut perms = std::fs::metadata(path).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).expect("chmod");
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at as usize] ^= 0x01;
    std::fs::write(path, bytes).expect("write");
}

fn append(path: &Path, more: &[u8]) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes.extend_from_slice(more);
    let _ = std::fs::remove_file(path);
    std::fs::write(path, bytes).expect("write");
}

/// Put back every object file of `from` into `to` (undo the damage).
fn restore(from: &Path, to: &Path) {
    for (path, bytes) in snapshot(&from.join(".git/objects")) {
        let rel = path.strip_prefix(from).expect("below");
        let dest = to.join(rel);
        let _ = std::fs::remove_file(&dest);
        std::fs::write(&dest, bytes).expect("restore");
    }
}

fn loose_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(".git/objects").join(&id[..2]).join(&id[2..])
}

/// Every file below `dir` with its bytes (none when it does not exist).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// The damage each case does, and the ids a refusal may name: the
/// damaged object, or for a damaged base the delta read through it.
fn damage(shape: &Shape, dir: &Path, case: &str) -> Vec<String> {
    match case {
        "loose, zlib checksum" => {
            let p = loose_path(dir, &shape.loose);
            let len = std::fs::metadata(&p).expect("stat").len();
            flip(&p, len - 1);
            vec![shape.loose.clone()]
        }
        "loose, content" => {
            let p = loose_path(dir, &shape.loose);
            let len = std::fs::metadata(&p).expect("stat").len();
            flip(&p, len / 2);
            vec![shape.loose.clone()]
        }
        "packed" | "delta base" => {
            let entries = pack_entries(dir);
            let id = if case == "packed" {
                &shape.packed
            } else {
                &shape.base
            };
            let e = &entries[id];
            flip(&the_pack(dir), e.offset + e.size_in_pack / 2);
            // The damaged object, and every delta read through it.
            let mut named = vec![id.clone()];
            loop {
                let more: Vec<String> = entries
                    .iter()
                    .filter(|(k, e)| {
                        !named.contains(k) && e.base.as_ref().is_some_and(|b| named.contains(b))
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                if more.is_empty() {
                    break;
                }
                named.extend(more);
            }
            if case == "delta base" {
                assert!(named.contains(&shape.delta), "{named:?}");
            }
            named
        }
        _ => unreachable!("{case}"),
    }
}

const CASES: [&str; 4] = [
    "loose, zlib checksum",
    "loose, content",
    "packed",
    "delta base",
];

const COMMANDS: &[&[&str]] = &[
    &["fingerprint", "HEAD"],
    &["renames", "other", "HEAD"],
    &["groups", "--threshold", "50", "HEAD"],
    #[cfg(feature = "export")]
    &["export", "-o", "out.parquet", "HEAD"],
    &["repack", "--bases=git"],
    &["repack", "--bases=simm"],
    &["fingerprint", "--all"],
];

#[test]
fn corrupt_objects_are_refused_and_nothing_is_lost() {
    let shape = shape();
    // A store that holds something, to see it unchanged.
    let filler = shape.repo.rev("HEAD:filler.txt");
    let o = shape.repo.simm(&["fingerprint", &filler]);
    assert!(o.status.success(), "{}", lossy(&o.stderr));
    for case in CASES {
        for args in COMMANDS {
            let copy = tempfile::tempdir().expect("tempdir");
            let dir = copy.path().join("repo");
            let o = std::process::Command::new("cp")
                .arg("-a")
                .arg(&shape.repo.path)
                .arg(&dir)
                .output()
                .expect("cp");
            assert!(o.status.success());
            let named = damage(&shape, &dir, case);
            // git refuses the object too (a delta base through its delta).
            let read = git_command(&dir)
                .args(["cat-file", "blob", named.last().expect("an id")])
                .output()
                .expect("git cat-file");
            assert_eq!(read.status.code(), Some(128), "{case}: git reads it");
            let objects = snapshot(&dir.join(".git/objects"));
            let store = snapshot(&dir.join(".git/simm"));
            let o = simm_in(&dir, args);
            let stderr = lossy(&o.stderr);
            eprintln!("{case}: {args:?}: {stderr}");
            assert_eq!(o.status.code(), Some(128), "{case}: {args:?}: {stderr}");
            assert!(stderr.starts_with("fatal: "), "{case}: {args:?}: {stderr}");
            assert!(
                named.iter().any(|id| stderr.contains(id.as_str())),
                "{case}: {args:?}: names none of {named:?}: {stderr}"
            );
            assert!(
                objects == snapshot(&dir.join(".git/objects")),
                "{case}: {args:?}: the object database changed"
            );
            // Nothing the store held is gone or rewritten.
            let after = snapshot(&dir.join(".git/simm"));
            for (path, bytes) in &store {
                assert!(
                    after.get(path) == Some(bytes),
                    "{case}: {args:?}: {} was removed or changed",
                    path.display()
                );
            }
            // Nothing it holds now came from the damaged content: with the
            // damage undone, it answers what a run without it computes.
            restore(&shape.repo.path, &dir);
            for check in [
                &["fingerprint", "HEAD", "other"][..],
                &["renames", "other", "HEAD"],
            ] {
                let stored = simm_in(&dir, check);
                let mut fresh_args = check.to_vec();
                fresh_args.insert(1, "--no-cache");
                let fresh = simm_in(&dir, &fresh_args);
                assert!(stored.status.success(), "{}", lossy(&stored.stderr));
                assert_eq!(
                    lossy(&stored.stdout),
                    lossy(&fresh.stdout),
                    "{case}: {args:?}: the store kept a value of the damaged content"
                );
            }
            assert!(!dir.join("out.parquet").exists());
        }
    }
}

/// A loose object file replaced by another object's (a valid zlib stream:
/// nothing fails when it is read) is copied by neither repack: the new
/// pack's objects are hashed before it is installed. git's own
/// `pack-objects` would have packed the wrong content under the id.
#[test]
fn an_object_that_is_not_its_id_never_reaches_a_new_pack() {
    let shape = shape();
    let dir = &shape.repo.path;
    let victim = loose_path(dir, &shape.loose);
    // The loose tree of the last commit, a valid object of another id.
    let tree = shape.repo.rev("HEAD^{tree}");
    let other = loose_path(dir, &tree);
    let mut perms = std::fs::metadata(&victim).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&victim, perms).expect("chmod");
    std::fs::copy(&other, &victim).expect("copy");
    for bases in ["--bases=git", "--bases=simm"] {
        let objects = snapshot(&dir.join(".git/objects"));
        let o = shape.repo.simm(&["repack", bases]);
        let stderr = lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(128), "{bases}: {stderr}");
        assert!(
            stderr.starts_with("fatal: ") && stderr.contains(&shape.loose),
            "{stderr}"
        );
        assert!(objects == snapshot(&dir.join(".git/objects")), "{bases}");
    }
}

/// End to end: after a corrupt loose object made
/// `fingerprint` fail, restoring it leaves no trace: the store answers
/// what a run without it computes.
#[test]
fn a_restored_object_reads_as_if_nothing_happened() {
    let shape = shape();
    let dir = &shape.repo.path;
    let path = loose_path(dir, &shape.loose);
    let good = std::fs::read(&path).expect("read");
    flip(&path, good.len() as u64 - 5);
    let o = shape.repo.simm(&["fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128), "{}", lossy(&o.stderr));
    std::fs::write(&path, &good).expect("restore");
    let stored = shape.repo.simm(&["fingerprint", "HEAD"]);
    let fresh = shape.repo.simm(&["fingerprint", "--no-cache", "HEAD"]);
    assert!(stored.status.success() && fresh.status.success());
    assert_eq!(lossy(&stored.stdout), lossy(&fresh.stdout));
}

/// A packed object whose content is not its id's with nothing else wrong
/// (stored uncompressed, a byte changed and the zlib checksum made to
/// match; git reads it as it is): `fingerprint --all` decodes the pack
/// whole, where each blob read is hashed, and refuses it instead of
/// storing fingerprints of wrong content under the ids.
#[test]
fn a_packed_object_with_valid_zlib_and_wrong_content_is_caught() {
    let repo = Repo::new();
    // Versions of one file in a row: long delta chains, so reading them
    // all decodes the pack whole.
    let mut text = corpus_text("rust/toml-0.8.19/src/ser.rs");
    for i in 0..30 {
        text = touch(&text, 40 + i);
        repo.write("stored.txt", &text);
        repo.commit_all(&format!("v{i}"));
    }
    repo.git(&["-c", "pack.compression=0", "repack", "-adfq", "--depth=50"]);
    let entries = pack_entries(&repo.path);
    let (id, e) = entries
        .iter()
        .find(|(k, e)| e.base.is_none() && entries.values().any(|d| d.base.as_ref() == Some(*k)))
        .expect("a base stored whole");
    let body = repo.git(&["cat-file", "blob", id]);
    let pack = the_pack(&repo.path);
    let mut bytes = std::fs::read(&pack).expect("read pack");
    let (start, end) = (e.offset as usize, (e.offset + e.size_in_pack) as usize);
    // The content is there as it is (stored blocks); change one byte of
    // it and write the checksum of the changed content.
    let needle = &body[1000..1064];
    let at = start
        + bytes[start..end]
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("content stored as is");
    bytes[at] ^= 0x20;
    let mut changed = body.clone();
    changed[1000] ^= 0x20;
    bytes[end - 4..end].copy_from_slice(&adler32(&changed).to_be_bytes());
    let mut perms = std::fs::metadata(&pack).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&pack, perms).expect("chmod");
    std::fs::write(&pack, &bytes).expect("write pack");
    // git reads the wrong content without a word (it hashes on fsck).
    assert_eq!(repo.git(&["cat-file", "blob", id]), changed);
    let o = repo.simm(&["fingerprint", "--all"]);
    let stderr = lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(128), "{stderr}");
    assert!(stderr.starts_with("fatal: packed object "), "{stderr}");
    assert!(!repo.store_dir().exists() || snapshot(&repo.store_dir()).is_empty());
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// The trees a commit writes are loose, and below a loose tree the
/// listing reads a subtree's file first: a damaged one there is refused as
/// a damaged loose blob is, whichever way it was reached, and the same
/// trees undamaged list as git lists them.
#[test]
fn a_damaged_loose_tree_below_a_loose_tree_is_refused() {
    let repo = Repo::new();
    repo.write(
        "old/sub/a.py",
        &corpus_text("python/click-8.1.7/src/click/termui.py"),
    );
    repo.write("old/sub/b.rs", &corpus_text("rust/toml-0.8.19/src/ser.rs"));
    repo.write("old/c.rs", &corpus_text("rust/memchr-2.8.3/src/memchr.rs"));
    repo.commit_all("first");
    repo.git(&["repack", "-adq"]);
    repo.git(&["mv", "old", "new"]);
    repo.git(&["mv", "new/sub/a.py", "new/sub/a2.py"]);
    repo.commit_all("moved");
    // With an index, its cache-tree stands in for the trees it matches;
    // without one every tree is read. The root is read through gix,
    // then checked; new/ (listed whole) and new/sub below it, their
    // parents loose, from their files first.
    std::fs::remove_file(repo.path.join(".git/index")).expect("no index");
    let tree = repo.rev("HEAD:new/sub");
    let path = loose_path(&repo.path, &tree);
    assert!(path.is_file(), "the moved subdirectory's tree is loose");
    assert!(loose_path(&repo.path, &repo.rev("HEAD:new")).is_file());
    let ok = simm_in(&repo.path, &["renames", "HEAD~1", "HEAD"]);
    assert!(ok.status.success(), "{}", lossy(&ok.stderr));
    let diff: Vec<&str> = "diff -M -l0 --no-rename-empty --name-status HEAD~1 HEAD"
        .split(' ')
        .collect();
    let git = repo.git(&diff);
    assert_eq!(lossy(&ok.stdout), lossy(&git));
    // A byte after the zlib stream is what gix's own reading lets
    // through; git and the loose reader refuse it.
    for case in ["zlib checksum", "content", "garbage after the stream"] {
        let copy = tempfile::tempdir().expect("tempdir");
        let dir = copy.path().join("repo");
        let o = std::process::Command::new("cp")
            .arg("-a")
            .arg(&repo.path)
            .arg(&dir)
            .output()
            .expect("cp");
        assert!(o.status.success());
        let p = loose_path(&dir, &tree);
        let len = std::fs::metadata(&p).expect("stat").len();
        match case {
            "zlib checksum" => flip(&p, len - 1),
            "content" => flip(&p, len / 2),
            _ => append(&p, b"x"),
        }
        let read = git_command(&dir)
            .args(["cat-file", "-p", &tree])
            .output()
            .expect("git cat-file");
        assert_eq!(read.status.code(), Some(128), "{case}: git reads it");
        let o = simm_in(&dir, &["renames", "HEAD~1", "HEAD"]);
        let stderr = lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(128), "{case}: {stderr}");
        assert!(stderr.starts_with("fatal: "), "{case}: {stderr}");
        assert!(stderr.contains(tree.as_str()), "{case}: {stderr}");
    }
}
