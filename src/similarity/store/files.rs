//! The store's files as files: which ones are its own, opening them,
//! its temporaries, and what it does with a damaged one.
//!
//! The store's directory may be shared with other files (`simm.storeDir`
//! pointing at a directory that holds anything, `.git/simm` a symbolic
//! link to one), so the store touches only what it can prove it made:
//!
//! - **Tables** are named `<kind>-<8 hex>-<8 hex>.table` (`fp-`, `hist-`)
//!   and begin with a magic of the form `GSIMM??\0`. A file is listed as a
//!   table only if its name has that exact form and it is a regular file;
//!   anything else (`fp-notes.table`, a directory, a FIFO) is not the
//!   store's and is never opened, warned about or removed.
//! - **Opening** never blocks: a table is opened with `O_NONBLOCK` and
//!   used only if it is a regular file, so a FIFO put in its place between
//!   the listing and the open cannot stall a command.
//! - **A damaged table** is removed only when its name and its header
//!   prove it is the store's (a bad record, a cut-short body); one whose
//!   header is not the store's is set aside under a name that says so
//!   (`<name>.damaged`), which the store never lists, and left for the
//!   user.
//! - **Temporaries** are named `tmp-simm-<random>` and locked (`flock`)
//!   by the process writing them for as long as it writes. A later run
//!   removes one only if it can take the lock (its writer is gone, however
//!   it ended) and it begins with the store's magic, or is empty and has
//!   not been modified for a minute (a writer creates its temporary a
//!   moment before it locks it). Those of
//!   earlier versions (`tmp-` and six letters or digits, no lock) are
//!   removed after an hour, and only with the store's magic.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Every table's magic begins so (`GSIMMFP\0`, `GSIMMHS\0`, ...).
const MAGIC_PREFIX: &[u8; 5] = b"GSIMM";

/// How the store's temporaries start.
pub(super) const TMP_PREFIX: &str = "tmp-simm-";

/// How temporaries of earlier versions started (`tmp-` and six random
/// letters or digits).
const OLD_TMP_PREFIX: &str = "tmp-";

/// An old-style temporary is its writer's for at most this long.
const OLD_TMP_SECS: u64 = 3600;

/// Whether `name` is a table name of `kind`: `<kind>-<8 hex>-<8
/// hex>.table`, the form the store gives its tables.
pub(super) fn is_table_name_of(name: &str, kind: &str) -> bool {
    let Some(rest) = name
        .strip_prefix(kind)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.strip_suffix(".table"))
    else {
        return false;
    };
    let hex8 = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
    matches!(rest.split_once('-'), Some((a, b)) if hex8(a) && hex8(b))
}

/// Open a table for reading without blocking; `Ok(None)` when it is gone
/// (another process compacted it away) or is not a regular file.
pub(super) fn open_table(path: &Path) -> Result<Option<File>, String> {
    match crate::fsutil::open_regular_nonblocking(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

use crate::fsutil::head;

/// Whether `path` is provably the store's own table of `kind`: its name
/// has the store's form and its header the store's magic.
pub(super) fn is_ours(path: &Path, kind: &str, magic: &[u8]) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| is_table_name_of(n, kind));
    named && head(path, magic.len()).is_some_and(|h| h == magic)
}

/// The size of the table at `path` if its header (`magic`, then the
/// table format, the version of what it holds and the id length as
/// little-endian `u32`s) is `magic`'s for ids of `hash_len` bytes under
/// another `format` or `version`: a table a git-simm of another version
/// wrote. `None` for anything else, a table for another hash length
/// included (it may serve another repository sharing the store).
pub(super) fn other_version(
    path: &Path,
    magic: &[u8],
    format: u32,
    version: u32,
    hash_len: usize,
) -> Option<u64> {
    let m = magic.len();
    let header = head(path, m + 12)?;
    let field = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(header.get(at..at + 4)?.try_into().ok()?))
    };
    let ours = header.get(..m) == Some(magic) && field(m + 8)? as usize == hash_len;
    let other = field(m)? != format || field(m + 4)? != version;
    (ours && other).then(|| fs::metadata(path).map(|md| md.len()).unwrap_or(0))
}

/// What became of a damaged table.
pub(super) enum Disposal {
    /// It was the store's, and is removed (or already gone).
    Removed,
    /// It could not be proved the store's: renamed to this name.
    SetAside(PathBuf),
    /// It could be neither removed nor renamed: left as it is.
    Left(io::Error),
}

/// Dispose of the damaged table `path` of `kind`: removed when it is
/// provably the store's ([`is_ours`]), else set aside as
/// `<name>.damaged` (`.damaged.1`, ... if taken).
pub(super) fn dispose_damaged(path: &Path, kind: &str, magic: &[u8]) -> Disposal {
    if !path.exists() {
        return Disposal::Removed;
    }
    if is_ours(path, kind, magic) {
        return match fs::remove_file(path) {
            Ok(()) => Disposal::Removed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Disposal::Removed,
            Err(e) => Disposal::Left(e),
        };
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".damaged");
    let mut aside = path.with_file_name(&name);
    let mut n = 0;
    while aside.exists() {
        n += 1;
        let mut numbered = name.clone();
        numbered.push(format!(".{n}"));
        aside = path.with_file_name(numbered);
    }
    match fs::rename(path, &aside) {
        Ok(()) => Disposal::SetAside(aside),
        Err(e) => Disposal::Left(e),
    }
}

/// The words for a warning about what [`dispose_damaged`] did.
pub(super) fn disposal_note(d: &Disposal) -> String {
    match d {
        Disposal::Removed => "removed".into(),
        Disposal::SetAside(to) => format!(
            "its header is not the store's, so it was set aside as {} rather than removed",
            to.display()
        ),
        Disposal::Left(e) => format!("left in place: {e}"),
    }
}

/// Remove the table `path` of `kind` if it is provably the store's, as
/// before deleting tables a merge replaced; anything else is left.
pub(super) fn remove_if_ours(path: &Path, kind: &str, magic: &[u8]) -> io::Result<()> {
    if !is_ours(path, kind, magic) {
        return Ok(());
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Write a table into `file` through a 64 KiB buffer; the CRC-32 of
/// everything written (what names the table). The checksum is taken of
/// each buffer as it leaves, not of each of the index's small writes,
/// which paid the CRC's set-up every time (a 10 MB signature table took
/// 23 ms to write); streamed, so a large store's merge holds no second
/// copy.
pub(super) fn write_checksummed(
    file: &mut File,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<u32> {
    let mut w = BufWriter::with_capacity(
        1 << 16,
        Crc {
            inner: file,
            crc: crc32fast::Hasher::new(),
        },
    );
    write(&mut w)?;
    Ok(w.into_inner().map_err(|e| e.into_error())?.crc.finalize())
}

/// A writer that keeps a CRC of what went through it.
struct Crc<W> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Crc<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A new temporary file in `dir` (`tmp-simm-` and a random name), created
/// exclusively, locked for as long as it is open, deleted when dropped
/// unless persisted; in a shared repository other users read the tables,
/// so its mode is a plain file's.
pub(super) fn temporary_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    crate::fsutil::locked_temporary(dir, TMP_PREFIX)
}

/// Remove the temporaries in `dir` that writers which died left behind
/// (see the module documentation for which ones are removed).
pub(super) fn clean_stale_temporaries(dir: &Path) {
    crate::fsutil::clean_dead_temporaries(dir, |n| n.starts_with(TMP_PREFIX), MAGIC_PREFIX);
    let Ok(read) = fs::read_dir(dir) else { return };
    for e in read.filter_map(Result::ok) {
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = e.file_name();
        if !name.to_str().is_some_and(is_old_temporary) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > OLD_TMP_SECS);
        if old && head(&e.path(), MAGIC_PREFIX.len()).is_some_and(|h| h == MAGIC_PREFIX) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// `tmp-` and six letters or digits: what earlier versions named their
/// temporaries (tempfile's default random part).
fn is_old_temporary(name: &str) -> bool {
    name.strip_prefix(OLD_TMP_PREFIX)
        .is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_stores_own_names_are_tables() {
        assert!(is_table_name_of("fp-0123abcd-00000010.table", "fp"));
        assert!(is_table_name_of("hist-0123ABCD-00000010.table", "hist"));
        for not in [
            "fp-notes.table",
            "fp-0123abcd-0000001.table",
            "fp-0123abcd-00000010.table.damaged",
            "fp-0123abcd-00000010-x.table",
            "hist-0123abcd-00000010.table",
            "fp-0123abcg-00000010.table",
        ] {
            assert!(!is_table_name_of(not, "fp"), "{not}");
        }
        assert!(is_old_temporary("tmp-a1B2c3"));
        assert!(!is_old_temporary("tmp-important"));
    }

    /// A damaged file that cannot be proved the store's is renamed, never
    /// removed; one that can is removed.
    #[test]
    fn damaged_tables_are_removed_only_when_provably_ours() {
        let dir = tempfile::tempdir().expect("tempdir");
        let magic = b"GSIMMFP\0";
        let ours = dir.path().join("fp-00000000-00000001.table");
        fs::write(&ours, b"GSIMMFP\0 cut short").expect("write");
        assert!(matches!(
            dispose_damaged(&ours, "fp", magic),
            Disposal::Removed
        ));
        assert!(!ours.exists());
        let theirs = dir.path().join("fp-00000000-00000002.table");
        fs::write(&theirs, b"my notes").expect("write");
        let Disposal::SetAside(aside) = dispose_damaged(&theirs, "fp", magic) else {
            panic!("not set aside");
        };
        assert_eq!(fs::read(&aside).expect("kept"), b"my notes");
        assert!(!theirs.exists());
    }

    /// A temporary whose writer holds its lock stays; once the writer is
    /// gone (its file closed) it goes, and a user's file of a similar name
    /// never does.
    #[test]
    fn temporaries_go_once_their_writer_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tmp = temporary_in(dir.path()).expect("temporary");
        std::io::Write::write_all(&mut tmp.as_file(), b"GSIMMFP\0...").expect("write");
        let path = tmp.path().to_owned();
        clean_stale_temporaries(dir.path());
        assert!(path.exists(), "removed while its writer held it");
        // What a killed writer leaves: the file, its lock gone.
        let (file, kept) = tmp.keep().expect("keep");
        drop(file);
        let user = dir.path().join("tmp-simm-notes");
        fs::write(&user, b"mine").expect("write");
        clean_stale_temporaries(dir.path());
        assert!(!kept.exists(), "a dead writer's temporary stayed");
        assert!(user.exists(), "a user's file was removed");
    }
}
