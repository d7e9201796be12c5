//! Reading back a pack git-simm wrote, before anything relies on it.
//!
//! `git index-pack` would rebuild every object (inflate, apply each delta
//! chain, hash) to find the ids the index lists. git-simm knows the ids
//! already, so the index is written from them ([`crate::pack::idx`]) and
//! what remains to prove is that the file on disk holds what was meant,
//! which is much cheaper:
//!
//! - every delta was applied to its base in memory when it was chosen and
//!   reproduced the object's content exactly (`pack::bases`);
//! - here, every entry is read back from the file: its header (kind, size,
//!   and for a delta the distance to its base's entry) is the one meant, its
//!   zlib stream ends exactly where the next entry starts and inflates to
//!   the size in the header, and the CRC-32 of the inflated bytes is the one
//!   taken of the content or delta before it was compressed;
//! - [`crate::pack::verify::verify_pack`] then checks both files' checksums,
//!   that the index lists exactly the objects of the old packs, and that
//!   every object rebuilt from the new pack hashes to its id: a copy read
//!   from the old packs or loose files whose content was not its id's
//!   stops the repack before anything is installed.

use std::path::Path;

use gix::objs::Kind as ObjectKind;
use gix::zlib::{Decompress, FlushDecompress, Status};
use rayon::prelude::*;

use super::write::Written;
use crate::progress::{Feedback, Interrupted};
use crate::repo::RepoError;

/// What one entry was meant to hold.
#[derive(Debug, Clone, Copy)]
pub struct Meant {
    /// Whole object of a kind, or delta against an earlier entry.
    pub head: MeantHead,
    /// Size before compression (of the object, or of the delta).
    pub size: u64,
    /// CRC-32 of the bytes before compression.
    pub crc32: u32,
}

/// The kind part of [`Meant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeantHead {
    /// The whole object.
    Full(ObjectKind),
    /// An OFS_DELTA against the entry of this index.
    Delta(usize),
}

/// Entries per unit of parallel work: a range of the file read at once.
const ENTRIES_PER_READ: usize = 512;

/// Check the pack at `path` (`len` bytes, trailer included) entry by entry
/// against `written` (where the writer put each entry) and `meant` (what
/// each should hold), on all threads of the pool.
///
/// # Errors
///
/// [`RepoError::PackVerification`] naming the first entry that differs,
/// [`RepoError::Interrupted`] when `feedback`'s flag is raised.
pub fn check_written(
    path: &Path,
    len: u64,
    trailer: usize,
    written: &[Written],
    meant: &[Meant],
    feedback: &Feedback,
) -> Result<(), RepoError> {
    let fail = |reason: String| RepoError::PackVerification {
        path: path.to_owned(),
        reason,
    };
    if written.len() != meant.len() {
        return Err(fail(format!(
            "{} entries written, {} meant",
            written.len(),
            meant.len()
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
    let body_end = len
        .checked_sub(trailer as u64)
        .ok_or_else(|| fail("shorter than its trailer".into()))?;
    let starts: Vec<usize> = (0..written.len()).step_by(ENTRIES_PER_READ).collect();
    starts.par_iter().try_for_each_init(
        || (Decompress::new(), Vec::new(), Vec::new()),
        |(zlib, raw, out), &first| {
            if feedback.is_interrupted() {
                return Err(RepoError::Interrupted(Interrupted));
            }
            let last = (first + ENTRIES_PER_READ).min(written.len());
            let from = written[first].offset;
            let to = written.get(last).map_or(body_end, |w| w.offset);
            let n = to
                .checked_sub(from)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| fail(format!("entry {first} is out of order")))?;
            raw.resize(n, 0);
            read_at(&file, raw, from).map_err(|e| fail(format!("cannot read: {e}")))?;
            for i in first..last {
                let start = (written[i].offset - from) as usize;
                let end = written.get(i + 1).map_or(body_end, |w| w.offset) - from;
                let entry = raw
                    .get(start..end as usize)
                    .ok_or_else(|| fail(format!("entry {i} is out of order")))?;
                check_entry(entry, i, written, &meant[i], zlib, out).map_err(|why| {
                    fail(format!("entry {i} at offset {}: {why}", written[i].offset))
                })?;
            }
            Ok(())
        },
    )
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// One entry's bytes (header to the next entry) against what was meant.
fn check_entry(
    entry: &[u8],
    i: usize,
    written: &[Written],
    meant: &Meant,
    zlib: &mut Decompress,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if crc32fast::hash(entry) != written[i].crc32 {
        return Err("CRC-32 of the entry differs from the one written".into());
    }
    let mut at = 0;
    let (code, size) = read_header(entry, &mut at).ok_or("truncated header")?;
    let head = match code {
        1 => MeantHead::Full(ObjectKind::Commit),
        2 => MeantHead::Full(ObjectKind::Tree),
        3 => MeantHead::Full(ObjectKind::Blob),
        4 => MeantHead::Full(ObjectKind::Tag),
        6 => {
            let distance = read_ofs_distance(entry, &mut at).ok_or("truncated base distance")?;
            let base_offset = written[i]
                .offset
                .checked_sub(distance)
                .ok_or("base distance points before the pack")?;
            let base = written[..i]
                .binary_search_by_key(&base_offset, |w| w.offset)
                .map_err(|_| "base distance points inside an entry")?;
            MeantHead::Delta(base)
        }
        other => return Err(format!("unexpected entry type {other}")),
    };
    if head != meant.head || size != meant.size {
        return Err(format!(
            "holds {head:?} of {size} bytes, meant {:?} of {} bytes",
            meant.head, meant.size
        ));
    }
    let size = usize::try_from(size).map_err(|_| "size too large")?;
    // One byte more than the header says, so a longer stream shows.
    out.clear();
    out.resize(size + 1, 0);
    zlib.reset();
    let status = zlib
        .decompress(&entry[at..], out, FlushDecompress::Finish)
        .map_err(|e| format!("zlib: {e}"))?;
    if status != Status::StreamEnd {
        return Err("zlib stream does not end where the header says".into());
    }
    if zlib.total_out() != size as u64 {
        return Err(format!(
            "inflates to {} bytes, not {size}",
            zlib.total_out()
        ));
    }
    if zlib.total_in() as usize != entry.len() - at {
        return Err("bytes left between its zlib stream and the next entry".into());
    }
    if crc32fast::hash(&out[..size]) != meant.crc32 {
        return Err("inflates to other bytes than were compressed".into());
    }
    Ok(())
}

/// An entry header: the type code and the size.
fn read_header(b: &[u8], at: &mut usize) -> Option<(u8, u64)> {
    let mut byte = *b.get(*at)?;
    *at += 1;
    let code = (byte >> 4) & 7;
    let mut size = u64::from(byte & 0x0f);
    let mut shift = 4;
    while byte & 0x80 != 0 {
        byte = *b.get(*at)?;
        *at += 1;
        if shift > 63 {
            return None;
        }
        size |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    Some((code, size))
}

/// An OFS_DELTA's distance back to its base.
fn read_ofs_distance(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut byte = *b.get(*at)?;
    *at += 1;
    let mut d = u64::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *b.get(*at)?;
        *at += 1;
        d = d.checked_add(1)?.checked_mul(128)? | u64::from(byte & 0x7f);
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::write::{Entry, write_pack};
    use gix::hash::Kind as HashKind;
    use gix::zlib::Compression;

    /// A pack of real text (whole and as deltas), what each entry meant,
    /// and where each landed.
    fn written_pack() -> (Vec<u8>, Vec<Written>, Vec<Meant>) {
        let texts = crate::testing::real_text();
        let mut contents = Vec::new();
        for t in texts.into_iter().take(60) {
            let mut edited = t.clone();
            edited.splice(
                t.len() / 2..t.len() / 2,
                b"an edit in the middle\n".iter().copied(),
            );
            contents.push(t);
            contents.push(edited);
        }
        let deltas: Vec<Vec<u8>> = contents
            .chunks(2)
            .map(|p| {
                crate::pack::delta::Index::new(&p[0])
                    .delta(&p[1], p[1].len())
                    .unwrap()
            })
            .collect();
        let mut entries = Vec::new();
        let mut meant = Vec::new();
        for (k, p) in contents.chunks(2).enumerate() {
            entries.push(Entry::Full {
                kind: ObjectKind::Blob,
                data: &p[0],
            });
            meant.push(Meant {
                head: MeantHead::Full(ObjectKind::Blob),
                size: p[0].len() as u64,
                crc32: crc32fast::hash(&p[0]),
            });
            entries.push(Entry::Delta {
                base: 2 * k,
                delta: &deltas[k],
            });
            meant.push(Meant {
                head: MeantHead::Delta(2 * k),
                size: deltas[k].len() as u64,
                crc32: crc32fast::hash(&deltas[k]),
            });
        }
        let pack = write_pack(Vec::new(), &entries, HashKind::Sha1, Compression::DEFAULT).unwrap();
        (pack.out, pack.entries, meant)
    }

    fn check(bytes: &[u8], written: &[Written], meant: &[Meant]) -> Result<(), RepoError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.pack");
        std::fs::write(&path, bytes).unwrap();
        check_written(
            &path,
            bytes.len() as u64,
            20,
            written,
            meant,
            &Feedback::none(),
        )
    }

    #[test]
    fn a_sound_pack_passes() {
        let (bytes, written, meant) = written_pack();
        check(&bytes, &written, &meant).unwrap();
    }

    #[test]
    fn every_kind_of_damage_is_found() {
        let (bytes, written, meant) = written_pack();
        // A flipped bit anywhere in the entries.
        let body = bytes.len() - 20;
        for at in (12..body).step_by(997) {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            let err = check(&bad, &written, &meant).unwrap_err();
            assert!(
                matches!(err, RepoError::PackVerification { .. }),
                "bit at {at}: {err}"
            );
        }
        // A delta meant against another base, a size or a content that
        // differs from what was compressed: the file is intact but not
        // what was meant.
        for (what, change) in [
            (
                "base",
                Box::new(|m: &mut Meant| m.head = MeantHead::Delta(0)) as Box<dyn Fn(&mut Meant)>,
            ),
            ("size", Box::new(|m: &mut Meant| m.size += 1)),
            ("crc", Box::new(|m: &mut Meant| m.crc32 ^= 1)),
        ] {
            let mut wrong = meant.clone();
            change(&mut wrong[5]);
            let err = check(&bytes, &written, &wrong).unwrap_err();
            assert!(err.to_string().contains("entry 5"), "{what}: {err}");
        }
        // A truncated file.
        let err = check(&bytes[..bytes.len() - 100], &written, &meant).unwrap_err();
        assert!(matches!(err, RepoError::PackVerification { .. }), "{err}");
    }
}
