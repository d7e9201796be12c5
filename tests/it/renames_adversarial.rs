//! An adversarial commit for rename and copy detection, with git as the
//! oracle: hundreds of near-identical files, files made of long runs of one
//! character or of one repeated line, and exact ties of equal scores, all
//! moved and edited in one commit. `git-simm renames` must print what
//! `git diff --name-status -l0 --no-rename-empty` prints, byte for byte,
//! with `-M`, `-C`, `-C -C` and (in its own test, as break detection is its
//! own feature) `-B -M`.
//!
//! What makes it hard for a candidate search that is not exhaustive:
//! - **one skeleton** (the real header of docutils' parser tests, about
//!   1.2 KB) shared by 240 test-case files whose own parts are short slices
//!   of real test data: every pair of them scores within a few points of
//!   every other, their fingerprints are all near, and new test cases
//!   that share only the skeleton are copies of hundreds of sources at
//!   close scores;
//! - **exact ties**: 60 files of one real Rust text whose own lines, all
//!   of one length, sit at the same places, and new files made the same
//!   way, which score exactly the same against every one of them, so git's
//!   slot order alone decides;
//! - **repetitive content**: runs of 17,000 and 18,000 of one character
//!   before a short skeleton (git's score follows the run, the fingerprint
//!   the skeleton, as the run's windows vote once), decoys with shorter
//!   runs before the new file's skeleton, files made of one repeated line,
//!   identical sources;
//! - **rewrites in place** for break detection: files given the content of
//!   deleted ones, files rewritten with unrelated text.

use crate::renames_conformance::{Verdicts, git_printed, head, repeat};
use crate::util;

use util::{Repo, Rng, corpus_dir, corpus_text};

/// The docutils parser tests: one skeleton, many cases.
const DOCUTILS_TESTS: &str = "python/docutils-0.21.2/test/test_parsers/test_rst";

/// Lines of `text`, each with its line end.
fn lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// The shared part of docutils' parser tests: everything up to and with
/// `totest = {}`, then the closing `unittest.main()` lines.
fn skeleton() -> (Vec<u8>, Vec<u8>) {
    let text = corpus_text(&format!("{DOCUTILS_TESTS}/test_comments.py"));
    let all = lines(&text);
    let cut = all
        .iter()
        .position(|l| l.as_slice() == b"totest = {}\n")
        .expect("docutils' skeleton ends at totest = {}");
    let tail = b"\n\nif __name__ == '__main__':\n    unittest.main()\n".to_vec();
    (all[..=cut].concat(), tail)
}

/// The test data of every docutils parser test (what follows its
/// `totest = {}`), line by line, one list per file, in name order.
fn case_bodies() -> Vec<Vec<Vec<u8>>> {
    let dir = corpus_dir().join(DOCUTILS_TESTS);
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("docutils tests")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    names.sort();
    let mut bodies = Vec::new();
    for p in names {
        let all = lines(&std::fs::read(&p).expect("read"));
        if let Some(at) = all.iter().position(|l| l.as_slice() == b"totest = {}\n") {
            let body: Vec<Vec<u8>> = all[at + 1..].to_vec();
            if body.len() > 80 {
                bodies.push(body);
            }
        }
    }
    assert!(bodies.len() >= 20, "{} docutils test bodies", bodies.len());
    bodies
}

/// A test case: the skeleton around `n` lines of real test data from
/// `bodies`, starting wherever `rng` says.
fn test_case(
    skeleton: &(Vec<u8>, Vec<u8>),
    bodies: &[Vec<Vec<u8>>],
    rng: &mut Rng,
    name: &str,
) -> Vec<u8> {
    let body = &bodies[rng.below(bodies.len())];
    let n = 12 + rng.below(30);
    let start = rng.below(body.len() - n);
    [
        skeleton.0.clone(),
        format!("\ntotest['{name}'] = [\n").into_bytes(),
        body[start..start + n].concat(),
        b"]\n".to_vec(),
        skeleton.1.clone(),
    ]
    .concat()
}

/// `text` with `k` of its lines (never the first 40, the skeleton's) given
/// new content.
fn edit_case(text: &[u8], k: usize, rng: &mut Rng) -> Vec<u8> {
    let mut ls = lines(text);
    for _ in 0..k {
        let at = 40 + rng.below(ls.len() - 40);
        ls[at] = rng.fresh_line();
    }
    ls.concat()
}

/// A line that no other file has, always 40 bytes long.
fn own_line(rng: &mut Rng) -> Vec<u8> {
    format!(
        "    let own_{:016x} = 0x{:08x};\n",
        rng.next(),
        rng.next() as u32
    )
    .into_bytes()
}

/// The ties: one real Rust text with its lines 10, 30, 50, ... (every
/// 20th) replaced by lines of one length that no other file has. Any two
/// such files have the same lines in common, so a new one scores the same
/// against every old one (barring a collision of git's chunk hash).
fn tie_text(base: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut ls = base.to_vec();
    for at in (10..ls.len()).step_by(20) {
        ls[at] = own_line(rng);
    }
    ls.concat()
}

/// The repository: `base` (tag) and `moved` (tag), the commit that moves
/// and edits everything.
fn adversarial_repo() -> Repo {
    let r = Repo::new();
    let mut rng = Rng(0x00ad_7e25_a21a);
    let skel = skeleton();
    let bodies = case_bodies();

    // Test cases sharing one skeleton.
    let mut cases: Vec<Vec<u8>> = Vec::new();
    for i in 0..240 {
        let text = if (200..205).contains(&i) {
            // Identical files: exact renames with several equal sources.
            cases[199].clone()
        } else {
            test_case(&skel, &bodies, &mut rng, &format!("case{i}"))
        };
        r.write(format!("test/parsers/test_case_{i:03}.py"), &text);
        cases.push(text);
    }
    // Exact ties.
    let rust = lines(&head("rust/regex-1.11.1/src/lib.rs", 3000));
    let mut ties = Vec::new();
    for i in 0..60 {
        let text = tie_text(&rust, &mut rng);
        r.write(format!("ties/t{i:03}.rs"), &text);
        ties.push(text);
    }
    // Repetitive content.
    let py = head("python/click-8.1.7/src/click/core.py", 300);
    let other = head("python/click-8.1.7/src/click/types.py", 300);
    let rs = head("rust/regex-1.11.1/src/error.rs", 400);
    r.write(
        "rep/a17000.txt",
        &[repeat(b'a', 17_000), py.clone()].concat(),
    );
    r.write(
        "rep/x17000.txt",
        &[repeat(b'x', 17_000), other.clone()].concat(),
    );
    for i in 0..40 {
        r.write(
            format!("rep/decoy{i:02}.txt"),
            &[
                repeat(b'a', 13_000 + 60 * i),
                rs.clone(),
                format!("// {i}\n").into_bytes(),
            ]
            .concat(),
        );
    }
    let ok = b"    return Ok(());\n";
    for n in [500, 520, 800] {
        r.write(format!("lines/ok{n}.rs"), &ok.repeat(n));
    }
    r.write("lines/dup_a.txt", &ok.repeat(700));
    r.write("lines/dup_b.txt", &ok.repeat(700));
    r.write("lines/brace3000.txt", &b"}\n".repeat(3000));
    r.write("lines/brace3100.txt", &b"}\n".repeat(3100));
    r.write("lines/blank.txt", &b"\n".repeat(4000));
    // Material for break detection.
    let texts = util::texts(29, 13);
    for (i, t) in texts.iter().take(12).enumerate() {
        r.write(format!("break/b{i}.txt"), t);
    }
    r.commit_all("base");
    r.git(&["tag", "base"]);

    // The commit that moves and edits.
    for (i, text) in cases.iter().enumerate() {
        let old = format!("test/parsers/test_case_{i:03}.py");
        match i % 8 {
            0 => r.remove(&old),
            1 => r.write(&old, &edit_case(text, 2, &mut rng)),
            _ => {
                let new = if i % 3 == 0 {
                    format!("tests/rst/test_case_{i:03}.py")
                } else {
                    format!("tests/rst/{}_{:04x}.py", i * 7 % 240, rng.next() as u16)
                };
                r.mv(&old, &new);
                if i % 3 == 1 {
                    r.write(&new, &edit_case(text, 1 + rng.below(3), &mut rng));
                }
            }
        }
    }
    for i in 0..40 {
        // New test cases: the skeleton around new data.
        let text = test_case(&skel, &bodies, &mut rng, &format!("new{i}"));
        r.write(format!("tests/rst/new/test_new_{i:02}.py"), &text);
    }
    for (i, text) in ties.iter().enumerate() {
        let old = format!("ties/t{i:03}.rs");
        match i % 3 {
            0 => r.remove(&old),
            1 => {
                let mut ls = lines(text);
                ls[5] = own_line(&mut rng);
                r.write(&old, &ls.concat());
            }
            _ => {}
        }
    }
    for i in 0..25 {
        r.write(format!("ties_new/n{i:02}.rs"), &tie_text(&rust, &mut rng));
    }
    r.remove("rep/a17000.txt");
    r.write("rep2/a18000.txt", &[repeat(b'a', 18_000), py].concat());
    r.write(
        "rep/x17000.txt",
        &[repeat(b'x', 16_000), other.clone()].concat(),
    );
    r.write("rep2/x18000.txt", &[repeat(b'x', 18_000), other].concat());
    r.write("rep2/a_skeleton.txt", &[repeat(b'a', 18_000), rs].concat());
    r.remove("lines/ok500.rs");
    r.write("lines2/ok.rs", &ok.repeat(510));
    r.write("lines/ok520.rs", &ok.repeat(530));
    r.write("lines2/ok690.rs", &ok.repeat(690));
    r.remove("lines/brace3000.txt");
    r.write("lines2/brace.txt", &b"}\n".repeat(3050));
    r.mv("lines/blank.txt", "lines2/blank.txt");
    r.write("lines2/blank.txt", &b"\n".repeat(3900));
    // Rewrites in place: b0..b4 get the (lightly edited) content of b5..b9,
    // which are deleted; b10 gets unrelated text (a complete rewrite that
    // nothing pairs); b11 a light edit (no break).
    for i in 0..5 {
        r.write(
            format!("break/b{i}.txt"),
            &util::edit(&texts[i + 5], 15, i as u64),
        );
        r.remove(format!("break/b{}.txt", i + 5));
    }
    r.write("break/b10.txt", &texts[12]);
    r.write("break/b11.txt", &util::edit(&texts[11], 10, 11));
    r.commit_all("moved");
    r.git(&["tag", "moved"]);
    r
}

/// Lines of git's output whose status starts with `prefix`.
fn count(out: &str, prefix: &str) -> usize {
    out.lines().filter(|l| l.starts_with(prefix)).count()
}

/// `-M`, `-C`, `-C -C`, both ways.
///
/// Where git-simm differed before the candidate search was made lossless
/// (`-C` and `-C -C`; `-M` agreed): the new file of 18,000 `a` and a
/// skeleton is a 92% copy of `rep/x17000.txt`, 17,000 `x` and unrelated
/// text, as git's chunk hash puts every 64-byte run of one byte value in
/// the same bucket (diffcore-delta.c, `hash_chars`), while their
/// fingerprints are unrelated; new test cases whose best source (87%,
/// 94%) was never scored took a 65% one, which turned git's `R` into `C`
/// and back elsewhere (a source's last use is the rename); in reverse, a
/// tie at 82% went to another source, and git's first pass, which takes
/// only unused sources, preferred an unused 54% source to an 88% one
/// already used (diffcore-rename.c, `find_renames`), which git-simm had
/// not scored.
#[test]
fn adversarial_moves_and_copies_agree_with_git() {
    let r = adversarial_repo();
    let mut v = Verdicts::default();
    let m = v.compare(&r, &["-M"], &["base", "moved"]);
    assert!(count(&m, "R") >= 190, "{m}");
    git_printed(&m, "R094\trep/a17000.txt\trep2/a18000.txt");
    git_printed(&m, "R098\tlines/brace3000.txt\tlines2/brace.txt");
    for flags in [&["-C"][..], &["-C", "-C"]] {
        let c = v.compare(&r, flags, &["base", "moved"]);
        assert!(count(&c, "C") >= 40, "{c}");
        git_printed(&c, "C092\trep/x17000.txt\trep2/a_skeleton.txt");
        if flags.len() == 2 {
            // Two identical sources, both unchanged.
            git_printed(&c, "C098\tlines/dup_a.txt\tlines2/ok690.rs");
        }
        // The exact ties: every new file scores 95% against each old one.
        let tied = c
            .lines()
            .filter(|l| l.starts_with("C095\tties/") && l.contains("\tties_new/"))
            .count();
        assert!(tied >= 20, "{c}");
    }
    for flags in [&["-M"][..], &["-C"], &["-C", "-C"]] {
        v.compare(&r, flags, &["moved", "base"]);
    }
}

/// `-B -M`: break detection over the same commit.
#[test]
fn adversarial_rewrites_agree_with_git_under_break_detection() {
    let r = adversarial_repo();
    let mut v = Verdicts::default();
    let b = v.compare(&r, &["-B", "-M"], &["base", "moved"]);
    assert!(
        b.lines()
            .any(|l| l.starts_with('R') && l.contains("\tbreak/")),
        "{b}"
    );
    v.compare(&r, &["-B", "-M"], &["moved", "base"]);
}
