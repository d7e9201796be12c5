//! Paths and revisions that are not UTF-8 are taken as git takes them, as
//! bytes: file names on disk (`caf\351.txt` in Latin-1), `<rev>:<path>`,
//! pathspecs after `--`, branch names, `-C <dir>` and `origin`'s
//! directory, in every command that takes them; git's own output is the
//! oracle where it has one.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Output;

use crate::util::{Repo, corpus_text, lossy, simm_command};

fn os(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

fn run(repo: &Repo, args: &[&OsStr]) -> Output {
    simm_command()
        .current_dir(&repo.path)
        .args(args)
        .output()
        .expect("run git-simm")
}

fn git(repo: &Repo, args: &[&OsStr]) -> Vec<u8> {
    let o = crate::util::git_command(&repo.path)
        .args(args)
        .output()
        .expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", lossy(&o.stderr));
    o.stdout
}

fn ok(what: &str, o: &Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "{what}: {:?}: {}",
        o.status,
        lossy(&o.stderr)
    );
    o.stdout.clone()
}

/// `caf\351.txt`, `d\351/x.txt` and, in the second commit, `other.txt`
/// moved to `n\351w.txt` with an edit; the branch `b\351` on the first.
fn latin1_repo() -> Repo {
    let repo = Repo::new();
    let text = corpus_text("rust/toml-0.8.19/src/ser.rs");
    let other = corpus_text("rust/memchr-2.8.3/src/memchr.rs");
    repo.write(b"caf\xe9.txt", &text);
    repo.write(b"d\xe9/x.txt", &text[..text.len() * 2 / 3]);
    repo.write("other.txt", &other);
    repo.commit_all("one");
    git(&repo, &[os(b"branch"), os(b"b\xe9")]);
    repo.mv("other.txt", b"n\xe9w.txt");
    let mut edited = other.clone();
    edited.extend_from_slice(b"// one more line\n");
    repo.write(b"n\xe9w.txt", &edited);
    repo.commit_all("two");
    repo
}

#[test]
fn arguments_that_are_not_utf8_are_taken_as_bytes() {
    let repo = latin1_repo();
    let file = os(b"caf\xe9.txt");

    // similar: the file on disk, and the same blob as `<rev>:<path>`.
    let by_path = ok("similar", &run(&repo, &[os(b"similar"), file]));
    assert!(
        by_path.starts_with(b"100%\t\"caf\\351.txt\"\n"),
        "{}",
        lossy(&by_path)
    );
    let by_rev = ok(
        "similar <rev>:<path>",
        &run(
            &repo,
            &[os(b"similar"), os(b"HEAD:caf\xe9.txt"), os(b"HEAD")],
        ),
    );
    assert_eq!(by_path, by_rev);

    // fingerprint: the path, `<rev>:<path>` and a directory, all the one
    // blob git names.
    let id =
        String::from_utf8(git(&repo, &[os(b"rev-parse"), os(b"HEAD:caf\xe9.txt")])).expect("hex");
    let by_id = ok(
        "fingerprint <id>",
        &run(&repo, &[os(b"fingerprint"), os(id.trim().as_bytes())]),
    );
    let fingerprint = |out: &[u8]| out.split(|&b| b == b' ').next().map(<[u8]>::to_vec);
    for arg in [&b"caf\xe9.txt"[..], b"HEAD:caf\xe9.txt"] {
        let out = ok("fingerprint", &run(&repo, &[os(b"fingerprint"), os(arg)]));
        assert_eq!(fingerprint(&out), fingerprint(&by_id), "{}", lossy(arg));
    }
    let dir = ok(
        "fingerprint <dir>",
        &run(&repo, &[os(b"fingerprint"), os(b"d\xe9")]),
    );
    assert!(lossy(&dir).contains("\"d\\351/x.txt\""), "{}", lossy(&dir));
    let after = ok(
        "fingerprint -- <path>",
        &run(&repo, &[os(b"fingerprint"), os(b"--"), file]),
    );
    assert_eq!(fingerprint(&after), fingerprint(&by_id));

    // renames: a pathspec after `--`, a branch named in Latin-1, and
    // `<rev>:<dir>` trees, each as git diff answers.
    for (args, git_args) in [
        (
            vec![
                os(b"renames"),
                os(b"HEAD~"),
                os(b"HEAD"),
                os(b"--"),
                os(b"n\xe9w.txt"),
            ],
            vec![os(b"HEAD~"), os(b"HEAD"), os(b"--"), os(b"n\xe9w.txt")],
        ),
        (
            vec![os(b"renames"), os(b"b\xe9"), os(b"HEAD")],
            vec![os(b"b\xe9"), os(b"HEAD")],
        ),
        (
            vec![os(b"renames"), os(b"b\xe9:d\xe9"), os(b"HEAD:d\xe9")],
            vec![os(b"b\xe9:d\xe9"), os(b"HEAD:d\xe9")],
        ),
    ] {
        let ours = ok("renames", &run(&repo, &args));
        let mut full = vec![os(b"diff"), os(b"-M"), os(b"--name-status")];
        full.extend(git_args);
        assert_eq!(lossy(&ours), lossy(&git(&repo, &full)), "{args:?}");
    }

    // groups, export and origin take trees and directories by those names.
    for args in [
        vec![os(b"groups"), os(b"HEAD:d\xe9")],
        #[cfg(feature = "export")]
        vec![
            os(b"export"),
            os(b"-o"),
            os(b"out.parquet"),
            os(b"HEAD:d\xe9"),
        ],
        vec![os(b"origin"), os(b"d\xe9"), os(b"--in"), os(b".")],
    ] {
        let o = run(&repo, &args);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{args:?}: {:?}: {}",
            o.status,
            lossy(&o.stderr)
        );
    }

    // compare: a Latin-1 path on disk against the same blob by
    // `<rev>:<path>`; the names come back exact.
    let o = run(
        &repo,
        &[
            os(b"compare"),
            os(b"--json"),
            file,
            os(b"HEAD~:caf\xe9.txt"),
        ],
    );
    let doc: serde_json::Value = serde_json::from_slice(&ok("compare", &o)).expect("json");
    assert_eq!(doc["git_score"], 100, "{doc}");
    assert_eq!(
        doc["a"]["name_bytes"],
        serde_json::json!(b"caf\xe9.txt".to_vec())
    );
    assert_eq!(
        doc["b"]["name_bytes"],
        serde_json::json!(b"HEAD~:caf\xe9.txt".to_vec())
    );
    let text = ok("compare", &run(&repo, &[os(b"compare"), file, file]));
    assert!(
        text.starts_with(b"a: \"caf\\351.txt\" ("),
        "{}",
        lossy(&text)
    );

    // `-C <dir>` with a Latin-1 name.
    let o = simm_command()
        .current_dir(&repo.path)
        .arg("-C")
        .arg(OsString::from_vec(b"d\xe9".to_vec()))
        .args(["fingerprint", "x.txt"])
        .output()
        .expect("run");
    ok("-C", &o);
}

/// An empty argument is refused in git's words, never taken as "every
/// file" (git: "empty string is not a valid pathspec").
#[test]
fn an_empty_path_is_refused_as_git_refuses_it() {
    let repo = latin1_repo();
    let git_says = crate::util::git_command(&repo.path)
        .args(["ls-files", ""])
        .output()
        .expect("git");
    assert_eq!(git_says.status.code(), Some(128));
    for args in [&["fingerprint", ""][..], &["fingerprint", "--", ""]] {
        let o = repo.simm(args);
        assert_eq!(o.status.code(), Some(128), "{args:?}: {}", lossy(&o.stderr));
        assert_eq!(lossy(&o.stderr), lossy(&git_says.stderr), "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?} printed fingerprints");
    }
}

/// `export`'s `path` column names every path once: a UTF-8 name as `git
/// -c core.quotePath=false ls-tree` prints it (quoted where git quotes any
/// name: `"`, `\`, control characters), any other name in git's quoted
/// form. A UTF-8 name that looks quoted (`"caf\351.txt"`, quotes
/// included) must not come out as the Latin-1 `caf\351.txt` does (the
/// `parquet_export` fuzz target's finding).
#[cfg(feature = "export")]
#[test]
fn exported_paths_are_unambiguous_and_quoted_as_git_quotes_them() {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;

    let repo = Repo::new();
    let text = corpus_text("rust/toml-0.8.19/src/ser.rs");
    let names: [&[u8]; 6] = [
        b"caf\xe9.txt",
        b"\"caf\\351.txt\"",
        b"tab\there.txt",
        b"back\\slash.txt",
        "caf\u{e9}.txt".as_bytes(),
        b"plain.txt",
    ];
    for (i, name) in names.iter().enumerate() {
        let mut t = text.clone();
        t.extend_from_slice(format!("// {i}\n").as_bytes());
        repo.write(*name, &t);
    }
    repo.commit_all("names");
    ok(
        "export",
        &run(
            &repo,
            &[os(b"export"), os(b"-o"), os(b"out.parquet"), os(b"HEAD")],
        ),
    );
    let file = std::fs::File::open(repo.path.join("out.parquet")).expect("open export");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .build()
        .expect("reader");
    let mut exported: Vec<String> = Vec::new();
    for batch in reader {
        let batch = batch.expect("batch");
        let col = batch
            .column_by_name("path")
            .expect("path")
            .as_string::<i32>();
        exported.extend((0..col.len()).map(|i| col.value(i).to_owned()));
    }

    // git's oracle: core.quotePath=false where that prints UTF-8, git's
    // default quoting (octal escapes) for the names it would print raw.
    let raw = git(
        &repo,
        &[
            os(b"-c"),
            os(b"core.quotePath=false"),
            os(b"ls-tree"),
            os(b"-r"),
            os(b"--name-only"),
            os(b"HEAD"),
        ],
    );
    let quoted = git(
        &repo,
        &[os(b"ls-tree"), os(b"-r"), os(b"--name-only"), os(b"HEAD")],
    );
    let mut expected: Vec<String> = raw
        .split(|&b| b == b'\n')
        .zip(quoted.split(|&b| b == b'\n'))
        .filter(|(r, _)| !r.is_empty())
        .map(|(r, q)| match std::str::from_utf8(r) {
            Ok(s) => s.to_owned(),
            Err(_) => lossy(q),
        })
        .collect();
    exported.sort();
    expected.sort();
    assert_eq!(exported, expected);
    let mut distinct = exported.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), names.len(), "{exported:?}");
}

/// `core.quotePath=false` prints bytes >= 0x80 as they are, in the
/// repository's configuration or from `git -c` (the environment git
/// passes it in), as git prints them; a control character is still
/// quoted; a value git does not take for a boolean stops the command.
#[test]
fn quote_path_false_prints_paths_as_git_does() {
    let repo = latin1_repo();
    let text = corpus_text("rust/toml-0.8.19/src/de.rs");
    repo.write("ünïcode.rs", &text);
    repo.write(b"tab\there.rs", &text[..text.len() / 2]);
    repo.commit_all("three");
    repo.mv("ünïcode.rs", "ünïcode2.rs");
    repo.mv(b"tab\there.rs", b"tab\there2.rs");
    repo.commit_all("four");
    let diff = [os(b"HEAD~3"), os(b"HEAD")];
    let default_git = git(
        &repo,
        &[os(b"diff"), os(b"--name-status"), diff[0], diff[1]],
    );
    assert_eq!(
        ok("renames", &run(&repo, &[os(b"renames"), diff[0], diff[1]])),
        default_git
    );
    assert!(
        lossy(&default_git).contains("\\303\\274"),
        "{}",
        lossy(&default_git)
    );

    // From `git -c`: git hands it over in GIT_CONFIG_PARAMETERS.
    let want = git(
        &repo,
        &[
            os(b"-c"),
            os(b"core.quotePath=false"),
            os(b"diff"),
            os(b"--name-status"),
            diff[0],
            diff[1],
        ],
    );
    assert!(lossy(&want).contains("ünïcode2.rs"), "{}", lossy(&want));
    assert!(
        lossy(&want).contains("\"tab\\there2.rs\""),
        "{}",
        lossy(&want)
    );
    let ours = simm_command()
        .current_dir(&repo.path)
        .env("GIT_CONFIG_PARAMETERS", "'core.quotepath'='false'")
        .args([os(b"renames"), diff[0], diff[1]])
        .output()
        .expect("run git-simm");
    assert_eq!(ok("renames with git -c", &ours), want);

    // From the repository's configuration.
    git(&repo, &[os(b"config"), os(b"core.quotePath"), os(b"false")]);
    assert_eq!(
        ok("renames", &run(&repo, &[os(b"renames"), diff[0], diff[1]])),
        want
    );
    git(&repo, &[os(b"config"), os(b"core.quotePath"), os(b"maybe")]);
    let bad = run(&repo, &[os(b"renames"), diff[0], diff[1]]);
    assert_eq!(bad.status.code(), Some(128), "{}", lossy(&bad.stderr));
    assert!(
        lossy(&bad.stderr).contains("core.quotepath")
            || lossy(&bad.stderr).contains("core.quotePath"),
        "{}",
        lossy(&bad.stderr)
    );
}
