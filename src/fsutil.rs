//! Opening and publishing files safely: the helpers the store, the export
//! and repository discovery share.
//!
//! - A file git-simm reads because of its name (a store table, `HEAD`) is
//!   opened without blocking and refused unless it is a regular file: a
//!   FIFO or a device named like one must not stall a command, and a
//!   directory must not be mapped.
//! - A file renamed into place is synced first, and the directory after,
//!   so a crash leaves either the old state or the new one.
//! - A temporary file is locked (`flock`) by its writer for as long as it
//!   is open; the system drops the lock when the writer ends, however it
//!   ends, so a later run knows a temporary whose lock it can take was
//!   left by a writer that died ([`clean_dead_temporaries`]), with no pid
//!   or age to guess from, even on a file system shared by several
//!   machines (where `flock` is carried by the file system's locks).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Open `path` for reading without blocking on it (a FIFO with no writer
/// would), and fail with [`io::ErrorKind::InvalidInput`] unless it is a
/// regular file. Symbolic links are followed.
pub fn open_regular_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    // Reads of a regular file never block anyway; clearing the flag keeps
    // the descriptor ordinary for whoever reads it next.
    #[cfg(unix)]
    {
        let flags = rustix::fs::fcntl_getfl(&file)?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    }
    Ok(file)
}

/// Make the entries of `dir` (a rename into it, a removal) durable. Where
/// directories cannot be opened for it (not Unix), a no-op.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// The directory a file `path` is in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The first `n` bytes of `path` (a regular file only, opened without
/// blocking); `None` when it cannot be read.
pub fn head(path: &Path, n: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    let file = open_regular_nonblocking(path).ok()?;
    file.take(n as u64).read_to_end(&mut out).ok()?;
    Some(out)
}

/// A new temporary file in `dir` named `<prefix><random>`, created
/// exclusively, locked for as long as it is open, deleted when dropped
/// unless persisted. Its mode is a plain file's (0666 less the umask),
/// not tempfile's private 0600: what is renamed into place from it is a
/// file like any other.
pub fn locked_temporary(dir: &Path, prefix: &str) -> io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(dir)?;
    lock(tmp.as_file(), true)?;
    Ok(tmp)
}

/// Take an exclusive lock on `file` for as long as it is open: waiting for
/// it (`wait`), or failing at once if another holds it.
///
/// A writer waits for the lock of the temporary it has just created:
/// between its creation and the lock, a cleaner in another thread or
/// process may be probing it ([`clean_dead_temporaries`] takes the lock of
/// each temporary for a moment, and leaves an empty young one alone), and
/// a write that failed then would fail for nothing. The cleaner never
/// waits: a held lock is a live writer.
#[cfg(unix)]
fn lock(file: &File, wait: bool) -> io::Result<()> {
    use rustix::fs::{FlockOperation, flock};
    let how = if wait {
        FlockOperation::LockExclusive
    } else {
        FlockOperation::NonBlockingLockExclusive
    };
    flock(file, how).map_err(io::Error::from)
}

#[cfg(not(unix))]
fn lock(_: &File, _: bool) -> io::Result<()> {
    Ok(())
}

/// An empty, unlocked temporary younger than this may be a live writer's:
/// a writer creates its temporary and locks it a moment later, and in
/// that moment the lock proves nothing. Content begins with the writer's
/// magic only after the lock, so a file with content needs no wait.
pub const EMPTY_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove the temporaries in `dir` whose writers are gone: regular files
/// whose name `ours` accepts, whose lock can be taken (nobody writes
/// them), and which begin with `magic`, or are empty and were last
/// modified [`EMPTY_GRACE`] ago or more (a writer killed before its first
/// write). Anything else is left alone.
pub fn clean_dead_temporaries(dir: &Path, ours: impl Fn(&str) -> bool, magic: &[u8]) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for e in read.filter_map(Result::ok) {
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if !e.file_name().to_str().is_some_and(&ours) {
            continue;
        }
        let path = e.path();
        let Ok(file) = open_regular_nonblocking(&path) else {
            continue;
        };
        // Where locks do not exist (not Unix), nothing is known dead.
        if cfg!(unix)
            && lock(&file, false).is_ok()
            && head(&path, magic.len())
                .is_some_and(|h| h == magic || (h.is_empty() && idle_for(&file, EMPTY_GRACE)))
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Whether `file` was last modified `grace` ago or more (a time in the
/// future, or none known, is not).
fn idle_for(file: &File, grace: std::time::Duration) -> bool {
    file.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= grace)
}

/// Bytes as an OS string, as git passes arguments and paths: exactly the
/// bytes on Unix; elsewhere, where OS strings are not bytes, as text.
pub fn os_str(bytes: &[u8]) -> std::borrow::Cow<'_, std::ffi::OsStr> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::borrow::Cow::Borrowed(std::ffi::OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        std::borrow::Cow::Owned(String::from_utf8_lossy(bytes).into_owned().into())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn age(path: &Path, by: Duration) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        f.set_modified(SystemTime::now() - by).expect("set mtime");
    }

    /// A writer's lock on its new temporary waits for a cleaner that holds
    /// it for a moment (probing it), where failing would fail the write.
    #[test]
    fn a_writer_waits_for_a_cleaner_probing_its_temporary() {
        use rustix::fs::{FlockOperation, flock};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tmp-x-new");
        let writer = std::fs::File::create(&path).expect("create");
        let cleaner = std::fs::File::open(&path).expect("open");
        flock(&cleaner, FlockOperation::NonBlockingLockExclusive).expect("the cleaner's lock");
        std::thread::scope(|scope| {
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                drop(cleaner);
            });
            lock(&writer, true).expect("the writer's lock, once the cleaner lets go");
        });
        // Held by the writer now: a cleaner's probe fails.
        let probe = std::fs::File::open(&path).expect("open");
        assert!(lock(&probe, false).is_err());
    }

    /// Between a writer's create and its lock, its temporary is empty and
    /// unlocked: a cleaner must leave it alone then, and take it once it
    /// has stayed so for the grace time. Content that begins with the
    /// magic goes at once; a locked file or other content never.
    #[test]
    fn an_empty_temporary_goes_only_after_the_grace_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ours = |n: &str| n.starts_with("tmp-x-");
        let fresh_empty = dir.path().join("tmp-x-fresh");
        let old_empty = dir.path().join("tmp-x-old");
        let dead = dir.path().join("tmp-x-dead");
        let other = dir.path().join("tmp-x-other");
        let live = dir.path().join("tmp-x-live");
        std::fs::write(&fresh_empty, b"").expect("write");
        std::fs::write(&old_empty, b"").expect("write");
        std::fs::write(&dead, b"MAGIC and more").expect("write");
        std::fs::write(&other, b"a user's notes").expect("write");
        std::fs::write(&live, b"").expect("write");
        for p in [&old_empty, &other, &live] {
            age(p, EMPTY_GRACE + Duration::from_secs(5));
        }
        let held = File::open(&live).expect("open");
        lock(&held, false).expect("lock");
        clean_dead_temporaries(dir.path(), ours, b"MAGIC");
        assert!(fresh_empty.exists(), "a just-created temporary was removed");
        assert!(!old_empty.exists(), "an old empty temporary stayed");
        assert!(!dead.exists(), "a dead writer's temporary stayed");
        assert!(other.exists(), "a file without the magic was removed");
        assert!(live.exists(), "a locked temporary was removed");
    }
}
