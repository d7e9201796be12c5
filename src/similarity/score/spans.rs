//! The chunk histogram of one file ([`Spans`]): how git cuts a file into
//! chunks and hashes them into buckets (`diffcore-delta.c`), and whether a
//! file counts as text or binary while doing so.

use super::chunk_hash::{HASH_BASE, MAX_CHUNK, chunk, chunk_plain_scalar, finish, hash_step};
use crate::similarity::radix;

/// How far [`is_binary`] looks for a NUL byte (git's `FIRST_FEW_BYTES`).
const FIRST_FEW_BYTES: usize = 8000;

/// Per-file chunk histogram: the weight of every non-empty bucket.
///
/// Computing it is the expensive part of scoring, and one file usually takes
/// part in many candidate pairs, so it is built once per file and reused
/// (git caches the same data as `cnt_data` on the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spans {
    /// `(bucket, weight)` sorted by bucket, each bucket once, weights non-zero;
    /// sorted so that [`copied`](super::copied) is a linear merge.
    pub(super) buckets: Vec<(u32, u32)>,
    /// The full size of the file, including CRs that were not counted; git
    /// divides by this, not by the counted bytes.
    pub(super) size: u64,
    /// The sum of the weights: the bytes counted.
    pub(super) counted: u64,
    /// Whether the file was chunked as binary (CRs before LF counted).
    pub(super) binary: bool,
}

/// What a path's attributes say about text versus binary: git's tristate
/// `driver->binary` (-1, 1, 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binary {
    /// Nothing said: the content decides ([`is_binary`]).
    #[default]
    Auto,
    /// Binary whatever the content (`-diff`, `binary`, a driver with
    /// `diff.<driver>.binary=true`).
    Yes,
    /// Text whatever the content (`diff` set, a driver with
    /// `diff.<driver>.binary=false`).
    No,
}

impl Binary {
    /// Whether `data` at a path with this decision is scored as binary.
    pub fn of(self, data: &[u8]) -> bool {
        match self {
            Binary::Auto => is_binary(data),
            Binary::Yes => true,
            Binary::No => false,
        }
    }
}

impl Spans {
    /// Build the histogram of `data`, deciding text versus binary with
    /// [`is_binary`] (a path without attributes).
    pub fn new(data: &[u8]) -> Spans {
        Spans::with_binary(data, Binary::Auto)
    }

    /// Build the histogram of `data` at a path whose attributes decided
    /// `binary`.
    pub fn with_binary(data: &[u8], binary: Binary) -> Spans {
        let binary = binary.of(data);
        // One entry per chunk, packed as `bucket << 32 | length` so that a
        // plain integer sort groups chunks by bucket; merging after the sort
        // avoids a hash map on the hot path. The list is scratch space of
        // the thread, so building a histogram allocates only the histogram.
        let buckets = CHUNKS.with_borrow_mut(|(chunks, scratch)| {
            chunks.clear();
            if binary || memchr::memchr(b'\r', data).is_none() {
                chunk_plain(data, chunks);
            } else {
                chunk_crlf(data, chunks);
            }
            // Grouped by bucket is all the merge below needs: chunks of
            // one bucket add up in any order.
            radix::sort(chunks, scratch);
            // Histograms are kept for the whole detection, thousands of
            // them: sized exactly, not for the worst case.
            let distinct = chunks
                .windows(2)
                .filter(|w| w[0] >> 32 != w[1] >> 32)
                .count()
                + usize::from(!chunks.is_empty());
            let mut buckets: Vec<(u32, u32)> = Vec::with_capacity(distinct);
            for &chunk in chunks.iter() {
                let bucket = (chunk >> 32) as u32;
                let len = chunk as u32;
                match buckets.last_mut() {
                    // Wrapping like git's `unsigned int` counters; only reachable
                    // for buckets holding 4 GiB.
                    Some((b, w)) if *b == bucket => *w = w.wrapping_add(len),
                    _ => buckets.push((bucket, len)),
                }
            }
            buckets
        });
        let counted = buckets.iter().map(|&(_, w)| u64::from(w)).sum();
        Spans {
            buckets,
            size: data.len() as u64,
            counted,
            binary,
        }
    }

    /// The size in bytes of the file the histogram was built from.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the file was chunked as binary, i.e. CRs before LF were counted.
    pub fn is_binary(&self) -> bool {
        self.binary
    }

    /// The bytes the histogram counts (its weights' sum): the size, less
    /// the CRs before LF that text chunking leaves out.
    pub fn counted(&self) -> u64 {
        self.counted
    }

    /// The number of distinct non-empty buckets; a measure of the work
    /// [`copied`](super::copied) does with this file.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// The buckets that hold chunks of the file, ascending: what a
    /// document-frequency count of chunks over many files counts.
    pub fn bucket_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().map(|&(b, _)| b)
    }

    /// `(bucket, weight)` of every bucket holding chunks of the file,
    /// ascending by bucket.
    pub fn weights(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.buckets.iter().copied()
    }

    /// The histogram with the buckets in `common` (sorted ascending)
    /// taken out, and the file's size reduced by their weight: the file
    /// as scored when those chunks (boilerplate) are not evidence of
    /// similarity. [`score`](super::score()) of two such histograms is git's score of
    /// the files with every common chunk deleted from both (CRs that
    /// were not counted stay in the size, as git keeps them).
    pub fn without(&self, common: &[u32]) -> Spans {
        if common.is_empty() {
            return self.clone();
        }
        let mut removed: u64 = 0;
        let buckets = self
            .buckets
            .iter()
            .copied()
            .filter(|&(b, w)| {
                let drop = common.binary_search(&b).is_ok();
                if drop {
                    removed += u64::from(w);
                }
                !drop
            })
            .collect();
        Spans {
            buckets,
            size: self.size.saturating_sub(removed),
            counted: self.counted.saturating_sub(removed),
            binary: self.binary,
        }
    }

    /// Bytes this histogram takes in memory, for caches with a budget.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(u32, u32)>() + std::mem::size_of::<Spans>()
    }

    /// Append the histogram to `out` in the compact form the histogram
    /// store keeps ([`Spans::decode`] reads it back): the size, the
    /// text-or-binary flag, the bucket count, then each bucket as the gap
    /// from the previous one and its weight, all LEB128. Buckets of a
    /// typical source file are a few hundred bytes apart and weigh under
    /// 128, so an entry takes about 3 bytes instead of the 8 in memory.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.size);
        out.push(u8::from(self.binary));
        put_varint(out, self.buckets.len() as u64);
        let mut prev = 0u32;
        for &(b, w) in &self.buckets {
            put_varint(out, u64::from(b - prev));
            put_varint(out, u64::from(w));
            prev = b;
        }
    }

    /// The histogram [`Spans::encode`] wrote, or `None` if `bytes` is not
    /// one (cut short, trailing bytes, buckets out of order or range).
    pub fn decode(bytes: &[u8]) -> Option<Spans> {
        Spans::decode_without(bytes, &Buckets::default())
    }

    /// The whole size of the file a stored histogram ([`Spans::encode`])
    /// describes, its size without the buckets in `common` (what
    /// [`Spans::decode_without`] would give), and whether it is binary;
    /// read without building the histogram, for a pass over many.
    pub fn decode_sizes(bytes: &[u8], common: &Buckets) -> Option<(u64, u64, bool)> {
        let stored = Stored::open(bytes)?;
        let (size, binary) = (stored.size, stored.binary);
        let mut removed: u64 = 0;
        stored.for_each(|b, w| {
            if common.contains(b) {
                removed += u64::from(w);
            }
        })?;
        Some((size, size.saturating_sub(removed), binary))
    }

    /// [`Spans::decode`] and [`Spans::without`] in one pass: the stored
    /// histogram with the buckets in `common` taken out. Scoring many
    /// pairs decodes a histogram per blob; one pass and one allocation
    /// instead of two, and a bit test instead of a search per bucket.
    pub fn decode_without(bytes: &[u8], common: &Buckets) -> Option<Spans> {
        let stored = Stored::open(bytes)?;
        let (size, binary) = (stored.size, stored.binary);
        let mut buckets = Vec::with_capacity(stored.count);
        let mut removed: u64 = 0;
        let mut counted: u64 = 0;
        stored.for_each(|b, w| {
            if common.contains(b) {
                removed += u64::from(w);
            } else {
                counted += u64::from(w);
                buckets.push((b, w));
            }
        })?;
        Some(Spans {
            buckets,
            size: size.saturating_sub(removed),
            counted,
            binary,
        })
    }

    /// The buckets of a stored histogram ([`Spans::encode`]), in order,
    /// without building it; `None` if `bytes` is not one.
    pub fn decode_bucket_ids(bytes: &[u8], f: impl FnMut(u32)) -> Option<()> {
        let mut f = f;
        Stored::open(bytes)?.for_each(|b, _| f(b))
    }

    /// [`copied`](super::copied) between this histogram and a stored one
    /// ([`Spans::encode`]), read in place: one pass over the record and
    /// no histogram built, for scoring one file against many stored ones.
    /// Buckets this histogram lacks (boilerplate taken out of it) count
    /// for nothing, as [`Spans::decode_without`] would have taken them
    /// out of the other. The pass stops as soon as the copied bytes
    /// cannot reach `at_least` (what this histogram has left to match
    /// could not make up the difference): the result is exact when it is
    /// `at_least` or more, and some value below `at_least` otherwise.
    /// `None` if `bytes` is not a stored histogram.
    pub fn copied_stored(&self, bytes: &[u8], at_least: u64) -> Option<u64> {
        let mine = &self.buckets;
        let mut left: u64 = mine.iter().map(|&(_, w)| u64::from(w)).sum();
        let mut i = 0;
        let mut total = 0u64;
        Stored::open(bytes)?.for_each_while(|b, w| {
            while i < mine.len() && mine[i].0 < b {
                left -= u64::from(mine[i].1);
                i += 1;
            }
            if let Some(&(m, v)) = mine.get(i)
                && m == b
            {
                total += u64::from(v.min(w));
                left -= u64::from(v);
                i += 1;
            }
            // Nothing left to match: the total is final.
            i < mine.len() && total + left >= at_least
        })?;
        Some(total)
    }

    /// `(bucket, weight)` pairs, sorted by bucket: what containment
    /// ([`crate::similarity::containment`]) samples and merges.
    pub(crate) fn buckets(&self) -> &[(u32, u32)] {
        &self.buckets
    }
}

/// A stored histogram ([`Spans::encode`]) being read: its header, then
/// its entries, each checked as it comes (so every reader of the store
/// accepts and rejects the same records).
struct Stored<'a> {
    bytes: &'a [u8],
    at: usize,
    size: u64,
    binary: bool,
    count: usize,
}

impl<'a> Stored<'a> {
    fn open(bytes: &'a [u8]) -> Option<Stored<'a>> {
        let mut at = 0;
        let size = get_varint(bytes, &mut at)?;
        let binary = match *bytes.get(at)? {
            0 => false,
            1 => true,
            _ => return None,
        };
        at += 1;
        let count = usize::try_from(get_varint(bytes, &mut at)?).ok()?;
        // Each entry takes at least two bytes: a corrupt count cannot
        // make a reader allocate more than the record could hold.
        if count > bytes.len() / 2 {
            return None;
        }
        Some(Stored {
            bytes,
            at,
            size,
            binary,
            count,
        })
    }

    /// Every `(bucket, weight)` in order; `None` at the first entry out of
    /// order or range, or if bytes are missing or left over.
    fn for_each(self, mut f: impl FnMut(u32, u32)) -> Option<()> {
        self.for_each_while(|b, w| {
            f(b, w);
            true
        })
        .map(|_| ())
    }

    /// [`Stored::for_each`] until `f` returns false: `Some(false)` then
    /// (the rest of the record not read), `Some(true)` after every entry.
    fn for_each_while(mut self, mut f: impl FnMut(u32, u32) -> bool) -> Option<bool> {
        let mut next_min = 0u32;
        let bytes = self.bytes;
        for _ in 0..self.count {
            // Most entries are a one- or two-byte gap and a one-byte
            // weight: read four bytes at once and take them apart without
            // a branch on which (one or two gap bytes come about equally
            // often, and a mispredicted branch costs more than the
            // arithmetic); the rest varint by varint (the same values
            // either way).
            let quick = bytes.get(self.at..self.at + 4).and_then(|four| {
                let x = u32::from_le_bytes(four.try_into().ok()?);
                // 1 when the gap takes two bytes (its first has the
                // continuation bit), else 0.
                let two = (x >> 7) & 1;
                let second = (x >> 8) & 0xff;
                let weight = (x >> (8 + 8 * two)) & 0xff;
                // The gap's second byte counts only in a two-byte gap.
                let second = second & 0u32.wrapping_sub(two);
                // Either byte after the first with the continuation bit
                // means a longer varint: the slow path.
                ((weight | second) & 0x80 == 0).then_some((
                    x & 0x7f | second << 7,
                    weight,
                    2 + two as usize,
                ))
            });
            let (gap, w) = match quick {
                Some((gap, w, len)) => {
                    self.at += len;
                    (gap, w)
                }
                None => (
                    u32::try_from(get_varint(bytes, &mut self.at)?).ok()?,
                    u32::try_from(get_varint(bytes, &mut self.at)?).ok()?,
                ),
            };
            // Gaps after the first are at least 1 (buckets strictly
            // ascending); the first is the bucket itself.
            let b = next_min
                .checked_add(gap)?
                .checked_sub(u32::from(next_min > 0))?;
            if b >= HASH_BASE || w == 0 || (next_min > 0 && gap == 0) {
                return None;
            }
            if !f(b, w) {
                return Some(false);
            }
            next_min = b + 1;
        }
        (self.at == self.bytes.len()).then_some(true)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint: weights and most gaps fit one byte, the other gaps two
/// (a few hundred buckets spread over 107,927), read inline; longer ones
/// out of line, so that every reader of a histogram inlines this.
#[inline(always)]
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let first = *bytes.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    if let Some(&second) = bytes.get(*at + 1)
        && second < 0x80
    {
        *at += 2;
        return Some(u64::from(first & 0x7f) | u64::from(second) << 7);
    }
    get_long_varint(bytes, at)
}

#[inline(never)]
fn get_long_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let first = *bytes.get(*at)?;
    *at += 1;
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        // A tenth byte may only hold the top bit; more is not a u64.
        if shift == 63 && byte > 1 {
            return None;
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// A set of buckets as one bit each (13 KiB): the boilerplate buckets a
/// histogram is decoded without ([`Spans::decode_without`]).
#[derive(Clone, Debug, Default)]
pub struct Buckets {
    bits: Vec<u64>,
}

impl Buckets {
    /// The set of `buckets` (any order; those out of range are ignored).
    pub fn new(buckets: &[u32]) -> Buckets {
        let mut bits = vec![0u64; HASH_BASE.div_ceil(64) as usize];
        for &b in buckets.iter().filter(|&&b| b < HASH_BASE) {
            bits[(b / 64) as usize] |= 1 << (b % 64);
        }
        Buckets { bits }
    }

    /// Whether `b` is in the set.
    #[inline]
    pub fn contains(&self, b: u32) -> bool {
        self.bits
            .get((b / 64) as usize)
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
    }
}

/// Chunks of a file in which every byte counts (binary, or text without a
/// CR): lines cut every 64 bytes. Most files take this path. With AVX-512
/// (and VBMI), eight chunks are hashed at once ([`super::chunks_avx512`]:
/// `Spans::new` 1.55 GB/s on git's sources against 1.20).
pub(super) fn chunk_plain(data: &[u8], chunks: &mut Vec<u64>) {
    #[cfg(target_arch = "x86_64")]
    if super::chunks_avx512::available() {
        // SAFETY: the processor has what the function is compiled for,
        // checked just above.
        return unsafe { super::chunks_avx512::chunk_plain(data, chunks) };
    }
    chunk_plain_scalar(data, chunks);
}

thread_local! {
    /// The chunk list [`Spans::new`] sorts, and the sort's scratch, one per
    /// thread.
    static CHUNKS: std::cell::RefCell<(Vec<u64>, Vec<u64>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Buckets fit in the radix sort's 17 bits.
const _: () = assert!(HASH_BASE as u64 <= radix::KEY_LIMIT);

/// Call `f(bucket, chunk)` for every chunk of `data` as git cuts it (at
/// each LF and every 64 bytes; CRs counted, so for CRLF text the bucket
/// may differ from the one [`Spans::new`] gives): to show which text a
/// bucket stands for.
pub fn for_each_chunk(data: &[u8], mut f: impl FnMut(u32, &[u8])) {
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', data).map(|nl| nl + 1);
    for end in ends.chain((!data.is_empty()).then_some(data.len())) {
        if end <= start {
            continue;
        }
        for piece in data[start..end].chunks(MAX_CHUNK as usize) {
            f((chunk(piece) >> 32) as u32, piece);
        }
        start = end;
    }
}

/// Chunks of a text file with CRs: a CR before a LF is skipped (git treats
/// "\r\n" in text as "\n", so that converting line endings alone barely
/// changes what counts as copied), and the cut at 64 counts the bytes
/// kept.
pub(super) fn chunk_crlf(data: &[u8], chunks: &mut Vec<u64>) {
    let mut x: u64 = 0;
    let mut n: u32 = 0;
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        i += 1;
        if c == b'\r' && data.get(i) == Some(&b'\n') {
            continue;
        }
        x = hash_step(x, c);
        n += 1;
        if n < MAX_CHUNK && c != b'\n' {
            continue;
        }
        chunks.push(finish(x, n));
        n = 0;
        x = 0;
    }
    if n > 0 {
        chunks.push(finish(x, n));
    }
}

/// `data` as git scores text: without the CR of each CRLF, unless it is
/// binary ([`is_binary`]) or holds none (then borrowed, not copied). With
/// `crs`, where the CRs left out were, as offsets into `data`, in order
/// (to map positions in the result back). What the fingerprint and the
/// signature are computed over.
pub fn without_crlf_crs<'a>(
    data: &'a [u8],
    mut crs: Option<&mut Vec<usize>>,
) -> std::borrow::Cow<'a, [u8]> {
    if memchr::memchr(b'\r', data).is_none()
        || memchr::memmem::find(data, b"\r\n").is_none()
        || is_binary(data)
    {
        return std::borrow::Cow::Borrowed(data);
    }
    let mut text = Vec::with_capacity(data.len());
    let mut rest = data;
    while let Some(at) = memchr::memmem::find(rest, b"\r\n") {
        text.extend_from_slice(&rest[..at]);
        if let Some(crs) = crs.as_deref_mut() {
            crs.push(data.len() - rest.len() + at);
        }
        rest = &rest[at + 1..];
    }
    text.extend_from_slice(rest);
    std::borrow::Cow::Owned(text)
}

/// True if and only if `data` has a NUL byte in its first 8000 bytes, which is
/// how git decides a blob is binary when no attribute says otherwise.
///
/// Attributes can override it per path ([`Binary`]).
pub fn is_binary(data: &[u8]) -> bool {
    let head = &data[..data.len().min(FIRST_FEW_BYTES)];
    memchr::memchr(0, head).is_some()
}
