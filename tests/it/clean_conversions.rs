//! The work tree through git's clean conversions: git's diff hashes and
//! compares a work-tree file as `git add` would store it (convert.c,
//! `convert_to_git()`): CRLF to LF (`text`, `eol`, `core.autocrlf`), a
//! `filter` driver's `clean` command, `ident`. A file that differs from
//! its blob only by what the conversions undo is unchanged for git, and a
//! renamed one scores on its converted content. git-simm hashed the bytes
//! on disk: such files printed `M`, or paired at other scores.
//!
//! Every comparison runs with the index fresh and stale (a fresh index
//! vouches for the files, a stale one makes both tools read them).

use crate::renames_conformance::{IndexStates, Verdicts, edit_line, git_printed, head};
use crate::util::Repo;
use crate::util::to_crlf as crlf;

/// `text` with line `n` replaced by a line of its own, so a rename scores
/// below 100.
fn edited(text: &[u8], n: usize) -> Vec<u8> {
    edit_line(text, n, b"    an edited line of its own")
}

const C_FILE: &str = "python/jinja2-3.1.4/src/jinja2/compiler.py";
const PY_FILE: &str = "python/click-8.1.7/src/click/core.py";
const RS_FILE: &str = "rust/aho-corasick-1.1.5/src/ahocorasick.rs";

/// Attribute-driven conversions: `text=auto` files saved with CRLF,
/// `ident` expanded in the work tree, a clean filter, a failing filter
/// that is not required (git keeps the file as it is), and a file whose
/// index blob has CRs already (`text=auto` leaves it alone).
#[test]
fn work_tree_files_are_compared_as_git_would_store_them() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let c = head(C_FILE, 12_000);
    let py = head(PY_FILE, 9_000);
    let rs = head(RS_FILE, 10_000);
    // Committed with CRs before any attribute says to convert them.
    r.write("legacy.txt", &crlf(&head(PY_FILE, 5_000)));
    r.commit_all("legacy");
    r.write(
        ".gitattributes",
        b"*.txt text=auto\n*.c text=auto\n*.id ident\n*.up filter=up\n*.bad filter=bad\n*.gone filter=gone\n",
    );
    r.git(&["config", "filter.up.clean", "tr a-z A-Z"]);
    r.git(&["config", "filter.up.smudge", "cat"]);
    r.git(&["config", "filter.bad.clean", "false"]);
    r.git(&["config", "filter.gone.clean", "no-such-command-here"]);
    r.write("jv.c", &c);
    r.write("moved.c", &py);
    let mut with_id = b"/* $Id$ */\n".to_vec();
    with_id.extend_from_slice(&rs);
    r.write("lib.id", &with_id);
    r.write("shout.up", &head(RS_FILE, 6_000));
    r.write("keep.bad", &head(C_FILE, 4_000));
    r.write("keep.gone", &head(PY_FILE, 3_000));
    r.commit_all("base");

    // Unchanged for git: CRLF undone, `$Id$` collapsed, the filter's clean
    // output equal to the blob.
    r.write("jv.c", &crlf(&c));
    let mut expanded = b"/* $Id: 0123456789abcdef0123456789abcdef01234567 $ */\n".to_vec();
    expanded.extend_from_slice(&rs);
    r.write("lib.id", &expanded);
    // Renamed and edited with CRLF: scored on LF content.
    r.git(&["mv", "moved.c", "renamed.c"]);
    r.write("renamed.c", &crlf(&edited(&py, 40)));
    // Copied under new names, saved with CRLF (a copy source each for
    // `-C -C`, scored on the converted content).
    r.write("copy.c", &crlf(&edited(&c, 100)));
    r.write("copy.up", &head(RS_FILE, 6_000));
    r.git(&["add", "-N", "copy.c", "copy.up"]);
    // A CRLF file whose blob has CRs stays as it is.
    r.write("legacy.txt", &crlf(&edited(&head(PY_FILE, 5_000), 10)));
    // The failing filter: compared as it is on disk.
    r.write("keep.bad", &edited(&head(C_FILE, 4_000), 20));
    r.write("keep.gone", &edited(&head(PY_FILE, 3_000), 20));

    let states = IndexStates::new(&r);
    for flags in [
        &["-M"][..],
        &["-C"],
        &["-C", "-C"],
        &["-B", "-M"],
        &["-M30%"],
    ] {
        let fresh = v.compare_in(&r.path, flags, &["HEAD"], &|| states.fresh());
        let stale = v.compare_in(&r.path, flags, &["HEAD"], &|| states.stale());
        for out in [&fresh, &stale] {
            for unchanged in ["jv.c", "lib.id", "shout.up"] {
                assert!(
                    !out.lines().any(|l| l.ends_with(&format!("\t{unchanged}"))),
                    "git sees {unchanged} unchanged:\n{out}"
                );
            }
            git_printed(out, "M\tlegacy.txt");
            git_printed(out, "M\tkeep.bad");
            git_printed(out, "M\tkeep.gone");
        }
        // Unchanged through the filter, so a source of `-C -C` where the
        // index vouches for it. `jv.c`, saved again with CRLF, never is:
        // its size no longer matches the index's record, so no refresh
        // vouches for it (`ie_modified`), and git drops it as unchanged
        // before detection: `copy.c`, nearly a copy of it, is added.
        if flags == ["-C", "-C"] {
            git_printed(&fresh, "C100\tshout.up\tcopy.up");
        }
        git_printed(&fresh, "A\tcopy.c");
        git_printed(&stale, "A\tcopy.c");
    }
    // The index holds converted content already: the same either way.
    v.compare(&r, &["-C", "-C"], &["--cached"]);
    // A `required` driver that fails stops both.
    r.git(&["config", "filter.gone.required", "true"]);
    v.compare_in(&r.path, &["-M"], &["HEAD"], &|| states.stale());
}

/// `core.autocrlf=true` converts every text file with no attribute, and
/// `core.autocrlf=input` too; `-text` in `.gitattributes` opts one out.
/// Values are read as git reads them, whatever their case.
#[test]
fn core_autocrlf_converts_files_without_attributes() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let c = head(C_FILE, 8_000);
    let py = head(PY_FILE, 8_000);
    r.write(".gitattributes", b"raw.c -text\n");
    r.write("a.c", &c);
    r.write("raw.c", &head(RS_FILE, 6_000));
    r.write("old.py", &py);
    r.commit_all("base");
    r.write("a.c", &crlf(&c));
    r.write("raw.c", &crlf(&head(RS_FILE, 6_000)));
    r.git(&["mv", "old.py", "new.py"]);
    r.write("new.py", &crlf(&edited(&py, 30)));
    // Read as git reads it: `LF` is `lf` (gix refused it, and every read
    // failed), `Input` is `input` (gix took it for false).
    r.git(&["config", "core.eol", "LF"]);
    let states = IndexStates::new(&r);
    for setting in ["true", "input", "Input"] {
        r.git(&["config", "core.autocrlf", setting]);
        for flags in [&["-M"][..], &["-C", "-C"]] {
            for out in [
                v.compare_in(&r.path, flags, &["HEAD"], &|| states.fresh()),
                v.compare_in(&r.path, flags, &["HEAD"], &|| states.stale()),
            ] {
                assert!(!out.contains("\ta.c"), "a.c is unchanged for git:\n{out}");
                git_printed(&out, "M\traw.c");
            }
        }
    }
}

/// A file of the work tree named by its path is read as `git add` would
/// store it, as `git hash-object <path>` hashes it: saved with CRLF under
/// `text=auto`, it is its committed blob for `fingerprint`, `similar` and
/// `compare`. They read the bytes on disk, so `similar` found the file's
/// own blob at 94-97% and `fingerprint` gave another size.
#[test]
fn paths_in_the_work_tree_are_read_as_git_would_store_them() {
    let r = Repo::new();
    let text = head(PY_FILE, 6_000);
    r.write(".gitattributes", b"*.py text=auto\n");
    r.write("core.py", &text);
    r.write("other.py", &head(RS_FILE, 6_000));
    r.commit_all("base");
    r.write("core.py", &crlf(&text));
    let blob = r.rev("HEAD:core.py");
    assert_eq!(r.git_str(&["hash-object", "core.py"]).trim(), blob);
    let print = |arg: &str| {
        let o = r.simm(&["fingerprint", arg]);
        assert!(o.status.success(), "{}", crate::util::stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.split(' ').take(2).collect::<Vec<_>>().join(" ")
    };
    assert_eq!(print("core.py"), print("HEAD:core.py"));
    let o = r.simm(&["similar", "core.py"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.starts_with("100%\tcore.py\n"), "{out}");
    let o = r.simm(&["compare", "--json", "core.py", "HEAD:core.py"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["git_score"], 100, "{doc}");
    assert_eq!(doc["a"]["size"], text.len(), "{doc}");
}

/// Where conversions fail or meet a conflict, as git goes on or stops:
/// - a path in conflict under `text=auto` keeps its CRLF when "ours"
///   (stage 2) has CRs, as git's `has_crlf_in_index()` reads stage 2
///   (git-simm took it for a file with no index blob and converted it,
///   so the pair scored a point higher);
/// - an unknown `working-tree-encoding`: git says so and goes on with the
///   bytes (git-simm stopped);
/// - a `required` driver with no clean command: git stops (git-simm
///   went on).
#[test]
fn conversions_that_fail_or_meet_a_conflict_end_as_in_git() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let text = head(PY_FILE, 8_000);
    let line = |n: usize, to: &[u8]| crlf(&edit_line(&text, n, to));
    // The blob has CRs from before any attribute.
    r.write("f.txt", &crlf(&text));
    r.commit_all("base");
    r.write(".gitattributes", b"* text=auto\n");
    r.write("d.enc", &head(RS_FILE, 3_000));
    r.commit_all("attributes");
    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("f.txt", &line(10, b"theirs"));
    r.commit_all("theirs");
    r.git(&["checkout", "-q", "main"]);
    r.write("f.txt", &line(10, b"ours"));
    r.commit_all("ours");
    let o = r.git_output(&["merge", "-q", "other"]);
    assert!(!o.status.success(), "the merge conflicts");
    r.write("f.txt", &crlf(&text));
    let cut = text[..text.len() * 3 / 5]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let old = crlf(&text[..cut]);
    let path = r.path.join("old-half");
    std::fs::write(&path, &old).expect("write");
    let blob = r.git_str(&["hash-object", "-w", "--no-filters", "old-half"]);
    std::fs::remove_file(&path).expect("remove");
    let tree = r.git_stdin(
        &["mktree"],
        format!("100644 blob {}\tf-old.txt\n", blob.trim()).as_bytes(),
    );
    let tree = tree.as_str();
    // Named only now: git add would refuse the unknown encoding.
    r.write(
        ".gitattributes",
        b"* text=auto\n*.enc working-tree-encoding=NO-SUCH-ENC\n",
    );
    r.write("d.enc", &edited(&head(RS_FILE, 3_000), 5));
    let states = IndexStates::new(&r);
    for flags in [&["-M"][..], &["-C", "-C"]] {
        let out = v.compare_in(&r.path, flags, &[tree, "--", "f.txt", "f-old.txt"], &|| {
            states.stale()
        });
        assert!(
            out.lines()
                .any(|l| l.starts_with('R') && l.ends_with("\tf-old.txt\tf.txt")),
            "{out}"
        );
        let out = v.compare_in(&r.path, flags, &["HEAD", "--", "d.enc"], &|| states.stale());
        git_printed(&out, "M\td.enc");
    }

    let r = Repo::new();
    r.write(".gitattributes", b"*.sm filter=sm\n");
    r.write("a.sm", &head(RS_FILE, 2_000));
    r.commit_all("base");
    r.git(&["config", "filter.sm.smudge", "cat"]);
    r.git(&["config", "filter.sm.required", "true"]);
    // Written again: its stat data no longer match, so both read it.
    let touch = || r.write("a.sm", &head(RS_FILE, 2_000));
    touch();
    let o = r.git_output(&["diff", "HEAD", "--name-status"]);
    assert_eq!(o.status.code(), Some(128), "git stops");
    v.compare_in(&r.path, &["-M"], &["HEAD"], &touch);
}

/// The conversions take their attributes from the tree `--attr-source`,
/// `GIT_ATTR_SOURCE` or `attr.tree` names, as git 2.47 does: a CRLF file
/// with no attribute in the work tree is converted when that tree's
/// `.gitattributes` says `text`.
#[test]
fn conversions_read_attributes_from_the_attribute_source_tree() {
    let mut v = Verdicts::default();
    let r = Repo::new();
    let text = head(PY_FILE, 5_000);
    r.write("a.txt", &text);
    r.commit_all("base");
    r.git(&["checkout", "-q", "-b", "attrs"]);
    r.write(".gitattributes", b"*.txt text\n");
    r.commit_all("attributes");
    r.git(&["checkout", "-q", "main"]);
    r.write("a.txt", &crlf(&text));
    let states = IndexStates::new(&r);
    let plain = v.compare_in(&r.path, &["-M"], &["HEAD"], &|| states.stale());
    git_printed(&plain, "M\ta.txt");
    r.git(&["config", "attr.tree", "attrs"]);
    let through = v.compare_in(&r.path, &["-M"], &["HEAD"], &|| states.stale());
    assert_eq!(through, "", "git sees a.txt unchanged");
    let o = r.simm(&["fingerprint", "a.txt"]);
    let size = String::from_utf8_lossy(&o.stdout)
        .split(' ')
        .nth(1)
        .map(str::to_owned);
    assert_eq!(size, Some(text.len().to_string()));
}
