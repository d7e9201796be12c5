//! The `git-simm` binary end to end, on real repositories built with the
//! real `git`: output compared with git's own, the fingerprint store's
//! robustness, every kind of bad input DEVELOPERS.md lists, and Ctrl-C
//! (SIGINT) at any moment of a long run.

use crate::util;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use util::{
    Repo, corpus_text, git_command, git_env, path_with_simm, simm_command, simm_in, stderr, stdout,
};

/// A repository of real files (pinned corpus texts under the names of a
/// small crate's sources), plus awkward names.
fn sources_repo() -> Repo {
    let r = Repo::new();
    for (name, text) in [
        ("src/fingerprint.rs", "rust/serde_json-1.0.133/src/raw.rs"),
        ("src/store.rs", "rust/serde_json-1.0.133/src/value/ser.rs"),
        (
            "src/score.rs",
            "rust/tokio-1.41.1/src/sync/batch_semaphore.rs",
        ),
        (
            "src/similar.rs",
            "rust/serde_json-1.0.133/src/value/from.rs",
        ),
        ("src/output.rs", "rust/toml-0.8.19/src/lib.rs"),
        ("Cargo.toml", "rust/quote-1.0.47/Cargo.toml.orig"),
    ] {
        r.write(name, &corpus_text(text));
    }
    r.write(
        "dir with space/file name.rs",
        &corpus_text("rust/regex-syntax-0.8.12/src/ast/visitor.rs"),
    );
    r.write("tiny.txt", b"too small to fingerprint\n");
    r.write("empty", b"");
    r.commit_all("sources");
    r
}

#[test]
fn fingerprint_lists_the_same_blobs_as_ls_tree() {
    let r = sources_repo();
    // A newline in a name and a byte that is not UTF-8, to check quoting.
    r.write(
        "new\nline.rs",
        &corpus_text("rust/toml-0.8.19/examples/decode.rs"),
    );
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"latin1-\xe9.txt");
        r.write(
            name.as_bytes(),
            &corpus_text("rust/serde_json-1.0.133/src/lexical/shift.rs"),
        );
        std::os::unix::fs::symlink("src/store.rs", r.path.join("link")).expect("symlink");
    }
    r.commit_all("odd names");

    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ours: Vec<(String, u64, String)> = stdout(&o)
        .lines()
        .map(|l| {
            let mut it = l.splitn(3, ' ');
            let fp = it.next().expect("fp").to_owned();
            let size = it.next().expect("size").parse().expect("size is a number");
            let path = it.next().expect("path").to_owned();
            (fp, size, path)
        })
        .collect();
    // `git ls-tree -r -l` prints size and the path quoted the same way.
    let theirs: Vec<(u64, String)> =
        String::from_utf8_lossy(&r.git(&["ls-tree", "-r", "-l", "HEAD"]))
            .lines()
            .map(|l| {
                let (meta, path) = l.split_once('\t').expect("tab");
                let size = meta
                    .split_whitespace()
                    .nth(3)
                    .expect("size")
                    .parse()
                    .expect("number");
                (size, path.to_owned())
            })
            .collect();
    assert_eq!(ours.len(), theirs.len());
    for ((fp, size, path), (git_size, git_path)) in ours.iter().zip(&theirs) {
        assert_eq!(path, git_path);
        assert_eq!(size, git_size, "{path}");
        assert_eq!(fp.len(), 64, "{path}");
        let none = fp.chars().all(|c| c == '0');
        assert_eq!(
            none,
            *size < 192,
            "{path}: only small blobs lack a fingerprint"
        );
    }

    // The same content on disk gets the same fingerprint.
    let disk = r.simm(&["fingerprint", "--", "src/store.rs"]);
    assert!(disk.status.success(), "{}", stderr(&disk));
    let disk_fp = stdout(&disk).split(' ').next().expect("fp").to_owned();
    let tree_fp = &ours
        .iter()
        .find(|(_, _, p)| p == "src/store.rs")
        .expect("listed")
        .0;
    assert_eq!(&disk_fp, tree_fp);

    // -z prints raw names, NUL-terminated.
    let z = r.simm(&["fingerprint", "-z", "HEAD"]);
    assert!(
        z.stdout
            .split(|&b| b == 0)
            .any(|rec| rec.ends_with(b" new\nline.rs"))
    );
}

#[test]
fn fingerprint_all_covers_every_blob_and_fills_the_store() {
    let r = sources_repo();
    r.write(
        "src/store.rs",
        &corpus_text("rust/serde_json-1.0.133/src/read.rs"),
    );
    r.commit_all("second");
    // A mix of packed and loose objects.
    r.git(&["gc", "-q"]);
    r.write(
        "loose.txt",
        &corpus_text("rust/serde_json-1.0.133/src/lexical/errors.rs"),
    );
    r.commit_all("third");

    let check = r.git(&["cat-file", "--batch-all-objects", "--batch-check"]);
    let mut blobs: Vec<String> = String::from_utf8_lossy(&check)
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some("blob"))
        .map(|l| l.split(' ').next().expect("id").to_owned())
        .collect();
    blobs.sort();

    let o = r.simm(&["fingerprint", "--all"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut ids: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.rsplit(' ').next().expect("id").to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, blobs);
    assert!(r.store_dir().read_dir().expect("store exists").count() > 0);

    // Served from the store, the answer is the same.
    let again = r.simm(&["fingerprint", "--all"]);
    assert_eq!(stdout(&again), stdout(&o));
    let uncached = r.simm(&["--no-cache", "fingerprint", "--all"]);
    assert_eq!(stdout(&uncached), stdout(&o));
}

/// Signing tells the fingerprint whether a blob holds a CR, so that it
/// skips its CRLF search: fingerprints made while signing (the store's)
/// are those made without (`--no-signatures`, `--no-cache`), for CRLF
/// text, lone CRs, CRLF in binary and plain LF text, packed and loose,
/// and CRLF text still gets its LF form's fingerprint.
#[test]
fn fingerprints_are_the_same_with_and_without_signing() {
    let r = Repo::new();
    let text = corpus_text("rust/serde_json-1.0.133/src/read.rs");
    let crlf = util::to_crlf(&text);
    let mut lone = text.clone();
    for at in (100..lone.len()).step_by(997) {
        lone[at] = b'\r';
    }
    let mut binary = crlf.clone();
    binary[10] = 0;
    r.write("lf.rs", &text);
    r.write("crlf.rs", &crlf);
    r.write("lone.rs", &lone);
    r.write("binary.bin", &binary);
    r.commit_all("packed");
    r.git(&["gc", "-q"]);
    r.write("crlf2.rs", &util::to_crlf(&text[..text.len() / 2]));
    r.write("lf2.rs", &text[text.len() / 3..]);
    r.commit_all("loose");
    let all = |args: &[&str]| {
        let o = r.simm(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let mut lines: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    let unsigned = all(&["--no-cache", "fingerprint", "--all"]);
    assert_eq!(unsigned.len(), 6, "one line a blob: {unsigned:?}");
    // CRLF text is fingerprinted as its LF form, as git scores it.
    let print_of = |lines: &[String], path: &str| {
        let id = r.rev(&format!("HEAD:{path}"));
        let line = lines.iter().find(|l| l.ends_with(&id)).expect("listed");
        line.split(' ').next().expect("fingerprint").to_owned()
    };
    let signed = all(&["fingerprint", "--all"]);
    assert_eq!(print_of(&signed, "crlf.rs"), print_of(&signed, "lf.rs"));
    assert!(r.store_dir().read_dir().expect("store").any(|e| {
        e.expect("entry")
            .file_name()
            .to_string_lossy()
            .starts_with("sig-")
    }));
    assert_eq!(signed, unsigned);
    // Served from the store the signing run filled.
    assert_eq!(all(&["fingerprint", "--all"]), unsigned);
    std::fs::remove_dir_all(r.store_dir()).expect("store removed");
    assert_eq!(all(&["fingerprint", "--all", "--no-signatures"]), unsigned);
}

#[test]
fn no_cache_writes_nothing() {
    let r = sources_repo();
    let o = r.simm(&["--no-cache", "fingerprint", "HEAD"]);
    assert!(o.status.success());
    assert!(!r.store_dir().exists());
}

fn tables(r: &Repo) -> Vec<PathBuf> {
    tables_in(&r.store_dir())
}

/// The fingerprint tables (`fp-*.table`) of a store directory, sorted;
/// none if it is missing. The signature tables beside them (`sig-`) are
/// another store's.
fn tables_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut t: Vec<PathBuf> = rd
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "table"))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("fp-"))
        })
        .collect();
    t.sort();
    t
}

#[test]
fn damaged_store_is_detected_and_rebuilt() {
    let r = sources_repo();
    let good = r.simm(&["fingerprint", "HEAD"]);
    assert!(good.status.success());
    let table = tables(&r).pop().expect("a table");
    let bytes = std::fs::read(&table).expect("read table");

    // 1. A flipped byte in the last record.
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 20] ^= 0x55;
    std::fs::write(&table, &flipped).expect("write");
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        stdout(&good),
        "a damaged record is never trusted"
    );
    assert!(stderr(&o).contains("damaged"), "warns: {}", stderr(&o));
    // Rebuilt: the next run is clean.
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(stdout(&o), stdout(&good));
    assert_eq!(stderr(&o), "");

    // 2. A table cut short, as by a crash or a full disk.
    for t in tables(&r) {
        let b = std::fs::read(&t).expect("read");
        std::fs::write(&t, &b[..b.len() / 2]).expect("truncate");
    }
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&good));
    assert!(stderr(&o).contains("truncated"), "warns: {}", stderr(&o));

    // 3. Garbage that is not a table at all.
    std::fs::write(r.store_dir().join("fp-00000000-00000001.table"), b"garbage").expect("write");
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(stdout(&o), stdout(&good));
    assert!(stderr(&o).contains("damaged"));
}

#[test]
fn tables_of_another_fingerprint_version_are_ignored() {
    let r = sources_repo();
    let good = r.simm(&["fingerprint", "HEAD"]);
    // Pretend an older release wrote these tables, with wrong fingerprints:
    // bump the version field (bytes 12..16) and zero every fingerprint.
    for t in tables(&r) {
        let mut b = std::fs::read(&t).expect("read");
        b[12..16].copy_from_slice(&999u32.to_le_bytes());
        std::fs::write(&t, &b).expect("write");
    }
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), stdout(&good));
    assert_eq!(stderr(&o), "", "another version is not damage");
}

#[test]
fn concurrent_processes_share_the_store_safely() {
    let r = sources_repo();
    for i in 0..6 {
        r.write(
            format!("gen/{i}.rs"),
            &corpus_text("rust/serde_json-1.0.133/src/read.rs")[i * 100..],
        );
        r.commit_all(&format!("gen {i}"));
    }
    let expected = r.simm(&["--no-cache", "fingerprint", "--all"]);
    let children: Vec<_> = (0..6)
        .map(|_| {
            simm_command()
                .current_dir(&r.path)
                .args(["fingerprint", "--all"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().expect("wait");
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&expected));
        assert_eq!(stderr(&o), "");
    }
    // Many small writes are compacted instead of piling up.
    for i in 0..12 {
        r.write(
            format!("more/{i}.txt"),
            &corpus_text("rust/serde_json-1.0.133/src/value/ser.rs")[i * 50..],
        );
        r.commit_all(&format!("more {i}"));
        assert!(r.simm(&["fingerprint", "HEAD"]).status.success());
    }
    assert!(tables(&r).len() <= 9, "{} tables", tables(&r).len());
    let o = r.simm(&["fingerprint", "--all"]);
    assert_eq!(stderr(&o), "");
}

#[test]
fn similar_ranks_the_edited_file_first() {
    let r = sources_repo();
    let mut edited = corpus_text("rust/serde_json-1.0.133/src/value/ser.rs");
    // Light edits: the file is still clearly the same.
    edited.splice(
        1000..1050,
        b"// a comment that was not there before, 50 bytes."
            .iter()
            .copied(),
    );
    edited.extend_from_slice(b"\nfn added_at_the_end() {}\n");
    let query = r.path.parent().expect("tempdir").join("query.rs");
    std::fs::write(&query, &edited).expect("write");

    let o = r.simm(&["similar", query.to_str().expect("utf-8 temp path")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o).lines().next().expect("a match").to_owned();
    let (pct, path) = first.split_once('\t').expect("tab");
    assert_eq!(path, "src/store.rs");
    let pct: u32 = pct.trim_end_matches('%').parse().expect("percentage");
    assert!((90..100).contains(&pct), "{first}");

    // --threshold above every match: nothing found is exit status 1.
    let none = r.simm(&[
        "similar",
        "--threshold",
        "100%",
        query.to_str().expect("utf-8"),
    ]);
    assert_eq!(none.status.code(), Some(1), "{}", stdout(&none));
    assert_eq!(stdout(&none), "");

    // The percentage is git's: commit the edit as a rename and ask git.
    std::fs::write(r.path.join("src/renamed.rs"), &edited).expect("write");
    std::fs::remove_file(r.path.join("src/store.rs")).expect("rm");
    r.commit_all("rename with edits");
    let git =
        String::from_utf8_lossy(&r.git(&["diff", "-M", "-l0", "--name-status", "HEAD~1", "HEAD"]))
            .into_owned();
    assert!(
        git.contains(&format!("R{pct:03}\tsrc/store.rs\tsrc/renamed.rs")),
        "{git}"
    );

    // JSON carries the same answer.
    let j = r.simm(&["similar", "--json", "HEAD:src/renamed.rs", "HEAD~1"]);
    let doc: serde_json::Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(doc["matches"][0]["path"], "src/store.rs");
    assert_eq!(doc["matches"][0]["score"], pct);

    // --limit.
    let one = r.simm(&[
        "similar",
        "--threshold",
        "1%",
        "--limit",
        "1",
        "src/output.rs",
    ]);
    assert_eq!(stdout(&one).lines().count(), 1);
}

#[test]
fn similar_handles_small_and_empty_queries() {
    let r = sources_repo();
    // Too small to fingerprint: compared exactly.
    let o = r.simm(&["similar", "tiny.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "100%\ttiny.txt\n");
    // Small files never match each other by accident.
    std::fs::write(r.path.join("other-tiny.txt"), b"something else entirely\n").expect("write");
    let o = r.simm(&["similar", "other-tiny.txt"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // Empty: git never pairs empty files.
    let o = r.simm(&["similar", "empty"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("empty"), "{}", stderr(&o));
}

#[test]
fn bad_input_gets_git_style_errors() {
    let outside = tempfile::tempdir().expect("tempdir");
    let o = simm_in(outside.path(), &["fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: not a git repository"),
        "{}",
        stderr(&o)
    );

    let r = sources_repo();
    let cases: &[(&[&str], &str)] = &[
        (&["fingerprint", "no-such-rev"], "unknown revision"),
        (&["similar", "src/store.rs", "no-such-rev"], "no-such-rev"),
        (&["similar", "src/store.rs", "HEAD:Cargo.toml"], "tree"),
        (&["similar", "no-such-file"], "neither a file nor a blob"),
        (&["similar", "HEAD"], "not a file or blob"),
    ];
    for (args, needle) in cases {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("fatal: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
    // Usage errors are 129, as in git, bad option values included.
    assert_eq!(r.simm(&["fingerprint", "--bogus"]).status.code(), Some(129));
    let o = r.simm(&["similar", "--threshold", "abc", "src/store.rs"]);
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
    assert!(stderr(&o).contains("threshold"), "{}", stderr(&o));
    assert_eq!(r.simm(&["no-such-command"]).status.code(), Some(129));
    // A name that is both a file and a revision is ambiguous, as in git.
    r.write("HEAD", b"a file named HEAD\n");
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(stderr(&o).contains("ambiguous"), "{}", stderr(&o));
    assert!(r.simm(&["fingerprint", "--", "HEAD"]).status.success());
}

#[test]
fn missing_and_corrupt_objects_are_named() {
    let r = sources_repo();
    let id = String::from_utf8(r.git(&["rev-parse", "HEAD:src/store.rs"])).expect("hex");
    let id = id.trim();
    let loose = r.path.join(".git/objects").join(&id[..2]).join(&id[2..]);
    // Corrupt: same name, garbage content.
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::write(&loose, b"this is not zlib data").expect("write");
    let o = r.simm(&["--no-cache", "fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128), "{}", stdout(&o));
    assert_names_object(&o, id);
    // Missing.
    std::fs::remove_file(&loose).expect("rm");
    let o = r.simm(&["--no-cache", "fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128));
    assert_names_object(&o, id);
}

/// A failure about a missing or corrupt object names it and never panics.
fn assert_names_object(o: &std::process::Output, id: &str) {
    assert!(
        stderr(o).contains(&id[..7]),
        "names the object: {}",
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

#[test]
fn submodules_are_skipped_and_binaries_fingerprinted() {
    let r = sources_repo();
    let head = String::from_utf8(r.git(&["rev-parse", "HEAD"])).expect("hex");
    r.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{},sub", head.trim()),
    ]);
    // A large binary: 8 MiB with NULs, realistic enough for a build artefact.
    let mut bin = Vec::with_capacity(8 << 20);
    let mut x: u64 = 1;
    while bin.len() < 8 << 20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        bin.extend_from_slice(&(x >> 16).to_le_bytes()[..6]);
        bin.push(0);
    }
    r.write("big.bin", &bin);
    r.git(&["add", "big.bin"]);
    r.git(&["commit", "-q", "-m", "submodule and binary"]);
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.lines().any(|l| l.ends_with(" sub")), "{out}");
    let big = out
        .lines()
        .find(|l| l.ends_with(" big.bin"))
        .expect("listed");
    assert!(big.contains(&format!(" {} ", bin.len())));
    assert!(!big.starts_with(&"0".repeat(64)));
}

use std::os::unix::fs::PermissionsExt;

#[test]
fn renames_bad_input_gets_git_style_errors() {
    let outside = tempfile::tempdir().expect("tempdir");
    let o = simm_in(outside.path(), &["renames", "HEAD~1", "HEAD"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).starts_with("fatal: not a git repository"),
        "{}",
        stderr(&o)
    );

    let r = sources_repo();
    let cases: &[(&[&str], &str)] = &[
        (&["renames", "no-such-rev", "HEAD"], "no-such-rev"),
        (&["renames", "-M", "HEAD~1", "HEAD"], "unknown revision"),
    ];
    for (args, needle) in cases {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("fatal: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    // git diff takes a blob only beside another blob, and --cached one
    // tree-ish: usage errors (129) in git, and in renames.
    for args in [
        &["HEAD", "HEAD:Cargo.toml"][..],
        &["HEAD:Cargo.toml", "HEAD"],
        &["HEAD:Cargo.toml"],
        &["--cached", "HEAD", "HEAD"],
    ] {
        let git = r.git_output(&[&["diff", "--name-status"][..], args].concat());
        assert_eq!(git.status.code(), Some(129), "git diff {args:?}");
        let o = r.simm(&[&["renames"][..], args].concat());
        assert_eq!(o.status.code(), Some(129), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    }
    // Three revisions is a usage error, and so are bad option values.
    assert_eq!(
        r.simm(&["renames", "HEAD", "HEAD", "HEAD"]).status.code(),
        Some(129)
    );
    for (args, needle) in [
        (["renames", "--find-renames=abc", "HEAD", "HEAD"], "score"),
        (
            ["renames", "--diff-filter=Q", "HEAD", "HEAD"],
            "diff-filter",
        ),
    ] {
        let o = r.simm(&args);
        assert_eq!(o.status.code(), Some(129), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }

    // A blob that rename scoring needs is missing: named, never a panic.
    r.write(
        "src/renamed.rs",
        &corpus_text("rust/serde_json-1.0.133/src/value/ser.rs")[100..],
    );
    std::fs::remove_file(r.path.join("src/store.rs")).expect("rm");
    r.commit_all("rename with edits");
    let id = String::from_utf8(r.git(&["rev-parse", "HEAD~1:src/store.rs"])).expect("hex");
    let id = id.trim();
    std::fs::remove_file(r.path.join(".git/objects").join(&id[..2]).join(&id[2..]))
        .expect("rm object");
    let o = r.simm(&["--no-cache", "renames", "HEAD~1", "HEAD"]);
    assert_eq!(o.status.code(), Some(128), "{}", stdout(&o));
    assert_names_object(&o, id);
}

#[test]
fn bare_repositories_resolve_names_as_revisions() {
    let r = sources_repo();
    let bare = r.path.parent().expect("tempdir").join("bare.git");
    r.git(&["clone", "-q", "--bare", ".", bare.to_str().expect("utf-8")]);
    let o = simm_in(&bare, &["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(" src/store.rs\n"));
}

/// git runs `git-simm` for `git simm` when it is on PATH (an external
/// command), with the same arguments and output.
#[test]
fn runs_as_a_git_external_command() {
    let r = sources_repo();
    let via_git = git_env(
        Command::new("git")
            .current_dir(&r.path)
            .env("PATH", path_with_simm())
            .args(["simm", "fingerprint", "HEAD"]),
    )
    .output()
    .expect("run git simm");
    assert!(via_git.status.success(), "{}", stderr(&via_git));
    let direct = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(stdout(&via_git), stdout(&direct));
    assert!(stdout(&direct).contains(" src/store.rs\n"));
}

/// simm.storeDir: a relative value is taken from the common git directory,
/// so a linked worktree uses the same store; `~/` is expanded; repositories
/// naming the same directory share what they computed.
#[test]
fn store_dir_config_moves_and_shares_the_store() {
    let r = sources_repo();
    r.git(&["config", "simm.storeDir", "simm-elsewhere"]);
    let wt = r.path.parent().expect("tempdir").join("linked");
    r.git(&["worktree", "add", "-q", wt.to_str().expect("utf-8"), "HEAD"]);
    let o = simm_in(&wt, &["fingerprint", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let relative = r.path.join(".git/simm-elsewhere");
    assert_eq!(tables_in(&relative).len(), 1, "store in {relative:?}");
    assert!(!r.store_dir().exists(), "the default store was used");
    assert!(!r.path.join(".git/worktrees/linked/simm-elsewhere").exists());

    // A second repository with the same files, its store under a `~/` path
    // shared with a third: the third computes nothing new.
    let home = tempfile::tempdir().expect("tempdir");
    let shared = home.path().join("fingerprints");
    for round in ["fills", "reuses"] {
        let other = sources_repo();
        other.git(&["config", "simm.storeDir", "~/fingerprints"]);
        let o = simm_command()
            .current_dir(&other.path)
            .env("HOME", home.path())
            .args(["fingerprint", "HEAD"])
            .output()
            .expect("run git-simm");
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&r.simm(&["fingerprint", "HEAD"])));
        assert!(!other.store_dir().exists());
        // The second repository found every blob there and wrote nothing.
        assert_eq!(tables_in(&shared).len(), 1, "{round} {shared:?}");
    }
    // --no-cache still writes nowhere.
    std::fs::remove_dir_all(&relative).expect("rm store");
    assert!(
        r.simm(&["--no-cache", "fingerprint", "HEAD"])
            .status
            .success()
    );
    assert!(!relative.exists());

    // A value git could not expand either is an error naming the key; an
    // empty one means the default.
    r.git(&["config", "simm.storeDir", "~no-such-user-here/store"]);
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).contains("'simm.storeDir'"), "{}", stderr(&o));
    r.git(&["config", "simm.storeDir", ""]);
    assert!(r.simm(&["fingerprint", "HEAD"]).status.success());
    assert_eq!(tables(&r).len(), 1, "the default store is used");
}

/// Every subcommand the binary lists in its help (the same clap
/// definitions that parse them), except `help` itself.
fn subcommands() -> Vec<String> {
    let help = simm_ok(&["--help"]);
    let listed = help
        .split_once("Commands:\n")
        .map(|(_, rest)| rest)
        .expect("a Commands: section in --help");
    listed
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

fn simm_ok(args: &[&str]) -> String {
    let o = simm_command().args(args).output().expect("run git-simm");
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn completions_cover_every_subcommand_and_their_options() {
    let subs = subcommands();
    assert!(subs.len() >= 7, "{subs:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = simm_ok(&["completions", shell]);
        for sub in &subs {
            assert!(
                script.contains(sub.as_str()),
                "{shell} completion lacks {sub}"
            );
        }
        for long in [
            "staged",
            "rename-threshold",
            "find-copies-harder",
            "diff-filter",
            "no-cache",
        ] {
            // fish spells `--staged` as `-l staged`.
            let option = if shell == "fish" {
                format!("-l {long}")
            } else {
                format!("--{long}")
            };
            assert!(
                script.contains(&option),
                "{shell} completion lacks {option}"
            );
        }
    }
    let o = simm_command()
        .args(["completions", "tcsh"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
}

/// Completions offered file names for `--order`, listed
/// `--no-cache` for commands without a store, and the man page's synopsis
/// read `[-C ]` and `[-z ]`.
#[test]
fn completions_and_man_pages_show_values_and_only_options_that_apply() {
    let bash = simm_ok(&["completions", "bash"]);
    let order = bash
        .split("--order)")
        .nth(1)
        .and_then(|rest| rest.lines().nth(1))
        .unwrap_or_default();
    assert!(
        order.contains(r#"compgen -W "similarity path git""#),
        "{order}"
    );
    for sub in ["completions", "manpage", "install-hook"] {
        assert!(!simm_ok(&[sub, "--help"]).contains("--no-cache"), "{sub}");
        let o = simm_command()
            .args([sub, "--no-cache"])
            .output()
            .expect("run");
        assert_eq!(o.status.code(), Some(129), "{sub}: {}", stderr(&o));
    }
    for sub in [
        "fingerprint",
        "similar",
        "renames",
        "check",
        "pack-order",
        "repack",
    ] {
        assert!(simm_ok(&[sub, "--help"]).contains("--no-cache"), "{sub}");
    }
    let o = simm_command()
        .args(["repack", "--order", "nope"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("similarity, path, git"),
        "{}",
        stderr(&o)
    );

    let page = simm_ok(&["manpage"]);
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap_or_default();
    assert!(synopsis.contains(r"[\fB\-C\fR <\fIpath\fR>]"), "{synopsis}");
    let dir = tempfile::tempdir().expect("tempdir");
    simm_ok(&["manpage", "--dir", &dir.path().to_string_lossy()]);
    let page = std::fs::read_to_string(dir.path().join("git-simm-fingerprint.1")).expect("page");
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap_or_default();
    assert!(synopsis.contains(r"[\fB\-z\fR]"), "{synopsis}");
    assert!(!synopsis.contains(r" \fR]"), "{synopsis}");
    let page = std::fs::read_to_string(dir.path().join("git-simm-repack.1")).expect("page");
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap_or_default();
    assert!(
        synopsis.contains(r"[\fB\-\-order\fR <\fIorder\fR>]"),
        "{synopsis}"
    );
}

/// Run `cmd` with `input` on its stdin; `None` when it cannot be started
/// (the tool is not installed).
fn with_stdin(cmd: &mut Command, input: &str) -> Option<std::process::Output> {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    Some(child.wait_with_output().expect("wait"))
}

/// Run `bash` on `script` (with the bash completion script loaded) and
/// return its stdout; `None` when there is no bash.
fn bash_with_completion(script: &str) -> Option<String> {
    let completion = simm_ok(&["completions", "bash"]);
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!("{completion}\n{script}"))
        .output()
        .ok()?;
    assert!(o.status.success(), "bash: {}", stderr(&o));
    Some(stdout(&o))
}

#[test]
fn bash_completion_is_valid_and_completes() {
    let completion = simm_ok(&["completions", "bash"]);
    let Some(o) = with_stdin(Command::new("bash").arg("-n"), &completion) else {
        eprintln!("no bash here; completion script not checked");
        return;
    };
    assert!(o.status.success(), "bash -n: {}", stderr(&o));

    // What a user gets from `git-simm ren<TAB>` and `git-simm check --sta<TAB>`.
    let got = bash_with_completion(
        "COMP_WORDS=(git-simm ren); COMP_CWORD=1; _git__simm git-simm ren git-simm; \
         echo \"${COMPREPLY[@]}\"; \
         COMP_WORDS=(git-simm check --sta); COMP_CWORD=2; _git__simm git-simm --sta check; \
         echo \"${COMPREPLY[@]}\"",
    )
    .expect("bash ran above");
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines, ["renames", "--staged"], "{got}");
}

/// `git simm <TAB>` through git's own bash completion, which calls
/// `_git_simm` for the external command.
#[test]
fn bash_completion_works_under_git() {
    let git_completion = ["/usr/share/bash-completion/completions/git"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
    let Some(git_completion) = git_completion else {
        eprintln!("git's bash completion is not installed; `git simm <TAB>` not checked");
        return;
    };
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        bash_with_completion(&format!(
            "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; \
             COMP_POINT=${{#COMP_LINE}}; __git_wrap__git_main; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            git_completion.display(),
            line,
            words.len() - 1,
        ))
        .expect("bash exists when its completions do")
    };
    let got = complete("git simm ren");
    assert_eq!(
        got.split_whitespace().collect::<Vec<_>>(),
        ["renames"],
        "{got}"
    );
    // Options after git's own, before and after the subcommand.
    let got = complete("git -C . simm check --sta");
    assert_eq!(
        got.split_whitespace().collect::<Vec<_>>(),
        ["--staged"],
        "{got}"
    );
}

#[test]
fn man_page_names_every_subcommand_and_renders() {
    let page = simm_ok(&["manpage"]);
    assert!(
        page.lines().any(|l| l.starts_with(".TH GIT-SIMM 1 ")),
        "{page}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH NOTES"] {
        assert!(page.contains(section), "no {section}");
    }
    for sub in subcommands() {
        let name = format!("git-simm-{sub}(1)").replace('-', "\\-");
        assert!(page.contains(&name), "no {name}");
    }
    let mut groff = Command::new("groff");
    groff.args(["-man", "-Tutf8", "-ww"]);
    let Some(o) = with_stdin(&mut groff, &page) else {
        eprintln!("no groff here; man page rendering not checked");
        return;
    };
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "groff: {}",
        stderr(&o)
    );
    // Bold and underlining are overstruck: `N\bN`, `_\bx`.
    let mut text = String::new();
    for c in stdout(&o).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    let rendered: HashSet<&str> = text.lines().map(str::trim).collect();
    // The configuration, environment and exit status notes of `--help` keep
    // their lines and columns (they are set without filling).
    let help = simm_ok(&["--help"]);
    let notes: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Configuration"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(notes.len() > 5, "{help}");
    for line in notes {
        assert!(rendered.contains(line), "{line:?} not in:\n{text}");
    }
}

/// `manpage --dir` writes a page per command where `man` finds them, and
/// `git simm --help` (which git turns into `git help simm`, which runs
/// `man git-simm`) shows git-simm(1).
#[test]
fn man_pages_are_found_by_man_and_git_help() {
    let dir = tempfile::tempdir().expect("tempdir");
    let man1 = dir.path().join("man1");
    simm_ok(&["manpage", "--dir", man1.to_str().expect("utf-8")]);
    let mut names: Vec<String> = std::fs::read_dir(&man1)
        .expect("man1")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = subcommands()
        .iter()
        .map(|s| format!("git-simm-{s}.1"))
        .chain(["git-simm.1".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    for name in &names {
        let page = std::fs::read_to_string(man1.join(name)).expect("page");
        let title = name.trim_end_matches(".1").to_uppercase();
        assert!(
            page.lines()
                .any(|l| l.starts_with(&format!(".TH {title} 1 "))),
            "{name}"
        );
        assert!(page.contains(".SH SYNOPSIS"), "{name}");
    }
    let renames = std::fs::read_to_string(man1.join("git-simm-renames.1")).expect("page");
    assert!(
        renames.contains("git\\-simm renames"),
        "synopsis names the command"
    );
    assert!(
        renames.contains("git\\-simm(1)"),
        "points back to git-simm(1)"
    );

    // `man` and `git help` look the pages up by name in MANPATH.
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("no man here; lookup not checked");
        return;
    }
    let r = Repo::new();
    let o = git_env(Command::new("git").current_dir(&r.path))
        .env("PATH", path_with_simm())
        .env("MANPATH", dir.path())
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .args(["simm", "--help"])
        .output()
        .expect("run git simm --help");
    assert!(o.status.success(), "git simm --help: {}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("GIT-SIMM(1)"), "{text}");
    assert!(text.contains("git-simm-renames(1)"), "{text}");
    let o = Command::new("man")
        .env("MANPATH", dir.path())
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .arg("git-simm-renames")
        .output()
        .expect("run man");
    assert!(o.status.success(), "man: {}", stderr(&o));
    assert!(
        stdout(&o).contains("--find-copies-harder"),
        "{}",
        stdout(&o)
    );
}

/// Every subcommand's help ends with examples of its use.
#[test]
fn every_subcommand_help_has_examples() {
    for sub in subcommands() {
        let help = simm_ok(&[&sub, "--help"]);
        let examples = help
            .split_once("Examples:\n")
            .map(|(_, e)| e)
            .unwrap_or_else(|| panic!("{sub} --help has no examples:\n{help}"));
        assert!(
            examples
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("git simm {sub}"))),
            "{sub}'s examples do not run it:\n{examples}"
        );
    }
}

/// Bad option values are usage errors, as git treats them: exit 129 and
/// clap's message naming the option, not a fatal error (128) after the
/// repository was opened.
#[test]
fn bad_option_values_are_usage_errors() {
    let r = sources_repo();
    let cases: &[(&[&str], &str)] = &[
        (
            &["similar", "--threshold", "abc", "src/store.rs"],
            "--threshold",
        ),
        (&["similar", "-t", "50%%", "src/store.rs"], "--threshold"),
        (
            &["renames", "--find-renames=abc", "HEAD", "HEAD"],
            "--find-renames",
        ),
        (&["renames", "-Mabc", "HEAD", "HEAD"], "--find-renames"),
        (&["renames", "-C5x", "HEAD", "HEAD"], "--find-copies"),
        (
            &["renames", "--diff-filter=Q", "HEAD", "HEAD"],
            "--diff-filter",
        ),
        (
            &["check", "--staged", "--rename-threshold", "1.2.3"],
            "--rename-threshold",
        ),
        (
            &["check", "--staged", "--copy-threshold", "x"],
            "--copy-threshold",
        ),
    ];
    for (args, needle) in cases {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(129), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: invalid value"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // Good values still parse, in each of git's spellings.
    for ok in [
        &["renames", "-M50%", "HEAD", "HEAD"][..],
        &["renames", "-M0.5", "HEAD", "HEAD"],
        &["renames", "-C", "-C", "HEAD", "HEAD"],
    ] {
        let o = r.simm(ok);
        assert!(o.status.success(), "{ok:?}: {}", stderr(&o));
    }
}

// ---------------------------------------------------------------------------
// Ctrl-C: SIGINT stops the work promptly, exits 130 and leaves a store the
// next run uses.

/// Moments to interrupt a run at: fixed delays from its start, and the
/// start of given steps (a `GIT_SIMM_TRACE` line marks the end of the step
/// before).
fn moments(steps: &[&'static str]) -> Vec<util::When> {
    use std::time::Duration;
    let mut at: Vec<util::When> = [0, 50, 150, 300]
        .into_iter()
        .map(|ms| util::When::After(Duration::from_millis(ms)))
        .collect();
    at.extend(steps.iter().map(|s| util::When::Trace(s)));
    at
}

/// Nothing but whole tables in the store: a table being written when the
/// run stopped would have left its temporary file.
fn store_is_tidy(r: &Repo, what: &str) {
    let Ok(rd) = std::fs::read_dir(r.store_dir()) else {
        return;
    };
    for e in rd {
        let name = e.expect("entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            !name.starts_with('.') && !name.contains("tmp"),
            "{what}: {name} left in the store"
        );
    }
}

#[test]
fn fingerprint_all_stops_on_sigint_and_the_store_stays_valid() {
    let r = util::moved_files_repo(4000, 100);
    let expected = r.simm(&["--no-cache", "fingerprint", "--all"]);
    assert!(expected.status.success(), "{}", stderr(&expected));
    let mut kept = 0;
    for when in moments(&["fingerprint: blobs listed"]) {
        let what = format!("fingerprint --all, SIGINT {when:?}");
        let _ = std::fs::remove_dir_all(r.store_dir());
        let s = util::interrupt(
            simm_command()
                .current_dir(&r.path)
                .args(["fingerprint", "--all", "-q"]),
            when,
            util::To::Process,
        );
        util::assert_stopped(&s, &what);
        if s.took.is_some() && !tables(&r).is_empty() {
            kept += 1;
        }
        store_is_tidy(&r, &what);
        // What the interrupted run stored is right, and the next run
        // completes it.
        let o = r.simm(&["fingerprint", "--all"]);
        assert!(o.status.success(), "{what}, then: {}", stderr(&o));
        assert!(o.stdout == expected.stdout, "{what}: wrong fingerprints");
    }
    eprintln!("{kept} interrupted run(s) kept fingerprints for the next");
}

#[test]
fn renames_stops_on_sigint_at_any_step() {
    let r = util::moved_files_repo(4000, 60);
    let expected = r.simm(&["--no-cache", "renames", "HEAD~1", "HEAD"]);
    assert!(expected.status.success(), "{}", stderr(&expected));
    let steps = [
        "exact and basename passes",
        "fingerprints of sources and destinations",
        "candidate search",
    ];
    for when in moments(&steps) {
        let what = format!("renames, SIGINT {when:?}");
        // A cold store: fingerprinting is part of the run.
        let _ = std::fs::remove_dir_all(r.store_dir());
        let s = util::interrupt(
            simm_command()
                .current_dir(&r.path)
                .args(["renames", "HEAD~1", "HEAD"]),
            when,
            util::To::Process,
        );
        util::assert_stopped(&s, &what);
        store_is_tidy(&r, &what);
        let o = r.simm(&["renames", "HEAD~1", "HEAD"]);
        assert!(o.status.success(), "{what}, then: {}", stderr(&o));
        assert!(o.stdout == expected.stdout, "{what}: different renames");
    }
}

/// `renames --json | head` said "fatal: Broken pipe" and exited
/// 128 where the text output (and git) end quietly with 0.
#[test]
fn json_into_a_closed_pipe_ends_quietly_as_text_does() {
    let r = util::moved_files_repo(400, 20);
    for args in [
        &["renames", "--json", "HEAD~1", "HEAD"][..],
        &["renames", "HEAD~1", "HEAD"][..],
    ] {
        let mut child = simm_command()
            .current_dir(&r.path)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run git-simm");
        // `head -c 1`: read a little, then close the pipe.
        {
            use std::io::Read;
            let mut stdout = child.stdout.take().expect("stdout");
            let mut first = [0u8; 1];
            stdout.read_exact(&mut first).expect("some output");
        }
        let o = child.wait_with_output().expect("wait");
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

/// `fingerprint --all -q` drew progress on a terminal. Run under
/// a pseudo-terminal (`script`), it prints nothing at all, while without
/// `-q` the same run draws progress there.
#[test]
fn fingerprint_all_quiet_draws_no_progress_on_a_terminal() {
    let r = util::moved_files_repo(3000, 60);
    let simm = env!("CARGO_BIN_EXE_git-simm");
    let run = |flags: &str| -> Option<String> {
        let mut cmd = Command::new("script");
        util::git_env(&mut cmd);
        let o = cmd
            .current_dir(&r.path)
            .args([
                "-qec",
                &format!("'{simm}' fingerprint --all --no-cache {flags} >/dev/null"),
                "/dev/null",
            ])
            .output()
            .ok()?;
        o.status.success().then(|| util::lossy(&o.stdout))
    };
    let Some(quiet) = run("-q") else {
        eprintln!("no script(1) here; progress on a terminal not checked");
        return;
    };
    assert_eq!(quiet, "", "-q drew on the terminal");
    let loud = run("").unwrap_or_default();
    if loud.is_empty() {
        eprintln!("the run was too quick to draw progress; the control is moot");
    }
}

/// A revision that does not resolve was reported with gix's
/// account of its walk (`delegate.traverse(NthAncestor(999999)) failed`);
/// git-simm says what `git diff` says.
#[test]
fn unknown_revisions_are_reported_as_git_diff_reports_them() {
    let r = sources_repo();
    for (rev, other) in [
        ("HEAD~999999", "HEAD"),
        ("no-such-rev", "HEAD"),
        ("HEAD", "HEAD~999999"),
    ] {
        let git = r.git_output(&["diff", "--name-status", rev, other]);
        let o = r.simm(&["renames", rev, other]);
        assert_eq!(o.status.code(), git.status.code(), "{rev} {other}");
        assert_eq!(stderr(&o), util::stderr(&git), "{rev} {other}");
    }
}

/// The README's quick start says what fills the store: a range
/// whose renames are all exact fingerprints nothing (no store appears),
/// `similar` fingerprints the tree and fills it.
#[test]
fn store_appears_only_when_something_is_fingerprinted() {
    let r = Repo::new();
    let text = corpus_text("rust/serde_json-1.0.133/src/raw.rs");
    r.write("a.rs", &text);
    r.commit_all("one");
    r.git_mv("a.rs", "b.rs");
    r.commit_all("two");
    let o = r.simm(&["renames", "HEAD~1", "HEAD"]);
    assert_eq!(
        stdout(&o),
        r.git_str(&["diff", "-M", "--name-status", "HEAD~1", "HEAD"])
    );
    assert!(!r.store_dir().exists());
    let o = r.simm(&["similar", "b.rs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(r.store_dir().exists());
}

/// A history with a move into `dir/`, a rename inside `other/`, an edit,
/// and a side branch, for comparing `renames` with `git diff -M`.
fn ranges_repo() -> Repo {
    let r = Repo::new();
    let text = |i: usize| -> Vec<u8> {
        (0..200)
            .map(|n| format!("line {i} {n}\n"))
            .collect::<String>()
            .into_bytes()
    };
    for i in 1..=3 {
        r.write(format!("other/f{i}.txt"), &text(i));
    }
    r.write("dir/keep.txt", &text(9));
    r.commit_all("a");
    r.git(&["branch", "side"]);
    r.git_mv("other/f1.txt", "dir/f1.txt");
    r.git_mv("other/f2.txt", "other/g2.txt");
    r.write("dir/keep.txt", &[text(9), b"x\n".to_vec()].concat());
    r.commit_all("b");
    r.git(&["checkout", "-q", "side"]);
    r.write("side.txt", &text(7));
    r.commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r
}

/// `renames` reads `A..B`, `A...B` (from the merge base) and
/// pathspecs after `--` as `git diff -M` does; a pathspec limits the diff
/// before rename detection, so a file moved into `dir/` from outside is an
/// add.
#[test]
fn renames_takes_ranges_and_pathspecs_as_git_diff_does() {
    let r = ranges_repo();
    let cases: &[&[&str]] = &[
        &["main~1..main"],
        &["side...main"],
        &["main...side"],
        &["..side"],
        &["side.."],
        &["main~1", "main", "--", "dir/"],
        &["main~1", "main", "--", "dir"],
        &["main~1", "main", "--", "other", "dir/keep.txt"],
        &["main~1", "main", "--", "*.txt"],
        &["main~1..main", "--", "dir"],
        &["main~1", "main", "--", "nothing-here"],
    ];
    for args in cases {
        let git: Vec<&str> = ["diff", "-M", "--name-status"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        let simm: Vec<&str> = ["renames"].iter().chain(args.iter()).copied().collect();
        let o = r.simm(&simm);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), r.git_str(&git), "{args:?}");
    }
    assert!(stdout(&r.simm(&["renames", "main~1", "main", "--", "dir"])).contains("A\tdir/f1.txt"));
    // Relative to the current directory, as git's pathspecs are.
    let sub = r.path.join("dir");
    for spec in [".", "../other"] {
        let o = simm_in(&sub, &["renames", "main~1", "main", "--", spec]);
        let git = git_command(&sub)
            .args(["diff", "-M", "--name-status", "main~1", "main", "--", spec])
            .output()
            .expect("git");
        assert_eq!(stdout(&o), stdout(&git), "{spec}");
    }
    // Work tree mode with a pathspec.
    r.write("dir/keep.txt", b"changed\n");
    r.write("other/f3.txt", b"changed too\n");
    let o = r.simm(&["renames", "--", "dir"]);
    assert_eq!(
        stdout(&o),
        r.git_str(&["diff", "-M", "--name-status", "--", "dir"])
    );
}

/// `--exit-code` and `--quiet` as `git diff` has them.
#[test]
fn renames_exit_code_and_quiet_as_git_diff() {
    let r = ranges_repo();
    for args in [
        &["--exit-code", "main~1", "main"][..],
        &["--quiet", "main~1", "main"][..],
        &["--exit-code", "main", "main"][..],
        &["--quiet", "main", "main"][..],
        &["--exit-code", "--diff-filter=R", "main~1", "main"][..],
        &["--exit-code", "--diff-filter=C", "main~1", "main"][..],
        &["--quiet", "main~1", "main", "--", "nothing-here"][..],
    ] {
        let git: Vec<&str> = ["diff", "-M", "--name-status"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        let g = r.git_output(&git);
        let simm: Vec<&str> = ["renames"].iter().chain(args.iter()).copied().collect();
        let o = r.simm(&simm);
        assert_eq!(o.status.code(), g.status.code(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&g), "{args:?}");
    }
}

/// `similar -z` prints paths verbatim and ends records with NUL,
/// as `git ls-tree -z` does.
#[test]
fn similar_z_prints_raw_paths_with_nul() {
    let r = Repo::new();
    let text = corpus_text("rust/serde_json-1.0.133/src/raw.rs");
    r.write("tab\there.rs", &text);
    r.write("plain.rs", b"unrelated\n");
    r.commit_all("one");
    let o = r.simm(&["similar", "-z", "tab\there.rs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, b"100%\ttab\there.rs\0");
    let ls = r.git(&["ls-tree", "-z", "--name-only", "HEAD", "tab\there.rs"]);
    assert!(o.stdout.ends_with(&ls));
    let o = r.simm(&["similar", "tab\there.rs"]);
    assert_eq!(stdout(&o), "100%\t\"tab\\there.rs\"\n");
}

/// JSON gave a non-UTF-8 name as git's quoted form in the same
/// string a UTF-8 name uses, so `caf\351.txt` (Latin-1) and a file really
/// named `"caf\351.txt"` printed the same. Now `path_bytes` carries the
/// bytes of a non-UTF-8 name, and every path read back from JSON equals
/// what `git diff --name-status -z` prints.
#[test]
fn json_paths_are_unambiguous_and_match_git_z() {
    let r = Repo::new();
    r.write("base.txt", b"base\n");
    r.commit_all("one");
    r.write(b"caf\xe9.txt", b"latin-1 name\n");
    r.write(b"\"caf\\351.txt\"", b"a name that looks quoted\n");
    r.commit_all("two");
    let o = r.simm(&["renames", "--json", "HEAD~1", "HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let paths: Vec<Vec<u8>> = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            let side = &c["new"];
            match side["path_bytes"].as_array() {
                Some(bytes) => bytes
                    .iter()
                    .map(|b| u8::try_from(b.as_u64().expect("number")).expect("byte"))
                    .collect(),
                None => side["path"].as_str().expect("path").as_bytes().to_vec(),
            }
        })
        .collect();
    let git = r.git(&["diff", "--name-status", "-z", "HEAD~1", "HEAD"]);
    let from_git: Vec<Vec<u8>> = git
        .split(|&b| b == 0)
        .collect::<Vec<_>>()
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| c[1].to_vec())
        .collect();
    assert_eq!(paths, from_git);
    assert_eq!(paths.len(), 2);
    assert_ne!(paths[0], paths[1]);
    let utf8 = doc["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["new"]["path_bytes"].is_null())
        .count();
    assert_eq!(utf8, 1);
}

/// In work-tree mode a checked-out submodule that is dirty or at
/// another commit is `M`, as `git diff --name-status HEAD` prints it (and
/// untracked files in it do not count); a conflicted file shows as git
/// shows it against HEAD.
#[test]
fn work_tree_submodules_and_conflicts_as_git_diff_head() {
    let sub = Repo::new();
    sub.write("s.txt", b"s\n");
    sub.commit_all("s");
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &sub.path.to_string_lossy(),
        "sub",
    ]);
    r.commit_all("base");
    let in_sub = |args: &[&str]| {
        let o = git_command(&r.path.join("sub"))
            .args(args)
            .output()
            .expect("git");
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    };
    let same = |what: &str| {
        let o = r.simm(&["renames"]);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            r.git_str(&["diff", "--name-status", "HEAD"]),
            "{what}"
        );
    };
    same("clean");
    std::fs::write(r.path.join("sub/s.txt"), b"dirty\n").expect("write");
    same("dirty");
    assert_eq!(stdout(&r.simm(&["renames"])), "M\tsub\n");
    in_sub(&["commit", "-q", "-am", "moved"]);
    same("moved");
    in_sub(&["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(r.path.join("sub/untracked"), b"u\n").expect("write");
    same("untracked only");
    std::fs::remove_file(r.path.join("sub/untracked")).expect("rm");

    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("a.txt", b"b\n");
    r.commit_all("b");
    r.git(&["checkout", "-q", "main"]);
    r.write("a.txt", b"c\n");
    r.commit_all("c");
    assert!(!r.git_output(&["merge", "-q", "other"]).status.success());
    same("conflict");
}

/// `fingerprint <dir>` walked ignored files (9.4 s in target/).
/// In a repository it lists what `git ls-files --cached --others
/// --exclude-standard` lists; `--no-exclude-standard` walks everything.
#[test]
fn fingerprint_of_a_directory_skips_what_git_ignores() {
    let r = Repo::new();
    r.write(".gitignore", b"build/\n*.log\n");
    r.write("src/a.rs", b"fn a() {}\n");
    r.commit_all("one");
    r.write("src/new.rs", b"fn new() {}\n");
    r.write("src/debug.log", b"noise\n");
    r.write("build/out.o", b"object\n");
    r.write("src/forced.log", b"tracked though ignored\n");
    r.git(&["add", "-f", "src/forced.log"]);
    let names = |o: std::process::Output| -> Vec<String> {
        assert!(o.status.success(), "{}", stderr(&o));
        let mut v: Vec<String> = stdout(&o)
            .lines()
            .filter_map(|l| l.split(' ').nth(2))
            .map(|n| n.trim_start_matches("./").to_owned())
            .collect();
        v.sort();
        v
    };
    let mut git: Vec<String> = r
        .git_str(&["ls-files", "--cached", "--others", "--exclude-standard"])
        .lines()
        .map(str::to_owned)
        .collect();
    git.sort();
    assert_eq!(names(r.simm(&["fingerprint", "--", "."])), git);
    let all = names(r.simm(&["fingerprint", "--no-exclude-standard", "--", "."]));
    assert!(all.contains(&"build/out.o".to_owned()), "{all:?}");
    assert!(all.contains(&"src/debug.log".to_owned()), "{all:?}");
    // From a subdirectory, through `..`.
    let o = simm_in(&r.path.join("src"), &["fingerprint", "--", "../src"]);
    let sub: Vec<String> = names(o);
    assert_eq!(
        sub,
        ["../src/a.rs", "../src/forced.log", "../src/new.rs"].map(String::from)
    );
}

/// A store directory that is a file stops a command with one account of
/// why, not the same cause twice.
#[test]
fn a_store_that_is_a_file_is_reported_once() {
    let r = sources_repo();
    std::fs::write(r.path.join(".git/simm"), b"not a directory\n").expect("write");
    let o = r.simm(&["fingerprint", "HEAD"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    assert!(err.contains(".git/simm"), "{err}");
}

/// Before the first commit, a `HEAD` the command only implies is the
/// empty tree, as git takes it (`git diff` works there): `similar` finds
/// nothing, `export` writes no rows, `groups` has no files. Named on the
/// command line, it is an unknown revision, as `git ls-tree HEAD` says.
#[test]
fn an_implied_unborn_head_is_the_empty_tree() {
    let r = Repo::new();
    r.write("a.rs", &util::corpus_text("rust/regex-1.11.1/src/lib.rs"));
    let o = r.simm(&["similar", "a.rs"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = r.simm(&["export", "-o", "out.parquet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("Exported 0 rows"), "{}", stderr(&o));
    let o = r.simm(&["groups"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let git = r.git_output(&["ls-tree", "HEAD"]);
    assert_eq!(git.status.code(), Some(128));
    for args in [
        &["similar", "a.rs", "HEAD"][..],
        &["export", "-o", "out.parquet", "HEAD"],
        &["fingerprint", "HEAD"],
    ] {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("unknown revision"), "{}", stderr(&o));
    }
}

/// A directory named through a symbolic link into the work tree: git
/// lists its files by their resolved names, and `fingerprint` walked the
/// link's spelling, matched none of them and printed nothing (exit 0).
#[test]
fn a_directory_through_a_symlink_to_the_work_tree_lists_its_files() {
    let r = Repo::new();
    r.write(
        "sub/a.rs",
        &util::corpus_text("rust/regex-1.11.1/src/lib.rs"),
    );
    r.write(
        "sub/deep/b.rs",
        &util::corpus_text("rust/regex-1.11.1/src/error.rs"),
    );
    r.write(".gitignore", b"ignored.rs\n");
    r.write("sub/ignored.rs", b"fn ignored() {}\n");
    r.commit_all("base");
    let link = r.path.with_file_name("link");
    std::os::unix::fs::symlink(&r.path, &link).expect("symlink");
    let o = r.simm(&["fingerprint", link.join("sub").to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let names: Vec<&str> = out.lines().filter_map(|l| l.split(' ').nth(2)).collect();
    assert_eq!(names.len(), 2, "{out}");
    assert!(names[0].ends_with("link/sub/a.rs"), "{out}");
    assert!(names[1].ends_with("link/sub/deep/b.rs"), "{out}");
}

/// With `GIT_DIR` set and neither `GIT_WORK_TREE` nor `core.worktree`,
/// git takes the current directory for the top of the work tree; gix took
/// the directory above the git dir, so from a subdirectory `renames`
/// printed nothing where git lists every file outside it as deleted.
#[test]
fn git_dir_alone_makes_the_current_directory_the_work_tree() {
    let r = Repo::new();
    r.write(
        "top.rs",
        &util::corpus_text("rust/regex-1.11.1/src/error.rs"),
    );
    r.write(
        "sub/a.rs",
        &util::corpus_text("rust/regex-1.11.1/src/lib.rs"),
    );
    r.commit_all("base");
    let sub = r.path.join("sub");
    let git_dir = r.path.join(".git");
    let git = util::git_command(&sub)
        .env("GIT_DIR", &git_dir)
        .args(["diff", "--name-status", "-l0", "--no-rename-empty", "HEAD"])
        .output()
        .expect("run git");
    assert!(git.status.success());
    assert!(String::from_utf8_lossy(&git.stdout).contains("D\ttop.rs"));
    let ours = util::simm_command()
        .current_dir(&sub)
        .env("GIT_DIR", &git_dir)
        .args(["renames", "HEAD"])
        .output()
        .expect("run git-simm");
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&git.stdout)
    );
}

/// A FIFO named on its own is refused; inside a directory it is skipped,
/// as git lists no such file. It printed nothing and succeeded.
#[test]
fn a_fifo_named_on_its_own_is_refused() {
    let r = Repo::new();
    r.write(
        "dir/a.rs",
        &util::corpus_text("rust/regex-1.11.1/src/lib.rs"),
    );
    let fifo = r.path.join("dir/pipe");
    let o = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .output()
        .expect("run mkfifo");
    assert!(o.status.success());
    let o = r.simm(&["fingerprint", "--", "dir/pipe"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    let o = r.simm(&["fingerprint", "--no-exclude-standard", "dir"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}
