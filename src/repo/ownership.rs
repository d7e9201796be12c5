//! Whether a repository may be used at all: git's ownership rule
//! (CVE-2022-24765), as git 2.47 applies it in `setup.c`, made before
//! anything reads the repository's configuration or runs git in it.
//!
//! A repository's configuration can name programs (`core.fsmonitor`,
//! `core.sshCommand`, `core.pager`, hooks); git refuses a repository whose
//! work tree, `.git` file or git directory another user owns, unless
//! `safe.directory` allows it, so a stranger's repository (on a shared
//! disk, in `/tmp`, on a USB stick) cannot run programs as whoever walks
//! into it. git-simm runs git with `--git-dir` given explicitly, which
//! skips git's own check, so it makes the check itself, first:
//!
//! - the search is git's (`setup_git_directory_gently_1`): from the
//!   starting directory up, `.git` (a file naming the git directory, or a
//!   directory), then the directory itself as a bare repository, stopping
//!   at `GIT_CEILING_DIRECTORIES` and at file system boundaries (unless
//!   `GIT_DISCOVERY_ACROSS_FILESYSTEM`); `GIT_DIR` set skips the search and
//!   the check, as in git;
//! - found through `.git`, the directory holding it, the `.git` file (when
//!   it is one) and the git directory must be owned by the user, found as
//!   a bare repository, the directory; owned means owned by the effective
//!   user, and for root also owned by the user in `SUDO_UID` (root
//!   running `sudo git ...` in the user's repository);
//! - otherwise `safe.directory` decides, read from the system, global and
//!   command-line configuration only (`git -c`, `GIT_CONFIG_PARAMETERS`,
//!   `GIT_CONFIG_COUNT`), never the repository's own: `*`, an absolute
//!   path (`~` expanded) compared with the real path of the work tree (or
//!   of the git directory of a bare repository), a path ending in `/*` for
//!   everything below it, `.` for the current directory, and an empty
//!   value that forgets what came before;
//! - `safe.bareRepository=explicit` refuses a bare repository found by the
//!   search (not the `.git` directory of a work tree, a linked worktree's
//!   or a submodule's git directory).
//!
//! The values of `safe.*` are asked of git itself (`git config
//! --get-regexp` with no repository), so its files, includes and
//! command-line values are exactly git's; that runs only when an owner
//! differs or a bare repository was found.
//!
//! gix has a trust model of its own (`gix::open::Options`, `gix-sec`) but
//! does not refuse, and it differs from git's rule: it judges the git
//! directory alone (a work tree or `.git` file of another owner is not
//! looked at), honours `SUDO_UID` for any user rather than only for root,
//! reads `safe.directory` from the system and global files but not from
//! `git -c`, skips `.` as not absolute, lets `/a/*` match `/a` itself,
//! keeps entries whose path does not exist, and does not know
//! `safe.bareRepository`. Where this check lets a repository through,
//! gix is therefore told to trust it (see `Repo::discover`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};

use super::RepoError;

/// Where git's search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Found {
    /// `GIT_DIR` is set: git searches nothing and checks no owner.
    Explicit,
    /// A work tree (`dir`) with its `.git` file (if `.git` is a file) and
    /// its git directory.
    WorkTree {
        dir: PathBuf,
        gitfile: Option<PathBuf>,
        gitdir: PathBuf,
    },
    /// A bare repository.
    Bare { dir: PathBuf },
    /// No repository (or one git would refuse for other reasons, such as a
    /// `.git` file that names no repository): the caller's own opening
    /// reports it.
    Nothing,
}

/// The check for a repository found by searching upward from `start`, as
/// git's commands find theirs.
pub(super) fn check_discovered(start: &Path) -> Result<Found, RepoError> {
    if std::env::var_os("GIT_DIR").is_some() {
        return Ok(Found::Explicit);
    }
    let found = search(start, true);
    check(&found, start, true)?;
    Ok(found)
}

/// The check for the repository at `path` (its work tree's top or its git
/// directory), named by the user (`origin --in`): found there as git finds
/// one from that directory, without searching above it, and a bare one is
/// explicitly named, so `safe.bareRepository` does not apply.
pub(super) fn check_named(path: &Path) -> Result<(), RepoError> {
    let found = search(path, false);
    check(&found, path, false)
}

/// The check for what another search (gix's) found when git's found
/// nothing: its git directory and work tree must be owned, or allowed.
pub(super) fn check_paths(work_dir: Option<&Path>, git_dir: &Path) -> Result<(), RepoError> {
    let found = match work_dir {
        Some(dir) => Found::WorkTree {
            dir: dir.to_owned(),
            gitfile: None,
            gitdir: git_dir.to_owned(),
        },
        None => Found::Bare {
            dir: git_dir.to_owned(),
        },
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| git_dir.to_owned());
    check(&found, &cwd, false)
}

fn check(found: &Found, cwd: &Path, implicit_bare_rule: bool) -> Result<(), RepoError> {
    let (dir, owned) = match found {
        Found::Explicit | Found::Nothing => return Ok(()),
        Found::WorkTree {
            dir,
            gitfile,
            gitdir,
        } => (
            dir,
            gitfile.as_deref().is_none_or(owned_by_current_user)
                && owned_by_current_user(dir)
                && owned_by_current_user(gitdir),
        ),
        Found::Bare { dir } => (dir, owned_by_current_user(dir)),
    };
    let owned = owned && !assume_different_owner();
    let bare = matches!(found, Found::Bare { .. });
    if owned && !(bare && implicit_bare_rule) {
        return Ok(());
    }
    // Only now is the configuration needed: git reads it only then too.
    let config = Protected::read()?;
    if bare
        && implicit_bare_rule
        && config.bare_repository.as_deref() == Some("explicit")
        && !is_implicit_bare_repo(dir)
    {
        return Err(RepoError::BareNotAllowed {
            path: dir.clone(),
            value: "explicit".into(),
        });
    }
    if let Some(value) = config
        .bare_repository
        .as_deref()
        .filter(|v| bare && implicit_bare_rule && !matches!(*v, "explicit" | "all"))
    {
        return Err(RepoError::ProtectedConfig {
            reason: format!("bad config variable 'safe.bareRepository': '{value}'"),
        });
    }
    if owned || config.allows(dir, cwd)? {
        return Ok(());
    }
    Err(RepoError::DubiousOwnership {
        path: dir.to_owned(),
        quoted: sq_quote_pretty(dir.as_os_str().as_encoded_bytes()),
        warnings: config.warnings(),
    })
}

/// `GIT_TEST_ASSUME_DIFFERENT_OWNER`, git's own switch for its tests.
fn assume_different_owner() -> bool {
    std::env::var_os("GIT_TEST_ASSUME_DIFFERENT_OWNER").is_some_and(|v| env_bool(&v))
}

/// A boolean environment variable as git reads one (`git_env_bool`):
/// `true`, `yes`, `on`, a non-zero number; anything else is false.
fn env_bool(v: &OsStr) -> bool {
    let v = v.to_string_lossy().to_ascii_lowercase();
    matches!(v.as_str(), "true" | "yes" | "on") || v.parse::<i64>().is_ok_and(|n| n != 0)
}

// ---------------------------------------------------------------------------
// The search (setup.c, setup_git_directory_gently_1).

fn search(start: &Path, upward: bool) -> Found {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
    let mut dir: Vec<u8> = start.as_os_str().as_encoded_bytes().to_vec();
    while dir.len() > 1 && dir.ends_with(b"/") {
        dir.pop();
    }
    let ceilings = ceiling_directories();
    let ceil_offset = longest_ancestor_length(&dir, &ceilings);
    let min_offset = 1usize;
    let across = std::env::var_os("GIT_DISCOVERY_ACROSS_FILESYSTEM").is_some_and(|v| env_bool(&v));
    let device = (!across).then(|| device_of(&dir)).flatten();
    loop {
        let here = path_of(&dir);
        let dot_git = here.join(".git");
        match read_gitfile(&dot_git) {
            Gitfile::Names(gitdir) => {
                return Found::WorkTree {
                    dir: here,
                    gitfile: Some(dot_git),
                    gitdir,
                };
            }
            Gitfile::NotAFile if is_git_directory(&dot_git) => {
                return Found::WorkTree {
                    dir: here,
                    gitfile: None,
                    gitdir: dot_git,
                };
            }
            Gitfile::Invalid => return Found::Nothing,
            Gitfile::NotAFile | Gitfile::Missing => {}
        }
        if is_git_directory(&here) {
            return Found::Bare { dir: here };
        }
        if !upward {
            return Found::Nothing;
        }
        let mut offset = dir.len();
        if offset <= min_offset {
            return Found::Nothing;
        }
        loop {
            offset -= 1;
            if offset as isize <= ceil_offset || dir[offset] == b'/' {
                break;
            }
        }
        if offset as isize <= ceil_offset {
            return Found::Nothing;
        }
        dir.truncate(offset.max(min_offset));
        if let Some(dev) = device
            && device_of(&dir) != Some(dev)
        {
            return Found::Nothing;
        }
    }
}

fn path_of(bytes: &[u8]) -> PathBuf {
    // SAFETY-free on Unix: any bytes are a path; elsewhere the bytes came
    // from an `OsStr` and are cut only at `/`.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
    }
}

#[cfg(unix)]
fn device_of(dir: &[u8]) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path_of(dir)).ok().map(|m| m.dev())
}

#[cfg(not(unix))]
fn device_of(_: &[u8]) -> Option<u64> {
    None
}

/// `GIT_CEILING_DIRECTORIES` as git canonicalises it
/// (`canonicalize_ceiling_entry`): relative entries dropped, the others
/// resolved to real paths until an empty entry, which keeps the rest as
/// written.
fn ceiling_directories() -> Vec<Vec<u8>> {
    let Some(env) = std::env::var_os("GIT_CEILING_DIRECTORIES") else {
        return Vec::new();
    };
    let mut empty_found = false;
    let mut out = Vec::new();
    for entry in env.as_encoded_bytes().split(|&b| b == b':') {
        if entry.is_empty() {
            empty_found = true;
        } else if !entry.starts_with(b"/") {
        } else if empty_found {
            out.push(entry.to_vec());
        } else if let Ok(real) = std::fs::canonicalize(path_of(entry)) {
            out.push(real.as_os_str().as_encoded_bytes().to_vec());
        }
    }
    out
}

/// git's `longest_ancestor_length`: the length of the longest of
/// `prefixes` that is a proper ancestor of `path`, -1 if none.
fn longest_ancestor_length(path: &[u8], prefixes: &[Vec<u8>]) -> isize {
    if path == b"/" {
        return -1;
    }
    let mut max = -1isize;
    for ceil in prefixes {
        let mut len = ceil.len();
        if len > 0 && ceil[len - 1] == b'/' {
            len -= 1;
        }
        if path.len() <= len + 1 || path[..len] != ceil[..len] || path[len] != b'/' {
            continue;
        }
        max = max.max(len as isize);
    }
    max
}

enum Gitfile {
    /// A `.git` file naming this git directory (its real path).
    Names(PathBuf),
    /// Not a regular file (a directory, most often).
    NotAFile,
    /// Nothing there.
    Missing,
    /// A file git would die on (not `gitdir: `, no repository there).
    Invalid,
}

/// git's `read_gitfile_gently`.
fn read_gitfile(path: &Path) -> Gitfile {
    let Ok(meta) = std::fs::metadata(path) else {
        return Gitfile::Missing;
    };
    if !meta.is_file() {
        return Gitfile::NotAFile;
    }
    if meta.len() > 1 << 20 {
        return Gitfile::Invalid;
    }
    let Ok(mut buf) = std::fs::read(path) else {
        return Gitfile::Invalid;
    };
    if !buf.starts_with(b"gitdir: ") {
        return Gitfile::Invalid;
    }
    while buf.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        buf.pop();
    }
    if buf.len() < 9 {
        return Gitfile::Invalid;
    }
    let named = path_of(&buf[8..]);
    let dir = if named.is_absolute() {
        named
    } else {
        path.parent().unwrap_or(Path::new("/")).join(named)
    };
    if !is_git_directory(&dir) {
        return Gitfile::Invalid;
    }
    match std::fs::canonicalize(&dir) {
        Ok(real) => Gitfile::Names(real),
        Err(_) => Gitfile::Invalid,
    }
}

/// git's `is_git_directory`: a valid `HEAD`, and `objects` (or
/// `GIT_OBJECT_DIRECTORY`) and `refs` in the common directory.
fn is_git_directory(suspect: &Path) -> bool {
    if !valid_head(&suspect.join("HEAD")) {
        return false;
    }
    let common = common_dir(suspect);
    let objects = match std::env::var_os("GIT_OBJECT_DIRECTORY") {
        Some(dir) => PathBuf::from(dir),
        None => common.join("objects"),
    };
    searchable(&objects) && searchable(&common.join("refs"))
}

/// `access(path, X_OK)`.
fn searchable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
    }
    #[cfg(not(unix))]
    {
        path.exists()
    }
}

/// git's `get_common_dir`: `GIT_COMMON_DIR`, else what `commondir` names.
fn common_dir(gitdir: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("GIT_COMMON_DIR") {
        return PathBuf::from(dir);
    }
    let file = gitdir.join("commondir");
    let Ok(mut data) = std::fs::read(&file) else {
        return gitdir.to_owned();
    };
    while data.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        data.pop();
    }
    let named = path_of(&data);
    let path = if named.is_absolute() {
        named
    } else {
        gitdir.join(named)
    };
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// git's `validate_headref`: a symbolic link into `refs/`, `ref: refs/...`
/// or an object id.
fn valid_head(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path)
            .is_ok_and(|t| t.as_os_str().as_encoded_bytes().starts_with(b"refs/"));
    }
    let Ok(data) = read_prefix(path, 255) else {
        return false;
    };
    if let Some(rest) = data.strip_prefix(b"ref:") {
        let rest = rest.trim_start_with(|c| c.is_ascii_whitespace());
        if rest.starts_with(b"refs/") {
            return true;
        }
    }
    // get_oid_hex_any: 40 or 64 hex digits at the start.
    let hex = data.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    hex >= 40
}

fn read_prefix(path: &Path, n: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    crate::fsutil::open_regular_nonblocking(path)?
        .take(n)
        .read_to_end(&mut out)?;
    Ok(out)
}

/// git's `is_implicit_bare_repo`: a `.git` directory, or the git directory
/// of a linked worktree or of a submodule.
fn is_implicit_bare_repo(dir: &Path) -> bool {
    let bytes = dir.as_os_str().as_encoded_bytes();
    dir.file_name() == Some(OsStr::new(".git"))
        || bytes.find(b"/.git/worktrees/").is_some()
        || bytes.find(b"/.git/modules/").is_some()
}

// ---------------------------------------------------------------------------
// Owners (git-compat-util.h, is_path_owned_by_current_uid).

/// Whether `path` itself (not what a link points to) belongs to the
/// effective user, or, when that is root, to root or to `SUDO_UID`.
#[cfg(unix)]
fn owned_by_current_user(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let mut euid = rustix::process::geteuid().as_raw();
    if euid == 0 {
        if meta.uid() == 0 {
            return true;
        }
        if let Some(uid) = std::env::var_os("SUDO_UID").and_then(|v| sudo_uid(v.as_encoded_bytes()))
        {
            euid = uid;
        }
    }
    meta.uid() == euid
}

#[cfg(not(unix))]
fn owned_by_current_user(_: &Path) -> bool {
    true
}

/// `SUDO_UID` as git's `extract_id_from_env` reads it with `strtoul`:
/// leading blanks and a sign allowed, all of the rest digits, no
/// overflow; a negative number wraps as it does in C.
fn sudo_uid(v: &[u8]) -> Option<u32> {
    if v.is_empty() {
        return None;
    }
    let v = v.trim_start_with(|c| c.is_ascii_whitespace());
    let (negative, digits) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let n = if negative { n.wrapping_neg() } else { n };
    Some(n as u32)
}

// ---------------------------------------------------------------------------
// safe.directory and safe.bareRepository, from the protected configuration.

/// The `safe.*` values of the system, global and command-line
/// configuration, in git's order.
#[derive(Debug, Default)]
struct Protected {
    /// Every `safe.directory` value; `None` for a key without a value.
    safe_directories: Vec<Option<BString>>,
    /// The last `safe.bareRepository`.
    bare_repository: Option<String>,
}

impl Protected {
    /// Ask git, with no repository (`GIT_DIR` pointing nowhere), so that
    /// what it reads is exactly its protected configuration.
    fn read() -> Result<Protected, RepoError> {
        let out = std::process::Command::new("git")
            .args([
                "config",
                "-z",
                "--get-regexp",
                r"^safe\.(directory|barerepository)$",
            ])
            .env("GIT_DIR", "/nonexistent/git-simm/no-repository")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_COMMON_DIR")
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| RepoError::ProtectedConfig {
                reason: format!("cannot run git: {e}"),
            })?;
        // 1: no such key, which is not an error.
        if !out.status.success() && out.status.code() != Some(1) {
            return Err(RepoError::ProtectedConfig {
                reason: super::refs::git_stderr(&out.stderr, out.status),
            });
        }
        Ok(Protected::parse(&out.stdout))
    }

    /// `git config -z --get-regexp` output: `key\nvalue\0`, or `key\0`
    /// for a key without a value.
    fn parse(out: &[u8]) -> Protected {
        let mut p = Protected::default();
        for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let (key, value) = match entry.find_byte(b'\n') {
                Some(nl) => (&entry[..nl], Some(BString::from(&entry[nl + 1..]))),
                None => (entry, None),
            };
            if key == b"safe.directory" {
                p.safe_directories.push(value);
            } else if key == b"safe.barerepository" {
                p.bare_repository = Some(value.map(|v| v.to_string()).unwrap_or_default());
            }
        }
        p
    }

    /// Whether `safe.directory` allows the repository identified by `dir`
    /// (git's `safe_directory_cb`); relative `.` means `cwd`.
    fn allows(&self, dir: &Path, cwd: &Path) -> Result<bool, RepoError> {
        let Some(path) = real_path(dir, cwd) else {
            return Ok(false);
        };
        let path = path.as_os_str().as_encoded_bytes();
        let mut safe = false;
        for value in &self.safe_directories {
            let Some(value) = value.as_ref().filter(|v| !v.is_empty()) else {
                safe = false;
                continue;
            };
            if value == "*" {
                safe = true;
                continue;
            }
            let allowed = interpolate(value)?;
            if !allowed.is_absolute() && allowed.as_os_str() != "." {
                continue;
            }
            let Some(normalized) = real_path(&allowed, cwd) else {
                continue;
            };
            let normalized = normalized.as_os_str().as_encoded_bytes();
            if let Some(prefix) = normalized.strip_suffix(b"*")
                && prefix.ends_with(b"/")
            {
                if path.starts_with(prefix) {
                    safe = true;
                }
            } else if path == normalized {
                safe = true;
            }
        }
        Ok(safe)
    }

    /// The warnings git prints while it reads `safe.directory`.
    fn warnings(&self) -> Vec<String> {
        self.safe_directories
            .iter()
            .flatten()
            .filter(|v| !v.is_empty() && *v != "*")
            .filter_map(|v| interpolate(v).ok())
            .filter(|p| !p.is_absolute() && p.as_os_str() != ".")
            .map(|p| format!("safe.directory '{}' not absolute", p.display()))
            .collect()
    }
}

/// A path-valued configuration value as git's `git_config_pathname`
/// expands it (`~/`, `~user/`); git dies on a user it cannot find.
fn interpolate(value: &BString) -> Result<PathBuf, RepoError> {
    let home = gix::path::env::home_dir();
    let ctx = gix::config::path::interpolate::Context {
        git_install_dir: None,
        home_dir: home.as_deref(),
        home_for_user: Some(gix::config::path::interpolate::home_for_user),
    };
    gix::config::Path::from(std::borrow::Cow::Borrowed(value.as_bstr()))
        .interpolate(ctx)
        .map_err(|_| RepoError::ProtectedConfig {
            reason: format!("failed to expand user dir in: '{value}'"),
        })
}

/// git's `real_pathdup(path, 0)`: symbolic links resolved, the last
/// component allowed not to exist; `None` when the rest cannot be
/// resolved.
fn real_path(path: &Path, cwd: &Path) -> Option<PathBuf> {
    let path = if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    };
    match std::fs::canonicalize(&path) {
        Ok(p) => Some(p),
        Err(_) => {
            let name = path.file_name()?;
            let parent = std::fs::canonicalize(path.parent()?).ok()?;
            Some(parent.join(name))
        }
    }
}

/// git's `sq_quote_buf_pretty`: as it is when made only of letters,
/// digits and `+,-./:=@_^`, else single-quoted (`'\''` for a quote, `\!`
/// for `!`).
fn sq_quote_pretty(s: &[u8]) -> String {
    const OK: &[u8] = b"+,-./:=@_^";
    if s.is_empty() {
        return "''".into();
    }
    if s.iter()
        .all(|c| c.is_ascii_alphanumeric() || OK.contains(c))
    {
        return String::from_utf8_lossy(s).into_owned();
    }
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'\'');
    for &c in s {
        match c {
            b'\'' => out.extend_from_slice(b"'\\''"),
            b'!' => out.extend_from_slice(b"'\\!'"),
            c => out.push(c),
        }
    }
    out.push(b'\'');
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_gits() {
        assert_eq!(sq_quote_pretty(b"/tmp/a-b_c.d"), "/tmp/a-b_c.d");
        assert_eq!(sq_quote_pretty(b"/tmp/a b"), "'/tmp/a b'");
        assert_eq!(sq_quote_pretty(b"/it's!"), r"'/it'\''s'\!''");
        assert_eq!(sq_quote_pretty(b""), "''");
    }

    #[test]
    fn ceilings_are_proper_ancestors() {
        let c = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(longest_ancestor_length(b"/a/b/c", &c(&["/a", "/a/b"])), 4);
        assert_eq!(longest_ancestor_length(b"/a/b", &c(&["/a/b"])), -1);
        assert_eq!(longest_ancestor_length(b"/a/bc", &c(&["/a/b"])), -1);
        assert_eq!(longest_ancestor_length(b"/a", &c(&["/"])), 0);
        assert_eq!(longest_ancestor_length(b"/", &c(&["/"])), -1);
    }

    #[test]
    fn sudo_uid_reads_as_strtoul() {
        assert_eq!(sudo_uid(b"1000"), Some(1000));
        assert_eq!(sudo_uid(b" +7"), Some(7));
        assert_eq!(sudo_uid(b"-1"), Some(u32::MAX));
        assert_eq!(sudo_uid(b"12x"), None);
        assert_eq!(sudo_uid(b""), None);
        assert_eq!(sudo_uid(b"99999999999999999999999"), None);
    }

    #[test]
    fn protected_values_parse_in_order() {
        let p = Protected::parse(
            b"safe.directory\n/a\0safe.directory\0safe.barerepository\nexplicit\0safe.directory\n*\0",
        );
        assert_eq!(
            p.safe_directories,
            [Some("/a".into()), None, Some("*".into())]
        );
        assert_eq!(p.bare_repository.as_deref(), Some("explicit"));
    }

    /// The order of values decides: `*` allows, an empty value forgets,
    /// `/dir/*` allows what is below `dir` but not `dir` itself, `.` is the
    /// current directory, relative paths are skipped.
    #[test]
    fn safe_directory_values_decide_in_order() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = std::fs::canonicalize(tmp.path()).expect("real");
        let repo = top.join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        let allows = |values: &[Option<&str>], cwd: &Path| {
            Protected {
                safe_directories: values.iter().map(|v| v.map(BString::from)).collect(),
                bare_repository: None,
            }
            .allows(&repo, cwd)
            .expect("no error")
        };
        let t = top.display().to_string();
        let r = repo.display().to_string();
        assert!(allows(&[Some("*")], &top));
        assert!(!allows(&[Some("*"), Some("")], &top));
        assert!(!allows(&[Some("*"), None], &top));
        assert!(allows(&[Some(""), Some(&r)], &top));
        assert!(allows(&[Some(&format!("{t}/*"))], &top));
        assert!(!allows(&[Some(&format!("{r}/*"))], &top));
        assert!(allows(&[Some(&format!("{r}/"))], &top));
        assert!(allows(&[Some(".")], &repo));
        assert!(!allows(&[Some(".")], &top));
        assert!(!allows(&[Some("repo")], &top));
        assert!(!allows(&[Some(&format!("{t}/nowhere/*"))], &top));
    }
}
