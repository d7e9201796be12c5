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

/// git's `--diff-filter` (diff.c): upper-case letters select, lower-case
/// letters exclude, `*` shows everything or nothing. Given several times,
/// the letters add up, as in git.
#[derive(Clone, Debug, Default)]
pub struct DiffFilter {
    /// git's `filter` bits, one per class ([`DiffFilter::CLASSES`]).
    select: u16,
    /// git's `filter_not`.
    exclude: u16,
}

impl DiffFilter {
    /// The change classes git knows, in the order of their bits; `X`,
    /// which never occurs here, is accepted and matches nothing; `B` is a
    /// rewrite (an M with a score, git's broken pairs); `*` is all or
    /// none.
    const CLASSES: &'static str = "ACDMRTUXB*";

    /// The bit of `*`.
    const ALL_OR_NONE: u16 = 1 << (Self::CLASSES.len() - 1);

    /// Parse a filter such as `RC` or `d`.
    pub fn parse(spec: &str) -> Result<DiffFilter, String> {
        let mut f = DiffFilter::default();
        f.add(spec)?;
        Ok(f)
    }

    /// Add the letters of `spec` (a further `--diff-filter`).
    pub fn add(&mut self, spec: &str) -> Result<(), String> {
        for c in spec.chars() {
            let class = c.to_ascii_uppercase();
            let Some(bit) = Self::CLASSES
                .find(class)
                .filter(|_| class != '*' || c == '*')
            else {
                return Err(format!(
                    "unknown change class '{c}' in --diff-filter={spec}"
                ));
            };
            if c.is_ascii_lowercase() {
                self.exclude |= 1 << bit;
            } else {
                self.select |= 1 << bit;
            }
        }
        Ok(())
    }

    /// The classes shown once every letter is in (git's
    /// `diff_setup_done`): excluding letters alone select every other
    /// class but `*`; none left (`aA`) means no filter at all.
    fn selected(&self) -> u16 {
        let mut select = self.select;
        if self.exclude != 0 {
            if select == 0 {
                select = !Self::ALL_OR_NONE;
            }
            select &= !self.exclude;
        }
        select
    }

    /// Whether a record with this status letter matches `select`.
    fn matches(select: u16, letter: char) -> bool {
        Self::CLASSES
            .find(letter)
            .is_some_and(|bit| select & (1 << bit) != 0)
    }

    /// Whether `record` matches: git's `match_filter`, where a
    /// modification with a score (a rewrite under -B) answers to `B`
    /// and not to `M`.
    fn matches_record(&self, select: u16, record: &crate::renames::Record) -> bool {
        use crate::renames::Status;
        if record.status == Status::Modified && record.score > 0 {
            Self::matches(select, 'B')
        } else {
            Self::matches(select, record.status.letter())
        }
    }

    /// Keep the records git shows (`diffcore_apply_filter`): those that
    /// match, or with `*` all of them when one matches and none when none
    /// does; all when no class is left selected.
    pub fn retain(&self, records: &mut Vec<crate::renames::Record>) {
        let select = self.selected();
        if select == 0 {
            return;
        }
        if select & Self::ALL_OR_NONE != 0 {
            if !records.iter().any(|r| self.matches_record(select, r)) {
                records.clear();
            }
            return;
        }
        records.retain(|r| self.matches_record(select, r));
    }
}
