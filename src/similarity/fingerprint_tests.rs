//! Tests of the fingerprint (`fingerprint.rs`): the definition computed
//! from scratch, every counting path, the pinned format.

use super::*;

/// Straight from the definition: hash every window from scratch and
/// move 32 counters per counted window. Independent of the rolling hash
/// and the histogram trick, which must give exactly the same bits.
fn reference(data: &[u8]) -> Option<Fingerprint> {
    if data.len() < MIN_SIZE {
        return None;
    }
    let mut counters = [0i64; 256];
    let mut cache = [0u64; 256];
    for start in 0..=data.len() - WINDOW {
        let mut h = 0u64;
        for &b in &data[start..start + WINDOW] {
            h = h.rotate_left(1) ^ TABLE[b as usize];
        }
        let m = mum(h);
        let slot = (m >> 56) as usize;
        if cache[slot] == m {
            continue;
        }
        cache[slot] = m;
        let block = ((m >> 32) & 7) as usize;
        for j in 0..32 {
            counters[block * 32 + j] += if (m >> j) & 1 == 1 { 1 } else { -1 };
        }
    }
    let mut fp = Fingerprint::default();
    for (i, c) in counters.iter().enumerate() {
        if *c > 0 {
            fp.words[i / 64] |= 1 << (i % 64);
        }
    }
    Some(fp)
}

/// Real text: a few dozen files of the pinned corpus, one after another.
fn corpus_text() -> Vec<u8> {
    crate::testing::real_text()
        .into_iter()
        .take(40)
        .flatten()
        .collect()
}

#[test]
fn matches_reference_definition() {
    let text = corpus_text();
    let mut fpr = Fingerprinter::new();
    // Every remainder of the windows taken four at a time, in the
    // first round and across the end of a vector round (124 windows).
    let steps = (MIN_SIZE..MIN_SIZE + 8).chain(WINDOW + 2 * 124 - 4..WINDOW + 2 * 124 + 5);
    for len in steps.chain([500, 4096, 20_000, text.len()]) {
        let len = len.min(text.len());
        let slice = &text[text.len() - len..];
        assert_eq!(fpr.fingerprint(slice), reference(slice), "length {len}");
    }
    // Repetitive input exercises the repeat cache.
    let rep: Vec<u8> = b"abcabcabd".iter().cycle().take(5000).copied().collect();
    assert_eq!(fpr.fingerprint(&rep), reference(&rep));
    let zeros = vec![0u8; 3000];
    assert_eq!(fpr.fingerprint(&zeros), reference(&zeros));
}

#[test]
fn portable_and_simd_paths_agree() {
    let text = corpus_text();
    let mut simd = Fingerprinter::new();
    let mut avx2 = Fingerprinter::new();
    if avx2.simd == Simd::Avx512 {
        avx2.simd = Simd::Avx2;
    }
    let mut portable = Fingerprinter::new();
    portable.simd = Simd::None;
    for start in (0..text.len() - 5000).step_by(997) {
        let slice = &text[start..start + 300 + start % 4000];
        let want = portable.fingerprint(slice);
        assert_eq!(simd.fingerprint(slice), want);
        assert_eq!(avx2.fingerprint(slice), want);
    }
    // Long runs of counted windows cross the 8-bit widening many times.
    let long: Vec<u8> = (0u32..200_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let want = portable.fingerprint(&long);
    assert_eq!(simd.fingerprint(&long), want);
    assert_eq!(avx2.fingerprint(&long), want);
}

#[test]
fn reused_scratch_gives_same_result() {
    let text = corpus_text();
    let mut fpr = Fingerprinter::new();
    let a = fpr.fingerprint(&text[..10_000]);
    let _ = fpr.fingerprint(&text[5000..]);
    assert_eq!(fpr.fingerprint(&text[..10_000]), a);
    assert_eq!(fingerprint(&text[..10_000]), a);
}

#[test]
fn size_limits() {
    assert_eq!(fingerprint(&[b'x'; MIN_SIZE - 1]), None);
    assert_eq!(fingerprint(b""), None);
    assert!(fingerprint(&[b'x'; MIN_SIZE]).is_some());
}

/// Pins the format: these bits are stored on disk. If this test fails,
/// the definition changed and FINGERPRINT_VERSION must be bumped. (The
/// pinned input is binary, so version 2's CRLF rule leaves its bits as
/// version 1 had them.)
#[test]
fn format_is_pinned() {
    let text: Vec<u8> = (0u32..2000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let fp = fingerprint(&text).expect("large enough");
    assert_eq!(fp, reference(&text).expect("large enough"));
    assert_eq!(FINGERPRINT_VERSION, 2);
    assert_eq!(fp.to_string(), PINNED_V1);
}

/// Version 2: text with CRLF line ends is fingerprinted as git scores
/// it, without the CRs; binary content keeps every byte.
#[test]
fn crlf_text_is_fingerprinted_without_its_crs() {
    let text = corpus_text();
    let crlf = crate::testing::with_crlf(&text);
    assert_ne!(crlf, text);
    assert_eq!(fingerprint(&crlf), fingerprint(&text));
    let mut binary = crlf.clone();
    binary[10] = 0;
    let mut binary_lf = text.clone();
    binary_lf[10] = 0;
    assert!(
        fingerprint(&binary)
            .unwrap()
            .distance(&fingerprint(&binary_lf).unwrap())
            > 40
    );
}
const PINNED_V1: &str = "1155a7f4e80b097d41a0fd48e2deda25bb962eebc15f5e54629a05d6edbd5c60";

#[test]
fn identical_is_zero_and_hex_roundtrips() {
    let text = corpus_text();
    let a = fingerprint(&text).expect("large");
    assert_eq!(a.distance(&a), 0);
    assert_eq!(Fingerprint::from_hex(&a.to_string()), Some(a));
    assert_eq!(Fingerprint::from_hex("zz"), None);
}

#[test]
fn estimate_is_monotone() {
    assert_eq!(estimate_similarity(0), 1.0);
    assert_eq!(estimate_similarity(128), 0.0);
    assert_eq!(estimate_similarity(200), 0.0);
    assert!(estimate_similarity(40) > estimate_similarity(60));
}
