//! Writing version-2 pack files.
//!
//! A pack (git's `gitformat-pack(5)`) is `PACK`, the version 2 and the object
//! count (each 4 bytes, network order), the entries, and a trailer: the hash
//! of everything before it. An entry is a header (the type in 3 bits and the
//! size, 4 bits in the first byte and 7 in each further one, little-endian,
//! the high bit saying another byte follows), for an OFS_DELTA the distance
//! back to its base's entry, for a REF_DELTA the base's object id, and then the
//! zlib stream of the object's content or of the delta. A delta entry's size
//! is that of the delta, not of the object it makes.
//!
//! [`PackWriter`] streams entries to any [`Write`]; it does not write an
//! `.idx`. It returns what an index needs besides the object ids (each
//! entry's offset and CRC-32), and `git index-pack` makes one from the pack
//! alone.

use std::io::Write;

use gix::hash::{Kind as HashKind, ObjectId};
use gix::objs::Kind as ObjectKind;
use gix::zlib::stream::deflate::{Compress, FlushCompress};
use gix::zlib::{Compression, Status};

/// The type numbers of a pack entry header.
const OBJ_COMMIT: u8 = 1;
const OBJ_TREE: u8 = 2;
const OBJ_BLOB: u8 = 3;
const OBJ_TAG: u8 = 4;
const OBJ_OFS_DELTA: u8 = 6;
const OBJ_REF_DELTA: u8 = 7;

/// How much compressed output one call to the compressor may produce.
const DEFLATE_CHUNK: usize = 64 * 1024;

/// One entry to write.
#[derive(Debug, Clone, Copy)]
pub enum Entry<'a> {
    /// A whole object: its kind and its raw content (without git's loose
    /// object header).
    Full {
        /// Commit, tree, blob or tag.
        kind: ObjectKind,
        /// The content the object id is computed over, after the header.
        data: &'a [u8],
    },
    /// A delta against an entry written earlier in this pack, as an
    /// OFS_DELTA: the base is referred to by its position, which costs a few
    /// bytes instead of an object id.
    Delta {
        /// The index (in write order) of the base's entry.
        base: usize,
        /// The delta, in git's format ([`crate::pack::delta`]).
        delta: &'a [u8],
    },
    /// A delta against an object named by its id, as a REF_DELTA. git
    /// accepts a base anywhere in the same pack; a base outside it makes a
    /// thin pack, which only `git index-pack --fix-thin` completes.
    RefDelta {
        /// The base object's id, of the pack's hash kind.
        base: ObjectId,
        /// The delta, in git's format.
        delta: &'a [u8],
    },
}

/// Where an entry landed: what an `.idx` records for it besides its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The offset of the entry's header from the start of the pack.
    pub offset: u64,
    /// The CRC-32 of the entry's bytes as written (header, base reference
    /// and compressed data), as in a version-2 `.idx`.
    pub crc32: u32,
}

/// A finished pack.
#[derive(Debug)]
pub struct Pack<W> {
    /// The writer the pack went to.
    pub out: W,
    /// The trailer: the hash of the pack's bytes before it, which also names
    /// the pack (`pack-<checksum>.pack`).
    pub checksum: ObjectId,
    /// The entries in write order.
    pub entries: Vec<Written>,
    /// The pack's length in bytes, trailer included.
    pub len: u64,
}

/// Why a pack could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The underlying writer failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The pack header holds the object count in 32 bits.
    #[error("{0} objects do not fit in a pack (at most 4294967295)")]
    TooManyObjects(usize),
    /// More entries were written than the header announced, or fewer by
    /// [`PackWriter::finish`].
    #[error("the pack header announced {declared} objects, {written} were written")]
    CountMismatch {
        /// The count in the header.
        declared: u32,
        /// The entries written (when too many, as far as the extra one).
        written: u64,
    },
    /// An OFS_DELTA must refer back to an entry already in the pack.
    #[error("entry {entry} is a delta against entry {base}, which is not written before it")]
    BaseNotWritten {
        /// The index of the delta's entry.
        entry: usize,
        /// The base index it gave.
        base: usize,
    },
    /// A REF_DELTA base id of another hash kind than the pack's.
    #[error("entry {entry} names a {found} base in a {expected} pack")]
    HashKindMismatch {
        /// The index of the delta's entry.
        entry: usize,
        /// The pack's hash kind.
        expected: HashKind,
        /// The kind of the id given.
        found: HashKind,
    },
    /// zlib failed, or a hash refused its input (SHA-1 collision detection).
    #[error("{0}")]
    Backend(String),
}

/// Streams a version-2 pack to a writer, entry by entry.
///
/// The object count goes in the header, before any entry, so it is given up
/// front and [`finish`](Self::finish) checks it. Each entry is assembled in
/// a buffer and written with one `write_all`, so an unbuffered file is fine.
pub struct PackWriter<W> {
    out: W,
    hasher: gix::hash::Hasher,
    kind: HashKind,
    zlib: Compress,
    declared: u32,
    entries: Vec<Written>,
    offset: u64,
    buf: Vec<u8>,
}

impl<W: Write> PackWriter<W> {
    /// Writes the pack header for `count` objects, hashed with `hash`, with
    /// zlib at `level` (git's default for packs is
    /// [`Compression::DEFAULT`], level 6 unless `pack.compression` says
    /// otherwise).
    ///
    /// # Errors
    ///
    /// [`WriteError::TooManyObjects`], or the writer's error.
    pub fn new(
        out: W,
        count: usize,
        hash: HashKind,
        level: Compression,
    ) -> Result<Self, WriteError> {
        let declared = u32::try_from(count).map_err(|_| WriteError::TooManyObjects(count))?;
        let mut w = PackWriter {
            out,
            hasher: gix::hash::hasher(hash),
            kind: hash,
            zlib: Compress::new(level),
            declared,
            entries: Vec::with_capacity(count.min(1 << 20)),
            offset: 0,
            buf: Vec::new(),
        };
        w.buf.extend_from_slice(b"PACK");
        w.buf.extend_from_slice(&2u32.to_be_bytes());
        w.buf.extend_from_slice(&declared.to_be_bytes());
        w.flush_buf()?;
        Ok(w)
    }

    /// Writes one entry and returns its index, which later
    /// [`Entry::Delta`]s use as their base.
    ///
    /// # Errors
    ///
    /// See [`WriteError`]. After an error the pack is incomplete.
    pub fn add(&mut self, entry: &Entry<'_>) -> Result<usize, WriteError> {
        let (head, data) = match *entry {
            Entry::Full { kind, data } => (EntryHead::Full(kind), data),
            Entry::Delta { base, delta } => (EntryHead::Ofs(base), delta),
            Entry::RefDelta { base, delta } => (EntryHead::Ref(base), delta),
        };
        let (index, offset) = self.start_entry(head, data.len() as u64)?;
        self.deflate(data)?;
        self.end_entry(offset)?;
        Ok(index)
    }

    /// Starts an entry in the buffer: checks the count, writes the header
    /// (and the base reference of a delta). Returns the entry's index and
    /// offset.
    fn start_entry(&mut self, head: EntryHead, size: u64) -> Result<(usize, u64), WriteError> {
        self.buf.clear();
        let index = self.entries.len();
        if index as u64 >= u64::from(self.declared) {
            return Err(WriteError::CountMismatch {
                declared: self.declared,
                written: index as u64 + 1,
            });
        }
        let offset = self.offset;
        match head {
            EntryHead::Full(kind) => push_header(&mut self.buf, type_code(kind), size),
            EntryHead::Ofs(base) => {
                let Some(base_entry) = self.entries.get(base) else {
                    return Err(WriteError::BaseNotWritten { entry: index, base });
                };
                let distance = offset - base_entry.offset;
                push_header(&mut self.buf, OBJ_OFS_DELTA, size);
                push_ofs_distance(&mut self.buf, distance);
            }
            EntryHead::Ref(base) => {
                if base.kind() != self.kind {
                    return Err(WriteError::HashKindMismatch {
                        entry: index,
                        expected: self.kind,
                        found: base.kind(),
                    });
                }
                push_header(&mut self.buf, OBJ_REF_DELTA, size);
                self.buf.extend_from_slice(base.as_bytes());
            }
        }
        Ok((index, offset))
    }

    /// Ends the entry started at `offset`: records its CRC-32 and writes it.
    fn end_entry(&mut self, offset: u64) -> Result<(), WriteError> {
        let crc32 = crc32fast::hash(&self.buf);
        self.flush_buf()?;
        self.entries.push(Written { offset, crc32 });
        Ok(())
    }

    /// Writes the trailer and hands back the writer, the checksum and where
    /// every entry is.
    ///
    /// # Errors
    ///
    /// [`WriteError::CountMismatch`] when fewer entries were written than
    /// announced, or the writer's error.
    pub fn finish(mut self) -> Result<Pack<W>, WriteError> {
        if self.entries.len() as u64 != u64::from(self.declared) {
            return Err(WriteError::CountMismatch {
                declared: self.declared,
                written: self.entries.len() as u64,
            });
        }
        let checksum = self
            .hasher
            .try_finalize()
            .map_err(|e| WriteError::Backend(e.to_string()))?;
        self.out.write_all(checksum.as_bytes())?;
        self.out.flush()?;
        Ok(Pack {
            out: self.out,
            checksum,
            entries: self.entries,
            len: self.offset + checksum.as_bytes().len() as u64,
        })
    }

    /// Appends `data` to the buffer as one complete zlib stream.
    fn deflate(&mut self, data: &[u8]) -> Result<(), WriteError> {
        deflate_into(&mut self.zlib, data, &mut self.buf)
    }

    /// Writes one entry whose content (the object or the delta, `size`
    /// bytes before compression) was compressed already, with
    /// [`deflate_into`], so that compression can run on other threads.
    /// Returns its index, as [`add`](Self::add) does.
    ///
    /// # Errors
    ///
    /// See [`WriteError`]. After an error the pack is incomplete.
    pub fn add_deflated(
        &mut self,
        head: Head,
        size: u64,
        deflated: &[u8],
    ) -> Result<usize, WriteError> {
        let head = match head {
            Head::Full(kind) => EntryHead::Full(kind),
            Head::Delta(base) => EntryHead::Ofs(base),
        };
        let (index, offset) = self.start_entry(head, size)?;
        self.buf.extend_from_slice(deflated);
        self.end_entry(offset)?;
        Ok(index)
    }

    /// Writes and hashes the buffer, and empties it.
    fn flush_buf(&mut self) -> Result<(), WriteError> {
        self.out.write_all(&self.buf)?;
        self.hasher.update(&self.buf);
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

/// What an entry given to [`PackWriter::add_deflated`] is.
#[derive(Debug, Clone, Copy)]
pub enum Head {
    /// A whole object of this kind.
    Full(ObjectKind),
    /// An OFS_DELTA against the entry of this index, written earlier.
    Delta(usize),
}

/// An entry's header as [`PackWriter::start_entry`] writes it.
enum EntryHead {
    Full(ObjectKind),
    /// OFS_DELTA against the entry of this index.
    Ofs(usize),
    /// REF_DELTA against this object.
    Ref(ObjectId),
}

fn type_code(kind: ObjectKind) -> u8 {
    match kind {
        ObjectKind::Commit => OBJ_COMMIT,
        ObjectKind::Tree => OBJ_TREE,
        ObjectKind::Blob => OBJ_BLOB,
        ObjectKind::Tag => OBJ_TAG,
    }
}

/// Appends `data` to `buf` as one complete zlib stream, with `zlib` (reset
/// first): what [`PackWriter::add_deflated`] takes.
///
/// # Errors
///
/// [`WriteError::Backend`] when zlib fails.
pub fn deflate_into(
    zlib: &mut Compress,
    mut data: &[u8],
    buf: &mut Vec<u8>,
) -> Result<(), WriteError> {
    zlib.reset();
    loop {
        let start = buf.len();
        buf.resize(start + DEFLATE_CHUNK, 0);
        let (in_before, out_before) = (zlib.total_in(), zlib.total_out());
        let status = zlib
            .compress(data, &mut buf[start..], FlushCompress::Finish)
            .map_err(|e| WriteError::Backend(format!("zlib: {e}")))?;
        let consumed = (zlib.total_in() - in_before) as usize;
        let produced = (zlib.total_out() - out_before) as usize;
        buf.truncate(start + produced);
        data = &data[consumed..];
        match status {
            Status::StreamEnd => return Ok(()),
            // Finish with output room always progresses; a call that
            // does not would loop forever.
            Status::Ok | Status::BufError if consumed > 0 || produced > 0 => {}
            Status::Ok | Status::BufError => {
                return Err(WriteError::Backend("zlib made no progress".into()));
            }
        }
    }
}

/// Writes a whole pack of `entries` to `out`.
///
/// # Errors
///
/// See [`WriteError`].
pub fn write_pack<W: Write>(
    out: W,
    entries: &[Entry<'_>],
    hash: HashKind,
    level: Compression,
) -> Result<Pack<W>, WriteError> {
    let mut w = PackWriter::new(out, entries.len(), hash, level)?;
    for entry in entries {
        w.add(entry)?;
    }
    w.finish()
}

/// An entry header: the type and the size, 4 bits then 7 per byte.
fn push_header(buf: &mut Vec<u8>, code: u8, mut size: u64) {
    let mut byte = (code << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size != 0 {
        buf.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    buf.push(byte);
}

/// An OFS_DELTA's distance back to its base: big-endian base-128 where each
/// continuation also adds one, so no number has two encodings and none wastes
/// a byte.
fn push_ofs_distance(buf: &mut Vec<u8>, mut distance: u64) {
    let mut bytes = [0u8; 10];
    let mut at = bytes.len() - 1;
    bytes[at] = (distance & 0x7f) as u8;
    distance >>= 7;
    while distance != 0 {
        distance -= 1;
        at -= 1;
        bytes[at] = 0x80 | (distance & 0x7f) as u8;
        distance >>= 7;
    }
    buf.extend_from_slice(&bytes[at..]);
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
