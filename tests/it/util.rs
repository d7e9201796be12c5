//! Helpers shared by the integration tests and `benches/quality.rs`.
//!
//! Repositories built with the real `git` in a pinned environment, running
//! `git` and `git-simm`, the pinned text corpus that `fixtures/corpus.sh`
//! builds, and a deterministic PRNG. One copy here keeps the test modules
//! from drifting apart (a drifted copy once meant one suite was hermetic and
//! another was not).
//!
//! The test binary declares it as `mod util;` (tests/it/main.rs), the
//! quality bench as `#[path = "../tests/it/util.rs"] mod util;`.

// The test binary and the bench each use a different subset of these helpers.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../fixtures/fixture.rs"]
mod fixture;

pub use fixture::{fixture, git_env, walk};
use git_simm::similarity::fingerprint::{Fingerprint, Fingerprinter};
use git_simm::similarity::score::{Spans, percent, score};

// ---------------------------------------------------------------------------
// Running git and git-simm.

/// `git`, isolated by [`git_env`], to run in `dir`.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    git_env(&mut cmd).current_dir(dir);
    cmd
}

/// The `git-simm` binary under test, isolated by [`git_env`]; the caller
/// picks the directory (or passes `-C`).
pub fn simm_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-simm"));
    git_env(&mut cmd);
    cmd
}

/// PATH with git-simm's directory first, so git (`git simm`, hooks) finds
/// the binary under test.
pub fn path_with_simm() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_git-simm"));
    let dir = bin.parent().expect("binary has a directory");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Run `git-simm <args>` in `dir`, whether it succeeds or not.
pub fn simm_in(dir: &Path, args: &[&str]) -> Output {
    simm_command()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run git-simm")
}

/// The stdout of a git run that must have succeeded; the failure message
/// carries git's stderr, which is what explains it.
pub fn succeeded(args: &[&str], o: Output) -> Vec<u8> {
    assert!(
        o.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Bytes as text, for messages and comparisons that tolerate non-UTF-8.
pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn stdout(o: &Output) -> String {
    lossy(&o.stdout)
}

pub fn stderr(o: &Output) -> String {
    lossy(&o.stderr)
}

// ---------------------------------------------------------------------------
// Files below a directory, named by bytes.

/// `root/rel`; `rel` is bytes so tests can use names that are not UTF-8.
pub fn path_of(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(rel))
}

/// Write `root/rel`, creating its directories first.
pub fn write(root: &Path, rel: &[u8], data: &[u8]) {
    let p = path_of(root, rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(p, data).expect("write file");
}

// ---------------------------------------------------------------------------
// The index's cache-tree, which `check --staged` relies on to skip reading
// HEAD's unchanged directories.

/// The cache-tree of the index in `dir` (a work tree) as git wrote it,
/// read with gix; `None` when the index has none.
pub fn cache_tree(dir: &Path) -> Option<gix::index::extension::Tree> {
    gix::index::File::at(
        dir.join(".git/index"),
        gix::hash::Kind::Sha1,
        false,
        Default::default(),
    )
    .expect("index")
    .tree()
    .cloned()
}

/// Replace the index in `dir` by one with the same entries and no
/// cache-tree, as plumbing writes it: `git update-index --index-info`
/// into a new index file.
pub fn drop_cache_tree(dir: &Path) {
    use std::io::Write;
    use std::process::Stdio;
    let listing = succeeded(
        &["ls-files", "-s", "-z"],
        git_command(dir)
            .args(["ls-files", "-s", "-z"])
            .output()
            .expect("run git"),
    );
    let fresh = dir.join(".git/index.fresh");
    let mut child = git_command(dir)
        .env("GIT_INDEX_FILE", &fresh)
        .args(["update-index", "-z", "--index-info"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("run git");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&listing)
        .expect("write to git");
    assert!(child.wait().expect("git finishes").success());
    std::fs::rename(&fresh, dir.join(".git/index")).expect("replace the index");
    assert!(cache_tree(dir).is_none(), "plumbing wrote a cache-tree");
}

// ---------------------------------------------------------------------------
// Repositories driven by the real git.

/// A throw-away repository in a temporary directory, every git and
/// git-simm run in it isolated by [`git_env`].
pub struct Repo {
    _dir: tempfile::TempDir,
    /// The work tree: `repo` inside the temporary directory, so a test can
    /// put things (a bare clone, a query file) next to it.
    pub path: PathBuf,
}

impl Repo {
    /// `git init` on branch `main`. Configuration that would make runs
    /// differ between machines or stall them (automatic gc, signing, line
    /// ending conversion) is switched off in the repository's own config,
    /// which git-simm reads too.
    pub fn new() -> Repo {
        Repo::init(&[])
    }

    /// [`Repo::new`] with more `git init` options, e.g.
    /// `--ref-format=reftable` or `--object-format=sha256`.
    pub fn init(opts: &[&str]) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("repo");
        std::fs::create_dir(&path).expect("mkdir");
        let r = Repo { _dir: dir, path };
        let mut args = vec!["-c", "init.defaultBranch=main", "init", "-q"];
        args.extend_from_slice(opts);
        r.git(&args);
        r.git(&["config", "gc.auto", "0"]);
        r.git(&["config", "commit.gpgsign", "false"]);
        r.git(&["config", "core.autocrlf", "false"]);
        r
    }

    /// Run git here with `input` on its standard input; it must succeed.
    /// Its standard output, trimmed.
    pub fn git_stdin(&self, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut child = git_command(&self.path)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run git");
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input)
            .expect("write to git");
        let o = child.wait_with_output().expect("git finishes");
        assert!(o.status.success(), "git {args:?} failed");
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// Run git here, whether it succeeds or not.
    pub fn git_output(&self, args: &[&str]) -> Output {
        git_command(&self.path)
            .args(args)
            .output()
            .expect("run git")
    }

    /// Run git here; its stdout, asserting success.
    pub fn git(&self, args: &[&str]) -> Vec<u8> {
        succeeded(args, self.git_output(args))
    }

    /// Run git here; its stdout as UTF-8, asserting success.
    pub fn git_str(&self, args: &[&str]) -> String {
        String::from_utf8(self.git(args)).expect("git output is UTF-8")
    }

    /// The full id `rev` names.
    pub fn rev(&self, rev: &str) -> String {
        self.git_str(&["rev-parse", rev]).trim().to_owned()
    }

    /// Run `git-simm <args>` here, whether it succeeds or not.
    pub fn simm(&self, args: &[&str]) -> Output {
        simm_in(&self.path, args)
    }

    /// Where git-simm keeps its fingerprint store.
    pub fn store_dir(&self) -> PathBuf {
        self.path.join(".git/simm")
    }

    pub fn abs(&self, rel: &[u8]) -> PathBuf {
        path_of(&self.path, rel)
    }

    pub fn write(&self, rel: impl AsRef<[u8]>, data: &[u8]) {
        write(&self.path, rel.as_ref(), data);
    }

    pub fn remove(&self, rel: impl AsRef<[u8]>) {
        std::fs::remove_file(self.abs(rel.as_ref())).expect("remove");
    }

    /// Move a file on disk (not `git mv`).
    pub fn mv(&self, from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) {
        let to = self.abs(to.as_ref());
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::rename(self.abs(from.as_ref()), to).expect("rename");
    }

    pub fn symlink(&self, target: &str, rel: impl AsRef<[u8]>) {
        let p = self.abs(rel.as_ref());
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::os::unix::fs::symlink(target, p).expect("symlink");
    }

    pub fn chmod(&self, rel: impl AsRef<[u8]>, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            self.abs(rel.as_ref()),
            std::fs::Permissions::from_mode(mode),
        )
        .expect("chmod");
    }

    /// `git mv`, creating the destination's directory first.
    pub fn git_mv(&self, from: &str, to: &str) {
        if let Some(parent) = self.abs(to.as_bytes()).parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        self.git(&["mv", from, to]);
    }

    /// Stage everything and commit; returns the commit id.
    pub fn commit_all(&self, msg: &str) -> String {
        self.git(&["add", "-A"]);
        self.commit_index(msg)
    }

    /// Commit the index as it is (even when nothing changed); returns the
    /// commit id.
    pub fn commit_index(&self, msg: &str) -> String {
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
        self.rev("HEAD")
    }
}

// ---------------------------------------------------------------------------
// Fixtures: inputs the scripts in `fixtures/` build, cached under target/.

/// The text corpus (`fixtures/corpus.sh`): pinned crates and Python source
/// distributions, real code and prose.
pub fn corpus_dir() -> PathBuf {
    fixture("corpus")
}

/// Every file of the corpus, in sorted path order.
pub fn corpus_files() -> &'static [PathBuf] {
    static FILES: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        let dir = corpus_dir();
        let mut files = Vec::new();
        walk(&dir, &mut files);
        // The pinned packages hold over 5,000 files; fewer means the
        // cached directory was tampered with.
        assert!(
            files.len() >= 5000,
            "only {} files in the corpus at {}: remove it to rebuild",
            files.len(),
            dir.display()
        );
        files
    })
}

/// The content of the corpus file `rel` (relative to the corpus
/// directory, e.g. `rust/regex-1.11.1/src/lib.rs`): real text that stays
/// the same, whatever happens to this crate's own sources.
/// `data` with CRLF line ends: CR put before every LF that has none.
pub fn to_crlf(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 16);
    for (i, &b) in data.iter().enumerate() {
        if b == b'\n' && (i == 0 || data[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

pub fn corpus_text(rel: &str) -> Vec<u8> {
    let path = corpus_dir().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("corpus file {}: {e}", path.display()))
}

/// The pre-commit hook git-simm ships (and `install-hook` installs).
pub fn shipped_hook() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("git-hooks/pre-commit"))
        .expect("git-hooks/pre-commit")
}

/// Text files of 1 to 64 KiB make the fingerprint corpora: smaller ones are
/// not fingerprinted, larger ones would make the suites slow.
pub const MIN_FILE: usize = 1024;
pub const MAX_FILE: usize = 64 * 1024;

/// The size of one substitution in Manber's experiment.
pub const SUB_LEN: usize = 50;

/// `n` distinct real texts of 2 to 16 KiB from the pinned corpus, every
/// `step`-th one (different tests take different steps, so their files
/// differ).
pub fn texts(step: usize, n: usize) -> Vec<Vec<u8>> {
    let mut seen = std::collections::BTreeSet::new();
    let all: Vec<Vec<u8>> = corpus_files()
        .iter()
        .filter(|p| wanted(p))
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| (2048..=16384).contains(&d.len()) && is_text(d))
        .filter(|d| seen.insert(d.clone()))
        .collect();
    assert!(all.len() >= n * 20, "{} texts", all.len());
    all.into_iter().step_by(step).take(n).collect()
}

/// `text` with one line in `every` replaced by a new one.
pub fn edit(text: &[u8], every: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % every == 0 {
            out.extend_from_slice(&rng.fresh_line());
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The kinds of text the corpora are made of: source code (Rust, C,
/// Python) and prose (Markdown, reStructuredText, plain text), plus TOML.
pub fn wanted(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "rs" | "c" | "h" | "py" | "md" | "rst" | "txt" | "toml"))
}

/// git's test for text: no NUL in the first 8000 bytes.
pub fn is_text(data: &[u8]) -> bool {
    !data[..data.len().min(8000)].contains(&0)
}

/// A corpus text, with what the fingerprint experiments need of it: its
/// exact-score histogram and its fingerprint.
pub struct Doc {
    pub data: Vec<u8>,
    pub spans: Spans,
    pub fp: Fingerprint,
}

impl Doc {
    /// `data` must be at least [`MIN_FILE`] bytes, so it is fingerprinted.
    pub fn new(data: Vec<u8>, fpr: &mut Fingerprinter) -> Doc {
        Doc {
            spans: Spans::new(&data),
            fp: fpr
                .fingerprint(&data)
                .expect("1 KiB and more is fingerprinted"),
            data,
        }
    }
}

/// git's similarity percentage of a pair (symmetric, no size filter).
pub fn exact(a: &Spans, b: &Spans) -> u32 {
    percent(score(a, b, 0))
}

/// A random document unrelated to `docs[i]`: git scores the pair below 10%.
pub fn unrelated(docs: &[Doc], i: usize, rng: &mut Rng) -> usize {
    loop {
        let j = rng.below(docs.len());
        if j != i && exact(&docs[i].spans, &docs[j].spans) < 10 {
            return j;
        }
    }
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Sample standard deviation.
pub fn sd(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len().max(2) - 1) as f64).sqrt()
}

// ---------------------------------------------------------------------------
// Deterministic randomness.

/// SplitMix64: tiny and deterministic, so every run makes the same edits
/// and a failure can be replayed; no dependency needed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `n` distinct indices of `0..len`, in random order.
    pub fn sample(&mut self, len: usize, n: usize) -> Vec<usize> {
        let mut pool: Vec<usize> = (0..len).collect();
        (0..n.min(len))
            .map(|_| pool.swap_remove(self.below(pool.len())))
            .collect()
    }

    /// A line of plausible code that no other file contains.
    pub fn fresh_line(&mut self) -> Vec<u8> {
        let indent = " ".repeat(self.below(3) * 4);
        let (a, b, c) = (self.next() as u32, self.next() as u16, self.next() as u16);
        format!(
            "{indent}let v{a:x} = w{b:x}(&q{c:x}, {});\n",
            self.below(1000)
        )
        .into_bytes()
    }

    /// `n` random printable bytes.
    pub fn printable(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| 0x20 + self.below(0x5f) as u8).collect()
    }

    /// Printable junk of `len` bytes that will not match real text.
    pub fn junk(&mut self, len: usize) -> Vec<u8> {
        const WORDS: [&str; 12] = [
            "zork", "quux", "frob", "blarg", "wibble", "plugh", "xyzzy", "grault", "garply",
            "waldo", "fred", "thud",
        ];
        let mut s = Vec::with_capacity(len + 16);
        while s.len() < len {
            let w = WORDS[self.below(WORDS.len())];
            s.extend_from_slice(format!("{w}{:x} ", self.next() & 0xffff_ffff).as_bytes());
        }
        s.truncate(len.max(1));
        s
    }
}

// ---------------------------------------------------------------------------
// Repositories made at scale with `git fast-import`.

/// A repository of `n` files of generated code (`lines` lines each, about
/// 36 bytes a line) committed on `main`, and a second commit that moves
/// every one of them to a new path and changes a tenth of its lines:
/// `HEAD~1..HEAD` is `n` renames for detection to find, and the object
/// database holds `2n` distinct blobs. Written with `git fast-import`, so
/// tens of thousands of files take a second or two; the work tree is left
/// empty (nothing is checked out).
pub fn moved_files_repo(n: usize, lines: usize) -> Repo {
    use std::io::Write;
    let r = Repo::new();
    let mut rng = Rng(0x1e7e_57ed);
    let mut stream = Vec::new();
    let blob = |stream: &mut Vec<u8>, mark: usize, data: &[u8]| {
        write!(stream, "blob\nmark :{mark}\ndata {}\n", data.len()).expect("write");
        stream.extend_from_slice(data);
        stream.push(b'\n');
    };
    let mut originals = Vec::with_capacity(n);
    for i in 0..n {
        let text: Vec<Vec<u8>> = (0..lines).map(|_| rng.fresh_line()).collect();
        blob(&mut stream, i + 1, &text.concat());
        originals.push(text);
    }
    for (i, mut text) in originals.into_iter().enumerate() {
        for _ in 0..lines / 10 {
            let at = rng.below(text.len());
            text[at] = rng.fresh_line();
        }
        blob(&mut stream, n + i + 1, &text.concat());
    }
    let commit = |stream: &mut Vec<u8>, msg: &str| {
        write!(
            stream,
            "commit refs/heads/main\n\
             author A U Thor <author@example.com> 1112911993 +0000\n\
             committer C O Mitter <committer@example.com> 1112911993 +0000\n\
             data {}\n{msg}\n",
            msg.len()
        )
        .expect("write");
    };
    commit(&mut stream, "files");
    for i in 0..n {
        writeln!(stream, "M 100644 :{} old/d{:02}/file{i}.rs", i + 1, i % 50).expect("write");
    }
    commit(&mut stream, "moved");
    for i in 0..n {
        writeln!(stream, "D old/d{:02}/file{i}.rs", i % 50).expect("write");
        writeln!(
            stream,
            "M 100644 :{} new/e{:02}/moved{i}.rs",
            n + i + 1,
            i % 40
        )
        .expect("write");
    }
    let mut child = git_command(&r.path)
        .args(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("run git fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&stream)
        .expect("feed git fast-import");
    assert!(child.wait().expect("git fast-import").success());
    r
}

// ---------------------------------------------------------------------------
// Interrupting git-simm as Ctrl-C does.

/// When [`interrupt`] sends SIGINT.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// This long after the start.
    After(std::time::Duration),
    /// As soon as a `GIT_SIMM_TRACE` line containing this text is printed
    /// (a step just ended, the next one started).
    Trace(&'static str),
    /// This long after such a line.
    AfterTrace(&'static str, std::time::Duration),
}

/// How an [`interrupt`]ed run ended.
#[derive(Debug)]
pub struct Stopped {
    /// Its exit status.
    pub status: std::process::ExitStatus,
    /// Everything it wrote to stderr (trace lines included).
    pub stderr: String,
    /// From the signal to the exit; `None` when it ended before the signal
    /// was due, so none was sent.
    pub took: Option<std::time::Duration>,
}

/// Who gets the signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum To {
    /// git-simm alone (`kill -INT <pid>`).
    Process,
    /// git-simm and the git commands it runs, as Ctrl-C in a terminal
    /// signals the whole foreground process group.
    Group,
}

/// Run `cmd` with `GIT_SIMM_TRACE=1` (stdout discarded), send SIGINT `to`
/// whom and `when` it says, and wait for it to end (killing it after a
/// minute).
pub fn interrupt(cmd: &mut Command, when: When, to: To) -> Stopped {
    use rustix::process::{Pid, Signal, kill_process, kill_process_group};
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    if to == To::Group {
        // Its own group, as a shell gives a foreground job.
        cmd.process_group(0);
    }
    // A signal that comes before git-simm installs its handler must kill
    // it (what `assert_stopped` expects), but an ignored SIGINT survives
    // exec: the tests run in the background of a non-interactive shell
    // (`.ci/run &`) inherit it ignored, and such a signal was lost.
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd
        .env("GIT_SIMM_TRACE", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn git-simm");
    let stderr = child.stderr.take().expect("stderr");
    let (lines, arrived) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            all.push_str(&line);
            all.push('\n');
            let _ = lines.send(line);
        }
        all
    });
    let due = match when {
        When::After(d) => {
            std::thread::sleep(d.saturating_sub(start.elapsed()));
            true
        }
        When::Trace(text) | When::AfterTrace(text, _) => {
            let seen = loop {
                match arrived.recv_timeout(Duration::from_secs(60)) {
                    Ok(line) if line.contains(text) => break true,
                    Ok(_) => {}
                    Err(_) => break false,
                }
            };
            if let When::AfterTrace(_, d) = when {
                std::thread::sleep(d);
            }
            seen
        }
    };
    let pid = Pid::from_child(&child);
    let sent = due
        && matches!(child.try_wait(), Ok(None))
        && match to {
            To::Process => kill_process(pid, Signal::INT),
            To::Group => kill_process_group(pid, Signal::INT),
        }
        .is_ok();
    let signalled = Instant::now();
    let deadline = signalled + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for git-simm") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("git-simm did not stop within a minute of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = sent.then(|| signalled.elapsed());
    Stopped {
        status,
        stderr: reader.join().expect("stderr reader"),
        took,
    }
}

/// Assert that an [`interrupt`]ed run stopped promptly and as interrupted
/// (exit 130, or killed by the signal when it came before the handler was
/// installed), or succeeded when it finished before the signal was due.
pub fn assert_stopped(s: &Stopped, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    eprintln!("{what}: {:?}, {:?} after the signal", s.status, s.took);
    // A signal that arrives after the run's last look at the interrupt
    // flag (its "command finished" trace comes before that look) finds the
    // work done, and the run ends as it would have; one that arrives
    // before it must stop the run.
    let finished_first = s.status.success() && s.stderr.contains("command finished");
    match s.took {
        Some(_) if finished_first => {}
        Some(took) => {
            assert!(
                s.status.code() == Some(130) || s.status.signal() == Some(2),
                "{what}: {:?} after SIGINT\n{}",
                s.status,
                s.stderr
            );
            assert!(
                took < std::time::Duration::from_secs(2),
                "{what}: took {took:?} to stop\n{}",
                s.stderr
            );
        }
        None => assert!(
            s.status.success(),
            "{what}: {:?} before any signal\n{}",
            s.status,
            s.stderr
        ),
    }
}
