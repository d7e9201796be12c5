//! The file of a record table (the layout in [`super`]'s documentation):
//! validated and read when opened, written from sorted records, and read
//! back to check what was written.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::super::table::{
    FANOUT_LEN, HEADER_LEN, check_fanout, prefix, read_u32, read_u64, temporary_in,
    write_checksummed,
};
use super::Kind;

/// Layout version of a record table.
pub(super) const FORMAT: u32 = 1;
/// offset (8) + length (4) + crc (4)
pub(super) const INDEX_LEN: usize = 16;

pub(super) enum Bytes {
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

pub(super) struct RecordTable {
    pub(super) path: Option<PathBuf>,
    pub(super) bytes: Bytes,
    hash_len: usize,
    pub(super) count: usize,
    data_start: usize,
    /// Found damaged: skipped from then on (kept in place, so that the
    /// [`super::Loc`]s of other tables stay valid).
    pub(super) dead: bool,
}

impl RecordTable {
    /// Validate a table's header, fan-out and extent; `Ok(None)` for a
    /// table of another format, version or hash.
    pub(super) fn new(
        kind: &Kind,
        path: Option<PathBuf>,
        bytes: Bytes,
        hash_len: usize,
    ) -> Result<Option<Self>, String> {
        if bytes.len() < HEADER_LEN + FANOUT_LEN || &bytes[..8] != kind.magic {
            return Err(format!("not a {} table (bad header)", kind.what));
        }
        if read_u32(&bytes, 8) != FORMAT
            || read_u32(&bytes, 12) != kind.version
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
        check_fanout(&bytes, count)?;
        let t = RecordTable {
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

    pub(super) fn open(kind: &Kind, path: &Path, hash_len: usize) -> Result<Option<Self>, String> {
        let Some(file) = super::super::files::open_table(path)? else {
            return Ok(None);
        };
        // SAFETY: as for fingerprint tables: never written after the
        // rename that publishes them, only ever deleted.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        Self::new(kind, Some(path.to_owned()), Bytes::Map(map), hash_len)
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = HEADER_LEN + FANOUT_LEN + i * self.hash_len;
        &self.bytes[start..start + self.hash_len]
    }

    pub(super) fn index(&self, i: usize) -> (u64, u32, u32) {
        let at = HEADER_LEN + FANOUT_LEN + self.count * self.hash_len + i * INDEX_LEN;
        (
            read_u64(&self.bytes, at),
            read_u32(&self.bytes, at + 8),
            read_u32(&self.bytes, at + 12),
        )
    }

    /// Where `id` is, or `Err` with the first larger key; `from` is a
    /// position with no larger key before it (ids looked up in order).
    pub(super) fn find_from(&self, from: usize, id: &[u8]) -> Result<usize, usize> {
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
        super::super::table::gallop(lo, hi, cmp)
    }

    /// The record at `i`, checked: in bounds and matching its CRC.
    pub(super) fn checked(&self, i: usize) -> Result<(u64, u32), String> {
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

/// Read a written table back, every record checked against its CRC, and
/// compare it with what was written.
pub(super) fn verify(
    kind: &Kind,
    path: &Path,
    hash_len: usize,
    records: &[Record],
) -> Result<(), String> {
    let t = RecordTable::open(kind, path, hash_len)?.ok_or("it vanished")?;
    if t.count != records.len() {
        return Err(format!("{} records, {} written", t.count, records.len()));
    }
    for (i, (id, rec, _)) in records.iter().enumerate() {
        let (start, len) = t.checked(i)?;
        let start = start as usize;
        if t.key(i) != *id || t.bytes.get(start..start + len as usize) != Some(*rec) {
            return Err(format!("record {i} differs"));
        }
    }
    Ok(())
}

/// A record as a table is written from it: the id, the bytes, and their
/// CRC ([`super::super::table::record_crc`]).
pub(super) type Record<'a> = (&'a [u8], &'a [u8], u32);

/// Write sorted, distinct records as a table in `dir`; the name comes
/// from the content, as fingerprint tables' do.
pub(super) fn write_table(
    kind: &Kind,
    dir: &Path,
    hash_len: usize,
    records: &[Record],
) -> io::Result<PathBuf> {
    let mut tmp = temporary_in(dir)?;
    let crc = write_checksummed(tmp.as_file_mut(), |w| {
        write_records(kind, w, hash_len, records)
    })?;
    tmp.as_file().sync_all()?;
    let path = dir.join(format!(
        "{}{crc:08x}-{:08x}.table",
        kind.prefix,
        records.len()
    ));
    tmp.persist(&path).map_err(|e| e.error)?;
    // The rename is durable only once the directory is.
    crate::fsutil::sync_dir(dir)?;
    Ok(path)
}

pub(super) fn write_records(
    kind: &Kind,
    w: &mut (impl Write + ?Sized),
    hash_len: usize,
    records: &[Record],
) -> io::Result<()> {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(kind.magic);
    header[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    header[12..16].copy_from_slice(&kind.version.to_le_bytes());
    header[16..20].copy_from_slice(&(hash_len as u32).to_le_bytes());
    header[20..28].copy_from_slice(&(records.len() as u64).to_le_bytes());
    w.write_all(&header)?;
    let mut fanout = [0u32; 256];
    for (id, ..) in records {
        fanout[id[0] as usize] += 1;
    }
    let mut running = 0u32;
    for f in fanout {
        running += f;
        w.write_all(&running.to_le_bytes())?;
    }
    for (id, ..) in records {
        w.write_all(id)?;
    }
    let mut offset = 0u64;
    for (_, rec, crc) in records {
        let len = u32::try_from(rec.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "record over 4 GiB"))?;
        w.write_all(&offset.to_le_bytes())?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&crc.to_le_bytes())?;
        offset += u64::from(len);
    }
    for (_, rec, _) in records {
        w.write_all(rec)?;
    }
    Ok(())
}
