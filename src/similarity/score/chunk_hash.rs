//! git's chunk hash (`diffcore-delta.c`): the fold over a chunk's bytes,
//! the bucket it lands in, and a file's chunks a byte at a time. Shared by
//! the histogram (`spans.rs`) and its AVX-512 chunker
//! (`chunks_avx512.rs`).

/// The number of buckets chunks are hashed into; a prime, as in git, so that
/// the modulo mixes the high bits of the accumulators too.
pub(super) const HASH_BASE: u32 = 107_927;

/// The longest chunk; lines longer than this are cut into several chunks so
/// that one edit in a long line does not make the whole line count as new.
pub(super) const MAX_CHUNK: u32 = 64;

/// One byte into a chunk's hash. git's two 32-bit accumulators, `a1 = (a1
/// << 7) ^ (a2 >> 25); a2 = (a2 << 7) ^ (old a1 >> 25); a1 += c`, are one
/// 64-bit word (a1 high) rotated left by 7, plus the byte added to the high
/// half.
pub(super) fn hash_step(x: u64, c: u8) -> u64 {
    x.rotate_left(7).wrapping_add(u64::from(c) << 32)
}

/// Finish a chunk of `n` bytes hashed to `x`: see [`pack`].
pub(super) fn finish(x: u64, n: u32) -> u64 {
    pack((x >> 32) as u32, x as u32, n)
}

/// One chunk of at most [`MAX_CHUNK`] bytes, hashed and finished.
pub(super) fn chunk(bytes: &[u8]) -> u64 {
    finish(
        bytes.iter().fold(0, |x, &c| hash_step(x, c)),
        bytes.len() as u32,
    )
}

/// Finish a chunk: its bucket in the high half, its length in the low half.
pub(super) fn pack(a1: u32, a2: u32, n: u32) -> u64 {
    let bucket = a1.wrapping_add(a2.wrapping_mul(0x61)) % HASH_BASE;
    (u64::from(bucket) << 32) | u64::from(n)
}

/// [`super::spans::chunk_plain`] a byte at a time, on any processor: one pass with a
/// test per byte, which on real source files beats finding line ends
/// with memchr first (1.2 GB/s against 0.95), whose per-line call costs
/// more than it saves on lines of a few dozen bytes.
pub(super) fn chunk_plain_scalar(data: &[u8], chunks: &mut Vec<u64>) {
    let mut x: u64 = 0;
    let mut n: u32 = 0;
    for &c in data {
        x = hash_step(x, c);
        n += 1;
        if n == MAX_CHUNK || c == b'\n' {
            chunks.push(finish(x, n));
            x = 0;
            n = 0;
        }
    }
    if n > 0 {
        chunks.push(finish(x, n));
    }
}
