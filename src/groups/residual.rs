//! Boilerplate in candidate search: every blob's residual (what is left
//! once the common chunks are out) as a size and a sketch, so that pairs
//! that reach the threshold only without their boilerplate are proposed.
//!
//! Why: the store's fingerprints and git's size filter see whole files. A
//! file behind a 1.6 KB license header and an edited copy of it without
//! the header (or behind another header) can score 95% once boilerplate is
//! out and still be 60 bits and a size ratio of 0.6 apart as whole files:
//! the whole-file search never proposes them, however exact the score.
//!
//! The residual sketch is a 256-bit SimHash (Charikar) of the chunk
//! histogram without the common buckets, each bucket voting with its
//! weight in bytes. It is built from the histogram store, so a warm run
//! reads no blob for it, and it is the same function of the residual for
//! every blob: a blob with a header and one without are compared on equal
//! terms. A SimHash estimates the angle between the two weight vectors,
//! which follows git's byte-weighted score of the same chunks more
//! closely than the gsimm fingerprint's 48-byte windows do.
//!
//! Only blobs where the boilerplate is a noticeable share of the bytes
//! ([`Options::residual_share`](super::Options::residual_share)) start a
//! residual scan (against every blob's residual): elsewhere whole files
//! and residuals differ little, and the whole-file search, calibrated on
//! real edits, stands.

use rayon::prelude::*;

use crate::similarity::fingerprint::{Fingerprint, Sketch};
use crate::similarity::score::{self, Buckets, Spans};
use crate::similarity::store::histograms::{Histograms, Loc};

/// The default [`Options::residual_share`](super::Options::residual_share).
pub const DEFAULT_SHARE: f64 = 0.20;

/// The residual-sketch distance up to which pairs are proposed at
/// `min_score`.
///
/// Calibrated like [`radius_for`](super::radius_for) on the planted tree
/// of `tests/it/groups.rs` (`residual_radius_calibration`: real files, 150
/// copies with real edits, every pair scored). The farthest true pairs
/// were, at 80% and more: 99.9th percentile 61 bits, maximum 72; at 70%:
/// 81 and 86; at 60%: 88 and 94; at 50%: 111 (near chance). The SimHash of
/// chunk weights is tighter than the gsimm fingerprint (maximum 82 at
/// 80%), and unrelated files fall within 80 bits at a rate of 0.06%. The
/// radius keeps a margin over the maximum: 76 bits from 80% up, rising
/// linearly to 100 at 60%; below 60%, 255 (the size window alone).
pub fn radius_for(min_score: u32) -> u32 {
    let pct = crate::similarity::score::percent(min_score);
    match pct {
        0..60 => 255,
        60..80 => 100 - (pct - 60) * 24 / 20,
        _ => 76,
    }
}

/// The residual of one blob: its size without the common chunks (0 for
/// a binary blob or one the store cannot give), its sketch ([`sketch`];
/// `None` under the smallest residual searched), and whether boilerplate
/// is a noticeable share of it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Residual {
    /// Bytes left once the common chunks are out.
    pub size: u64,
    /// The SimHash of what is left.
    pub fingerprint: Option<Fingerprint>,
    /// The common chunks hold at least the share that starts a residual
    /// scan.
    pub noticeable: bool,
}

impl Residual {
    /// What candidate search compares: the residual as a [`Sketch`], empty
    /// (never paired) without a fingerprint.
    pub fn searched(&self) -> Sketch {
        match self.fingerprint {
            Some(f) => Sketch {
                size: self.size,
                fingerprint: Some(f),
            },
            None => Sketch {
                size: 0,
                fingerprint: None,
            },
        }
    }
}

/// The 256-bit SimHash of `spans`' buckets weighted by bytes: bit `i` is
/// set when the buckets whose pseudo-random pattern has bit `i` set hold
/// more than half of the bytes. `None` for an empty histogram, or one of a
/// file over 4 GiB (the counters are `u32`, as the fingerprint's are).
///
/// Every bucket votes on every bit. Voting in one of four blocks of 64
/// bits instead (as gsimm's fingerprint does with eight blocks of 32) was
/// measured on the calibration tree: a quarter of the work, but a file of
/// 30 buckets puts a handful in each block, and a 95% pair then sat 94
/// bits apart (99.9th percentile at 80%: 60-72 bits either way).
pub fn sketch(spans: &Spans) -> Option<Fingerprint> {
    if spans.size() > u64::from(u32::MAX) {
        return None;
    }
    let mut total: u64 = 0;
    let mut ones = [0u32; 256];
    for (b, w) in spans.weights() {
        total += u64::from(w);
        for k in 0..4 {
            let pattern = mix(u64::from(b) << 2 | k as u64).to_le_bytes();
            // Eight lanes per pattern byte, masked from a table and added
            // with no branch: the compiler makes each byte one or two
            // vector additions instead of eight bit tests.
            for (j, &v) in pattern.iter().enumerate() {
                let at = (k * 8 + j) * 8;
                let lanes = &mut ones[at..at + 8];
                for (c, &m) in lanes.iter_mut().zip(&LANES[v as usize]) {
                    *c = c.wrapping_add(w & m);
                }
            }
        }
    }
    if total == 0 {
        return None;
    }
    let mut words = [0u64; 4];
    for (i, &c) in ones.iter().enumerate() {
        if 2 * u64::from(c) > total {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    Some(Fingerprint { words })
}

/// For each byte value, a mask per bit: all ones where the bit is set.
static LANES: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut v = 0;
    while v < 256 {
        let mut l = 0;
        while l < 8 {
            if (v >> l) & 1 == 1 {
                t[v][l] = u32::MAX;
            }
            l += 1;
        }
        v += 1;
    }
    t
};

/// splitmix64's finaliser: a bucket number (and word index) to 64 bits
/// that look random.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The residual of every position whose histogram `locs` places in
/// `histograms`, decoded without `common`, in parallel (each histogram
/// decoded and dropped: memory stays a few words per blob). Only the
/// residuals a noticeable one (boilerplate at least `share` of the bytes)
/// can meet at `min_score` (git's size filter on residual sizes) are
/// sketched: a second decoding pass over those, while a tree with no
/// noticeable boilerplate costs one pass and no sketch. Residuals under
/// `min_size` bytes get no sketch: too little is left to pair on, and
/// every such blob would otherwise meet every other.
pub fn residuals(
    histograms: &Histograms,
    locs: &[Option<Loc>],
    common: &Buckets,
    min_size: u64,
    min_score: u32,
    share: f64,
) -> Vec<Residual> {
    let mut out: Vec<Residual> = locs
        .par_iter()
        .with_min_len(256)
        .map(|loc| {
            match loc
                .and_then(|l| histograms.record(l))
                .and_then(|r| Spans::decode_sizes(r, common))
            {
                Some((whole, size, false)) if size > 0 => Residual {
                    size,
                    fingerprint: None,
                    noticeable: (whole - size) as f64 >= share * whole as f64,
                },
                _ => Residual::default(),
            }
        })
        .collect();
    let searched = |r: &Residual| r.size >= min_size.max(1);
    let mut starts: Vec<u64> = out
        .iter()
        .filter(|r| r.noticeable && searched(r))
        .map(|r| r.size)
        .collect();
    if starts.is_empty() {
        return out;
    }
    starts.sort_unstable();
    // A residual meets a start when the nearest start on either side of
    // its size passes the size filter (it is monotone in the distance).
    let meets = |size: u64| {
        let at = starts.partition_point(|&s| s < size);
        let near = |s: u64| score::sizes_compatible(s, size, min_score);
        starts.get(at).is_some_and(|&s| near(s)) || (at > 0 && near(starts[at - 1]))
    };
    out.par_iter_mut()
        .zip(locs.par_iter())
        .with_min_len(256)
        .for_each(|(r, loc)| {
            if searched(r) && meets(r.size) {
                r.fingerprint = loc
                    .and_then(|l| histograms.record(l))
                    .and_then(|record| Spans::decode_without(record, common))
                    .and_then(|spans| sketch(&spans));
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residual_sizes_read_from_a_record_match_the_decoded_histogram() {
        let texts = crate::testing::real_text();
        let common: Vec<u32> = Spans::new(&texts[0]).bucket_ids().step_by(3).collect();
        let set = Buckets::new(&common);
        for t in texts.iter().take(200) {
            let spans = Spans::new(t);
            let mut record = Vec::new();
            spans.encode(&mut record);
            assert_eq!(
                Spans::decode_sizes(&record, &set),
                Some((
                    spans.size(),
                    spans.without(&common).size(),
                    spans.is_binary()
                ))
            );
            // Cut short or with a byte more, it is refused as decode is.
            assert_eq!(Spans::decode_sizes(&record[..record.len() - 1], &set), None);
            record.push(0);
            assert_eq!(Spans::decode_sizes(&record, &set), None);
        }
    }

    #[test]
    fn a_sketch_ignores_what_common_buckets_held() {
        let texts = crate::testing::real_text();
        let body = texts.iter().find(|t| t.len() > 3000).unwrap();
        let header: Vec<u8> = texts
            .iter()
            .find(|t| t.len() > 2000 && *t != body)
            .unwrap()
            .split_inclusive(|&c| c == b'\n')
            .take(30)
            .flatten()
            .copied()
            .collect();
        let with = Spans::new(&[header.as_slice(), body].concat());
        let header_buckets: Vec<u32> = Spans::new(&header).bucket_ids().collect();
        let bare = Spans::new(body);
        // Buckets the body shares with the header go too: compare the
        // body without them.
        let a = sketch(&with.without(&header_buckets)).unwrap();
        let b = sketch(&bare.without(&header_buckets)).unwrap();
        assert_eq!(a, b);
        // With the header in, the sketches differ: the header weighs.
        let whole = sketch(&with).unwrap();
        assert!(whole.distance(&b) > 10, "{}", whole.distance(&b));
        // Unrelated files sit near chance.
        let other = texts.iter().rev().find(|t| t.len() > 3000).unwrap();
        let d = sketch(&Spans::new(other)).unwrap().distance(&b);
        assert!((90..=166).contains(&d), "{d}");
    }
}
