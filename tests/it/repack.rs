//! `git-simm pack-order` and `git-simm repack` against real git: the crafted
//! names reproduce git's own pack byte for byte when asked for git's order,
//! the similarity order packs a history full of renames and copies smaller
//! than `git repack -adf`, and a repack (finished, killed at any point, or
//! interrupted by SIGINT) leaves `git fsck --full` clean with exactly the
//! objects it started with, and no temporary files or lock.
//! Fixture histories are built from real files of the pinned corpus
//! (`fixtures/corpus.sh`), edited the way code is edited (lines inserted,
//! changed and deleted), with pinned dates.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use util::{Repo, Rng, corpus_text, git_command, lossy, simm_command, stderr};

/// Real files of the corpus (`fixtures/corpus.sh`) to grow a history
/// from: code in three languages and prose.
const SOURCES: &[&str] = &[
    "rust/serde_json-1.0.133/src/raw.rs",
    "rust/serde_json-1.0.133/src/value/ser.rs",
    "rust/tokio-1.41.1/src/sync/batch_semaphore.rs",
    "rust/regex-1.11.1/src/regexset/bytes.rs",
    "rust/memchr-2.8.3/src/memchr.rs",
    "rust/toml-0.8.19/src/ser.rs",
    "rust/regex-syntax-0.8.12/src/utf8.rs",
    "rust/regex-syntax-0.8.12/src/ast/visitor.rs",
    "rust/serde_json-1.0.133/src/value/from.rs",
    "rust/toml-0.8.19/src/lib.rs",
    "rust/libz-sys-1.1.20/src/zlib/deflate.h",
    "python/click-8.1.7/src/click/termui.py",
    "python/click-8.1.7/src/click/decorators.py",
    "python/markdown-3.7/docs/contributing.md",
];

/// `text` with a few lines changed, inserted and deleted at places chosen by
/// `rng`, as a commit that touches a file does.
fn edit(text: &[u8], rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    for _ in 0..n {
        if lines.is_empty() {
            break;
        }
        let at = rng.below(lines.len());
        match rng.below(3) {
            0 => lines[at] = format!("    // revised: {}\n", lossy(&rng.junk(24))).into_bytes(),
            1 => lines.insert(
                at,
                format!("    let extra_{at} = {};\n", rng.below(1000)).into_bytes(),
            ),
            _ => {
                lines.remove(at);
            }
        }
    }
    lines.concat()
}

/// A history of 40 commits over real files in which files are edited,
/// moved to new directories under new basenames (so git's name hash
/// separates their histories) and copied, on two branches with a merge.
fn history() -> Repo {
    let r = Repo::new();
    let mut rng = Rng(7);
    let mut files: Vec<(String, Vec<u8>)> = SOURCES
        .iter()
        .map(|s| (format!("orig/{}", s.replace('/', "_")), corpus_text(s)))
        .collect();
    for (path, data) in &files {
        r.write(path, data);
    }
    r.commit_all("import");
    for round in 0..40 {
        if round == 20 {
            r.git(&["checkout", "-q", "-b", "side"]);
        }
        if round == 30 {
            // Back to main, merge the side branch's history, and carry on
            // from the side branch's files.
            r.git(&["checkout", "-q", "main"]);
            let mut cmd = git_command(&r.path);
            let o = cmd
                .args(["merge", "-q", "--no-edit", "-s", "ours", "side"])
                .output()
                .expect("merge");
            assert!(o.status.success(), "merge: {}", stderr(&o));
            r.git(&["rm", "-rq", "."]);
            for (path, data) in &files {
                r.write(path, data);
            }
        }
        for _ in 0..4 {
            let k = rng.below(files.len());
            let n = 1 + rng.below(6);
            files[k].1 = edit(&files[k].1, &mut rng, n);
            r.write(&files[k].0, &files[k].1);
        }
        if round % 5 == 4 {
            // Move one file under a new name in a new directory.
            let k = rng.below(files.len());
            let to = format!("moved{round}/renamed_{round}_{}.txt", rng.below(100));
            r.git(&["add", "-A"]);
            r.git_mv(&files[k].0.clone(), &to);
            files[k].0 = to;
        }
        if round % 7 == 6 {
            // Copy a file and edit the copy.
            let k = rng.below(files.len());
            let data = edit(&files[k].1, &mut rng, 3);
            let to = format!("vendor{round}/copy_{round}.rs");
            r.write(&to, &data);
            files.push((to, data));
        }
        r.commit_all(&format!("round {round}"));
    }
    r.git(&["tag", "-a", "-m", "release", "v1"]);
    r
}

/// A bare copy of `src` at `dst` (with all its packs, loose objects and
/// reflogs), so each run starts from the same repository.
fn copy(src: &Path, dst: &Path) -> PathBuf {
    let o = std::process::Command::new("cp")
        .args(["-a"])
        .arg(src)
        .arg(dst)
        .output()
        .expect("cp");
    assert!(o.status.success(), "cp: {}", stderr(&o));
    dst.to_owned()
}

/// The ids of every object in the repository at `dir`.
fn object_set(dir: &Path) -> Vec<String> {
    let o = git_command(dir)
        .args([
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ])
        .output()
        .expect("cat-file");
    assert!(o.status.success(), "cat-file: {}", stderr(&o));
    let mut ids: Vec<String> = lossy(&o.stdout).lines().map(str::to_owned).collect();
    ids.sort();
    ids
}

fn fsck_clean(dir: &Path) {
    let o = git_command(dir)
        .args(["fsck", "--full", "--strict"])
        .output()
        .expect("fsck");
    assert!(
        o.status.success(),
        "fsck failed in {}:\n{}",
        dir.display(),
        stderr(&o)
    );
    let errors: Vec<&str> = lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("error"))
        .map(|_| "")
        .collect();
    assert!(errors.is_empty(), "fsck reported errors: {}", stderr(&o));
}

/// The repository at `dir` holds exactly the objects `before` and
/// `git fsck --full` finds nothing wrong (`when` names the case).
fn assert_intact(dir: &Path, before: &[String], when: &str) {
    assert_eq!(object_set(dir), before, "object set changed: {when}");
    fsck_clean(dir);
}

/// Temporary directories of repack runs left in the pack directory.
fn temporaries(git_dir: &Path) -> Vec<String> {
    std::fs::read_dir(git_dir.join("objects/pack"))
        .expect("pack dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".simm-tmp-"))
        .collect()
}

fn packs(git_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(git_dir.join("objects/pack"))
        .expect("pack dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    v.sort();
    v
}

fn pack_bytes(git_dir: &Path) -> u64 {
    packs(git_dir)
        .iter()
        .map(|p| std::fs::metadata(p).expect("stat").len())
        .sum()
}

/// Run git in `dir` with `input` on stdin; its stdout, asserting success.
fn pipe(dir: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = git_command(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn git");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("feed git");
    let o = child.wait_with_output().expect("wait for git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    o.stdout
}

fn simm(dir: &Path, args: &[&str]) -> Output {
    simm_command()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run git-simm")
}

fn git_ok(dir: &Path, args: &[&str]) -> Vec<u8> {
    let o = git_command(dir).args(args).output().expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    o.stdout
}

/// A bare clone of the history, with several packs, loose objects, a
/// dangling blob and an unreachable commit: everything a repack must keep.
fn messy_bare(r: &Repo, name: &str) -> PathBuf {
    let bare = r.path.parent().expect("parent").join(name);
    git_ok(
        r.path.parent().expect("parent"),
        &["clone", "-q", "--bare", "--no-local", "repo", name],
    );
    // A second and third pack on top of the clone's, each holding a blob
    // that also stays loose (git tolerates the duplicate; so must we).
    for i in 0..2 {
        let data = format!("packed and loose {i}\n").repeat(50 + i);
        let id = pipe(&bare, &["hash-object", "-w", "--stdin"], data.as_bytes());
        let pack_base = bare.join("objects/pack/pack");
        let pack_base = pack_base.to_string_lossy().into_owned();
        pipe(&bare, &["pack-objects", "-q", &pack_base], &id);
    }
    // Loose and unreachable: a dangling blob and a commit no ref reaches.
    pipe(
        &bare,
        &["hash-object", "-w", "--stdin"],
        &corpus_text("rust/toml-0.8.19/examples/decode.rs"),
    );
    let tree = lossy(&git_ok(&bare, &["rev-parse", "HEAD^{tree}"]))
        .trim()
        .to_owned();
    git_ok(&bare, &["commit-tree", "-m", "unreachable", &tree]);
    assert!(packs(&bare).len() >= 2, "fixture has several packs");
    bare
}

/// Two bare clones of `r`'s history: the first repacked by
/// `git repack -adf` with one thread (deterministic), the second untouched.
fn repacked_by_git_and_copy(r: &Repo) -> (PathBuf, PathBuf) {
    let base = r.path.parent().expect("parent");
    git_ok(
        base,
        &["clone", "-q", "--bare", "--no-local", "repo", "a.git"],
    );
    let a = base.join("a.git");
    let b = copy(&a, &base.join("b.git"));
    git_ok(
        &a,
        &[
            "repack",
            "-a",
            "-d",
            "-f",
            "-q",
            "--threads=1",
            "--no-write-bitmap-index",
        ],
    );
    (a, b)
}

#[test]
fn git_order_reproduces_git_repack_byte_for_byte() {
    let r = history();
    let (a, b) = repacked_by_git_and_copy(&r);
    let o = simm(&b, &["repack", "-q", "--order=git", "--threads=1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names = |d: &Path| -> Vec<String> {
        packs(d)
            .iter()
            .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
            .collect()
    };
    // The pack's name is the hash of its content: same name, same bytes.
    assert_eq!(
        names(&a),
        names(&b),
        "git order through crafted names differs from git's"
    );
}

#[test]
fn similarity_order_beats_git_on_renames_and_copies() {
    let r = history();
    let (a, b) = repacked_by_git_and_copy(&r);
    let o = simm(&b, &["repack", "-q", "--threads=1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (git, ours) = (pack_bytes(&a), pack_bytes(&b));
    eprintln!("git repack -adf: {git} bytes, git-simm repack: {ours} bytes");
    assert!(
        ours < git,
        "git-simm {ours} bytes is not smaller than git's {git}"
    );
    assert_eq!(object_set(&a), object_set(&b));
    fsck_clean(&b);
}

#[test]
fn repack_keeps_every_object_and_leaves_one_clean_pack() {
    let r = history();
    let bare = messy_bare(&r, "messy.git");
    let before = object_set(&bare);
    let o = simm(&bare, &["repack"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = stderr(&o);
    assert!(
        summary.contains("Repacked") && summary.contains("MiB ->"),
        "summary: {summary}"
    );
    assert_intact(&bare, &before, "repacked");
    assert_eq!(packs(&bare).len(), 1, "one pack left");
    let counts = lossy(&git_ok(&bare, &["count-objects", "-v"]));
    assert!(
        counts.lines().any(|l| l == "count: 0"),
        "loose objects left: {counts}"
    );
    // With the bases git-simm chooses, the same holds.
    let bare = messy_bare(&r, "messy-simm.git");
    let o = simm(&bare, &["repack", "-q", "--bases=simm", "--depth=3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_intact(&bare, &before, "repacked with --bases=simm");
    assert_eq!(packs(&bare).len(), 1, "one pack left (--bases=simm)");
    let chains = lossy(&git_ok(&bare, &["verify-pack", "-v", &idx_of(&bare)]));
    assert!(
        !chains.lines().any(|l| l.starts_with("chain length = 4")),
        "--depth=3 exceeded: {chains}"
    );
    // A non-bare repository with a work tree and an index works the same.
    let before = object_set(&r.path);
    let o = simm(&r.path, &["repack", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "-q printed: {}", stderr(&o));
    assert_intact(&r.path, &before, "non-bare repacked");
}

/// The one pack's index, as a path string.
fn idx_of(git_dir: &Path) -> String {
    packs(git_dir)
        .first()
        .expect("a pack")
        .with_extension("idx")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn repack_killed_at_any_point_keeps_every_object() {
    let r = history();
    let pristine = messy_bare(&r, "pristine.git");
    let before = object_set(&pristine);
    let base = r.path.parent().expect("parent");
    let runs = [
        "listed",
        "packed",
        "verified",
        "installing",
        "removing-index",
        "removing",
    ]
    .into_iter()
    .flat_map(|p| [(p, "--bases=git"), (p, "--bases=simm")]);
    for (point, bases) in runs {
        let dir = copy(&pristine, &base.join(format!("killed-{point}{bases}.git")));
        let o = simm_command()
            .current_dir(&dir)
            .args(["repack", "-q", bases])
            .env("GIT_SIMM_TEST_REPACK_ABORT", point)
            .output()
            .expect("run");
        assert!(
            !o.status.success(),
            "{point}: the repack was not interrupted"
        );
        assert_intact(&dir, &before, &format!("killed at {point}"));
        // The dead run's lock file is still there, but its lock died with
        // it: the next run takes the lock, cleans up and finishes.
        assert!(dir.join("simm-repack.lock").exists(), "{point}");
        let o = simm(&dir, &["repack", "-q", bases]);
        assert!(
            o.status.success(),
            "after a kill at {point} ({bases}): {}",
            stderr(&o)
        );
        assert_intact(&dir, &before, &format!("resumed after a kill at {point}"));
        assert_eq!(packs(&dir).len(), 1, "after {point}");
        assert_eq!(temporaries(&dir), Vec::<String>::new(), "after {point}");
    }
}

#[test]
fn repack_killed_by_signal_at_random_moments_keeps_every_object() {
    let r = history();
    let pristine = messy_bare(&r, "pristine.git");
    let before = object_set(&pristine);
    let base = r.path.parent().expect("parent");
    let runs = [0u64, 5, 15, 40, 80, 150]
        .into_iter()
        .flat_map(|ms| [(ms, "--bases=git"), (ms, "--bases=simm")]);
    for (i, (delay_ms, bases)) in runs.enumerate() {
        let dir = copy(&pristine, &base.join(format!("sig-{i}.git")));
        let mut child = simm_command()
            .current_dir(&dir)
            .args(["repack", "-q", bases])
            .spawn()
            .expect("spawn");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        assert_intact(
            &dir,
            &before,
            &format!("SIGKILL at {delay_ms} ms ({bases})"),
        );
        // A killed run never blocks the next one.
        let o = simm(&dir, &["repack", "-q", bases]);
        assert!(
            o.status.success(),
            "after SIGKILL at {delay_ms} ms: {}",
            stderr(&o)
        );
        assert_eq!(temporaries(&dir), Vec::<String>::new());
    }
}

#[test]
fn repack_refuses_what_it_cannot_do_safely_and_changes_nothing() {
    let r = history();
    let base = r.path.parent().expect("parent").to_owned();
    let expect_refusal = |dir: &Path, args: &[&str], needle: &str| {
        let listing = |d: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d.join("objects/pack"))
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        };
        let before = listing(dir);
        let o = simm(dir, args);
        assert_eq!(
            o.status.code(),
            Some(128),
            "{args:?} in {}: {}",
            dir.display(),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.starts_with("fatal: ") && err.contains(needle),
            "expected '{needle}' in: {err}"
        );
        assert_eq!(listing(dir), before, "{needle}: pack directory changed");
    };

    // Not a repository at all.
    let empty = base.join("not-a-repo");
    std::fs::create_dir(&empty).expect("mkdir");
    let o = simm(&empty, &["repack"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(
        stderr(&o).contains("not a git repository"),
        "{}",
        stderr(&o)
    );

    // A shallow clone.
    let url = format!("file://{}", r.path.display());
    git_ok(
        &base,
        &["clone", "-q", "--bare", "--depth=2", &url, "shallow.git"],
    );
    expect_refusal(&base.join("shallow.git"), &["repack"], "shallow clone");

    // Partial clones are repacked, promisor packs kept: see
    // `partial_clone::repack_keeps_promisor_packs_and_never_fetches`.

    // A .keep pack.
    git_ok(
        &base,
        &["clone", "-q", "--bare", "--no-local", "repo", "kept.git"],
    );
    let kept = base.join("kept.git");
    let keep = packs(&kept)[0].with_extension("keep");
    std::fs::write(&keep, b"keep me\n").expect("keep");
    expect_refusal(&kept, &["repack"], ".keep");

    // Another repack running: a live process (this one) holds the lock.
    std::fs::remove_file(&keep).expect("rm keep");
    let lock = std::fs::File::create(kept.join("simm-repack.lock")).expect("lock file");
    lock.try_lock().expect("lock");
    expect_refusal(&kept, &["repack"], "another git-simm repack");
    drop(lock);

    // A read-only object directory. Permissions do not bind root, so there
    // the directory is made immutable instead (chattr +i, which binds
    // root too), undone by a guard whatever the outcome.
    let ro = kept.join("objects/pack");
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(m)).expect("chmod");
    };
    struct Immutable(PathBuf);
    impl Drop for Immutable {
        fn drop(&mut self) {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.0)
                .status();
        }
    }
    let writable = |dir: &Path| {
        let probe = dir.join("probe");
        let ok = std::fs::write(&probe, b"").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    };
    mode(0o555);
    let mut guard = None;
    if writable(&ro) {
        let set = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&ro)
            .status();
        if set.is_ok_and(|s| s.success()) {
            guard = Some(Immutable(ro.clone()));
        }
    }
    if writable(&ro) {
        eprintln!(
            "cannot make {} read-only here (root without chattr): case skipped",
            ro.display()
        );
    } else {
        expect_refusal(&kept, &["repack"], "cannot write");
    }
    drop(guard);
    mode(0o755);
}

#[test]
fn pack_order_lists_every_object_once_with_crafted_names() {
    let r = history();
    // A path marked -delta keeps its real name, so git still honours it.
    r.write(".gitattributes", b"*.bin -delta\n");
    r.write(
        "data/blob.bin",
        &corpus_text("rust/serde_json-1.0.133/src/value/ser.rs"),
    );
    r.write(
        "with space/and\ttab.rs",
        &corpus_text("rust/toml-0.8.19/src/lib.rs"),
    );
    r.commit_all("attributes");
    let o = r.simm(&["pack-order"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = lossy(&o.stdout);
    let mut listed: Vec<&str> = Vec::new();
    let mut blob_names = 0;
    let rev_list = lossy(&r.git(&[
        "rev-list",
        "--objects",
        "--all",
        "--reflog",
        "--indexed-objects",
    ]));
    let kinds = lossy(&r.git(&[
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objectname) %(objecttype)",
    ]));
    let kind = |id: &str| -> String {
        kinds
            .lines()
            .find(|l| l.starts_with(id))
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("")
            .to_owned()
    };
    let bin_blob = r.rev("HEAD:data/blob.bin");
    for line in out.lines() {
        let (id, name) = line.split_once(' ').unwrap_or((line, ""));
        listed.push(id);
        let k = kind(id);
        if id == bin_blob {
            assert_eq!(name, "data/blob.bin", "-delta path renamed");
        } else if k == "blob" || (k == "tree" && !name.is_empty()) {
            assert!(
                name.len() == 13 && name.bytes().all(|b| (b'a'..=b'd').contains(&b)),
                "{k} {id} named '{name}'"
            );
            blob_names += 1;
        }
    }
    let mut want: Vec<&str> = rev_list.lines().map(|l| &l[..40]).collect();
    want.sort();
    let mut got = listed.clone();
    got.sort();
    assert_eq!(
        got, want,
        "pack-order lists other objects than git rev-list"
    );
    assert!(blob_names > 100, "only {blob_names} crafted names");
    // Names must be distinct within a type (types sort apart), or
    // pack-objects would fall back to its size order.
    for want in ["blob", "tree"] {
        let mut names: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(id, n)| n.len() == 13 && kind(id) == want)
            .map(|(_, n)| n)
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "crafted {want} names repeat");
    }

    // rev-list options pass through: one commit's new objects only.
    let o = r.simm(&["pack-order", "HEAD~1..HEAD"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut got: Vec<String> = lossy(&o.stdout)
        .lines()
        .map(|l| l[..40].to_owned())
        .collect();
    got.sort();
    let mut want: Vec<String> = lossy(&r.git(&["rev-list", "--objects", "HEAD~1..HEAD"]))
        .lines()
        .map(|l| l[..40].to_owned())
        .collect();
    want.sort();
    assert_eq!(got, want);

    // And the output is what git pack-objects takes.
    let out_base = r.path.parent().expect("parent").join("out");
    pipe(
        &r.path,
        &[
            "pack-objects",
            "--no-reuse-delta",
            "--delta-base-offset",
            "-q",
            &out_base.to_string_lossy(),
        ],
        out.as_bytes(),
    );

    // A bad revision is git's error, with git's exit code convention.
    let o = r.simm(&["pack-order", "no-such-rev"]);
    assert_eq!(o.status.code(), Some(128));
    assert!(stderr(&o).contains("no-such-rev"), "{}", stderr(&o));
}

#[test]
fn repack_writes_a_bitmap_where_git_would() {
    let r = history();
    let base = r.path.parent().expect("parent");
    let has_bitmap = |dir: &Path| -> bool {
        std::fs::read_dir(dir.join("objects/pack"))
            .expect("pack dir")
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".bitmap"))
    };
    let count = |dir: &Path, bitmap: &str| -> String {
        lossy(&git_ok(
            dir,
            &["rev-list", "--count", "--objects", "--all", bitmap],
        ))
    };
    // A bare repository gets one by default, as with git repack -a.
    git_ok(
        base,
        &["clone", "-q", "--bare", "--no-local", "repo", "served.git"],
    );
    let served = base.join("served.git");
    let o = simm(&served, &["repack", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(has_bitmap(&served), "no bitmap in a bare repository");
    assert!(served.join("objects/pack/multi-pack-index").exists());
    assert_eq!(
        count(&served, "--use-bitmap-index"),
        count(&served, "--no-object-names")
    );
    fsck_clean(&served);
    // --no-write-bitmap-index wins; a later repack removes the old one.
    let o = simm(&served, &["repack", "-q", "--no-write-bitmap-index"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!has_bitmap(&served), "bitmap left behind");
    fsck_clean(&served);
    // A repository with a work tree gets none unless asked (-b) or
    // configured.
    let o = simm(&r.path, &["repack", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !has_bitmap(&r.path.join(".git")),
        "bitmap in a non-bare repository"
    );
    r.git(&["config", "repack.writeBitmaps", "true"]);
    let o = simm(&r.path, &["repack", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        has_bitmap(&r.path.join(".git")),
        "repack.writeBitmaps ignored"
    );
    fsck_clean(&r.path);
}

/// What a repack must not leave in `objects/pack` however it ends: its
/// temporary directory, its lock and journal, and git's temporary pack
/// and index files (which pack-objects removes when it is stopped with a
/// signal it catches, not when it is killed).
fn leftovers(git_dir: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(git_dir.join("objects/pack"))
        .expect("pack dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with(".simm-tmp-")
                || n.starts_with("tmp_")
                || n == "simm-repack.lock"
                || n == "simm-repack.installing"
                || n == "simm-repack.removing"
        })
        .collect();
    left.sort();
    left
}

#[test]
fn repack_interrupted_by_sigint_keeps_every_object_and_cleans_up() {
    use util::{To, When};
    let r = util::moved_files_repo(1500, 60);
    let base = r.path.parent().expect("parent");
    git_ok(
        base,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            "repo",
            "pristine.git",
        ],
    );
    let pristine = base.join("pristine.git");
    let before = object_set(&pristine);
    let mut moments: Vec<(When, To)> = [0, 50, 150, 300]
        .into_iter()
        .map(|ms| (When::After(Duration::from_millis(ms)), To::Process))
        .collect();
    // Each step's start: listing, ordering, pack-objects, verification
    // (and the install, which runs to its end once begun).
    for step in [
        "repack: start",
        "pack list: fingerprints",
        "pack list: delta attributes",
        "repack: pack-objects",
    ] {
        moments.push((When::Trace(step), To::Process));
    }
    // Into pack-objects' run (about a second here).
    let packing = |ms| When::AfterTrace("pack list: delta attributes", Duration::from_millis(ms));
    moments.push((packing(250), To::Process));
    moments.push((packing(450), To::Process));
    // Ctrl-C in a terminal: git-simm and its pack-objects both get SIGINT.
    moments.push((When::Trace("pack list: delta attributes"), To::Group));
    moments.push((packing(350), To::Group));
    moments.push((When::After(Duration::from_millis(300)), To::Group));
    for (i, (when, to)) in moments.into_iter().enumerate() {
        let what = format!("repack, SIGINT to {to:?} {when:?}");
        let dir = copy(&pristine, &base.join(format!("interrupted-{i}.git")));
        let s = util::interrupt(simm_command().current_dir(&dir).arg("repack"), when, to);
        // A delay meant to land inside pack-objects can land after it on a
        // fast or idle machine: once the new pack is verified its install
        // runs to the end by design, and a signal after that may find no
        // check left, so a finished repack is right then, and only then.
        let past_no_return = s.status.success() && signalled_after_verified(&s);
        if !past_no_return {
            util::assert_stopped(&s, &what);
        }
        assert_intact(&dir, &before, &what);
        assert_eq!(leftovers(&dir), Vec::<String>::new(), "{what}");
        // No git process goes on writing after git-simm has gone.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(leftovers(&dir), Vec::<String>::new(), "{what}, later");
        // The next run finds nothing in its way (fsck'd by the tests above).
        let o = simm(&dir, &["repack", "-q"]);
        assert!(o.status.success(), "{what}, then: {}", stderr(&o));
        assert_eq!(object_set(&dir), before, "{what}, then repacked");
        assert_eq!(packs(&dir).len(), 1, "{what}, then repacked");
    }
}

/// Whether the signal of a finished `repack` run reached it after its new
/// pack was verified (the point from which the install runs to its end),
/// from the trace's times: the run's last trace line less the time the
/// signal took to end it, against the time of "repack: verified", with
/// 50 ms for the exit after the last line.
fn signalled_after_verified(s: &util::Stopped) -> bool {
    let at = |line: &str| -> Option<f64> {
        line.strip_prefix("trace:")?
            .trim_start()
            .split_once(" s ")?
            .0
            .trim()
            .parse()
            .ok()
    };
    let verified = s
        .stderr
        .lines()
        .find(|l| l.ends_with("repack: verified"))
        .and_then(at);
    let last = s.stderr.lines().rev().find_map(at);
    match (verified, last, s.took) {
        (Some(v), Some(l), Some(took)) => l + 0.05 - took.as_secs_f64() >= v,
        _ => false,
    }
}

/// `repack` of an empty repository failed ("unexpected output
/// ''") where `git repack -a -d` says "Nothing new to pack." and succeeds.
#[test]
fn repack_of_an_empty_repository_says_nothing_new_to_pack_as_git_does() {
    let r = Repo::new();
    let git = r.git_output(&["repack", "-a", "-d"]);
    assert!(git.status.success());
    let o = r.simm(&["repack"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(lossy(&o.stdout), lossy(&git.stdout));
    assert_eq!(lossy(&o.stdout), "Nothing new to pack.\n");
    assert!(packs(&r.path.join(".git")).is_empty());
    let q = r.simm(&["repack", "-q"]);
    assert_eq!(q.status.code(), Some(0), "{}", stderr(&q));
    assert!(q.stdout.is_empty() && q.stderr.is_empty());
}

/// A killed `git pack-objects` leaves `tmp_pack_*` and
/// `tmp_idx_*` in `objects/pack`; repack removes them once they are as old
/// as `git gc` (through `git prune --expire <gc.pruneExpire>`) would remove
/// them, and keeps younger ones, which a running git may still be writing.
#[test]
fn repack_removes_old_git_temporaries_as_git_gc_does() {
    let r = Repo::new();
    r.write("a.txt", b"some text\n");
    r.commit_all("one");
    let pack_dir = r.path.join(".git/objects/pack");
    std::fs::create_dir_all(&pack_dir).expect("mkdir");
    let old = SystemTime::now() - Duration::from_secs(15 * 24 * 3600);
    for name in ["tmp_pack_old", "tmp_idx_old"] {
        let f = std::fs::File::create(pack_dir.join(name)).expect("create");
        f.set_modified(old).expect("mtime");
    }
    std::fs::write(pack_dir.join("tmp_pack_young"), b"").expect("create");
    // git's own rule, as the oracle: a copy cleaned by `git gc`.
    let copy = r.path.parent().expect("parent").join("copy");
    git_ok(
        r.path.parent().expect("parent"),
        &["clone", "-q", "--mirror", "repo", "copy"],
    );
    for name in ["tmp_pack_old", "tmp_idx_old"] {
        let f = std::fs::File::create(copy.join("objects/pack").join(name)).expect("create");
        f.set_modified(old).expect("mtime");
    }
    std::fs::write(copy.join("objects/pack/tmp_pack_young"), b"").expect("create");
    git_ok(&copy, &["gc", "-q"]);
    let o = simm(&r.path, &["repack", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let tmp = |dir: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("pack dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp_"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(tmp(&pack_dir), vec!["tmp_pack_young".to_owned()]);
    assert_eq!(tmp(&pack_dir), tmp(&copy.join("objects/pack")));
}

#[test]
fn repack_with_simm_bases_interrupted_by_sigint_keeps_every_object_and_cleans_up() {
    use std::time::Duration;
    use util::{To, When};
    let r = util::moved_files_repo(1500, 60);
    let base = r.path.parent().expect("parent");
    git_ok(
        base,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            "repo",
            "pristine.git",
        ],
    );
    let pristine = base.join("pristine.git");
    let before = object_set(&pristine);
    let mut moments: Vec<(When, To)> = Vec::new();
    for step in [
        "pack list: delta attributes",
        "bases: groups",
        "bases: commits and tags",
        "bases: deltas searched and pack written",
        "bases: pack read back",
        "bases: index written",
    ] {
        moments.push((When::Trace(step), To::Process));
    }
    let searching = |ms| When::AfterTrace("bases: commits and tags", Duration::from_millis(ms));
    moments.push((searching(20), To::Process));
    moments.push((searching(100), To::Group));
    moments.push((When::After(Duration::from_millis(300)), To::Group));
    for (i, (when, to)) in moments.into_iter().enumerate() {
        let what = format!("repack --bases=simm, SIGINT to {to:?} {when:?}");
        let dir = copy(&pristine, &base.join(format!("interrupted-{i}.git")));
        let s = util::interrupt(
            simm_command()
                .current_dir(&dir)
                .args(["repack", "--bases=simm"]),
            when,
            to,
        );
        // As above: past the verified pack, the install runs to its end.
        let past_no_return = s.status.success() && signalled_after_verified(&s);
        if !past_no_return {
            util::assert_stopped(&s, &what);
        }
        assert_intact(&dir, &before, &what);
        assert_eq!(leftovers(&dir), Vec::<String>::new(), "{what}");
        let o = simm(&dir, &["repack", "-q", "--bases=simm"]);
        assert!(o.status.success(), "{what}, then: {}", stderr(&o));
        assert_eq!(object_set(&dir), before, "{what}, then repacked");
        assert_eq!(packs(&dir).len(), 1, "{what}, then repacked");
    }
}

/// Hamming distance of two fingerprints as `git simm fingerprint` prints
/// them (64 hex digits).
fn hex_distance(a: &str, b: &str) -> u32 {
    let nibbles = |s: &str| -> Vec<u32> {
        s.chars()
            .map(|c| c.to_digit(16).expect("hex digit"))
            .collect()
    };
    nibbles(a)
        .iter()
        .zip(nibbles(b))
        .map(|(x, y)| (x ^ y).count_ones())
        .sum()
}

#[test]
fn bases_across_paths_for_what_each_path_group_leaves_whole() {
    // Each release saves the previous one's document, edited, under a new
    // name (as generated API docs per release are kept): every version is
    // the only one at its path, so the path groups leave each whole, and
    // the edits are heavy enough that the fingerprint join of path groups
    // (which needs about 80% shared) does not merge them either. Only the
    // cross-path pass can give them bases.
    let r = Repo::new();
    let mut rng = Rng(11);
    let mut doc: Vec<u8> = SOURCES[..4].iter().flat_map(|s| corpus_text(s)).collect();
    let mut fingerprints: Vec<String> = Vec::new();
    for v in 0..8 {
        let name = format!("releases/api-v{v}.txt");
        // Edit until the new version sits where only the cross-path pass
        // reaches: farther than the join's 40 bits from every earlier one,
        // within the pass's 96 of the previous.
        let mut next = doc.clone();
        loop {
            if v > 0 {
                next = edit(&next, &mut rng, 25);
            }
            r.write(&name, &next);
            let o = simm(&r.path, &["fingerprint", "--no-cache", &name]);
            assert!(o.status.success(), "{}", stderr(&o));
            let out = lossy(&o.stdout);
            let fp = out
                .split_whitespace()
                .next()
                .expect("fingerprint")
                .to_owned();
            let far = fingerprints.iter().all(|f| hex_distance(f, &fp) > 40);
            let near = fingerprints
                .last()
                .is_none_or(|f| hex_distance(f, &fp) <= 90);
            assert!(near, "edits drifted too far from the previous version");
            if far {
                fingerprints.push(fp);
                break;
            }
        }
        doc = next;
        r.commit_all(&format!("release {v}"));
    }
    let before = object_set(&r.path.join(".git"));
    let o = simm(&r.path, &["repack", "-q", "--bases=simm"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let git_dir = r.path.join(".git");
    assert_intact(&git_dir, &before, "repacked with --bases=simm");
    // Which blob is at which path, and what each is stored against.
    let names: std::collections::HashMap<String, String> =
        lossy(&git_ok(&r.path, &["rev-list", "--objects", "--all"]))
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(id, path)| (id.to_owned(), path.to_owned()))
            .collect();
    let listing = lossy(&git_ok(&git_dir, &["verify-pack", "-v", &idx_of(&git_dir)]));
    let mut across = 0;
    for line in listing.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 7 && f[1] == "blob" {
            let (path, base) = (&names[f[0]], names.get(f[6]));
            if path.starts_with("releases/") && base.is_some_and(|b| b != path) {
                across += 1;
            }
        }
    }
    // Seven of the eight can have an earlier release as base.
    assert!(
        across >= 6,
        "only {across} of 7 later releases stored against another path:\n{listing}"
    );
}
