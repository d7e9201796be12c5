//! Output conventions shared by every command: git's path quoting, `-z`
//! records, and JSON helpers.
//!
//! Scripts written for git's output must work unchanged on git-simm's, so
//! paths are quoted exactly as git quotes them: with the default
//! `core.quotePath=true` a path with a control character, a double quote,
//! a backslash or any byte >= 0x80 is printed C-style in double quotes
//! (with `core.quotePath=false`, bytes >= 0x80 are printed as they are),
//! and `-z` output prints raw bytes with no quoting at all.

pub mod check;
pub mod compare;
pub mod json;
mod name_status;
pub mod origin;
pub mod sarif;

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

pub use name_status::{DiffFilter, write_name_status, write_spreads};

/// `core.quotePath`: whether bytes >= 0x80 are quoted in line-oriented
/// output. One setting for the whole process, as in git (its
/// `quote_path_fully`), set once by the command from the repository's
/// configuration before anything is printed.
static QUOTE_PATH: AtomicBool = AtomicBool::new(true);

/// Set `core.quotePath` for every path printed from now on (git's default
/// is `true`).
pub fn set_quote_path(fully: bool) {
    QUOTE_PATH.store(fully, Ordering::Relaxed);
}

/// Write `path` as git would print it in line-oriented output, following
/// `core.quotePath` ([`set_quote_path`]).
pub fn write_quoted_path(w: &mut impl Write, path: &[u8]) -> io::Result<()> {
    write_c_quoted(w, path, QUOTE_PATH.load(Ordering::Relaxed))
}

/// A path as text, for a column or field that holds a string: a UTF-8
/// path as `git -c core.quotePath=false` prints it (raw, or C-style in
/// double quotes when it holds a control character, a double quote or a
/// backslash), any other in git's default quoted form (octal escapes for
/// the bytes >= 0x80). A raw value never starts with `"`, so every value
/// names one path.
pub fn path_text(path: &[u8]) -> String {
    let mut v = Vec::with_capacity(path.len() + 2);
    // Writing to a Vec cannot fail.
    let _ = write_c_quoted(&mut v, path, std::str::from_utf8(path).is_err());
    String::from_utf8_lossy(&v).into_owned()
}

/// git's `quote_c_style`: with `fully` (`core.quotePath=true`) bytes >= 0x80
/// are quoted too, in octal.
fn write_c_quoted(w: &mut impl Write, path: &[u8], fully: bool) -> io::Result<()> {
    let must = |b: u8| needs_quoting(b) && (fully || b < 0x80);
    if !path.iter().any(|&b| must(b)) {
        return w.write_all(path);
    }
    w.write_all(b"\"")?;
    for &b in path {
        match b {
            b'\x07' => w.write_all(b"\\a")?,
            b'\x08' => w.write_all(b"\\b")?,
            b'\t' => w.write_all(b"\\t")?,
            b'\n' => w.write_all(b"\\n")?,
            b'\x0b' => w.write_all(b"\\v")?,
            b'\x0c' => w.write_all(b"\\f")?,
            b'\r' => w.write_all(b"\\r")?,
            b'"' => w.write_all(b"\\\"")?,
            b'\\' => w.write_all(b"\\\\")?,
            b if must(b) => write!(w, "\\{b:03o}")?,
            b => w.write_all(&[b])?,
        }
    }
    w.write_all(b"\"")
}

fn needs_quoting(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f
}

/// `path` quoted as git prints it, as a `String` (for messages).
pub fn quoted(path: &[u8]) -> String {
    let mut v = Vec::with_capacity(path.len() + 2);
    // Writing to a Vec cannot fail.
    let _ = write_quoted_path(&mut v, path);
    String::from_utf8_lossy(&v).into_owned()
}

/// A path for JSON, as the pair of fields documents carry: the path as a
/// string, exact when it is valid UTF-8, and for any other name its bytes
/// (with the string then only a readable approximation, invalid bytes
/// replaced by U+FFFD). Two different names never give the same pair,
/// which git's quoted form in the string did not ensure (a UTF-8 name
/// can look like a quoted one).
pub fn json_path(path: &[u8]) -> (String, Option<Vec<u8>>) {
    match std::str::from_utf8(path) {
        Ok(s) => (s.to_owned(), None),
        Err(_) => (
            String::from_utf8_lossy(path).into_owned(),
            Some(path.to_vec()),
        ),
    }
}

/// Treat a closed pipe (`git-simm ... | head`) as a normal end of output.
pub fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_git() {
        assert_eq!(quoted(b"plain/path.rs"), "plain/path.rs");
        assert_eq!(quoted(b"with space"), "with space");
        assert_eq!(quoted(b"new\nline"), "\"new\\nline\"");
        assert_eq!(quoted(b"tab\there"), "\"tab\\there\"");
        assert_eq!(quoted(b"q\"uote"), "\"q\\\"uote\"");
        assert_eq!(quoted(b"back\\slash"), "\"back\\\\slash\"");
        assert_eq!(quoted("caf\u{e9}".as_bytes()), "\"caf\\303\\251\"");
        assert_eq!(quoted(b"bad\xff"), "\"bad\\377\"");
    }

    #[test]
    fn path_text_is_git_without_quote_path_and_names_one_path() {
        assert_eq!(path_text("caf\u{e9}.txt".as_bytes()), "caf\u{e9}.txt");
        assert_eq!(path_text(b"caf\xe9.txt"), "\"caf\\351.txt\"");
        assert_eq!(path_text(b"\"caf\\351.txt\""), "\"\\\"caf\\\\351.txt\\\"\"");
        assert_eq!(path_text("t\u{e9}\tb".as_bytes()), "\"t\u{e9}\\tb\"");
        assert_eq!(path_text(b"\"\n"), "\"\\\"\\n\"");
    }
}
