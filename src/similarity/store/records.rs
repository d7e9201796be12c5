//! Tables of variable-length records keyed by blob id, for what the store
//! keeps beside fingerprints: histograms ([`super::histograms`]),
//! signatures ([`super::signatures`]) and band keys ([`super::keys`]).
//!
//! The rules are the fingerprint tables' (immutable files written to a
//! temporary name, synced and renamed, the directory synced; validated
//! when opened; every record CRC-checked when located; a damaged table
//! dropped, its blobs computed again; flushed every
//! [`Kind::flush_bytes`], so memory stays bounded; in memory only when the
//! store is disabled), for any kind of record ([`Kind`]):
//!
//! ```text
//! header   32 bytes: magic, format, the kind's version, id length, count
//! fan-out  256 x u32
//! ids      count x id length, sorted
//! index    count x (offset u64, length u32, CRC-32 of id and record u32)
//! records  back to back, in id order
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use rayon::prelude::*;

mod file;

use file::{Bytes, FORMAT, INDEX_LEN, Record, RecordTable, verify, write_records, write_table};

use super::table::{FANOUT_LEN, HEADER_LEN, clean_stale_temporaries, prefix};
use super::{Pruned, StoreError};

/// Pending records become a table once they take this many bytes, unless
/// their kind says otherwise.
pub const FLUSH_BYTES: usize = 64 << 20;
/// The blocks pending records are kept in ([`Records`]): under the size
/// at which allocators map fresh memory for a request, so that freed
/// memory of the heap serves them.
const BLOCK: usize = 64 << 10;
/// Merge tables once there are more than this many (when the store is
/// opened, never while a run holds [`Loc`]s into them).
pub(super) const MAX_TABLES: usize = 16;

/// What one kind of table holds.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// The first 8 bytes of its files.
    pub magic: &'static [u8; 8],
    /// How its file names start (`sig-`).
    pub prefix: &'static str,
    /// The version of what the records mean; tables of another are
    /// ignored.
    pub version: u32,
    /// What warnings call a record ("signature").
    pub what: &'static str,
    /// Pending records become a table once they take this many bytes.
    pub flush_bytes: usize,
}

impl Kind {
    /// The kind as table names spell it (`sig` for `sig-`).
    fn name(&self) -> &'static str {
        self.prefix.trim_end_matches('-')
    }
}

/// Where a stored record is: a table and a byte range in it, checked
/// against its CRC when it was located.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    table: u32,
    start: u64,
    len: u32,
}

/// Records found in one table from which [`Records::locate`] checks
/// them on several threads.
pub(super) const PARALLEL_CHECKS_FROM: usize = 256;

/// The tables of one kind in one store (see the module documentation).
pub struct Records {
    kind: Kind,
    dir: Option<PathBuf>,
    hash_len: usize,
    tables: Vec<RecordTable>,
    /// Tables of this kind and hash length written by another version of
    /// the format or of what the records mean (a git-simm before a
    /// version change): never read, deleted by a rewrite (`gc`), with
    /// their sizes.
    other_versions: Vec<(PathBuf, u64)>,
    /// What was added since the last flush: each id with where its
    /// record is in `pending_data` (block, start, length), and the
    /// record's CRC. Blocks of [`BLOCK`] bytes hold the small records
    /// back to back, not an allocation each (tens of thousands of small
    /// records, each with room to spare, spread over fresh pages that all
    /// faulted in), nor one buffer grown by doubling (which copied what
    /// it held into fresh pages at every step: half the cost of keeping a
    /// small file's signature). A record over a quarter of a block gets
    /// a block of its own size, so that no block is left more than a
    /// quarter empty. The CRC is taken as the record comes, while it is
    /// in cache: the table writes the records in id order, a random walk
    /// through the blocks.
    pending: Vec<(ObjectId, u32, usize, usize, u32)>,
    pending_data: Vec<Vec<u8>>,
    /// The block small records are added to, if any.
    open_block: Option<usize>,
    pending_bytes: usize,
    warnings: Vec<String>,
}

impl Records {
    /// Tables kept in memory for this run only.
    pub fn disabled(kind: Kind, hash_len: usize) -> Records {
        Records {
            kind,
            dir: None,
            hash_len,
            tables: Vec::new(),
            other_versions: Vec::new(),
            pending: Vec::new(),
            pending_data: Vec::new(),
            open_block: None,
            pending_bytes: 0,
            warnings: Vec::new(),
        }
    }

    /// Open the tables of `kind` in `dir`. Damaged tables are dropped with
    /// a warning; more than 16 are merged into one.
    pub fn open(kind: Kind, dir: &Path, hash_len: usize) -> Result<Records, StoreError> {
        let mut r = Records::disabled(kind, hash_len);
        r.dir = Some(dir.to_owned());
        r.load_tables()?;
        if r.tables.len() > MAX_TABLES {
            r.rewrite(&|_| true, false)?;
        }
        Ok(r)
    }

    fn is_ours(&self, p: &Path) -> bool {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| super::files::is_table_name_of(n, self.kind.name()))
            && p.symlink_metadata().is_ok_and(|m| m.is_file())
    }

    fn load_tables(&mut self) -> Result<(), StoreError> {
        self.tables.clear();
        self.other_versions.clear();
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        let paths = match fs::read_dir(&dir) {
            Ok(read) => read
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| self.is_ours(p))
                .collect::<Vec<_>>(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(StoreError::Dir {
                    path: dir,
                    source: e,
                });
            }
        };
        let mut paths = paths;
        paths.sort();
        for path in paths {
            match RecordTable::open(&self.kind, &path, self.hash_len) {
                Ok(Some(t)) => self.tables.push(t),
                Ok(None) => {
                    if let Some(bytes) = super::files::other_version(
                        &path,
                        self.kind.magic,
                        FORMAT,
                        self.kind.version,
                        self.hash_len,
                    ) {
                        self.other_versions.push((path, bytes));
                    }
                }
                Err(why) => self.discard_file(&path, &why),
            }
        }
        Ok(())
    }

    fn discard_file(&mut self, path: &Path, why: &str) {
        let done = super::files::dispose_damaged(path, self.kind.name(), self.kind.magic);
        self.warnings.push(format!(
            "{} table {} is damaged ({why}); discarding it ({}), its blobs will be read again",
            self.kind.what,
            path.display(),
            super::files::disposal_note(&done)
        ));
    }

    /// Warnings gathered so far (damaged tables, unwritable directory).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Number of tables (for tests and diagnostics).
    pub fn table_count(&self) -> usize {
        self.tables.iter().filter(|t| !t.dead).count()
    }

    /// Where the record of each of `ids` is, `None` where there is none
    /// (or a damaged one: its table is dropped and the lookup starts
    /// over). Every record found is checked against its CRC here, once.
    pub fn locate(&mut self, ids: &[ObjectId]) -> Vec<Option<Loc>> {
        loop {
            let mut order: Vec<(usize, &ObjectId)> = ids
                .iter()
                .enumerate()
                .filter(|(_, id)| id.as_slice().len() == self.hash_len)
                .collect();
            order.sort_unstable_by(|a, b| {
                prefix(a.1.as_slice())
                    .cmp(&prefix(b.1.as_slice()))
                    .then_with(|| a.1.cmp(b.1))
            });
            let mut out: Vec<Option<Loc>> = vec![None; ids.len()];
            let mut damaged = None;
            // Newest tables first: a record written again (a blob read
            // again after its table was found damaged) is the one to use.
            'tables: for (ti, t) in self.tables.iter().enumerate().rev() {
                if t.dead {
                    continue;
                }
                let mut at = 0;
                let mut found = Vec::new();
                for &(i, id) in &order {
                    if out[i].is_some() {
                        continue;
                    }
                    match t.find_from(at, id.as_slice()) {
                        Ok(k) => {
                            at = k;
                            found.push((i, k));
                        }
                        Err(next) => at = next,
                    }
                }
                // The checksums on every thread: a warm run checks
                // megabytes of records, and faults their pages in here.
                let checked: Vec<_> = if found.len() < PARALLEL_CHECKS_FROM {
                    found.iter().map(|&(_, k)| t.checked(k)).collect()
                } else {
                    found.par_iter().map(|&(_, k)| t.checked(k)).collect()
                };
                for (&(i, _), check) in found.iter().zip(checked) {
                    match check {
                        Ok((start, len)) => {
                            out[i] = Some(Loc {
                                table: ti as u32,
                                start,
                                len,
                            })
                        }
                        Err(why) => {
                            damaged = Some((ti, why));
                            break 'tables;
                        }
                    }
                }
            }
            match damaged {
                Some((ti, why)) => {
                    self.tables[ti].dead = true;
                    if let Some(path) = self.tables[ti].path.clone() {
                        self.discard_file(&path, &why);
                    }
                }
                None => return out,
            }
        }
    }

    /// The record at `loc` (from [`Records::locate`]).
    pub fn record(&self, loc: Loc) -> Option<&[u8]> {
        let t = self.tables.get(loc.table as usize)?;
        let start = usize::try_from(loc.start).ok()?;
        t.bytes.get(start..start.checked_add(loc.len as usize)?)
    }

    /// Add the record of `id`; every [`Kind::flush_bytes`] pending become a
    /// table ([`Records::flush`]).
    pub fn add(&mut self, id: ObjectId, record: &[u8]) -> Result<(), StoreError> {
        self.push(id, record);
        if self.pending_bytes >= self.kind.flush_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Add the record of `id` to what is pending, whatever its size.
    pub(super) fn push(&mut self, id: ObjectId, record: &[u8]) {
        self.pending_bytes += record.len() + id.as_slice().len() + INDEX_LEN;
        let crc = super::table::record_crc(id.as_slice(), record);
        let room = |b: &Vec<u8>| b.capacity() - b.len() >= record.len();
        let index = match self.open_block {
            _ if record.len() > BLOCK / 4 => {
                self.pending_data.push(Vec::with_capacity(record.len()));
                self.pending_data.len() - 1
            }
            Some(i) if self.pending_data.get(i).is_some_and(room) => i,
            _ => {
                self.pending_data.push(Vec::with_capacity(BLOCK));
                let i = self.pending_data.len() - 1;
                self.open_block = Some(i);
                i
            }
        };
        // A block with room for the record, by the choice just made.
        let block = &mut self.pending_data[index];
        self.pending
            .push((id, index as u32, block.len(), record.len(), crc));
        block.extend_from_slice(record);
    }

    /// The bytes pending, as [`Kind::flush_bytes`] counts them.
    pub(super) fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// The kind, directory and id length of these tables.
    pub(super) fn shape(&self) -> (Kind, Option<PathBuf>, usize) {
        (self.kind, self.dir.clone(), self.hash_len)
    }

    /// What was added, sorted by id, one record an id (of this store's
    /// hash), taken out: nothing is pending after. `None` when nothing
    /// was.
    pub(super) fn take_pending(&mut self) -> Option<Sorted> {
        let mut entries = std::mem::take(&mut self.pending);
        let data = std::mem::take(&mut self.pending_data);
        self.open_block = None;
        self.pending_bytes = 0;
        entries.retain(|(id, ..)| id.as_slice().len() == self.hash_len);
        if entries.is_empty() {
            return None;
        }
        // By the ids' first eight bytes, then the rest: tens of thousands
        // of ids compared whole called memcmp for each comparison.
        let head = |id: &ObjectId| {
            id.as_slice()
                .first_chunk::<8>()
                .map_or(0, |b| u64::from_be_bytes(*b))
        };
        entries.sort_unstable_by(|a, b| head(&a.0).cmp(&head(&b.0)).then_with(|| a.0.cmp(&b.0)));
        entries.dedup_by(|a, b| a.0 == b.0);
        Some(Sorted { entries, data })
    }

    /// Take in the table written at `path` (in `dir`).
    fn adopt(&mut self, dir: &Path, path: &Path) {
        // What a run killed before its rename left.
        super::files::clean_stale_temporaries(dir);
        match RecordTable::open(&self.kind, path, self.hash_len) {
            Ok(Some(t)) => self.tables.push(t),
            Ok(None) => {}
            Err(why) => self.discard_file(path, &why),
        }
    }

    /// Take in the tables written at `paths` in `dir` elsewhere, and the
    /// error that stopped the writing, if any: as [`Records::flush`] takes
    /// a table it wrote itself or the error of writing it, except that
    /// records a read-only directory refused are not kept in memory
    /// instead.
    pub(super) fn adopt_written(
        &mut self,
        dir: PathBuf,
        paths: &[PathBuf],
        failed: Option<io::Error>,
    ) -> Result<(), StoreError> {
        for path in paths {
            self.adopt(&dir, path);
        }
        match failed {
            None => Ok(()),
            Some(e) => self.write_failed(dir, e),
        }
    }

    /// Add a warning.
    pub(super) fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    /// A table could not be written to `dir`: a read-only directory makes
    /// the store an in-memory one, with a warning; any other error stops
    /// the run.
    fn write_failed(&mut self, dir: PathBuf, e: io::Error) -> Result<(), StoreError> {
        if e.kind() == io::ErrorKind::PermissionDenied
            || e.kind() == io::ErrorKind::ReadOnlyFilesystem
        {
            self.warnings.push(format!(
                "cannot write {}s in {} ({e}); continuing without caching",
                self.kind.what,
                dir.display()
            ));
            self.dir = None;
            Ok(())
        } else {
            Err(StoreError::Write {
                path: dir,
                source: e,
            })
        }
    }

    /// Make what was added a table: written to the directory (and
    /// memory-mapped) when the store is enabled and writable, else kept
    /// in memory. A read-only directory turns the store into an in-memory
    /// one with a warning, since no answer depends on the cache.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        let Some(sorted) = self.take_pending() else {
            return Ok(());
        };
        if let Some(dir) = self.dir.clone() {
            match write_sorted(&self.kind, &dir, self.hash_len, &sorted) {
                Ok(path) => {
                    self.adopt(&dir, &path);
                    return Ok(());
                }
                Err(e) => self.write_failed(dir, e)?,
            }
        }
        let records = sorted.records();
        let mut bytes = Vec::new();
        write_records(&self.kind, &mut bytes, self.hash_len, &records).map_err(|e| {
            StoreError::Write {
                path: PathBuf::new(),
                source: e,
            }
        })?;
        // What was just built in memory always validates.
        if let Ok(Some(t)) = RecordTable::new(&self.kind, None, Bytes::Owned(bytes), self.hash_len)
        {
            self.tables.push(t);
        }
        Ok(())
    }

    /// Drop the records of blobs `keep` rejects and merge the rest into
    /// one table, as the fingerprint store's prune does (written, synced,
    /// renamed, read back, and only then the old tables deleted). With
    /// `dry_run`, only count.
    pub fn prune(
        &mut self,
        keep: &dyn Fn(&ObjectId) -> bool,
        dry_run: bool,
    ) -> Result<Pruned, StoreError> {
        self.rewrite(
            &|id| ObjectId::try_from(id).is_ok_and(|id| keep(&id)),
            dry_run,
        )
    }

    /// Delete every table of this kind and hash: they are a cache of what
    /// blobs hold, so the next command that wants a record reads the blob
    /// again. With `dry_run`, only count.
    pub fn drop_all(&mut self, dry_run: bool) -> Result<Pruned, StoreError> {
        let live = || self.tables.iter().filter(|t| !t.dead);
        let report = Pruned {
            kept: 0,
            dropped: live().map(|t| t.count).sum(),
            tables_before: live().count() + self.other_versions.len(),
            bytes_before: live().map(|t| t.bytes.len() as u64).sum::<u64>()
                + self.other_versions.iter().map(|(_, b)| b).sum::<u64>(),
            bytes_after: 0,
        };
        if dry_run {
            return Ok(report);
        }
        let paths: Vec<PathBuf> = self.tables.iter().filter_map(|t| t.path.clone()).collect();
        self.tables.clear();
        for p in paths {
            if let Err(e) = super::files::remove_if_ours(&p, self.kind.name(), self.kind.magic) {
                return Err(StoreError::Write { path: p, source: e });
            }
        }
        self.remove_other_versions();
        Ok(report)
    }

    fn rewrite(
        &mut self,
        keep: &dyn Fn(&[u8]) -> bool,
        dry_run: bool,
    ) -> Result<Pruned, StoreError> {
        let live = self.tables.iter().filter(|t| !t.dead);
        let live_tables = live.clone().count();
        // Tables of another version count among those before and go.
        let mut report = Pruned {
            tables_before: live_tables + self.other_versions.len(),
            bytes_before: live.map(|t| t.bytes.len() as u64).sum::<u64>()
                + self.other_versions.iter().map(|(_, b)| b).sum::<u64>(),
            ..Pruned::default()
        };
        let Some(dir) = self.dir.clone() else {
            return Ok(report);
        };
        let mut all: Vec<Record> = Vec::new();
        // Newest first, so that deduplication keeps the newest record.
        for t in self.tables.iter().rev().filter(|t| !t.dead) {
            for i in 0..t.count {
                if let Ok((start, len)) = t.checked(i) {
                    let start = start as usize;
                    let (_, _, crc) = t.index(i);
                    all.push((t.key(i), &t.bytes[start..start + len as usize], crc));
                }
            }
        }
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.dedup_by(|a, b| a.0 == b.0);
        let before = all.len();
        all.retain(|(id, ..)| keep(id));
        report.kept = all.len();
        report.dropped = before - all.len();
        report.bytes_after = if all.is_empty() {
            0
        } else {
            (HEADER_LEN + FANOUT_LEN) as u64
                + all
                    .iter()
                    .map(|(id, rec, _)| (id.len() + INDEX_LEN + rec.len()) as u64)
                    .sum::<u64>()
        };
        if dry_run || (report.dropped == 0 && live_tables <= 1) {
            if !dry_run {
                report.bytes_after = self
                    .tables
                    .iter()
                    .filter(|t| !t.dead)
                    .map(|t| t.bytes.len() as u64)
                    .sum();
                self.remove_other_versions();
                clean_stale_temporaries(&dir);
            }
            return Ok(report);
        }
        let path = if all.is_empty() {
            None
        } else {
            let path = write_table(&self.kind, &dir, self.hash_len, &all).map_err(|e| {
                StoreError::Write {
                    path: dir.clone(),
                    source: e,
                }
            })?;
            if let Err(why) = verify(&self.kind, &path, self.hash_len, &all) {
                return Err(StoreError::unverified(dir, &path, &why));
            }
            Some(path)
        };
        let old: Vec<PathBuf> = self
            .tables
            .iter()
            .filter_map(|t| t.path.clone())
            .filter(|p| Some(p) != path.as_ref())
            .collect();
        self.tables.clear();
        for p in old {
            let _ = super::files::remove_if_ours(&p, self.kind.name(), self.kind.magic);
        }
        self.remove_other_versions();
        clean_stale_temporaries(&dir);
        self.load_tables()?;
        Ok(report)
    }

    /// Delete the tables of another version (checked to be this kind's
    /// tables by name and magic again just before).
    fn remove_other_versions(&mut self) {
        for (p, _) in std::mem::take(&mut self.other_versions) {
            let _ = super::files::remove_if_ours(&p, self.kind.name(), self.kind.magic);
        }
    }
}

/// Records taken out of a store ([`Records::take_pending`]), sorted by id:
/// each id with where its record is in `data` (block, start, length) and
/// its CRC.
pub(super) struct Sorted {
    entries: Vec<(ObjectId, u32, usize, usize, u32)>,
    data: Vec<Vec<u8>>,
}

impl Sorted {
    fn records(&self) -> Vec<Record<'_>> {
        self.entries
            .iter()
            .map(|&(ref id, block, at, len, crc)| {
                (id.as_slice(), &self.data[block as usize][at..at + len], crc)
            })
            .collect()
    }
}

/// Write `sorted` as a table of `kind` in `dir` (made if missing).
pub(super) fn write_sorted(
    kind: &Kind,
    dir: &Path,
    hash_len: usize,
    sorted: &Sorted,
) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    write_table(kind, dir, hash_len, &sorted.records())
}

#[cfg(test)]
mod tests;
