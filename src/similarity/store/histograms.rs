//! The histogram store: git's chunk histograms ([`Spans`]) of blobs,
//! kept beside the fingerprints so that scoring a pair exactly needs no
//! blob read.
//!
//! Why: `groups` scores every member of every group exactly, and in a
//! tree of many versions of the same files that is nearly every blob;
//! reading and chunking them was most of a run (a 100,000-file tree:
//! 1.8 GB decoded from the pack and chunked, 2.6 of 4.6 s; `--all` on
//! git.git re-read blobs that fell out of the in-memory cache). A
//! histogram is exact, so the score from a stored one is git's score, and
//! stored it takes about a twentieth of the blob ([`Spans::encode`]).
//!
//! The layout is the fingerprint tables' (immutable files, written to a
//! temporary name, synced and renamed; validated when opened; a damaged
//! record drops its table, whose blobs are then read again), with
//! variable-length records:
//!
//! ```text
//! header   32 bytes: "GSIMMHS\0", format, chunking version, id length, count
//! fan-out  256 x u32
//! ids      count x id length, sorted
//! index    count x (offset u64, length u32, CRC-32 of id and record u32)
//! records  the encoded histograms, in id order, back to back
//! ```
//!
//! Only histograms of blobs chunked by content (git's NUL rule, no
//! attributes) are kept: that is how `groups` scores.
//!
//! Histograms are added while blobs are read ([`Histograms::add`]); every
//! [`FLUSH_BYTES`] of them become a table, so memory stays bounded
//! however many blobs a run reads. A disabled store (`--no-cache`) keeps
//! its tables in memory instead.

use std::fs::{self};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::table::{
    FANOUT_LEN, HEADER_LEN, clean_stale_temporaries, prefix, read_u32, read_u64, temporary_in,
};
use super::{Pruned, StoreError};
use crate::similarity::score::Spans;

const MAGIC: &[u8; 8] = b"GSIMMHS\0";
/// Layout version of a histogram table.
const FORMAT: u32 = 1;
/// Version of git's chunking the records follow; bumped if the way
/// [`Spans`] cuts or hashes ever changes, so old tables are ignored.
const CHUNKING_VERSION: u32 = 1;
/// offset (8) + length (4) + crc (4)
const INDEX_LEN: usize = 16;
/// Pending histograms become a table once they take this many bytes.
pub const FLUSH_BYTES: usize = 128 << 20;
/// Merge tables once there are more than this many (when the store is
/// opened, never while a run holds [`Loc`]s into them).
const MAX_TABLES: usize = 16;

/// Where a stored histogram is: a table and a byte range in it, checked
/// against its CRC when it was located.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    table: u32,
    start: u64,
    len: u32,
}

enum Bytes {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

struct HistTable {
    path: Option<PathBuf>,
    bytes: Bytes,
    hash_len: usize,
    count: usize,
    data_start: usize,
    /// Found damaged: skipped from then on (kept in place, so that the
    /// [`Loc`]s of other tables stay valid).
    dead: bool,
}

impl HistTable {
    /// Validate a table's header, fan-out and extent; `Ok(None)` for a
    /// table of another format, chunking or hash.
    fn new(path: Option<PathBuf>, bytes: Bytes, hash_len: usize) -> Result<Option<Self>, String> {
        if bytes.len() < HEADER_LEN + FANOUT_LEN || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a histogram table (bad header)".into());
        }
        if read_u32(&bytes, 8) != FORMAT
            || read_u32(&bytes, 12) != CHUNKING_VERSION
            || read_u32(&bytes, 16) as usize != hash_len
        {
            return Ok(None);
        }
        let count = usize::try_from(read_u64(&bytes, 20)).map_err(|_| "count overflows")?;
        let data_start = count
            .checked_mul(hash_len + INDEX_LEN)
            .and_then(|n| n.checked_add(HEADER_LEN + FANOUT_LEN))
            .filter(|&n| n <= bytes.len())
            .ok_or_else(|| format!("truncated: {} bytes for {count} records", bytes.len()))?;
        let mut prev = 0;
        for i in 0..256 {
            let f = read_u32(&bytes, HEADER_LEN + i * 4);
            if f < prev {
                return Err("fan-out table is not monotonic".into());
            }
            prev = f;
        }
        if prev as usize != count {
            return Err("fan-out table does not match the record count".into());
        }
        let t = HistTable {
            path,
            bytes,
            hash_len,
            count,
            data_start,
            dead: false,
        };
        // Records are back to back: the last one ends the file.
        let end = match count.checked_sub(1) {
            Some(last) => {
                let (off, len, _) = t.index(last);
                off.checked_add(u64::from(len))
            }
            None => Some(0),
        };
        if end != Some((t.bytes.len() - data_start) as u64) {
            return Err("truncated or padded records".into());
        }
        Ok(Some(t))
    }

    fn open(path: &Path, hash_len: usize) -> Result<Option<Self>, String> {
        let Some(file) = super::files::open_table(path)? else {
            return Ok(None);
        };
        // SAFETY: as for fingerprint tables: never written after the
        // rename that publishes them, only ever deleted.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        Self::new(Some(path.to_owned()), Bytes::Map(map), hash_len)
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + i * self.hash_len;
        &self.bytes[start..start + self.hash_len]
    }

    fn index(&self, i: usize) -> (u64, u32, u32) {
        let at = HEADER_LEN + FANOUT_LEN + self.count * self.hash_len + i * INDEX_LEN;
        (
            read_u64(&self.bytes, at),
            read_u32(&self.bytes, at + 8),
            read_u32(&self.bytes, at + 12),
        )
    }

    /// Where `id` is, or `Err` with the first larger key; `from` is a
    /// position with no larger key before it (ids looked up in order).
    fn find_from(&self, from: usize, id: &[u8]) -> Result<usize, usize> {
        let first = id[0] as usize;
        let fan = |i: usize| read_u32(&self.bytes, HEADER_LEN + i * 4) as usize;
        let lo_bucket = if first == 0 { 0 } else { fan(first - 1) };
        let hi = fan(first);
        let lo = lo_bucket.max(from).min(hi);
        let want = prefix(id);
        let cmp = |i: usize| {
            let key = self.key(i);
            prefix(key).cmp(&want).then_with(|| key.cmp(id))
        };
        super::table::gallop(lo, hi, cmp)
    }

    /// The record at `i`, checked: in bounds and matching its CRC.
    fn checked(&self, i: usize) -> Result<(u64, u32), String> {
        let (off, len, crc) = self.index(i);
        let start = (self.data_start as u64).checked_add(off);
        let end = start.and_then(|s| s.checked_add(u64::from(len)));
        let (Some(start), Some(end)) = (start, end) else {
            return Err(format!("record {i} out of bounds"));
        };
        if end > self.bytes.len() as u64 {
            return Err(format!("record {i} out of bounds"));
        }
        let mut h = crc32fast::Hasher::new();
        h.update(self.key(i));
        h.update(&self.bytes[start as usize..end as usize]);
        if h.finalize() != crc {
            return Err(format!("record {i} fails its checksum"));
        }
        Ok((start, len))
    }
}

/// The histogram store of one repository (see the module documentation).
pub struct Histograms {
    dir: Option<PathBuf>,
    hash_len: usize,
    tables: Vec<HistTable>,
    pending: Vec<(ObjectId, Vec<u8>)>,
    pending_bytes: usize,
    warnings: Vec<String>,
}

impl Histograms {
    /// A store that keeps what it is given in memory for this run only.
    pub fn disabled(hash_len: usize) -> Histograms {
        Histograms {
            dir: None,
            hash_len,
            tables: Vec::new(),
            pending: Vec::new(),
            pending_bytes: 0,
            warnings: Vec::new(),
        }
    }

    /// Open the histogram tables in `dir` (the fingerprint store's
    /// directory). Damaged tables are dropped with a warning; more than
    /// 16 are merged into one.
    pub fn open(dir: &Path, hash_len: usize) -> Result<Histograms, StoreError> {
        let mut h = Histograms::disabled(hash_len);
        h.dir = Some(dir.to_owned());
        h.load_tables()?;
        if h.tables.len() > MAX_TABLES {
            h.compact()?;
        }
        Ok(h)
    }

    fn load_tables(&mut self) -> Result<(), StoreError> {
        self.tables.clear();
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        for path in super::table::list(&dir, is_histogram_table)? {
            match HistTable::open(&path, self.hash_len) {
                Ok(Some(t)) => self.tables.push(t),
                Ok(None) => {}
                Err(why) => self.discard_file(&path, &why),
            }
        }
        Ok(())
    }

    fn discard_file(&mut self, path: &Path, why: &str) {
        let done = super::files::dispose_damaged(path, KIND, MAGIC);
        self.warnings.push(format!(
            "histogram table {} is damaged ({why}); discarding it ({}), its blobs will be read again",
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

    /// Where the histogram of each of `ids` is, `None` where the store
    /// has none (or a damaged one: its table is dropped and the lookup
    /// starts over). Every record found is checked against its CRC here,
    /// once, so [`Histograms::get`] can trust it.
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
            'tables: for (ti, t) in self.tables.iter().enumerate() {
                if t.dead {
                    continue;
                }
                let mut at = 0;
                for &(i, id) in &order {
                    if out[i].is_some() {
                        continue;
                    }
                    match t.find_from(at, id.as_slice()) {
                        Ok(k) => {
                            at = k;
                            match t.checked(k) {
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
                        Err(next) => at = next,
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

    /// The histogram at `loc` (from [`Histograms::locate`]), decoded;
    /// `None` only if it does not decode, which a record that passed its
    /// CRC does not do unless written by a broken writer.
    pub fn get(&self, loc: Loc) -> Option<Spans> {
        Spans::decode(self.record(loc)?)
    }

    /// The encoded histogram at `loc` ([`Spans::decode`] or
    /// [`Spans::decode_without`] read it).
    pub fn record(&self, loc: Loc) -> Option<&[u8]> {
        let t = self.tables.get(loc.table as usize)?;
        let start = usize::try_from(loc.start).ok()?;
        t.bytes.get(start..start.checked_add(loc.len as usize)?)
    }

    /// Add the histogram of `id`; every [`FLUSH_BYTES`] pending become a
    /// table ([`Histograms::flush`]).
    pub fn add(&mut self, id: ObjectId, spans: &Spans) -> Result<(), StoreError> {
        let mut bytes = Vec::with_capacity(spans.bucket_count() * 3 + 16);
        spans.encode(&mut bytes);
        self.pending_bytes += bytes.len() + id.as_slice().len() + INDEX_LEN;
        self.pending.push((id, bytes));
        if self.pending_bytes >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Make what was added a table: written to the directory (and
    /// memory-mapped) when the store is enabled and writable, else kept
    /// in memory. A read-only directory turns the store into an in-memory
    /// one with a warning, since no answer depends on the cache.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        let mut entries = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        entries.retain(|(id, _)| id.as_slice().len() == self.hash_len);
        if entries.is_empty() {
            return Ok(());
        }
        entries.sort_unstable_by_key(|e| e.0);
        entries.dedup_by(|a, b| a.0 == b.0);
        let records: Vec<(&[u8], &[u8])> = entries
            .iter()
            .map(|(id, b)| (id.as_slice(), b.as_slice()))
            .collect();
        if let Some(dir) = self.dir.clone() {
            let written =
                fs::create_dir_all(&dir).and_then(|()| write_table(&dir, self.hash_len, &records));
            match written {
                Ok(path) => {
                    // What a run killed before its rename left.
                    clean_stale_temporaries(&dir);
                    match HistTable::open(&path, self.hash_len) {
                        Ok(Some(t)) => self.tables.push(t),
                        Ok(None) => {}
                        Err(why) => self.discard_file(&path, &why),
                    }
                    return Ok(());
                }
                Err(e)
                    if e.kind() == io::ErrorKind::PermissionDenied
                        || e.kind() == io::ErrorKind::ReadOnlyFilesystem =>
                {
                    self.warnings.push(format!(
                        "cannot write histograms in {} ({e}); continuing without caching",
                        dir.display()
                    ));
                    self.dir = None;
                }
                Err(e) => {
                    return Err(StoreError::Write {
                        path: dir,
                        source: e,
                    });
                }
            }
        }
        let mut bytes = Vec::new();
        write_records(&mut bytes, self.hash_len, &records).map_err(|e| StoreError::Write {
            path: PathBuf::new(),
            source: e,
        })?;
        // What was just built in memory always validates.
        if let Ok(Some(t)) = HistTable::new(None, Bytes::Owned(bytes), self.hash_len) {
            self.tables.push(t);
        }
        Ok(())
    }

    /// Merge every table into one, records copied as they are (checked
    /// first: a damaged one is left out, its blob read again when
    /// wanted).
    fn compact(&mut self) -> Result<(), StoreError> {
        self.rewrite(&|_| true, false).map(|_| ())
    }

    /// Drop the histograms of blobs `keep` rejects and merge the rest into
    /// one table, as [`Store::prune`](super::Store::prune) does for
    /// fingerprints (the same order: written, synced, renamed, read back,
    /// and only then the old tables deleted). With `dry_run`, only count.
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

    /// Delete every histogram table of this hash (`git simm gc
    /// --drop-histograms`): they are a cache of what blobs hold, so the
    /// next command that wants one reads the blob again.
    pub fn drop_all(&mut self, dry_run: bool) -> Result<Pruned, StoreError> {
        let live = || self.tables.iter().filter(|t| !t.dead);
        let report = Pruned {
            kept: 0,
            dropped: live().map(|t| t.count).sum(),
            tables_before: live().count(),
            bytes_before: live().map(|t| t.bytes.len() as u64).sum(),
            bytes_after: 0,
        };
        if dry_run {
            return Ok(report);
        }
        let paths: Vec<PathBuf> = self.tables.iter().filter_map(|t| t.path.clone()).collect();
        self.tables.clear();
        for p in paths {
            if let Err(e) = super::files::remove_if_ours(&p, KIND, MAGIC) {
                return Err(StoreError::Write { path: p, source: e });
            }
        }
        Ok(report)
    }

    fn rewrite(
        &mut self,
        keep: &dyn Fn(&[u8]) -> bool,
        dry_run: bool,
    ) -> Result<Pruned, StoreError> {
        let live = self.tables.iter().filter(|t| !t.dead);
        let mut report = Pruned {
            tables_before: live.clone().count(),
            bytes_before: live.map(|t| t.bytes.len() as u64).sum(),
            ..Pruned::default()
        };
        let Some(dir) = self.dir.clone() else {
            return Ok(report);
        };
        let mut all: Vec<(&[u8], &[u8])> = Vec::new();
        for t in self.tables.iter().filter(|t| !t.dead) {
            for i in 0..t.count {
                if let Ok((start, len)) = t.checked(i) {
                    let start = start as usize;
                    all.push((t.key(i), &t.bytes[start..start + len as usize]));
                }
            }
        }
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.dedup_by(|a, b| a.0 == b.0);
        let before = all.len();
        all.retain(|(id, _)| keep(id));
        report.kept = all.len();
        report.dropped = before - all.len();
        report.bytes_after = if all.is_empty() {
            0
        } else {
            (HEADER_LEN + FANOUT_LEN) as u64
                + all
                    .iter()
                    .map(|(id, rec)| (id.len() + INDEX_LEN + rec.len()) as u64)
                    .sum::<u64>()
        };
        if dry_run || (report.dropped == 0 && report.tables_before <= 1) {
            if !dry_run {
                report.bytes_after = report.bytes_before;
                clean_stale_temporaries(&dir);
            }
            return Ok(report);
        }
        let path = if all.is_empty() {
            None
        } else {
            let path = write_table(&dir, self.hash_len, &all).map_err(|e| StoreError::Write {
                path: dir.clone(),
                source: e,
            })?;
            if let Err(why) = verify(&path, self.hash_len, &all) {
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
            let _ = super::files::remove_if_ours(&p, KIND, MAGIC);
        }
        clean_stale_temporaries(&dir);
        self.load_tables()?;
        Ok(report)
    }
}

/// Read a written table back, every record checked against its CRC, and
/// compare it with what was written.
fn verify(path: &Path, hash_len: usize, records: &[(&[u8], &[u8])]) -> Result<(), String> {
    let t = HistTable::open(path, hash_len)?.ok_or("it vanished")?;
    if t.count != records.len() {
        return Err(format!("{} records, {} written", t.count, records.len()));
    }
    for (i, (id, rec)) in records.iter().enumerate() {
        let (start, len) = t.checked(i)?;
        let start = start as usize;
        if t.key(i) != *id || t.bytes.get(start..start + len as usize) != Some(*rec) {
            return Err(format!("record {i} differs"));
        }
    }
    Ok(())
}

/// The kind in a histogram table's name (`hist-<8 hex>-<8 hex>.table`).
const KIND: &str = "hist";

fn is_histogram_table(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| super::files::is_table_name_of(n, KIND))
}

/// Write sorted, distinct `(id, record)` pairs as a table in `dir`; the
/// name comes from the content, as fingerprint tables' do.
fn write_table(dir: &Path, hash_len: usize, records: &[(&[u8], &[u8])]) -> io::Result<PathBuf> {
    let mut tmp = temporary_in(dir)?;
    let crc = {
        let mut w = Crc {
            inner: BufWriter::with_capacity(1 << 16, tmp.as_file_mut()),
            crc: crc32fast::Hasher::new(),
        };
        write_records(&mut w, hash_len, records)?;
        w.inner.flush()?;
        w.crc.finalize()
    };
    tmp.as_file().sync_all()?;
    let path = dir.join(format!("{KIND}-{crc:08x}-{:08x}.table", records.len()));
    tmp.persist(&path).map_err(|e| e.error)?;
    crate::fsutil::sync_dir(dir)?;
    Ok(path)
}

/// A writer that keeps a CRC of what went through it (the table's name).
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

fn write_records(
    w: &mut impl Write,
    hash_len: usize,
    records: &[(&[u8], &[u8])],
) -> io::Result<()> {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    header[12..16].copy_from_slice(&CHUNKING_VERSION.to_le_bytes());
    header[16..20].copy_from_slice(&(hash_len as u32).to_le_bytes());
    header[20..28].copy_from_slice(&(records.len() as u64).to_le_bytes());
    w.write_all(&header)?;
    let mut fanout = [0u32; 256];
    for (id, _) in records {
        fanout[id[0] as usize] += 1;
    }
    let mut running = 0u32;
    for f in fanout {
        running += f;
        w.write_all(&running.to_le_bytes())?;
    }
    for (id, _) in records {
        w.write_all(id)?;
    }
    let mut offset = 0u64;
    for (id, rec) in records {
        let len = u32::try_from(rec.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "histogram over 4 GiB"))?;
        let mut h = crc32fast::Hasher::new();
        h.update(id);
        h.update(rec);
        w.write_all(&offset.to_le_bytes())?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&h.finalize().to_le_bytes())?;
        offset += u64::from(len);
    }
    for (_, rec) in records {
        w.write_all(rec)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> ObjectId {
        let mut b = [0u8; 20];
        b[..4].copy_from_slice(&n.wrapping_mul(2_654_435_761).to_be_bytes());
        b[19] = n as u8;
        ObjectId::from_bytes_or_panic(&b)
    }

    fn corpus() -> Vec<(ObjectId, Spans)> {
        crate::testing::real_text()
            .iter()
            .take(200)
            .enumerate()
            .map(|(n, t)| (id(n as u32), Spans::new(t)))
            .collect()
    }

    #[test]
    fn histograms_come_back_from_disk_and_memory() {
        let dir = tempfile::tempdir().unwrap();
        let files = corpus();
        let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
        for enabled in [true, false] {
            let mut h = if enabled {
                Histograms::open(dir.path(), 20).unwrap()
            } else {
                Histograms::disabled(20)
            };
            for (i, s) in &files[..120] {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
            for (i, s) in &files[100..] {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
            let locs = h.locate(&ids);
            for ((_, s), loc) in files.iter().zip(&locs) {
                assert_eq!(h.get(loc.unwrap()).as_ref(), Some(s));
            }
            assert_eq!(h.locate(&[id(9999)]), vec![None]);
        }
        // Reopened: the tables on disk, nothing recomputed.
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 2);
        assert!(h.locate(&ids).iter().all(Option::is_some));
        // Another hash's store sees none of them.
        let mut other = Histograms::open(dir.path(), 32).unwrap();
        assert_eq!(other.table_count(), 0);
        assert!(other.take_warnings().is_empty());
    }

    /// One histogram table holding `files`, written to `dir`: its path.
    fn write_table(dir: &Path, files: &[(ObjectId, Spans)]) -> PathBuf {
        let mut h = Histograms::open(dir, 20).unwrap();
        for (i, s) in files {
            h.add(*i, s).unwrap();
        }
        h.flush().unwrap();
        drop(h);
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| is_histogram_table(p))
            .unwrap()
    }

    #[test]
    fn a_damaged_record_drops_its_table_and_reads_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let files = corpus();
        let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
        let path = write_table(dir.path(), &files);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 10;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        let locs = h.locate(&ids);
        assert!(locs.iter().all(Option::is_none));
        assert!(h.take_warnings()[0].contains("fails its checksum"));
        assert!(!path.exists());
        // Cut short: refused when opened.
        let path = write_table(dir.path(), &files);
        let len = fs::metadata(&path).unwrap().len();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 0);
        assert!(h.take_warnings()[0].contains("truncated"));
    }

    #[test]
    fn many_tables_are_merged_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let files = corpus();
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        for chunk in files.chunks(files.len() / (MAX_TABLES + 2)) {
            for (i, s) in chunk {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
        }
        assert!(h.table_count() > MAX_TABLES);
        drop(h);
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 1);
        let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
        let locs = h.locate(&ids);
        for ((_, s), loc) in files.iter().zip(&locs) {
            assert_eq!(h.get(loc.unwrap()).as_ref(), Some(s));
        }
    }
}
