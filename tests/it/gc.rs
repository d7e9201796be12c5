//! `git simm gc`: records of blobs git has pruned are dropped, the rest
//! kept as they were, tables merged; shared stores are not pruned by one
//! repository's objects.

use std::path::PathBuf;

use serde_json::Value;

use crate::util::*;

/// Blob ids in the object database, as git lists them.
fn blobs(r: &Repo) -> Vec<String> {
    let check = r.git_str(&["cat-file", "--batch-all-objects", "--batch-check"]);
    let mut ids: Vec<String> = check
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some("blob"))
        .filter_map(|l| l.split(' ').next().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

fn store_files(r: &Repo) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(r.store_dir()) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd.map(|e| e.expect("entry").path()).collect();
    files.sort();
    files
}

fn count(files: &[PathBuf], prefix: &str) -> usize {
    files
        .iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".table"))
        })
        .count()
}

/// Two corpus files committed and fingerprinted (signed too); the
/// `fingerprint --all` output.
fn two_files_fingerprinted(r: &Repo) -> std::process::Output {
    r.write(
        "a.rs",
        &corpus_text("rust/serde_json-1.0.133/src/value/from.rs"),
    );
    r.write("b.rs", &corpus_text("rust/toml-0.8.19/src/lib.rs"));
    r.commit_all("one");
    let o = r.simm(&["fingerprint", "--all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// The tables among `files` whose names start with `prefix`.
fn tables_of<'a>(files: &'a [PathBuf], prefix: &str) -> Vec<&'a PathBuf> {
    files
        .iter()
        .filter(|p| count(std::slice::from_ref(p), prefix) == 1)
        .collect()
}

fn gc_json(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["gc", "--json"];
    all.extend_from_slice(args);
    let o = r.simm(&all);
    assert!(o.status.success(), "{all:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// Four source files in three commits, each followed by a run that
/// writes a fingerprint table; histograms from `groups`. Then a commit
/// adding one edited copy of a file (one new blob, which `groups` scores
/// and so keeps a histogram of), which is dropped and pruned by git.
fn repo_with_a_pruned_blob() -> (Repo, Vec<String>, String) {
    let r = Repo::new();
    let texts = [
        "rust/serde_json-1.0.133/src/raw.rs",
        "rust/serde_json-1.0.133/src/value/ser.rs",
        "rust/tokio-1.41.1/src/sync/batch_semaphore.rs",
        "rust/toml-0.8.19/src/lib.rs",
    ];
    for (i, t) in texts.iter().enumerate() {
        r.write(format!("src/f{i}.rs"), &corpus_text(t));
        r.commit_all(&format!("add {i}"));
        let o = r.simm(&["fingerprint", "HEAD"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let copy = edit(&corpus_text(texts[0]), 40, 7);
    r.write("src/copy.rs", &copy);
    r.commit_all("a near-copy");
    let dropped = r
        .git_str(&["rev-parse", "HEAD:src/copy.rs"])
        .trim()
        .to_owned();
    let o = r.simm(&["groups", "--all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("src/copy.rs"),
        "the copy must be scored, so its histogram is stored: {}",
        stdout(&o)
    );
    // `groups` reads no signature and makes none: `fingerprint` signs
    // the copy, so that every kind of table holds it.
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = blobs(&r);
    r.git(&["reset", "-q", "--hard", "HEAD~1"]);
    r.git(&["reflog", "expire", "--expire=now", "--all"]);
    r.git(&["gc", "-q", "--prune=now"]);
    let after = blobs(&r);
    assert_eq!(
        before
            .iter()
            .filter(|b| !after.contains(b))
            .collect::<Vec<_>>(),
        vec![&dropped],
        "git pruned exactly the copy"
    );
    (r, after, dropped)
}

#[test]
fn gc_drops_what_git_pruned_and_keeps_the_rest_in_one_table() {
    let (r, present, _) = repo_with_a_pruned_blob();
    let files = store_files(&r);
    assert!(count(&files, "fp-") >= 3, "{files:?}");
    assert_eq!(count(&files, "hist-"), 1, "{files:?}");
    // Every blob read for its fingerprint was signed in the same read.
    assert!(count(&files, "sig-") >= 3, "{files:?}");
    let uncached = r.simm(&["--no-cache", "fingerprint", "--all"]);
    assert!(uncached.status.success());

    // A dry run reports and changes nothing.
    let dry = gc_json(&r, &["--dry-run"]);
    assert_eq!(store_files(&r), files);
    assert_eq!(dry["fingerprints"]["dropped"], 1);
    assert_eq!(dry["fingerprints"]["kept"], present.len());
    assert_eq!(dry["histograms"]["dropped"], 1);
    assert_eq!(dry["signatures"]["dropped"], 1);
    assert_eq!(dry["signatures"]["kept"], present.len());

    let done = gc_json(&r, &[]);
    assert_eq!(done["fingerprints"], dry["fingerprints"]);
    assert_eq!(done["histograms"], dry["histograms"]);
    let now = store_files(&r);
    assert_eq!(count(&now, "fp-"), 1, "{now:?}");
    assert_eq!(count(&now, "hist-"), 1, "{now:?}");
    assert_eq!(count(&now, "sig-"), 1, "{now:?}");
    assert_eq!(now.len(), 3, "no temporaries left: {now:?}");
    assert_eq!(
        std::fs::metadata(&now[0]).expect("table").len(),
        done["fingerprints"]["bytes_after"].as_u64().expect("bytes")
    );

    // What stays answers as before: the same fingerprints as computed
    // from the blobs, and nothing left to drop.
    let cached = r.simm(&["fingerprint", "--all"]);
    assert_eq!(stdout(&cached), stdout(&uncached));
    let again = gc_json(&r, &[]);
    assert_eq!(again["fingerprints"]["dropped"], 0);
    assert_eq!(again["histograms"]["dropped"], 0);
    assert_eq!(store_files(&r), now, "nothing to rewrite");
}

#[test]
fn gc_drop_histograms_leaves_groups_unchanged() {
    let (r, _, _) = repo_with_a_pruned_blob();
    r.write(
        "src/copy2.rs",
        &edit(
            &corpus_text("rust/tokio-1.41.1/src/sync/batch_semaphore.rs"),
            30,
            3,
        ),
    );
    r.commit_all("another near-copy");
    let before = r.simm(&["groups"]);
    assert!(before.status.success(), "{}", stderr(&before));
    assert!(count(&store_files(&r), "hist-") >= 1);
    let done = gc_json(&r, &["--drop-histograms"]);
    assert!(done["histograms"]["dropped"].as_u64().expect("n") >= 2);
    assert_eq!(done["histograms"]["kept"], 0);
    assert_eq!(count(&store_files(&r), "hist-"), 0);
    assert_eq!(count(&store_files(&r), "fp-"), 1);
    let after = r.simm(&["groups"]);
    assert_eq!(stdout(&after), stdout(&before));
}

#[test]
fn gc_refuses_to_prune_a_shared_store_without_force() {
    let (r, present, _) = repo_with_a_pruned_blob();
    let shared = r.path.parent().expect("parent").join("shared-store");
    std::fs::rename(r.store_dir(), &shared).expect("move the store");
    r.git(&["config", "simm.storeDir", shared.to_str().expect("utf-8")]);

    let o = r.simm(&["gc"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).contains("simm.storeDir"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));

    // Merging alone drops nothing.
    let merged = gc_json(&r, &["--no-prune"]);
    assert_eq!(merged["fingerprints"]["dropped"], 0);
    assert_eq!(merged["fingerprints"]["kept"], present.len() + 1);
    assert_eq!(merged["fingerprints"]["tables_after"], 1);

    let forced = gc_json(&r, &["--force"]);
    assert_eq!(forced["fingerprints"]["dropped"], 1);

    let o = r.simm(&["gc", "--force", "--no-prune"]);
    assert_eq!(o.status.code(), Some(129), "conflicting options");
}

#[test]
fn gc_in_a_sha256_repository_and_with_no_store() {
    let r = Repo::init(&["--object-format=sha256"]);
    let o = r.simm(&["gc"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!r.store_dir().exists(), "gc creates no store");
    two_files_fingerprinted(&r);
    let done = gc_json(&r, &[]);
    assert_eq!(done["fingerprints"]["kept"], blobs(&r).len());
    assert_eq!(done["fingerprints"]["dropped"], 0);

    let outside = tempfile::tempdir().expect("tempdir");
    let o = simm_in(outside.path(), &["gc"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).contains("not a git repository"),
        "{}",
        stderr(&o)
    );
}

/// Tables a git-simm of another signature or fingerprint version wrote
/// are never read, and `gc` deletes them (a dry run only counts them); a table of this
/// kind for another hash length, which may serve another repository
/// sharing the store, stays, and a file named as a table that is not one
/// is set aside, not deleted.
#[test]
fn gc_deletes_the_tables_of_another_version() {
    let r = Repo::new();
    let o = two_files_fingerprinted(&r);
    let files = store_files(&r);
    let sig = tables_of(&files, "sig-");
    assert_eq!(sig.len(), 1, "{files:?}");
    let table = std::fs::read(sig[0]).expect("table");
    // The header: magic (8 bytes), format, the kind's version, id length.
    let version = u32::from_le_bytes(table[12..16].try_into().expect("4 bytes"));
    assert_eq!(
        version,
        git_simm::similarity::signature::SIGNATURE_VERSION,
        "the signature table's header holds the signature version"
    );
    let with = |at: usize, value: u32| {
        let mut t = table.clone();
        t[at..at + 4].copy_from_slice(&value.to_le_bytes());
        t
    };
    let older = r.store_dir().join("sig-00000001-00000001.table");
    let other_hash = r.store_dir().join("sig-00000002-00000002.table");
    let not_a_table = r.store_dir().join("sig-00000003-00000003.table");
    std::fs::write(&older, with(12, version - 1)).expect("write");
    std::fs::write(&other_hash, with(16, 32)).expect("write");
    std::fs::write(&not_a_table, b"notes of mine").expect("write");
    // The same for fingerprints: their header has the same layout.
    let fp = tables_of(&files, "fp-");
    assert_eq!(fp.len(), 1, "{files:?}");
    let mut fp_older = std::fs::read(fp[0]).expect("table");
    let fp_version = u32::from_le_bytes(fp_older[12..16].try_into().expect("4 bytes"));
    fp_older[12..16].copy_from_slice(&(fp_version + 1).to_le_bytes());
    let fp_other = r.store_dir().join("fp-00000001-00000001.table");
    std::fs::write(&fp_other, fp_older).expect("write");

    let dry = gc_json(&r, &["--dry-run"]);
    assert_eq!(dry["signatures"]["tables_before"], 2, "{dry}");
    assert_eq!(dry["fingerprints"]["tables_before"], 2, "{dry}");
    assert!(
        older.exists() && fp_other.exists(),
        "a dry run deletes nothing"
    );
    let done = gc_json(&r, &[]);
    assert_eq!(done["signatures"]["tables_before"], 2, "{done}");
    assert_eq!(done["signatures"]["tables_after"], 1, "{done}");
    assert!(!older.exists(), "the other version's table is deleted");
    assert!(
        !fp_other.exists(),
        "the other version's fingerprints go too"
    );
    assert!(fp[0].exists(), "the current fingerprints stay");
    assert!(other_hash.exists(), "another hash length's table stays");
    // A file named as a table but not one is set aside, never deleted.
    let aside = not_a_table.with_file_name("sig-00000003-00000003.table.damaged");
    let kept = std::fs::read(&not_a_table).or_else(|_| std::fs::read(&aside));
    assert_eq!(
        kept.ok().as_deref(),
        Some(&b"notes of mine"[..]),
        "a file that is not a table stays"
    );
    assert!(sig[0].exists(), "the current table stays");
    // What the store answers is unchanged.
    let again = r.simm(&["fingerprint", "--all"]);
    assert_eq!(stdout(&again), stdout(&o));
}
