//! Opening and publishing files safely: the helpers the store, the export
//! and repository discovery share.
//!
//! - A file git-simm reads because of its name (a store table, `HEAD`) is
//!   opened without blocking and refused unless it is a regular file: a
//!   FIFO or a device named like one must not stall a command, and a
//!   directory must not be mapped.
//! - A file renamed into place is synced first, and the directory after,
//!   so a crash leaves either the old state or the new one.

use std::fs::File;
use std::io;
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
