//! `git diff --name-status` lines and `--diff-filter`.

use std::io::{self, Write};

use super::write_quoted_path;

/// Write rename-detection records exactly as `git diff --name-status`
/// does (with `-z` when `nul`).
pub fn write_name_status(
    w: &mut impl Write,
    records: &[crate::renames::Record],
    nul: bool,
) -> io::Result<()> {
    use crate::renames::Status;
    let mut buf = Vec::with_capacity(records.len() * 64);
    let end = if nul { b'\0' } else { b'\n' };
    let sep = if nul { b'\0' } else { b'\t' };
    let path = |buf: &mut Vec<u8>, p: &[u8]| -> io::Result<()> {
        if nul {
            buf.extend_from_slice(p);
            Ok(())
        } else {
            write_quoted_path(buf, p)
        }
    };
    for r in records {
        // git's `diff_flush_raw`: the score after any letter that has one
        // (R and C always; a rewrite's M or T with -B).
        buf.push(r.status.letter() as u8);
        if r.score > 0 {
            write!(buf, "{:03}", crate::similarity::score::percent(r.score))?;
        }
        buf.push(sep);
        match (r.status, &r.old, &r.new) {
            (Status::Renamed | Status::Copied, Some(old), Some(new)) => {
                path(&mut buf, &old.path)?;
                buf.push(sep);
                path(&mut buf, &new.path)?;
            }
            (_, old, new) => {
                if let Some(e) = old.as_ref().or(new.as_ref()) {
                    path(&mut buf, &e.path)?;
                }
            }
        }
        buf.push(end);
    }
    w.write_all(&buf)
}

/// `renames --find-splits` lines after git's: `S<covered>` with the source
/// then its parts, `J<covered>` with the sources then the destination
/// (old paths before new, as in git's `R` lines); fields as
/// [`write_name_status`] writes them.
pub fn write_spreads(
    w: &mut impl Write,
    splits: &[crate::renames::splits::Spread],
    merges: &[crate::renames::splits::Spread],
    nul: bool,
) -> io::Result<()> {
    let mut buf = Vec::new();
    let end = if nul { b'\0' } else { b'\n' };
    let sep = if nul { b'\0' } else { b'\t' };
    let path = |buf: &mut Vec<u8>, p: &[u8]| -> io::Result<()> {
        buf.push(sep);
        if nul {
            buf.extend_from_slice(p);
            Ok(())
        } else {
            write_quoted_path(buf, p)
        }
    };
    let pct = crate::similarity::score::percent;
    for s in splits {
        write!(buf, "S{:03}", pct(s.covered))?;
        path(&mut buf, &s.whole.path)?;
        for p in &s.parts {
            path(&mut buf, &p.entry.path)?;
        }
        buf.push(end);
    }
    for m in merges {
        write!(buf, "J{:03}", pct(m.covered))?;
        for p in &m.parts {
            path(&mut buf, &p.entry.path)?;
        }
        path(&mut buf, &m.whole.path)?;
        buf.push(end);
    }
    w.write_all(&buf)
}

/// git's `--diff-filter`: upper-case letters select, lower-case letters
/// exclude.
#[derive(Clone, Debug, Default)]
pub struct DiffFilter {
    include: Vec<char>,
    exclude: Vec<char>,
}

impl DiffFilter {
    /// Parse a filter such as `RC` or `d`; `B` selects rewrites (an M
    /// with a score, git's broken pairs); X, which never occurs here, is
    /// accepted and matches nothing.
    pub fn parse(spec: &str) -> Result<DiffFilter, String> {
        let mut f = DiffFilter::default();
        for c in spec.chars() {
            if !"ACDMRTUXBacdmrtuxb".contains(c) {
                return Err(format!(
                    "unknown change class '{c}' in --diff-filter={spec}"
                ));
            }
            if c.is_ascii_uppercase() {
                f.include.push(c);
            } else {
                f.exclude.push(c.to_ascii_uppercase());
            }
        }
        Ok(f)
    }

    /// Whether a record with this status letter is shown.
    pub fn allows(&self, letter: char) -> bool {
        (self.include.is_empty() || self.include.contains(&letter))
            && !self.exclude.contains(&letter)
    }

    /// Whether `record` is shown: git's `match_filter`, where a
    /// modification with a score (a rewrite under -B) answers to `B`
    /// and not to `M`.
    pub fn allows_record(&self, record: &crate::renames::Record) -> bool {
        use crate::renames::Status;
        if record.status == Status::Modified && record.score > 0 {
            self.allows('B')
        } else {
            self.allows(record.status.letter())
        }
    }
}
