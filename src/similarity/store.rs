//! The fingerprint store: a persistent cache of fingerprints keyed by blob id.
//!
//! A blob never changes, so its fingerprint is computed once and kept under
//! the repository's git directory (`$GIT_COMMON_DIR/simm/`, or wherever
//! `simm.storeDir` points). The layout copies what makes git's own pack
//! indexes robust, because the problems are the same: millions of keys,
//! readers that need a handful, several processes at once, and files that
//! may be cut short by a crash.
//!
//! - **Immutable tables.** Each write creates a new file `fp-*.table`: a
//!   256-entry fan-out, the sorted blob ids, then fixed-size records. It is
//!   written to a temporary name, synced, and renamed into place, so a
//!   reader sees a whole table or none. Nothing is ever modified in place,
//!   which is what makes memory-mapping safe and concurrent writers harmless:
//!   two processes that add the same blob produce two tables that agree.
//! - **Lookups touch what they need.** Tables are memory-mapped; a lookup is
//!   a fan-out step and a binary search, so a command that wants a hundred
//!   fingerprints reads a few pages, whatever the store's size.
//! - **Compaction.** When tables pile up they are merged into one. A table
//!   deleted by another process's compaction just disappears from view; the
//!   worst outcome of any race is recomputing a fingerprint.
//! - **Never trusted blindly.** Every record carries a CRC over its key and
//!   value, and every table's header, size and fan-out are checked when it
//!   is opened. A table that fails any check is reported, deleted, and its
//!   blobs are recomputed: the store is a cache, so rebuilding is always
//!   correct. Tables of another [`FINGERPRINT_VERSION`] are ignored.
//! - **One store, two hashes.** Every table's header records the length of
//!   its object ids: 20 bytes for SHA-1, 32 for SHA-256, the only two hash
//!   functions git has, so the length names the hash. A store opened for
//!   one hash sees only that hash's tables, and never touches (merges,
//!   discards, deletes) the others, so a SHA-1 and a SHA-256 repository
//!   can share one `simm.storeDir` without either confusing or destroying
//!   the other's fingerprints.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::similarity::fingerprint::{FINGERPRINT_VERSION, Fingerprint, Sketch};

/// Layout version of a table file (independent of the fingerprint's).
const TABLE_FORMAT: u32 = 1;
const MAGIC: &[u8; 8] = b"GSIMMFP\0";
const HEADER_LEN: usize = 32;
const FANOUT_LEN: usize = 256 * 4;
/// fingerprint (32) + size (8) + flags (4) + crc (4)
const RECORD_LEN: usize = 48;
/// From this many ids on, [`Store::get_many`] sorts them and walks the
/// tables in order rather than searching each id.
const SORTED_LOOKUPS: usize = 1024;
/// Merge tables once there are more than this many.
const MAX_TABLES: usize = 8;

/// The error returned by [`Store::open`] and [`Store::insert`].
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store directory could not be created or read.
    #[error("cannot use fingerprint store at {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A new table could not be written.
    #[error("cannot write fingerprint table in {path}: {source}")]
    Write {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// One memory-mapped, validated table.
struct Table {
    path: PathBuf,
    map: memmap2::Mmap,
    hash_len: usize,
    count: usize,
}

impl Table {
    /// Open and validate a table. `Ok(None)` means it vanished (another
    /// process compacted it away) or belongs to another fingerprint version.
    fn open(path: &Path, hash_len: usize) -> Result<Option<Table>, String> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        // SAFETY: tables are never written after the rename that publishes
        // them, and git-simm only ever deletes them (unlinking keeps an
        // existing map valid). Anything else truncating them is outside the
        // contract of the git directory, as it is for git's own packs.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        if map.len() < MAGIC.len() || &map[..MAGIC.len()] != MAGIC {
            return Err("not a fingerprint table (bad header)".into());
        }
        if map.len() < HEADER_LEN + FANOUT_LEN {
            return Err(format!(
                "truncated: {} bytes, shorter than the header",
                map.len()
            ));
        }
        let format = read_u32(&map, 8);
        let fp_version = read_u32(&map, 12);
        let table_hash_len = read_u32(&map, 16) as usize;
        let count = read_u64(&map, 20);
        // A table of another hash (a SHA-1 and a SHA-256 repository
        // sharing `simm.storeDir`) is the other repository's, not damaged.
        if format != TABLE_FORMAT || fp_version != FINGERPRINT_VERSION || table_hash_len != hash_len
        {
            return Ok(None);
        }
        let count = usize::try_from(count).map_err(|_| "record count overflows".to_string())?;
        let expected = count
            .checked_mul(hash_len + RECORD_LEN)
            .and_then(|n| n.checked_add(HEADER_LEN + FANOUT_LEN))
            .ok_or_else(|| "record count overflows".to_string())?;
        if map.len() != expected {
            return Err(format!(
                "truncated or padded: {} bytes, expected {expected} for {count} records",
                map.len()
            ));
        }
        let mut prev = 0u32;
        for i in 0..256 {
            let f = read_u32(&map, HEADER_LEN + i * 4);
            if f < prev {
                return Err("fan-out table is not monotonic".into());
            }
            prev = f;
        }
        if prev as usize != count {
            return Err("fan-out table does not match the record count".into());
        }
        Ok(Some(Table {
            path: path.to_owned(),
            map,
            hash_len,
            count,
        }))
    }

    fn fanout(&self, i: usize) -> usize {
        read_u32(&self.map, HEADER_LEN + i * 4) as usize
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + i * self.hash_len;
        &self.map[start..start + self.hash_len]
    }

    fn record(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + self.count * self.hash_len + i * RECORD_LEN;
        &self.map[start..start + RECORD_LEN]
    }

    fn find(&self, id: &[u8]) -> Option<usize> {
        self.find_from(0, id).ok()
    }

    /// Where `id` is, or `Err` with the position of the first larger key;
    /// `from` is a position known to hold no larger key before it (the
    /// previous answer, when looking up ids in ascending order), so the
    /// search gallops forward from there.
    fn find_from(&self, from: usize, id: &[u8]) -> Result<usize, usize> {
        let first = id[0] as usize;
        let bucket_lo = if first == 0 {
            0
        } else {
            self.fanout(first - 1)
        };
        let mut hi = self.fanout(first);
        let mut lo = bucket_lo.max(from).min(hi);
        // Ids are hashes: their first 8 bytes nearly always decide, and one
        // u64 comparison is much cheaper than a 20-byte memcmp.
        let want = prefix(id);
        let cmp = |i: usize| {
            let key = self.key(i);
            prefix(key).cmp(&want).then_with(|| key.cmp(id))
        };
        // Gallop: ids looked up in order are usually close together.
        let mut step = 1;
        while lo + step < hi && cmp(lo + step).is_lt() {
            lo += step + 1;
            step *= 2;
        }
        hi = hi.min(lo + step + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match cmp(mid) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The size in record `i`, checking its CRC as [`Table::entry`] does
    /// but decoding nothing else.
    fn size(&self, i: usize) -> Result<u64, String> {
        let rec = self.record(i);
        if record_crc(self.key(i), &rec[..44]) != read_u32(rec, 44) {
            return Err(format!("record {i} fails its checksum"));
        }
        match read_u32(rec, 40) {
            0 | FLAG_HAS_FINGERPRINT => Ok(read_u64(rec, 32)),
            _ => Err(format!("record {i} has unknown flags")),
        }
    }

    /// Decode record `i`, checking its CRC against its key.
    fn entry(&self, i: usize) -> Result<Sketch, String> {
        let rec = self.record(i);
        let key = self.key(i);
        let stored = read_u32(rec, 44);
        if record_crc(key, &rec[..44]) != stored {
            return Err(format!("record {i} fails its checksum"));
        }
        decode(rec).ok_or_else(|| format!("record {i} has unknown flags"))
    }
}

const FLAG_HAS_FINGERPRINT: u32 = 1;

fn decode(rec: &[u8]) -> Option<Sketch> {
    let mut fp = [0u8; 32];
    fp.copy_from_slice(&rec[..32]);
    let size = read_u64(rec, 32);
    let flags = read_u32(rec, 40);
    match flags {
        0 => Some(Sketch {
            size,
            fingerprint: None,
        }),
        FLAG_HAS_FINGERPRINT => Some(Sketch {
            size,
            fingerprint: Some(Fingerprint::from_bytes(&fp)),
        }),
        _ => None,
    }
}

fn encode(entry: &Sketch) -> [u8; 44] {
    let mut rec = [0u8; 44];
    if let Some(fp) = entry.fingerprint {
        rec[..32].copy_from_slice(&fp.to_bytes());
    }
    rec[32..40].copy_from_slice(&entry.size.to_le_bytes());
    let flags = if entry.fingerprint.is_some() {
        FLAG_HAS_FINGERPRINT
    } else {
        0
    };
    rec[40..44].copy_from_slice(&flags.to_le_bytes());
    rec
}

fn record_crc(key: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key);
    h.update(body);
    h.finalize()
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The first 8 bytes of an id as a number, ordered as the bytes are (0 for
/// an id too short, which then compares by its bytes alone).
fn prefix(id: &[u8]) -> u64 {
    id.first_chunk::<8>().map_or(0, |b| u64::from_be_bytes(*b))
}

fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The fingerprint store of one repository (or a disabled stand-in for
/// `--no-cache`, which remembers nothing).
pub struct Store {
    dir: Option<PathBuf>,
    hash_len: usize,
    tables: Vec<Table>,
    warnings: Vec<String>,
    /// Tables found corrupt since the last write; deleted by the next one.
    bad: Vec<PathBuf>,
}

impl Store {
    /// The store's directory inside a git directory.
    pub fn default_dir(common_git_dir: &Path) -> PathBuf {
        common_git_dir.join("simm")
    }

    /// A store that holds nothing and writes nothing.
    pub fn disabled(hash_len: usize) -> Store {
        Store {
            dir: None,
            hash_len,
            tables: Vec::new(),
            warnings: Vec::new(),
            bad: Vec::new(),
        }
    }

    /// Open the store in `dir`, creating the directory lazily on first
    /// write. Damaged tables are dropped with a warning (see
    /// [`Store::take_warnings`]), never trusted.
    pub fn open(dir: &Path, hash_len: usize) -> Result<Store, StoreError> {
        let mut store = Store {
            dir: Some(dir.to_owned()),
            hash_len,
            tables: Vec::new(),
            warnings: Vec::new(),
            bad: Vec::new(),
        };
        store.load_tables()?;
        Ok(store)
    }

    fn load_tables(&mut self) -> Result<(), StoreError> {
        self.tables.clear();
        let Some(dir) = &self.dir else { return Ok(()) };
        let read = match fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(StoreError::Dir {
                    path: dir.clone(),
                    source: e,
                });
            }
        };
        let mut paths: Vec<PathBuf> = read
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| is_table_name(p))
            .collect();
        paths.sort();
        for path in paths {
            match Table::open(&path, self.hash_len) {
                Ok(Some(t)) => self.tables.push(t),
                Ok(None) => {}
                Err(why) => self.discard(path, &why),
            }
        }
        Ok(())
    }

    fn discard(&mut self, path: PathBuf, why: &str) {
        self.warnings.push(format!(
            "fingerprint store table {} is damaged ({why}); discarding it, its fingerprints will be recomputed",
            path.display()
        ));
        self.tables.retain(|t| t.path != path);
        self.bad.push(path);
    }

    /// Whether this store persists anything.
    pub fn is_enabled(&self) -> bool {
        self.dir.is_some()
    }

    /// Warnings gathered so far (damaged tables, unwritable directory);
    /// the caller decides how to show them.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Look up a blob. A damaged record drops its whole table and reads as
    /// a miss, so the caller recomputes it.
    pub fn get(&mut self, id: &ObjectId) -> Option<Sketch> {
        let key = id.as_slice();
        if key.len() != self.hash_len {
            return None;
        }
        let mut damaged = None;
        let mut found = None;
        for t in &self.tables {
            if let Some(i) = t.find(key) {
                match t.entry(i) {
                    Ok(e) => {
                        found = Some(e);
                        break;
                    }
                    Err(why) => {
                        damaged = Some((t.path.clone(), why));
                        break;
                    }
                }
            }
        }
        if let Some((path, why)) = damaged {
            self.discard(path, &why);
            return self.get(id);
        }
        found
    }

    /// Look up many blobs at once; `None` where the store has no (valid)
    /// entry.
    ///
    /// Many ids (every file of a large tree) are looked up in ascending
    /// order, so each table is walked front to back: random lookups into a
    /// memory-mapped table fault in a page and miss the cache for nearly
    /// every id, and that was most of the cost.
    pub fn get_many(&mut self, ids: &[ObjectId]) -> Vec<Option<Sketch>> {
        if ids.len() < SORTED_LOOKUPS {
            return ids.iter().map(|id| self.get(id)).collect();
        }
        self.lookup_sorted(ids, Table::entry)
    }

    /// The sizes of many blobs, `None` where the store has no (valid)
    /// entry: [`Store::get_many`] reading only the size of each record.
    /// The pre-commit check wants the size of every file of a large tree
    /// (its copy search's size filter), and decoding and copying 100,000
    /// fingerprints it does not need cost more than finding them.
    pub fn sizes(&mut self, ids: &[ObjectId]) -> Vec<Option<u64>> {
        if ids.len() < SORTED_LOOKUPS {
            return ids.iter().map(|id| self.get(id).map(|e| e.size)).collect();
        }
        self.lookup_sorted(ids, Table::size)
    }

    /// What `read` makes of the record of each id, walking the tables in
    /// id order. A damaged record drops its whole table, then the lookup
    /// starts over without it.
    fn lookup_sorted<T: Copy>(
        &mut self,
        ids: &[ObjectId],
        read: impl Fn(&Table, usize) -> Result<T, String>,
    ) -> Vec<Option<T>> {
        loop {
            // Ids with their places, sorted; answers are gathered in that
            // order and put in place once at the end (in place at once,
            // every answer would be a cache miss too).
            let mut order: Vec<(ObjectId, usize)> = ids
                .iter()
                .enumerate()
                .filter(|(_, id)| id.as_slice().len() == self.hash_len)
                .map(|(i, id)| (*id, i))
                .collect();
            order.sort_unstable_by(|a, b| {
                prefix(a.0.as_slice())
                    .cmp(&prefix(b.0.as_slice()))
                    .then_with(|| a.0.cmp(&b.0))
            });
            let mut found: Vec<Option<T>> = vec![None; order.len()];
            let mut damaged = None;
            'tables: for t in &self.tables {
                let mut at = 0;
                for ((id, _), slot) in order.iter().zip(found.iter_mut()) {
                    if slot.is_some() {
                        continue;
                    }
                    match t.find_from(at, id.as_slice()) {
                        Ok(i) => {
                            at = i;
                            match read(t, i) {
                                Ok(v) => *slot = Some(v),
                                Err(why) => {
                                    damaged = Some((t.path.clone(), why));
                                    break 'tables;
                                }
                            }
                        }
                        Err(next) => at = next,
                    }
                }
            }
            if let Some((path, why)) = damaged {
                self.discard(path, &why);
                continue;
            }
            let mut out = vec![None; ids.len()];
            for ((_, i), v) in order.into_iter().zip(found) {
                out[i] = v;
            }
            return out;
        }
    }

    /// Number of tables currently in use (for tests and diagnostics).
    pub fn table_count(&self) -> usize {
        self.tables.len()
    }

    /// Record new entries: one new table, then compaction if tables have
    /// piled up. Failure to write is reported as a warning when the
    /// directory is read-only, since the command's answer does not depend on
    /// the cache.
    pub fn insert(&mut self, mut entries: Vec<(ObjectId, Sketch)>) -> Result<(), StoreError> {
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        for bad in std::mem::take(&mut self.bad) {
            let _ = fs::remove_file(bad);
        }
        entries.retain(|(id, _)| id.as_slice().len() == self.hash_len);
        if entries.is_empty() {
            return Ok(());
        }
        entries.sort_by_key(|e| e.0);
        entries.dedup_by(|a, b| a.0 == b.0);
        if let Err(e) = fs::create_dir_all(&dir) {
            return self.write_failed(&dir, e);
        }
        let path = match write_table(&dir, self.hash_len, &entries) {
            Ok(p) => p,
            Err(e) => return self.write_failed(&dir, e),
        };
        match Table::open(&path, self.hash_len) {
            Ok(Some(t)) => self.tables.push(t),
            Ok(None) => {}
            Err(why) => self.discard(path, &why),
        }
        if self.tables.len() > MAX_TABLES {
            self.compact()?;
        }
        Ok(())
    }

    fn write_failed(&mut self, dir: &Path, e: io::Error) -> Result<(), StoreError> {
        if e.kind() == io::ErrorKind::PermissionDenied
            || e.kind() == io::ErrorKind::ReadOnlyFilesystem
        {
            self.warnings.push(format!(
                "cannot write fingerprint store in {} ({e}); continuing without caching",
                dir.display()
            ));
            self.dir = None;
            return Ok(());
        }
        Err(StoreError::Write {
            path: dir.to_owned(),
            source: e,
        })
    }

    /// Merge every table into one and delete the inputs.
    pub fn compact(&mut self) -> Result<(), StoreError> {
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        let mut all: Vec<(ObjectId, Sketch)> = Vec::new();
        let mut damaged = Vec::new();
        for t in &self.tables {
            for i in 0..t.count {
                match t.entry(i) {
                    Ok(e) => all.push((ObjectId::from_bytes_or_panic_free(t.key(i)), e)),
                    Err(why) => {
                        damaged.push((t.path.clone(), why));
                        break;
                    }
                }
            }
        }
        for (path, why) in damaged {
            self.discard(path, &why);
        }
        all.sort_by_key(|e| e.0);
        all.dedup_by(|a, b| a.0 == b.0);
        let path = match write_table(&dir, self.hash_len, &all) {
            Ok(p) => p,
            Err(e) => return self.write_failed(&dir, e),
        };
        let old: Vec<PathBuf> = self
            .tables
            .iter()
            .map(|t| t.path.clone())
            .chain(std::mem::take(&mut self.bad))
            .filter(|p| *p != path)
            .collect();
        for p in old {
            let _ = fs::remove_file(p);
        }
        clean_stale_temporaries(&dir);
        self.load_tables()
    }
}

trait FromBytesPanicFree {
    fn from_bytes_or_panic_free(bytes: &[u8]) -> ObjectId;
}

impl FromBytesPanicFree for ObjectId {
    /// Table keys were length-checked when the table was opened, so this
    /// cannot see a wrong length; it falls back to the null id regardless
    /// rather than panic.
    fn from_bytes_or_panic_free(bytes: &[u8]) -> ObjectId {
        match gix::hash::oid::try_from_bytes(bytes) {
            Ok(oid) => oid.to_owned(),
            Err(_) => ObjectId::null(gix::hash::Kind::Sha1),
        }
    }
}

fn is_table_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("fp-") && n.ends_with(".table"))
}

/// Temporary files older than this belong to a process that died.
const STALE_TEMP_SECS: u64 = 3600;
/// How temporary tables start ([`temporary_in`]).
const TMP_PREFIX: &str = "tmp-";

/// Remove temporary tables of processes that died before renaming them
/// (a temporary file is deleted when dropped, but not by a killed process).
fn clean_stale_temporaries(dir: &Path) {
    let Ok(read) = fs::read_dir(dir) else { return };
    for e in read.filter_map(|e| e.ok()) {
        let is_tmp = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(TMP_PREFIX));
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > STALE_TEMP_SECS);
        if is_tmp && old {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Write sorted, deduplicated entries as a table; returns its final path.
/// The name is derived from the content, so two processes writing the same
/// entries produce the same file and the rename is harmless.
fn write_table(dir: &Path, hash_len: usize, entries: &[(ObjectId, Sketch)]) -> io::Result<PathBuf> {
    // Deleted if anything below fails; renamed into place at the end.
    let mut tmp = temporary_in(dir)?;
    let mut crc = crc32fast::Hasher::new();
    {
        let mut w = BufWriter::with_capacity(1 << 16, tmp.as_file_mut());
        let mut put = |bytes: &[u8]| -> io::Result<()> {
            crc.update(bytes);
            w.write_all(bytes)
        };
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&TABLE_FORMAT.to_le_bytes());
        header[12..16].copy_from_slice(&FINGERPRINT_VERSION.to_le_bytes());
        header[16..20].copy_from_slice(&(hash_len as u32).to_le_bytes());
        header[20..28].copy_from_slice(&(entries.len() as u64).to_le_bytes());
        put(&header)?;
        let mut fanout = [0u32; 256];
        for (id, _) in entries {
            fanout[id.as_slice()[0] as usize] += 1;
        }
        let mut running = 0u32;
        for f in fanout.iter_mut() {
            running += *f;
            *f = running;
        }
        for f in fanout {
            put(&f.to_le_bytes())?;
        }
        for (id, _) in entries {
            put(id.as_slice())?;
        }
        for (id, e) in entries {
            let body = encode(e);
            put(&body)?;
            put(&record_crc(id.as_slice(), &body).to_le_bytes())?;
        }
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    let name = format!("fp-{:08x}-{:08x}.table", crc.finalize(), entries.len());
    let path = dir.join(name);
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

/// A new temporary file in `dir` (`tmp-` and a random name), created
/// exclusively and deleted when dropped unless persisted. Its mode is a
/// plain file's (0666 less the umask), not tempfile's private 0600: in a
/// shared repository other users read the tables.
fn temporary_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(TMP_PREFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> ObjectId {
        // Spread over the whole id space, so every fan-out bucket is used.
        let mut b = [0u8; 20];
        let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555;
        for chunk in b.chunks_mut(8) {
            x = x.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(n);
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        ObjectId::from_bytes_or_panic(&b)
    }

    fn entry(n: u64) -> Sketch {
        Sketch {
            size: n,
            fingerprint: (!n.is_multiple_of(3)).then_some(Fingerprint { words: [n; 4] }),
        }
    }

    /// The sorted walk of get_many answers exactly as one get per id:
    /// ids in either of two tables, in neither, repeated, in any order.
    #[test]
    fn many_lookups_agree_with_single_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(dir.path(), 20).expect("open");
        store
            .insert((0..3000).map(|n| (id(n), entry(n))).collect())
            .expect("insert");
        store
            .insert((2000..6000).map(|n| (id(n), entry(n))).collect())
            .expect("insert");
        assert_eq!(store.table_count(), 2);
        let queries: Vec<ObjectId> = (0..5000u64)
            .map(|k| id((k * 7919) % 9000))
            .chain([id(5), id(5), id(8999)])
            .collect();
        assert!(queries.len() >= SORTED_LOOKUPS);
        let many = store.get_many(&queries);
        let single: Vec<Option<Sketch>> = queries.iter().map(|q| store.get(q)).collect();
        assert_eq!(many, single);
        let sizes: Vec<Option<u64>> = single.iter().map(|e| e.map(|e| e.size)).collect();
        assert_eq!(store.sizes(&queries), sizes);
        assert_eq!(store.sizes(&queries[..10]), sizes[..10]);
        let found = many.iter().filter(|e| e.is_some()).count();
        assert!(found > 2000 && found < queries.len(), "{found}");
        for (q, e) in queries.iter().zip(&many) {
            let n = (0..9000).find(|&n| id(n) == *q).expect("a query id");
            assert_eq!(*e, (n < 6000).then(|| entry(n)), "id {n}");
        }
    }

    /// Writes leave no temporary file behind; compaction removes the ones
    /// a killed process left (older than an hour), and only those.
    #[test]
    fn temporaries_are_renamed_or_cleaned_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let names = |dir: &Path| -> Vec<String> {
            let mut v: Vec<String> = fs::read_dir(dir)
                .expect("read")
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(TMP_PREFIX))
                .collect();
            v.sort();
            v
        };
        let mut store = Store::open(dir.path(), 20).expect("open");
        store
            .insert((0..10).map(|n| (id(n), entry(n))).collect())
            .expect("insert");
        assert_eq!(names(dir.path()), Vec::<String>::new());
        let dead = dir.path().join("tmp-dead");
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        File::create(&dead)
            .and_then(|f| f.set_modified(two_hours_ago))
            .expect("old temporary");
        File::create(dir.path().join("tmp-live")).expect("new temporary");
        store.compact().expect("compact");
        assert_eq!(names(dir.path()), ["tmp-live"]);
        assert_eq!(store.get(&id(3)), Some(entry(3)));
    }

    /// A SHA-1 and a SHA-256 repository sharing one store directory: each
    /// sees only its own tables, neither warns about nor deletes the
    /// other's (not even by compacting), and an id of one length is never
    /// looked up among ids of the other.
    #[test]
    fn sha1_and_sha256_tables_share_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let long = |n: u64| {
            let mut b = [0u8; 32];
            b[..20].copy_from_slice(id(n).as_slice());
            b[20..28].copy_from_slice(&n.to_le_bytes());
            ObjectId::from_bytes_or_panic(&b)
        };
        let mut sha1 = Store::open(dir.path(), 20).expect("open");
        sha1.insert((0..100).map(|n| (id(n), entry(n))).collect())
            .expect("insert");
        let mut sha256 = Store::open(dir.path(), 32).expect("open");
        assert_eq!(sha256.table_count(), 0);
        for round in 0..=MAX_TABLES as u64 {
            sha256
                .insert(vec![(long(round), entry(round + 1))])
                .expect("insert");
        }
        assert!(sha256.table_count() < MAX_TABLES, "compacted");
        assert!(sha256.take_warnings().is_empty());
        assert_eq!(sha256.get(&long(3)), Some(entry(4)));
        // The same first 20 bytes, another hash: not the SHA-1 blob.
        assert_eq!(sha256.get(&id(3)), None);
        assert_eq!(sha256.get(&long(500)), None);

        let mut sha1 = Store::open(dir.path(), 20).expect("reopen");
        assert!(sha1.take_warnings().is_empty());
        assert_eq!(sha1.table_count(), 1);
        assert_eq!(sha1.get(&id(3)), Some(entry(3)));
        assert_eq!(sha1.get(&long(3)), None);
        sha1.compact().expect("compact");
        let sha256 = Store::open(dir.path(), 32).expect("reopen");
        assert_eq!(sha256.table_count(), 1);
    }

    /// A damaged record found by the size-only walk drops its table, as
    /// one found by get_many does: its blobs read as unknown, with a
    /// warning, and are recomputed by the caller.
    #[test]
    fn sizes_notice_a_damaged_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(dir.path(), 20).expect("open");
        store
            .insert((0..2000).map(|n| (id(n), entry(n))).collect())
            .expect("insert");
        let path = store.tables[0].path.clone();
        drop(store);
        let mut bytes = fs::read(&path).expect("table");
        // The size field of the last record.
        let at = bytes.len() - RECORD_LEN + 32;
        bytes[at] ^= 1;
        fs::write(&path, &bytes).expect("write");
        let mut store = Store::open(dir.path(), 20).expect("open");
        let queries: Vec<ObjectId> = (0..2000).map(id).collect();
        assert!(store.sizes(&queries).iter().all(Option::is_none));
        let warnings = store.take_warnings();
        assert!(
            warnings.len() == 1 && warnings[0].contains("fails its checksum"),
            "{warnings:?}"
        );
    }
}
