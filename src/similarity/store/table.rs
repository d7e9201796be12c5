//! One table file of the store: its on-disk layout (header, fan-out,
//! sorted ids, records with a CRC), reading it through a memory map,
//! writing it atomically, and the temporaries a killed writer leaves.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::similarity::fingerprint::{FINGERPRINT_VERSION, Fingerprint, Sketch};

/// Layout version of a table file (independent of the fingerprint's).
pub(super) const TABLE_FORMAT: u32 = 1;

pub(super) const MAGIC: &[u8; 8] = b"GSIMMFP\0";

pub(super) const HEADER_LEN: usize = 32;

pub(super) const FANOUT_LEN: usize = 256 * 4;

/// fingerprint (32) + size (8) + flags (4) + crc (4)
pub(super) const RECORD_LEN: usize = 48;

/// One memory-mapped, validated table.
pub(super) struct Table {
    pub(super) path: PathBuf,
    map: memmap2::Mmap,
    hash_len: usize,
    pub(super) count: usize,
}

impl Table {
    /// Open and validate a table. `Ok(None)` means it vanished (another
    /// process compacted it away) or belongs to another fingerprint version.
    pub(super) fn open(path: &Path, hash_len: usize) -> Result<Option<Table>, String> {
        let Some(file) = super::files::open_table(path)? else {
            return Ok(None);
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
        check_fanout(&map, count)?;
        Ok(Some(Table {
            path: path.to_owned(),
            map,
            hash_len,
            count,
        }))
    }

    /// The table's size in bytes.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn fanout(&self, i: usize) -> usize {
        read_u32(&self.map, HEADER_LEN + i * 4) as usize
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + i * self.hash_len;
        &self.map[start..start + self.hash_len]
    }

    pub(super) fn record(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + self.count * self.hash_len + i * RECORD_LEN;
        &self.map[start..start + RECORD_LEN]
    }

    pub(super) fn find(&self, id: &[u8]) -> Option<usize> {
        self.find_from(0, id).ok()
    }

    /// Where `id` is, or `Err` with the position of the first larger key;
    /// `from` is a position known to hold no larger key before it (the
    /// previous answer, when looking up ids in ascending order), so the
    /// search gallops forward from there.
    pub(super) fn find_from(&self, from: usize, id: &[u8]) -> Result<usize, usize> {
        let first = id[0] as usize;
        let bucket_lo = if first == 0 {
            0
        } else {
            self.fanout(first - 1)
        };
        let hi = self.fanout(first);
        let lo = bucket_lo.max(from).min(hi);
        // Ids are hashes: their first 8 bytes nearly always decide, and one
        // u64 comparison is much cheaper than a 20-byte memcmp.
        let want = prefix(id);
        let cmp = |i: usize| {
            let key = self.key(i);
            prefix(key).cmp(&want).then_with(|| key.cmp(id))
        };
        gallop(lo, hi, cmp)
    }

    /// The size in record `i`, checking its CRC as [`Table::entry`] does
    /// but decoding nothing else.
    pub(super) fn size(&self, i: usize) -> Result<u64, String> {
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
    pub(super) fn entry(&self, i: usize) -> Result<Sketch, String> {
        let rec = self.record(i);
        let key = self.key(i);
        let stored = read_u32(rec, 44);
        if record_crc(key, &rec[..44]) != stored {
            return Err(format!("record {i} fails its checksum"));
        }
        decode(rec).ok_or_else(|| format!("record {i} has unknown flags"))
    }
}

pub(super) const FLAG_HAS_FINGERPRINT: u32 = 1;

pub(super) fn decode(rec: &[u8]) -> Option<Sketch> {
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

pub(super) fn encode(entry: &Sketch) -> [u8; 44] {
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

pub(super) fn record_crc(key: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key);
    h.update(body);
    h.finalize()
}

/// Check the fan-out after a table's header (of `bytes`, long enough
/// for it): counts that never fall, ending at the table's `count`.
pub(super) fn check_fanout(bytes: &[u8], count: usize) -> Result<(), String> {
    let mut prev = 0u32;
    for i in 0..256 {
        let f = read_u32(bytes, HEADER_LEN + i * 4);
        if f < prev {
            return Err("fan-out table is not monotonic".into());
        }
        prev = f;
    }
    if prev as usize != count {
        return Err("fan-out table does not match the record count".into());
    }
    Ok(())
}

pub(super) fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The first 8 bytes of an id as a number, ordered as the bytes are (0 for
/// an id too short, which then compares by its bytes alone).
pub(super) fn prefix(id: &[u8]) -> u64 {
    id.first_chunk::<8>().map_or(0, |b| u64::from_be_bytes(*b))
}

pub(super) fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The tables in `dir` that `is_table` accepts, sorted by name; none when
/// the directory does not exist yet.
pub(super) fn list(
    dir: &Path,
    is_table: fn(&Path) -> bool,
) -> Result<Vec<PathBuf>, super::StoreError> {
    let read = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(super::StoreError::Dir {
                path: dir.to_owned(),
                source: e,
            });
        }
    };
    // Regular files only: a directory or a FIFO of a table's name is not
    // the store's.
    let mut paths: Vec<PathBuf> = read
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| is_table(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// The kind in a fingerprint table's name (`fp-<8 hex>-<8 hex>.table`).
pub(super) const KIND: &str = "fp";

pub(super) fn is_table_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| super::files::is_table_name_of(n, KIND))
}

pub(super) use super::files::{clean_stale_temporaries, temporary_in, write_checksummed};

/// Write sorted, deduplicated entries as a table; returns its final path.
/// The name is derived from the content, so two processes writing the same
/// entries produce the same file and the rename is harmless.
pub(super) fn write_table(
    dir: &Path,
    hash_len: usize,
    entries: &[(ObjectId, Sketch)],
) -> io::Result<PathBuf> {
    // Deleted if anything below fails; renamed into place at the end.
    let mut tmp = temporary_in(dir)?;
    let crc = write_checksummed(tmp.as_file_mut(), |w| {
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&TABLE_FORMAT.to_le_bytes());
        header[12..16].copy_from_slice(&FINGERPRINT_VERSION.to_le_bytes());
        header[16..20].copy_from_slice(&(hash_len as u32).to_le_bytes());
        header[20..28].copy_from_slice(&(entries.len() as u64).to_le_bytes());
        w.write_all(&header)?;
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
            w.write_all(&f.to_le_bytes())?;
        }
        for (id, _) in entries {
            w.write_all(id.as_slice())?;
        }
        for (id, e) in entries {
            let body = encode(e);
            w.write_all(&body)?;
            w.write_all(&record_crc(id.as_slice(), &body).to_le_bytes())?;
        }
        Ok(())
    })?;
    tmp.as_file().sync_all()?;
    let name = format!("{KIND}-{crc:08x}-{:08x}.table", entries.len());
    let path = dir.join(name);
    tmp.persist(&path).map_err(|e| e.error)?;
    // The rename is durable once the directory is.
    crate::fsutil::sync_dir(dir)?;
    Ok(path)
}

/// The size of a table of `count` records.
pub(super) fn table_len(hash_len: usize, count: usize) -> u64 {
    (HEADER_LEN + FANOUT_LEN) as u64 + count as u64 * (hash_len + RECORD_LEN) as u64
}

/// Read the table at `path` back, every record checked against its CRC,
/// and compare it with what was written: the check before a rewrite
/// deletes the tables it replaces.
pub(super) fn verify(
    path: &Path,
    hash_len: usize,
    entries: &[(ObjectId, Sketch)],
) -> Result<(), String> {
    let t = Table::open(path, hash_len)?.ok_or("it vanished")?;
    if t.count != entries.len() {
        return Err(format!("{} records, {} written", t.count, entries.len()));
    }
    for (i, (id, e)) in entries.iter().enumerate() {
        if t.key(i) != id.as_slice() || t.entry(i)? != *e {
            return Err(format!("record {i} differs"));
        }
    }
    Ok(())
}

/// The position of the key `cmp` finds equal in the sorted positions
/// `lo..hi`, or where it would go. Galloping from `lo` first: ids looked
/// up in order are usually close together.
pub(super) fn gallop(
    mut lo: usize,
    mut hi: usize,
    cmp: impl Fn(usize) -> std::cmp::Ordering,
) -> Result<usize, usize> {
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
