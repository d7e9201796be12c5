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

use git_simm::fingerprint::{Fingerprint, Fingerprinter};
use git_simm::score::{Spans, percent, score};

// ---------------------------------------------------------------------------
// Running git and git-simm.

/// Isolate `cmd` (git or git-simm) from the machine and from any repository
/// the tests run inside of, so outputs and commit ids are reproducible.
///
/// Every inherited `GIT_*` variable goes: inside a hook or a
/// `git rebase --exec`, GIT_DIR and friends would point git at the outer
/// repository, and GIT_SIMM_* budgets would change what git-simm does.
/// System and global configuration are ignored; the branch name, signing
/// and automatic gc are pinned above any repository's configuration (as
/// `-c` would); identities and dates are pinned (git's own test-suite
/// values) as in gitoxide's fixture scripts. `fixtures/lib.sh` sets the
/// same for the fixture scripts (`fixtures::lib_sh_pins_what_git_env_pins`).
pub fn git_env(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "3")
        .env("GIT_CONFIG_KEY_0", "init.defaultBranch")
        .env("GIT_CONFIG_VALUE_0", "main")
        .env("GIT_CONFIG_KEY_1", "commit.gpgsign")
        .env("GIT_CONFIG_VALUE_1", "false")
        .env("GIT_CONFIG_KEY_2", "gc.auto")
        .env("GIT_CONFIG_VALUE_2", "0")
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2005-04-07T22:13:13Z")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "2005-04-07T22:13:13Z")
}

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
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("repo");
        std::fs::create_dir(&path).expect("mkdir");
        let r = Repo { _dir: dir, path };
        r.git(&["-c", "init.defaultBranch=main", "init", "-q"]);
        r.git(&["config", "gc.auto", "0"]);
        r.git(&["config", "commit.gpgsign", "false"]);
        r.git(&["config", "core.autocrlf", "false"]);
        r
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

/// Where built fixtures are kept: `$GIT_SIMM_FIXTURES` if set (to share
/// them between clones or keep them over `cargo clean`), otherwise
/// `target/fixtures/` of this repository.
pub fn fixtures_root() -> PathBuf {
    match std::env::var_os("GIT_SIMM_FIXTURES") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fixtures"),
    }
}

/// The cache key of `fixtures/<name>.sh`: the first 16 hex digits of the
/// SHA-1 of the script, `fixtures/lib.sh` and every file below
/// `fixtures/<name>/` (its pinned inputs), with their names. Editing any
/// of them gives a new key, so the fixture is rebuilt exactly when what
/// builds it changes.
fn fixture_key(name: &str) -> std::io::Result<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut inputs = vec![dir.join(format!("{name}.sh")), dir.join("lib.sh")];
    walk(&dir.join(name), &mut inputs);
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
    for path in &inputs {
        let data = std::fs::read(path)?;
        let rel = path.strip_prefix(&dir).unwrap_or(path);
        hasher.update(rel.as_os_str().as_bytes());
        hasher.update(format!("\0{}\0", data.len()).as_bytes());
        hasher.update(&data);
    }
    let id = hasher.try_finalize().map_err(std::io::Error::other)?;
    Ok(id.to_hex_with_len(16).to_string())
}

/// Build `fixtures/<name>.sh` into `<root>/<name>-<key>/` unless it is
/// there. Safe when several processes ask at once: they take turns on a
/// lock file, and the script writes into a temporary directory renamed
/// into place when it succeeds, so a directory under the final name is
/// always complete.
fn build_fixture(name: &str) -> Result<PathBuf, String> {
    let key =
        fixture_key(name).map_err(|e| format!("reading fixtures/{name}.sh and its inputs: {e}"))?;
    let root = fixtures_root();
    let done = root.join(format!("{name}-{key}"));
    if done.is_dir() {
        return Ok(done);
    }
    let io = |what: &str, e: std::io::Error| format!("{what} in {}: {e}", root.display());
    std::fs::create_dir_all(&root).map_err(|e| io("creating the fixture cache", e))?;
    let lock = std::fs::File::create(root.join(format!(".{name}-{key}.lock")))
        .map_err(|e| io("creating a lock file", e))?;
    lock.lock().map_err(|e| io("locking", e))?;
    if done.is_dir() {
        // Another process built it while this one waited.
        return Ok(done);
    }
    // Whatever an interrupted build left; nobody else builds it now.
    let partial = format!(".{name}-{key}.tmp-");
    for e in std::fs::read_dir(&root)
        .map_err(|e| io("listing", e))?
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(&partial) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let tmp = root.join(format!("{partial}{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/{name}.sh"));
    let start = std::time::Instant::now();
    let out = git_env(&mut Command::new("bash"))
        .arg(&script)
        .arg(&tmp)
        .output()
        .map_err(|e| format!("running bash {}: {e}", script.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "{} failed ({}); the first build downloads its pinned inputs with cargo and \
             pip, so it needs the package registries:\n{}{}",
            script.display(),
            out.status,
            lossy(&out.stdout),
            lossy(&out.stderr)
        ));
    }
    std::fs::rename(&tmp, &done).map_err(|e| io("renaming the built fixture into place", e))?;
    eprintln!(
        "built fixture {} in {:.1} s",
        done.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(done)
}

/// The directory `fixtures/<name>.sh` builds, built on first use (once per
/// process) and cached. Panics with the script's output if it cannot be
/// built: a test never runs on a missing fixture.
pub fn fixture(name: &str) -> PathBuf {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static BUILT: Mutex<Option<HashMap<String, Result<PathBuf, String>>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let built = built.get_or_insert_with(HashMap::new);
    let result = built
        .entry(name.to_owned())
        .or_insert_with(|| build_fixture(name));
    match result {
        Ok(dir) => dir.clone(),
        Err(msg) => panic!("cannot build fixture {name}: {msg}"),
    }
}

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

/// Every regular file below `dir`, in sorted path order (so corpora come
/// out the same on every machine); symlinks and unreadable directories are
/// skipped.
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
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
