//! Loose objects read as git reads them (`object-file.c`,
//! `unpack_loose_rest`): the zlib stream must end (its Adler-32 checked)
//! exactly where the header's size says, with nothing after it, or the
//! object is corrupt, whatever bytes came out.
//!
//! gix reads loose objects too, but stops inflating once it has the size
//! the header promised: a flipped byte in the stream's last block or its
//! checksum then goes unseen, and a fingerprint of the damaged content
//! would be stored under the object's id. So every loose object git-simm
//! reads is read here, or checked here after gix read it.
//!
//! [`inflate_loose`] is a pure function over the file's bytes.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use sirocco::inflate::{Decoder, Error as InflateError};

use super::RepoError;

/// Longest loose object header git reads (`MAX_HEADER_LEN` is 32; gix
/// allows 64).
const LOOSE_HEADER_MAX: usize = 64;

/// Most bytes one byte of a deflate stream can inflate to.
const DEFLATE_MAX_RATIO: usize = 1032;

/// The inflate state [`inflate_loose`] works with, kept from object to
/// object: sirocco's decoder, which gix reads packs with, and which is
/// faster than zlib-rs, gix's decoder for loose objects (`cargo bench
/// --bench hot_paths -- "loose objects"`): a large move's new blobs and
/// the blobs `check` reads are loose. Boxed: it holds about 14 KiB inline.
pub struct LooseInflater(Box<Decoder>);

impl LooseInflater {
    /// A fresh state.
    pub fn new() -> LooseInflater {
        LooseInflater(Box::new(Decoder::new(sirocco::Format::Zlib)))
    }
}

impl Default for LooseInflater {
    fn default() -> Self {
        Self::new()
    }
}

/// What is wrong with a stream, in zlib's words where zlib has them.
fn inflate_error(e: InflateError) -> String {
    match e {
        InflateError::Truncated => "its zlib stream is cut short".into(),
        InflateError::ChecksumMismatch => "inflate: incorrect data check".into(),
        InflateError::PresetDictionary => "inflate: need dictionary".into(),
        InflateError::BadData => "inflate: invalid data".into(),
        // No room left in a buffer one byte longer than the header says.
        InflateError::BufferFull => "longer than its header says".into(),
        other => format!("inflate: {other}"),
    }
}

/// Inflate the bytes of a loose object file into `out` and return the
/// object's kind, checking what git checks: a header `<kind> <size>\0`,
/// a zlib stream that ends (checksum verified) after exactly `size` bytes
/// of content, and no bytes after the stream. The error says what is
/// wrong.
pub fn inflate_loose(
    input: &[u8],
    zlib: &mut LooseInflater,
    out: &mut Vec<u8>,
) -> Result<gix::object::Kind, String> {
    let decoder = &mut *zlib.0;
    decoder.reset();
    let mut header = [0u8; LOOSE_HEADER_MAX];
    let first = decoder
        .decompress(input, &mut header, true)
        .map_err(inflate_error)?;
    let (got, mut at, mut done) = (first.output.len(), first.consumed, first.done);
    let (kind, size, header_len) = gix::objs::decode::loose_header(&header[..got])
        .map_err(|_| "unable to unpack its header".to_owned())?;
    let size = usize::try_from(size).map_err(|_| "too large for this machine".to_owned())?;
    if got - header_len > size {
        return Err("longer than its header says".into());
    }
    // The buffer is sized (and zeroed) from the header before the stream
    // is read, so a header must not claim more than the stream can hold:
    // deflate turns at most two bits into a 258-byte match, 1032 bytes
    // out for each byte in.
    if size > input.len().saturating_mul(DEFLATE_MAX_RATIO) {
        return Err("longer than its zlib stream can hold".into());
    }
    // The decoder goes on in a buffer that starts with what it wrote
    // (its matches may reach back into the header), with one byte of
    // room past the size the header promised: the stream must end
    // instead of filling it.
    let whole = header_len + size;
    out.clear();
    out.try_reserve(whole + 1)
        .map_err(|_| format!("cannot allocate {size} bytes"))?;
    out.extend_from_slice(&header[..got]);
    out.resize(whole + 1, 0);
    let mut filled = got;
    if !done {
        let rest = decoder
            .decompress(&input[at..], out, true)
            .map_err(inflate_error)?;
        filled += rest.output.len();
        at += rest.consumed;
        done = rest.done;
    }
    if filled > whole {
        return Err("longer than its header says".into());
    }
    if !done {
        return Err("its zlib stream is cut short".into());
    }
    if filled < whole {
        return Err("shorter than its header says".into());
    }
    if at != input.len() {
        return Err("garbage at its end".into());
    }
    // The header leaves the buffer: one move of the content, small
    // beside inflating it.
    out.truncate(whole);
    out.drain(..header_len);
    Ok(kind)
}

/// A reader's way to loose objects: its own buffers and zlib state, kept
/// for many reads.
///
/// Why not gix's loose store: besides the check above, it maps every file
/// (`mmap`, then `munmap`, which on a multi-threaded process is a TLB
/// shootdown of every other core), checks the file's existence with
/// `stat` first, and builds a new inflate state (tens of KiB, freed
/// again) per object. Right after a large move is committed thousands of
/// blobs are loose; read here they cost one `open`, `read` and `close`
/// each.
pub(super) struct Loose {
    /// The objects directory and those of its alternates, searched in
    /// that order as git does.
    dirs: Vec<PathBuf>,
    /// The compressed file, read whole; its length is its capacity, so
    /// reads never zero it again.
    compressed: Vec<u8>,
    zlib: LooseInflater,
}

impl Loose {
    pub(super) fn new(dirs: Vec<PathBuf>) -> Loose {
        Loose {
            dirs,
            compressed: Vec::new(),
            zlib: LooseInflater::new(),
        }
    }

    /// Read the loose object `id` into `out` and return its kind; `None`
    /// when there is no such file (a packed object, or a missing one).
    ///
    /// # Errors
    ///
    /// [`RepoError::CorruptLoose`] naming the object and its file when the
    /// file cannot be read or fails a check.
    pub(super) fn read(
        &mut self,
        id: &gix::oid,
        out: &mut Vec<u8>,
    ) -> Result<Option<gix::object::Kind>, RepoError> {
        use std::io::Read;
        let hex = id.to_hex().to_string();
        let mut found = None;
        for dir in &self.dirs {
            let path = dir.join(&hex[..2]).join(&hex[2..]);
            match std::fs::File::open(&path) {
                Ok(f) => {
                    found = Some((f, path));
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(corrupt(id, &path, e.to_string())),
            }
        }
        let Some((mut file, path)) = found else {
            return Ok(None);
        };
        let mut filled = 0;
        loop {
            if filled == self.compressed.len() {
                let grown = (self.compressed.len() * 2).max(64 * 1024);
                self.compressed.resize(grown, 0);
            }
            match file.read(&mut self.compressed[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(corrupt(id, &path, e.to_string())),
            }
        }
        inflate_loose(&self.compressed[..filled], &mut self.zlib, out)
            .map(Some)
            .map_err(|why| corrupt(id, &path, why))
    }
}

fn corrupt(id: &gix::oid, path: &Path, reason: String) -> RepoError {
    RepoError::CorruptLoose {
        id: ObjectId::from(id),
        path: path.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deflate(data: &[u8]) -> Vec<u8> {
        deflate_at(gix::zlib::Compression::DEFAULT, data)
    }

    fn deflate_at(level: gix::zlib::Compression, data: &[u8]) -> Vec<u8> {
        use gix::zlib::stream::deflate::Compress;
        let mut out = Vec::new();
        let mut z = Compress::new(level);
        crate::pack::write::deflate_into(&mut z, data, &mut out).expect("deflate");
        out
    }

    fn object(body: &[u8]) -> Vec<u8> {
        let mut raw = format!("blob {}\0", body.len()).into_bytes();
        raw.extend_from_slice(body);
        raw
    }

    fn inflate(input: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        inflate_loose(input, &mut LooseInflater::new(), &mut out).map(|kind| {
            assert_eq!(kind, gix::object::Kind::Blob);
            out
        })
    }

    #[test]
    fn whole_objects_come_back() {
        for body in [&b""[..], b"x", &b"line of text\n".repeat(5000)] {
            assert_eq!(inflate(&deflate(&object(body))).as_deref(), Ok(body));
        }
    }

    /// Objects whose content ends near the first 64 bytes the header is
    /// read from, content that repeats the header (matches reaching back
    /// into it), at every level git may write (`core.looseCompression`
    /// 0, stored blocks, to 9), come back whole.
    #[test]
    fn objects_around_the_header_read_come_back_at_every_level() {
        let text = crate::testing::real_text().concat();
        for level in [0, 1, 6, 9] {
            let level = gix::zlib::Compression::new(level).expect("a level");
            for len in (0..140).chain([4095, 65536, 200_000]) {
                let body = &text[..len.min(text.len())];
                assert_eq!(
                    inflate(&deflate_at(level, &object(body))).as_deref(),
                    Ok(body),
                    "{len} bytes at {level:?}"
                );
            }
            let echo = object(b"blob 12\0").repeat(20);
            assert_eq!(
                inflate(&deflate_at(level, &object(&echo))).as_deref(),
                Ok(&echo[..])
            );
        }
    }

    /// Every single flipped byte is caught, in the stream, its last block
    /// and its checksum alike; so are a cut stream, trailing bytes and a
    /// header that lies about the size.
    #[test]
    fn every_damage_is_refused() {
        let body = b"some text that compresses, some text that compresses\n".repeat(200);
        let file = deflate(&object(&body));
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x01;
            assert!(
                inflate(&bad).is_err_and(|e| !e.is_empty()),
                "byte {i} flipped"
            );
        }
        assert!(inflate(&file[..file.len() - 1]).is_err());
        let mut longer = file.clone();
        longer.push(0);
        assert_eq!(inflate(&longer), Err("garbage at its end".into()));
        let mut raw = object(&body);
        raw[5] = b'9';
        assert!(inflate(&deflate(&raw)).is_err());
        let lying = format!("blob {}\0", body.len() + 1).into_bytes();
        let mut raw = lying;
        raw.extend_from_slice(&body);
        raw.pop();
        raw.pop();
        assert!(inflate(&deflate(&raw)).is_err());
    }

    /// A header may not make the reader set aside more memory than the
    /// stream could ever fill, while content deflate packs as tightly as
    /// it can still reads back.
    #[test]
    fn a_header_claiming_more_than_the_stream_can_hold_is_refused() {
        let mut raw = format!("blob {}\0", 1u64 << 30).into_bytes();
        raw.extend_from_slice(b"short body\n");
        assert_eq!(
            inflate(&deflate(&raw)),
            Err("longer than its zlib stream can hold".into())
        );
        let zeros = vec![0u8; 16 << 20];
        assert_eq!(
            inflate(&deflate(&object(&zeros))).map(|v| v.len()),
            Ok(zeros.len())
        );
        let best = deflate_at(gix::zlib::Compression::BEST, &object(&zeros));
        assert_eq!(inflate(&best).map(|v| v.len()), Ok(zeros.len()));
    }

    /// What git would read from a loose object file, by zlib-rs (gix's
    /// own decoder for loose objects): the content when the whole file is
    /// one zlib stream that ends with its checksum at the file's end and
    /// inflates to a header and exactly the content it announces.
    fn read_by_zlib_rs(file: &[u8]) -> Option<Vec<u8>> {
        use gix::zlib::{Decompress, FlushDecompress, Status};
        let mut raw = vec![0u8; 4 << 20];
        let mut zlib = Decompress::new();
        let status = zlib
            .decompress(file, &mut raw, FlushDecompress::Finish)
            .ok()?;
        let (used, made) = (zlib.total_in() as usize, zlib.total_out() as usize);
        if status != Status::StreamEnd || used != file.len() || made == raw.len() {
            return None;
        }
        let (_, size, header) = gix::objs::decode::loose_header(&raw[..made.min(64)]).ok()?;
        (made - header == usize::try_from(size).ok()?).then(|| raw[header..made].to_vec())
    }

    /// Random damage of real objects at every level (flipped, cut,
    /// inserted and repeated bytes; a fixed seed): refused exactly when
    /// zlib-rs finds the file is not a whole object, and read back as
    /// zlib-rs reads it otherwise (damage can leave a valid stream, as a
    /// flip in a stored block's unused bits does).
    #[test]
    fn random_damage_is_judged_as_zlib_rs_judges_it() {
        let text = crate::testing::real_text().concat();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut zlib = LooseInflater::new();
        let mut out = Vec::new();
        let (mut refused, mut read) = (0, 0);
        for round in 0..3000 {
            let len = (next() % 3000) as usize;
            let start = (next() as usize) % (text.len() - len);
            let body = &text[start..start + len];
            let level = gix::zlib::Compression::new(round % 10).expect("a level");
            let mut file = deflate_at(level, &object(body));
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % file.len();
                match next() % 4 {
                    0 => file[at] ^= 1 << (next() % 8),
                    1 => file.truncate(at),
                    2 => file.insert(at, next() as u8),
                    _ => {
                        let piece: Vec<u8> = file[at..].iter().take(8).copied().collect();
                        file.splice(at..at, piece);
                    }
                }
                if file.is_empty() {
                    break;
                }
            }
            let ours = inflate_loose(&file, &mut zlib, &mut out).map(|_| out.clone());
            match (ours, read_by_zlib_rs(&file)) {
                (Ok(ours), Some(theirs)) => {
                    assert_eq!(ours, theirs, "round {round}");
                    read += 1;
                }
                (Err(why), None) => {
                    assert!(!why.is_empty());
                    refused += 1;
                }
                (ours, theirs) => panic!(
                    "round {round}: git-simm {:?}, zlib-rs {:?}",
                    ours.map(|o| o.len()),
                    theirs.map(|t| t.len())
                ),
            }
        }
        assert!(refused > 2000 && read > 0, "{refused} refused, {read} read");
    }

    /// The `loose_inflate` fuzz target's finding: 521 bytes whose header
    /// claims 22 GB had the reader ask for 22 GB.
    #[test]
    fn the_fuzzers_22_gb_header_is_refused_without_allocating() {
        let hex = concat!(
            "7801ed584d6fe33610edd9bf62a06c6a3971bc7612a0db34e9a5a745d1f6d06336016889b288c8a4",
            "4b511b6717fdef7d435292edd89bb4050ab4a8b1eb0f92339c8f376f469957664ee7e7e7e7e7e7e7",
            "9797dfcebe3a3ba337eff32b72b2c6bfb7a5141f9f265523c61fe9cd009bbf4a493f98d593558bd2",
            "d1cfc6a94c92d254a84a12ce4dcac160016da2a2ebcce8da7d4f27834165322c148dce9c32da2baf",
            "9d557a41e96840b4c25797269995c2f1a2a0b8eb8ca1cae845c2a772833722222222222222222222",
            "22222222222222222222222222222222222222030000c02222222222222222222222222222222222",
            "2278012dc7310e80200c0040e7bec20fa8638af00078c724626f6c62e7bec20fa8638af00078ffff",
            "ffffffffffff78c722222222c2fbffffff6fd625e8869275b22352bb312deb05d6573850a5dd6dfe",
            "0a967c2cd948671bd9eae255d624683221f1d27f7f198bf8d3ff8bfc2722160a00b017f036298c5d",
            "0a2031c2ef51b9928e739a3fa11692311d891103915f52e7fe1b3ec392a86b695daa8d037849c46d",
            "a2b455ad749e029f636ab557522fa0df7c94b6a8cc638555fefc7206541e19f95f9901150a772bde",
            "bb11e42eb737da1b33f7feb0b2e4feb8e2b1cecfc5448301ff8d83fff611d080192bf0563f1e87a5",
            "6e0c0b3fc36013bec762e04ebcb5e039756b0577e0777b3e5fe3c7c0db4ec92f3f26833f0000e5f0",
            "42",
        );
        let file: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        assert_eq!(file.len(), 521);
        assert_eq!(
            inflate(&file),
            Err("longer than its zlib stream can hold".into())
        );
    }
}
