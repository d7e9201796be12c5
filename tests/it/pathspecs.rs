//! Pathspecs after `--` in `renames`, magic included, against
//! `git diff -l0 --name-status` with the same pathspecs, in two-tree,
//! `--cached` and work-tree mode, from the top and from a subdirectory,
//! with the `GIT_*_PATHSPECS` variables, `:(attr:...)` against
//! `.gitattributes`; and git's refusals (message and
//! exit code) for magic git does not accept.

use crate::util::*;

/// Variables set for one run, as (name, value).
type Env<'a> = &'a [(&'a str, &'a str)];

/// Real files of the pinned corpus under names that give every kind of
/// magic something to select: mixed case, nested directories, `.py` and
/// `.rs`, a name with a glob character in it.
fn pathspec_repo() -> Repo {
    let r = Repo::new();
    let files: &[(&str, &str)] = &[
        ("src/lib.rs", "rust/regex-1.11.1/src/lib.rs"),
        ("src/bytes.rs", "rust/regex-1.11.1/src/bytes.rs"),
        ("src/deep/error.rs", "rust/regex-1.11.1/src/error.rs"),
        ("src/deep/Pattern.RS", "rust/regex-1.11.1/src/pattern.rs"),
        ("docs/core.py", "python/click-8.1.7/src/click/core.py"),
        ("docs/Globals.PY", "python/click-8.1.7/src/click/globals.py"),
        (
            "py/compiler.py",
            "python/jinja2-3.1.4/src/jinja2/compiler.py",
        ),
        ("py/bccache.py", "python/jinja2-3.1.4/src/jinja2/bccache.py"),
        ("Lib/memchr.rs", "rust/memchr-2.8.3/src/memchr.rs"),
        ("Lib/a*b.rs", "rust/memchr-2.8.3/src/cow.rs"),
        ("top.rs", "rust/memchr-2.8.3/src/ext.rs"),
    ];
    for (name, corpus) in files {
        r.write(name, &corpus_text(corpus));
    }
    // Attributes for `:(attr:...)`, set, unset, valued and left out.
    r.write(
        ".gitattributes",
        b"*.py text owner=alice\nsrc/deep/** mark\nLib/* -diff\n*.RS owner=bob\n",
    );
    r.commit_all("base");
    // Renames within a directory, across directories (so that a pathspec
    // holds only one side), with edits, and a copy for -C.
    r.git_mv("src/lib.rs", "src/regex.rs");
    r.git_mv("src/bytes.rs", "py/bytes.rs");
    r.git_mv("docs/core.py", "src/deep/core.py");
    r.git_mv("Lib/memchr.rs", "lib/memchr.rs");
    let mut compiler = corpus_text("python/jinja2-3.1.4/src/jinja2/compiler.py");
    compiler.extend_from_slice(b"\n# edited after the move\n");
    r.remove("py/compiler.py");
    r.write("docs/Compiler.py", &compiler);
    r.write(
        "docs/error-copy.rs",
        &corpus_text("rust/regex-1.11.1/src/error.rs"),
    );
    let mut bccache = corpus_text("python/jinja2-3.1.4/src/jinja2/bccache.py");
    bccache.extend_from_slice(b"# and changed in place\n");
    r.write("py/bccache.py", &bccache);
    r
}

/// The pathspecs compared, from the top of the repository.
const FROM_TOP: &[&[&str]] = &[
    &["src"],
    &["src/"],
    &["py", "docs"],
    &["*.py"],
    &["*.PY"],
    &["src/*"],
    &["Lib/a*b.rs"],
    &[":(literal)Lib/a*b.rs"],
    &[":(literal)*.py"],
    &[":(glob)*.py"],
    &[":(glob)**/*.py"],
    &[":(glob)src/**"],
    &[":(glob)src/*"],
    &[":(glob)**/deep"],
    &[":(icase)lib"],
    &[":(icase)*.rs"],
    &[":(icase,glob)**/*.py"],
    &[":(exclude)src"],
    &[":!src", ":!docs"],
    &[":^py"],
    &["src", ":!src/deep"],
    &["*.rs", ":(exclude,icase)LIB"],
    &[":(glob)**", ":(exclude,glob)**/*.py"],
    &[":(top)py"],
    &[":/docs"],
    &[":/"],
    &["."],
    &[":(attr:text)"],
    &[":(attr:owner=alice)"],
    &[":(attr:owner=bob)src"],
    &[":(attr:-diff)"],
    &[":(attr:!diff)"],
    &[":(attr:mark)"],
    &[":(attr:!mark)"],
    &[":(attr:text owner=alice)docs"],
    &["src", ":(exclude,attr:mark)"],
    &[":(icase,attr:owner=bob)*.rs"],
    &["nothing-here"],
];

/// From `src/deep`: relative paths, `..`, and magic that leaves the
/// subdirectory (`:/`, exclusion only, which git takes against the whole
/// tree).
const FROM_SUB: &[&[&str]] = &[
    &["."],
    &[".."],
    &["../.."],
    &["../../py"],
    &["*.py"],
    &[":/py"],
    &[":(top)docs"],
    &[":!core.py"],
    &["..", ":!."],
    &[":(glob)*"],
    &[":(icase)pattern.rs"],
    &[":(attr:mark)"],
    &[":(attr:!mark)../.."],
];

/// `git diff <mode> -l0 --name-status -- <specs>` and `git simm renames
/// <mode> -- <specs>` in `dir`: the same bytes on stdout and the same exit
/// status.
fn agree(dir: &std::path::Path, mode: &[&str], specs: &[&str], env: &[(&str, &str)]) {
    let mut git = git_command(dir);
    git.args(["diff", "-l0", "--name-status"])
        .args(mode)
        .arg("--")
        .args(specs);
    let mut simm = simm_command();
    simm.current_dir(dir)
        .arg("renames")
        .args(mode)
        .arg("--")
        .args(specs);
    for (k, v) in env {
        git.env(k, v);
        simm.env(k, v);
    }
    let (git, simm) = (git.output().expect("git"), simm.output().expect("git-simm"));
    assert!(
        git.status.success(),
        "git {mode:?} {specs:?}: {}",
        stderr(&git)
    );
    assert!(
        simm.status.success(),
        "{mode:?} {specs:?} {env:?}: {}",
        stderr(&simm)
    );
    assert_eq!(
        stdout(&simm),
        stdout(&git),
        "{mode:?} -- {specs:?} {env:?} in {}",
        dir.display()
    );
}

const MODES: &[&[&str]] = &[
    &["-M", "HEAD~1", "HEAD"],
    &["-C", "HEAD~1", "HEAD"],
    &["-C", "-C", "HEAD~1", "HEAD"],
    &["-M", "HEAD~1..HEAD"],
    &["-M", "--cached"],
    &["-C", "--cached"],
    &["-M", "HEAD"],
    &["-C", "HEAD"],
];

#[test]
fn pathspec_magic_as_git_diff_reads_it() {
    let r = pathspec_repo();
    // Everything so far committed (two trees), then the same moves again
    // half staged, half only in the work tree.
    r.commit_all("moves");
    r.git_mv("py/bccache.py", "docs/bccache.py");
    r.git_mv("src/deep/Pattern.RS", "Lib/Pattern.RS");
    r.mv("top.rs", "src/top.rs");
    r.mv("docs/Globals.PY", "py/globals.py");
    r.git(&["add", "-N", "src/top.rs", "py/globals.py"]);
    // The two kinds of change must be there for the modes to mean
    // something.
    assert!(
        r.git_str(&["diff", "--cached", "-M", "--name-status"])
            .contains("R100\tpy/bccache.py\tdocs/bccache.py")
    );
    assert!(
        r.git_str(&["diff", "-M", "--name-status", "HEAD"])
            .contains("R100\ttop.rs\tsrc/top.rs")
    );
    for mode in MODES {
        for specs in FROM_TOP {
            agree(&r.path, mode, specs, &[]);
        }
        for specs in FROM_SUB {
            agree(&r.path.join("src/deep"), mode, specs, &[]);
        }
    }
    // A rename across the boundary is an add (or a delete) inside it.
    let o = r.simm(&["renames", "HEAD~1", "HEAD", "--", "src"]);
    assert!(stdout(&o).contains("A\tsrc/deep/core.py"), "{}", stdout(&o));
    assert!(stdout(&o).contains("D\tsrc/bytes.rs"), "{}", stdout(&o));
}

#[test]
fn pathspec_environment_variables_as_git_reads_them() {
    let r = pathspec_repo();
    r.commit_all("moves");
    let cases: &[(Env, &[&str])] = &[
        (&[("GIT_GLOB_PATHSPECS", "1")], &["*.py"]),
        (&[("GIT_GLOB_PATHSPECS", "1")], &["**/*.py"]),
        (&[("GIT_GLOB_PATHSPECS", "true")], &[":(literal)*.py"]),
        (&[("GIT_NOGLOB_PATHSPECS", "1")], &["*.py"]),
        (&[("GIT_NOGLOB_PATHSPECS", "1")], &["Lib/a*b.rs"]),
        (&[("GIT_NOGLOB_PATHSPECS", "yes")], &[":(glob)**/*.py"]),
        (&[("GIT_ICASE_PATHSPECS", "1")], &["LIB"]),
        (&[("GIT_ICASE_PATHSPECS", "1")], &["*.PY", ":!DOCS"]),
        (&[("GIT_ICASE_PATHSPECS", "0")], &["LIB"]),
        (&[("GIT_LITERAL_PATHSPECS", "1")], &["*.py"]),
        (&[("GIT_LITERAL_PATHSPECS", "1")], &["Lib/a*b.rs"]),
        (&[("GIT_LITERAL_PATHSPECS", "1")], &[":/src"]),
        (&[("GIT_LITERAL_PATHSPECS", "1")], &["src"]),
        (
            &[("GIT_GLOB_PATHSPECS", "1"), ("GIT_ICASE_PATHSPECS", "1")],
            &["**/*.PY"],
        ),
    ];
    for (env, specs) in cases {
        agree(&r.path, &["-M", "HEAD~1", "HEAD"], specs, env);
        agree(&r.path.join("src"), &["-C", "HEAD~1", "HEAD"], specs, env);
    }
}

/// What git refuses, git-simm refuses with git's message and exit code
/// (128).
#[test]
fn pathspecs_git_refuses_are_refused_in_its_words() {
    let r = pathspec_repo();
    r.commit_all("moves");
    let sub = r.path.join("src");
    let cases: &[(&std::path::Path, Env, &str)] = &[
        (&r.path, &[], ":(foo)src"),
        (&r.path, &[], ":(top"),
        (&r.path, &[], ":#src"),
        (&r.path, &[], ":(literal,glob)src"),
        (&r.path, &[], ":(attr:a,attr:b)src"),
        (&r.path, &[], ""),
        (&r.path, &[], ".."),
        (&sub, &[], "../.."),
        (
            &r.path,
            &[("GIT_GLOB_PATHSPECS", "1"), ("GIT_NOGLOB_PATHSPECS", "1")],
            "src",
        ),
        (
            &r.path,
            &[("GIT_LITERAL_PATHSPECS", "1"), ("GIT_GLOB_PATHSPECS", "1")],
            "src",
        ),
        (&r.path, &[("GIT_ICASE_PATHSPECS", "maybe")], "src"),
    ];
    for (dir, env, spec) in cases {
        let mut git = git_command(dir);
        git.args(["diff", "-M", "--name-status", "HEAD~1", "HEAD", "--", spec]);
        let mut simm = simm_command();
        simm.current_dir(dir)
            .args(["renames", "HEAD~1", "HEAD", "--", spec]);
        for (k, v) in *env {
            git.env(k, v);
            simm.env(k, v);
        }
        let (git, simm) = (git.output().expect("git"), simm.output().expect("git-simm"));
        assert_eq!(git.status.code(), Some(128), "git {spec:?} {env:?}");
        assert_eq!(
            simm.status.code(),
            Some(128),
            "{spec:?} {env:?}: {}",
            stderr(&simm)
        );
        assert_eq!(stderr(&simm), stderr(&git), "{spec:?} {env:?}");
        assert!(simm.stdout.is_empty());
    }
}
