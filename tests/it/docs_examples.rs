//! The documentation's examples, run: every ```` ```console ```` block of
//! README.md and docs/ is a shell session (`$ git simm ...` and the output
//! it prints), which trycmd runs and compares, so an example whose output
//! changed fails here.
//!
//! Each page runs in its own copy of the repositories `fixtures/examples.sh`
//! builds from the pinned corpus: the page's commands run in `project/`
//! (trycmd's `<page>.in` directory), with the upstream library beside it as
//! `../zlib`. Outputs that depend on the machine are elided with trycmd's
//! `...` (lines) and `[..]` (part of a line).
//!
//! To rewrite the examples' outputs after a deliberate change, run
//! `TRYCMD=overwrite cargo test --test it docs_examples` and review the
//! diff: the pages are run from copies, which are copied back.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{corpus_dir, git_env, path_with_simm, walk};

/// The pages whose examples run: README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    walk(&root.join("docs"), &mut found);
    found.retain(|p| p.extension().is_some_and(|e| e == "md"));
    found.insert(0, root.join("README.md"));
    found
}

/// The opening fences of `text`'s code blocks, with their line numbers.
fn opening_fences(text: &str) -> Vec<(usize, &str)> {
    let mut open = false;
    let mut fences = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.strip_prefix("```") {
            if !open {
                fences.push((n + 1, info.trim()));
            }
            open = !open;
        }
    }
    fences
}

/// The commands of `text`'s console blocks, with their line numbers.
fn console_commands(text: &str) -> Vec<(usize, &str)> {
    let mut in_console = false;
    let mut open = false;
    let mut commands = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.strip_prefix("```") {
            if !open {
                in_console = info.trim() == "console";
            }
            open = !open;
            continue;
        }
        if open
            && in_console
            && let Some(cmd) = line.strip_prefix("$ ")
        {
            commands.push((n + 1, cmd));
        }
    }
    commands
}

/// trycmd takes a fence without a language as a test and skips a command
/// whose program it does not know, silently: both would hide an example
/// from the tests, so both are errors here.
#[test]
fn every_block_is_tagged_and_every_command_is_git() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("read page");
        for (line, info) in opening_fences(&text) {
            if info.is_empty() {
                problems.push(format!(
                    "{}:{line}: a code block without a language (use console, sh, text, ...)",
                    page.display()
                ));
            }
        }
        for (line, cmd) in console_commands(&text) {
            if !cmd.starts_with("git ") {
                problems.push(format!(
                    "{}:{line}: `{cmd}`: console examples run `git` only (no shell)",
                    page.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn examples_print_what_the_pages_say() {
    let corpus = corpus_dir();
    let tmp = tempfile::tempdir().expect("temporary directory");
    let world = tmp.path().join("world");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/examples.sh");
    let out = git_env(&mut Command::new("bash"))
        .arg(&script)
        .arg(&world)
        .arg(&corpus)
        .output()
        .expect("run fixtures/examples.sh");
    assert!(
        out.status.success(),
        "fixtures/examples.sh failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = tmp.path().join("pages");
    std::fs::create_dir(&runs).expect("create pages directory");
    copy_tree(&world.join("zlib"), &runs.join("zlib"));

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut copies = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("read page");
        if console_commands(&text).is_empty() {
            continue;
        }
        let rel = page.strip_prefix(root).expect("page under the crate");
        let name = rel.to_string_lossy().replace('/', "-");
        let copy = runs.join(&name);
        #[cfg(not(feature = "export"))]
        let text = {
            let (kept, dropped) = without_export_examples(&text);
            if dropped > 0 {
                eprintln!(
                    "{}: {dropped} `git simm export` example(s) skipped: built without the export feature",
                    rel.display()
                );
            }
            kept
        };
        std::fs::write(&copy, &text).expect("copy page");
        copy_tree(&world.join("project"), &copy.with_extension("in"));
        copies.push((copy, page));
    }
    assert!(!copies.is_empty(), "no page has a console example");

    let cases = trycmd::TestCases::new();
    cases
        .register_bin("git", which("git"))
        .env("PATH", path_with_simm())
        .env("HOME", tmp.path().to_string_lossy());
    for (key, value) in pinned_env() {
        cases.env(key, value);
    }
    for (copy, _) in &copies {
        cases.case(copy);
    }
    cases.run();

    if std::env::var_os("TRYCMD").is_some_and(|v| v == "overwrite") {
        // The copies lack the export examples: copied back, they would
        // delete them from the pages.
        if cfg!(not(feature = "export")) {
            panic!("TRYCMD=overwrite needs the export feature (the default features)");
        }
        for (copy, page) in &copies {
            std::fs::copy(copy, page).expect("copy the rewritten page back");
        }
    }
}

/// `text` with every console block that runs `git simm export` blanked
/// (line numbers kept, for trycmd's messages), and how many there were:
/// built without the export feature, those examples cannot print what the
/// pages say.
#[cfg(not(feature = "export"))]
fn without_export_examples(text: &str) -> (String, usize) {
    let mut out = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut in_console = false;
    let mut dropped = 0;
    for line in text.lines() {
        if in_console {
            block.push(line);
            if line.starts_with("```") {
                in_console = false;
                if block.iter().any(|l| l.starts_with("$ git simm export")) {
                    dropped += 1;
                    out.extend(std::iter::repeat_n("", block.len()));
                } else {
                    out.append(&mut block);
                }
                block.clear();
            }
        } else if line
            .strip_prefix("```")
            .is_some_and(|info| info.trim() == "console")
        {
            in_console = true;
            block.push(line);
        } else {
            out.push(line);
        }
    }
    out.append(&mut block);
    let mut kept = out.join("\n");
    kept.push('\n');
    (kept, dropped)
}

/// The variables [`git_env`] sets, for trycmd's commands.
fn pinned_env() -> Vec<(String, String)> {
    let mut cmd = Command::new("git");
    git_env(&mut cmd);
    cmd.get_envs()
        .filter_map(|(k, v)| {
            Some((
                k.to_string_lossy().into_owned(),
                v?.to_string_lossy().into_owned(),
            ))
        })
        .collect()
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}
