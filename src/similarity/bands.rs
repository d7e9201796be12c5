//! Band keys: locality-sensitive hashing of the 256 fingerprint bits, so
//! that an engine that can only do equi-joins (SQL engines at any scale)
//! finds the pairs of files worth scoring.
//!
//! Each of [`BANDS`] bands is [`BAND_BITS`] consecutive fingerprint bits,
//! band `i` starting at bit `i * 256 / BANDS` and wrapping past bit 255, so
//! neighbouring bands overlap and every bit is in the same number of bands.
//! Two fingerprints whose band `i` agrees share the key of band `i`; a pair
//! that shares any key is a candidate, and the Hamming distance over the
//! four words then decides. Consecutive bits rather than scattered ones:
//! the key is a shift and a mask of the words, which a query or a script
//! can recompute (`benches/cross-repo.py` does, to check), and the bits of
//! one 32-bit block are votes of the same windows, so an edit that leaves a
//! block's windows alone leaves whole bands equal.
//!
//! Band keys alone miss edited copies: a file at git score 80% can sit 75
//! bits from its copy (the calibration below), where a 16-bit band agrees
//! with probability 0.7^16, 0.3%. So a row also carries a [`name_key`],
//! the hash of its file name: the copies fingerprints drift apart on are
//! mostly vendored files that kept their name (`deps/jemalloc/src/sz.c`
//! and jemalloc's `src/sz.c`), which is also what git's rename detection
//! tries first (its unique-basename step).
//!
//! ### Why these numbers
//! The chance that a pair at distance `d` shares one given band is about
//! `(1 - d/256)^BAND_BITS`, so the chance it is found is about `1 - (1 -
//! (1 - d/256)^BAND_BITS)^BANDS`; unrelated pairs sit near `d = 128`. Wide
//! bands keep the buckets of unrelated files small (the join's work grows
//! with the square of a bucket), many bands keep the recall of edited
//! copies. Chosen by measurement on real repositories sharing files
//! (README, "Finding similar files across repositories"): recall and
//! candidate counts of every width and count tried are in the README.

use crate::similarity::fingerprint::{BITS, Fingerprint};

/// How many bands a fingerprint has, so how many keys a row carries.
pub const BANDS: usize = 32;

/// Bits per band: each key holds this many fingerprint bits.
pub const BAND_BITS: u32 = 16;

/// The key of a file name (the path's last component): FNV-1a over its
/// bytes with the sign bit set, so it never equals a band key (those are
/// not negative) and one join over all keys finds both kinds of pair.
pub fn name_key(path: &[u8]) -> i64 {
    let name = match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h | 1 << 63) as i64
}

/// The key of every band of `fp`, band `i` at index `i`. A key holds the
/// band's number in its upper 32 bits and the band's bits in its lower
/// ones (bit `j` of the key is fingerprint bit `start + j`), so keys of
/// different bands never meet in a join on the key alone.
pub fn band_keys(fp: &Fingerprint) -> [i64; BANDS] {
    band_keys_with(fp, BANDS, BAND_BITS)
        .try_into()
        .unwrap_or([0; BANDS])
}

/// [`band_keys`] for any count and width (`bits` from 1 to 32): what the
/// calibration compares.
pub fn band_keys_with(fp: &Fingerprint, bands: usize, bits: u32) -> Vec<i64> {
    let bits = bits.clamp(1, 32);
    (0..bands)
        .map(|i| {
            let start = (i as u32 * BITS / bands as u32) % BITS;
            ((i as i64) << 32) | i64::from(bits_at(fp, start, bits))
        })
        .collect()
}

/// `n` (at most 32) bits of `fp` from bit `start` on, wrapping after bit
/// 255; fingerprint bit `start + j` becomes bit `j` of the result.
fn bits_at(fp: &Fingerprint, start: u32, n: u32) -> u32 {
    let mut v = 0u32;
    for j in 0..n {
        let p = (start + j) % BITS;
        let bit = (fp.words[(p / 64) as usize] >> (p % 64)) & 1;
        v |= (bit as u32) << j;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hold_their_band_number_and_bits() {
        let mut fp = Fingerprint::default();
        // Bits 0, 17 and 255: bit 255 is the last bit of the last band,
        // which wraps to bit 0.
        fp.words[0] = 1 | (1 << 17);
        fp.words[3] = 1 << 63;
        let keys = band_keys(&fp);
        assert_eq!(keys[0] & 0xffff_ffff, 1);
        // Band 2 starts at bit 16: bit 17 is its bit 1.
        assert_eq!(keys[2], (2 << 32) | 0b10);
        // The last band starts at bit 248 and wraps to bits 0..8.
        let last = BANDS - 1;
        let start = last as u32 * BITS / BANDS as u32;
        assert_eq!(start, 248);
        assert_eq!(keys[last], ((last as i64) << 32) | (1 << 7) | (1 << 8));
    }

    #[test]
    fn name_keys_depend_on_the_last_component_only() {
        assert_eq!(name_key(b"deps/jemalloc/src/sz.c"), name_key(b"src/sz.c"));
        assert_eq!(name_key(b"sz.c"), name_key(b"src/sz.c"));
        assert_ne!(name_key(b"src/sz.c"), name_key(b"src/sz.h"));
        assert!(name_key(b"") < 0 && name_key(b"a") < 0);
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c, whose sign bit is set.
        assert_eq!(name_key(b"a") as u64, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn one_flipped_bit_changes_only_the_bands_that_hold_it() {
        let fp = Fingerprint {
            words: [
                0x0123_4567_89ab_cdef,
                0xfedc_ba98_7654_3210,
                0xdead_beef_cafe_f00d,
                0x0f1e_2d3c_4b5a_6978,
            ],
        };
        let mut other = fp;
        other.words[1] ^= 1 << 5; // bit 69
        let (a, b) = (band_keys(&fp), band_keys(&other));
        let differing: Vec<usize> = (0..BANDS).filter(|&i| a[i] != b[i]).collect();
        let holding: Vec<usize> = (0..BANDS)
            .filter(|&i| {
                let start = i as u32 * BITS / BANDS as u32;
                (0..BAND_BITS).any(|j| (start + j) % BITS == 69)
            })
            .collect();
        assert_eq!(differing, holding);
        assert_eq!(differing.len(), (BAND_BITS as usize * BANDS).div_ceil(256));
    }
}
