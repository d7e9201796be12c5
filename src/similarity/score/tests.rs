//! The scoring stage's tests: histograms and scores against git's definitions.

use super::spans::{chunk_crlf, chunk_plain};
use super::*;

/// The hash of one chunk, straight from the definition, to check the
/// packed bucket numbers against.
fn bucket_of(chunk: &[u8]) -> u32 {
    let (mut a1, mut a2) = (0u32, 0u32);
    for &c in chunk {
        let old1 = a1;
        a1 = (a1 << 7) ^ (a2 >> 25);
        a2 = (a2 << 7) ^ (old1 >> 25);
        a1 = a1.wrapping_add(u32::from(c));
    }
    a1.wrapping_add(a2.wrapping_mul(0x61)) % HASH_BASE
}

/// Build the expected histogram from explicit chunks.
fn histogram(chunks: &[&[u8]]) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = Vec::new();
    for c in chunks {
        let b = bucket_of(c);
        match v.iter_mut().find(|(x, _)| *x == b) {
            Some((_, w)) => *w += c.len() as u32,
            None => v.push((b, c.len() as u32)),
        }
    }
    v.sort_unstable();
    v
}

#[test]
fn hash_of_a_short_line_matches_hand_computation() {
    // 'a' = 97, then shift by 7 and add '\n' = 10: 97 * 128 + 10.
    assert_eq!(bucket_of(b"a\n"), 12426);
    let s = Spans::new(b"a\n");
    assert_eq!(s.buckets, vec![(12426, 2)]);
    assert_eq!(s.size(), 2);
}

#[test]
fn empty_file_has_no_chunks() {
    let s = Spans::new(b"");
    assert!(s.buckets.is_empty());
    assert_eq!(s.size(), 0);
    assert_eq!(score(&s, &s, 0), 0, "an empty destination scores 0");
    assert_eq!(score(&Spans::new(b"x\n"), &s, 0), 0);
}

#[test]
fn chunks_end_at_lf_and_trailing_chunk_counts() {
    let s = Spans::new(b"one\ntwo\nlast");
    assert_eq!(s.buckets, histogram(&[b"one\n", b"two\n", b"last"]));
}

#[test]
fn long_lines_are_cut_every_64_bytes() {
    let line: Vec<u8> = (0..150u8).map(|i| b'a' + i % 26).collect();
    let s = Spans::new(&line);
    assert_eq!(
        s.buckets,
        histogram(&[&line[..64], &line[64..128], &line[128..]])
    );
    // Exactly 64 bytes before the LF: the LF starts a chunk of its own.
    let mut l64 = line[..64].to_vec();
    l64.push(b'\n');
    assert_eq!(Spans::new(&l64).buckets, histogram(&[&line[..64], b"\n"]));
    // 63 bytes and the LF fit into one chunk.
    let mut l63 = line[..63].to_vec();
    l63.push(b'\n');
    assert_eq!(Spans::new(&l63).buckets, histogram(&[&l63]));
}

#[test]
fn repeated_chunks_add_up_in_one_bucket() {
    let s = Spans::new(b"x\nx\nx\ny\n");
    assert_eq!(s.buckets, histogram(&[b"x\n", b"x\n", b"x\n", b"y\n"]));
    assert!(s.buckets.contains(&(bucket_of(b"x\n"), 6)));
}

#[test]
fn crlf_in_text_is_counted_as_lf() {
    let crlf = Spans::new(b"one\r\ntwo\r\n");
    let lf = Spans::new(b"one\ntwo\n");
    assert_eq!(crlf.buckets, lf.buckets);
    assert_eq!(crlf.size(), 10);
    // Everything counted is copied, but the CRs still count in the size.
    assert_eq!(copied(&lf, &crlf), 8);
    assert_eq!(score(&lf, &crlf, 0), 8 * MAX_SCORE / 10);
}

#[test]
fn lone_cr_and_cr_at_end_are_counted() {
    let s = Spans::new(b"a\rb\n\r");
    assert_eq!(s.buckets, histogram(&[b"a\rb\n", b"\r"]));
    // CR CR LF: only the CR next to the LF is skipped.
    let s = Spans::new(b"a\r\r\n");
    assert_eq!(s.buckets, histogram(&[b"a\r\n"]));
}

#[test]
fn skipped_cr_does_not_count_toward_64() {
    let mut data = vec![b'z'; 63];
    data.extend_from_slice(b"\r\n");
    assert_eq!(
        Spans::new(&data).buckets,
        histogram(&[&[b"z".repeat(63), b"\n".to_vec()].concat()])
    );
}

#[test]
fn crlf_in_binary_is_counted() {
    let s = Spans::new(b"\0one\r\n");
    assert!(s.is_binary());
    assert_eq!(s.buckets, histogram(&[b"\0one\r\n"]));
}

#[test]
fn attributes_override_the_nul_rule_both_ways() {
    // Forced binary: the CRs of CRLF text count.
    let text = b"one\r\ntwo\r\n";
    let forced = Spans::with_binary(text, Binary::Yes);
    assert!(forced.is_binary());
    assert_eq!(forced.buckets, histogram(&[b"one\r\n", b"two\r\n"]));
    assert_eq!(Spans::with_binary(text, Binary::Auto), Spans::new(text));
    // Forced text: a NUL does not stop CRs before LF being skipped.
    let nul = b"\0one\r\ntwo\r\n";
    let text_nul = Spans::with_binary(nul, Binary::No);
    assert!(!text_nul.is_binary());
    assert_eq!(text_nul.buckets, histogram(&[b"\0one\n", b"two\n"]));
    assert_eq!(text_nul.size(), nul.len() as u64);
    // Text against binary of one CRLF file shares no chunk: git pairs
    // such paths as unrelated.
    assert_eq!(copied(&forced, &Spans::new(text)), 0);
}

#[test]
fn nul_beyond_8000_bytes_is_text() {
    let mut data = vec![b'a'; 8000];
    assert!(!is_binary(&data));
    data[7999] = 0;
    assert!(is_binary(&data));
    data[7999] = b'a';
    data.push(0);
    assert!(!is_binary(&data));
    assert!(!Spans::new(&data).is_binary());
}

#[test]
fn copied_takes_the_smaller_weight_per_bucket() {
    let src = Spans::new(b"a\na\nb\nc\n");
    let dst = Spans::new(b"a\nb\nb\nd\n");
    // a: min(4, 2), b: min(2, 4), c and d: nothing.
    assert_eq!(copied(&src, &dst), 4);
    assert_eq!(copied(&dst, &src), 4);
    assert_eq!(score(&src, &dst, 0), 4 * MAX_SCORE / 8);
}

#[test]
fn reordered_lines_score_max() {
    let a = Spans::new(b"first\nsecond\nthird\n");
    let b = Spans::new(b"third\nfirst\nsecond\n");
    assert_eq!(score(&a, &b, DEFAULT_MIN_SCORE), MAX_SCORE);
    assert_eq!(percent(MAX_SCORE), 100);
}

#[test]
fn size_filter_boundary() {
    // At 50% the smaller file must be at least half the larger one.
    assert!(sizes_compatible(50, 100, DEFAULT_MIN_SCORE));
    assert!(sizes_compatible(100, 50, DEFAULT_MIN_SCORE));
    assert!(!sizes_compatible(49, 100, DEFAULT_MIN_SCORE));
    assert!(!sizes_compatible(100, 49, DEFAULT_MIN_SCORE));
    // 90%: 9 of 10 passes, 8 of 9 does not.
    assert!(sizes_compatible(9, 10, 54000));
    assert!(!sizes_compatible(8, 9, 54000));
    // At 0 everything passes, at 100% only equal sizes.
    assert!(sizes_compatible(0, 100, 0));
    assert!(sizes_compatible(7, 7, MAX_SCORE));
    assert!(!sizes_compatible(7, 8, MAX_SCORE));
    // No overflow for huge sizes.
    assert!(sizes_compatible(u64::MAX, u64::MAX - 1, 59999));
    assert!(!sizes_compatible(u64::MAX, 1, 1));
}

#[test]
fn score_is_zero_when_sizes_rejected() {
    let small = Spans::new(b"a\n");
    let big = Spans::new(b"a\nbbbbbbbbbbbbbbbbbbbb\n");
    assert_eq!(score(&small, &big, DEFAULT_MIN_SCORE), 0);
    assert_eq!(score(&small, &big, 0), 2 * MAX_SCORE / 23);
}

#[test]
fn percent_truncates() {
    assert_eq!(percent(0), 0);
    assert_eq!(percent(599), 0);
    assert_eq!(percent(600), 1);
    assert_eq!(percent(52199), 86);
    assert_eq!(percent(52200), 87);
    assert_eq!(percent(59999), 99);
}

#[test]
fn parse_rename_score_like_git() {
    let ok = |s: &str| parse_rename_score(s).unwrap();
    assert_eq!(ok(""), 0);
    assert_eq!(ok("50"), 30000);
    assert_eq!(ok("5"), 30000);
    assert_eq!(ok("90%"), 54000);
    assert_eq!(ok("0.5"), 30000);
    assert_eq!(ok(".5"), 30000);
    assert_eq!(ok("100"), 6000, "three digits are thousandths");
    assert_eq!(ok("100%"), MAX_SCORE);
    assert_eq!(ok("150%"), MAX_SCORE);
    assert_eq!(ok("1."), MAX_SCORE);
    assert_eq!(ok("5%"), 3000);
    assert_eq!(ok("50.5%"), 30300);
    assert_eq!(ok(".5%"), 300);
    assert_eq!(ok("%"), 0);
    assert_eq!(ok("123456789"), 60000 * 12345 / 100_000);
    assert_eq!(ok("0.99999999"), 59999);
    assert_eq!(ok("99.999999%"), 59999);
}

#[test]
fn parse_rename_score_rejects_leftovers() {
    for bad in ["5x", "50%%", "1.2.3", "-5", " 5", "5 ", "ab", "50%x", "٥"] {
        let err = parse_rename_score(bad).unwrap_err();
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
}

#[test]
fn own_thresholds_are_percentages() {
    let ok = |s: &str| parse_threshold(s).unwrap();
    assert_eq!(ok("100"), MAX_SCORE, "100 is 100%, not git's 10%");
    assert_eq!(ok("100%"), MAX_SCORE);
    assert_eq!(ok("1.0"), MAX_SCORE);
    assert_eq!(ok("1"), 600, "1 is 1%");
    assert_eq!(ok("5"), 3000, "5 is 5%, not git's 50%");
    assert_eq!(ok("80"), 48000);
    assert_eq!(ok("80%"), 48000);
    assert_eq!(ok("0.8"), 48000);
    assert_eq!(ok(".8"), 48000);
    assert_eq!(ok("92.5%"), 55500);
    assert_eq!(ok("0"), 0);
    assert_eq!(ok("0%"), 0);
    assert_eq!(ok("00080"), 48000);
    assert_eq!(ok("99.9999999999%"), 59999);
    for over in [
        "101",
        "101%",
        "100.5%",
        "1.5",
        "1.01",
        "99999999999999999999999999",
    ] {
        let e = parse_threshold(over).unwrap_err();
        assert!(
            matches!(e, ThresholdError::OutOfRange { .. }),
            "{over}: {e}"
        );
        assert!(e.to_string().contains(over), "{e}");
    }
    for bad in [
        "", "%", ".", "5x", "50%%", "1.2.3", "-5", " 5", "5 ", "ab", "٥", "+5",
    ] {
        let e = parse_threshold(bad).unwrap_err();
        assert!(
            matches!(e, ThresholdError::NotANumber { .. }),
            "{bad:?}: {e}"
        );
    }
}

/// Real text of the pinned corpus.
fn corpus_texts() -> Vec<Vec<u8>> {
    crate::testing::real_text()
}

#[test]
fn dense_scores_equal_merged_scores() {
    // Real text: this crate's sources, each against every other and
    // against edited versions of itself, so both shared and disjoint
    // buckets occur.
    let mut files = corpus_texts();
    let edited: Vec<Vec<u8>> = files
        .iter()
        .map(|f| {
            let mut e = f.clone();
            e.truncate(f.len() * 2 / 3);
            e.extend_from_slice(b"fn added() {}\r\n\0 binary tail\n");
            e
        })
        .collect();
    files.extend(edited);
    let spans: Vec<Spans> = files.iter().map(|f| Spans::new(f)).collect();
    let mut dense = Dense::default();
    let mut compared = 0;
    for dst in &spans {
        dense.with(dst, |loaded| {
            for src in &spans {
                assert_eq!(loaded.copied(src), copied(src, dst));
                for min in [0, DEFAULT_MIN_SCORE] {
                    let exact = score(src, dst, min);
                    assert_eq!(loaded.score(src, min), exact);
                    // Cut short only below what was asked for.
                    for need in [min, exact, exact + 1, MAX_SCORE / 10 * 9] {
                        let want = (exact >= need).then_some(exact);
                        let want = if need == 0 { Some(exact) } else { want };
                        let compatible = dst.size > 0 && sizes_compatible(src.size, dst.size, min);
                        let want = want.filter(|_| compatible || need == 0);
                        assert_eq!(loaded.score_at_least(src, min, need), want, "need {need}");
                    }
                }
                compared += 1;
            }
        });
    }
    assert!(compared > 100);
    // Cleared after each use: nothing of the last file is left.
    assert!(dense.weights.iter().all(|&w| w == 0));
}

#[test]
fn plain_chunking_equals_the_byte_loop() {
    // Without CRs both chunkers must cut and hash identically: real
    // sources plus lines at and around the 64-byte cut, empty lines,
    // and no final newline.
    let mut inputs = corpus_texts();
    // The corpus has CRLF files too; those are the other chunker's.
    inputs.retain(|d| !d.contains(&b'\r'));
    for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 200] {
        let line: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let mut v = line.clone();
        v.extend_from_slice(b"\n\n");
        v.extend_from_slice(&line);
        v.push(b'\n');
        v.extend_from_slice(&line);
        inputs.push(v);
        inputs.push(line);
    }
    inputs.push(b"\n".to_vec());
    inputs.push(
        (0..=255u8)
            .filter(|&b| b != b'\r')
            .cycle()
            .take(5000)
            .collect(),
    );
    for data in &inputs {
        let (mut plain, mut bytes) = (Vec::new(), Vec::new());
        chunk_plain(data, &mut plain);
        chunk_crlf(data, &mut bytes);
        assert_eq!(
            plain,
            bytes,
            "{:?}",
            String::from_utf8_lossy(&data[..data.len().min(80)])
        );
    }
}

/// The store keeps histograms encoded: every corpus file, CRLF and binary
/// variants included, comes back as it went in, in about 3 bytes an entry.
#[test]
fn encoded_histograms_round_trip_compactly() {
    let mut entries = 0;
    let mut encoded_bytes = 0;
    for text in corpus_texts().iter().take(300) {
        let crlf: Vec<u8> = text
            .split_inclusive(|&c| c == b'\n')
            .flat_map(|l| [&l[..l.len() - 1], b"\r\n"].concat())
            .collect();
        let binary = [text.as_slice(), b"\0"].concat();
        for data in [text.as_slice(), &crlf, &binary, b""] {
            let s = Spans::new(data);
            let mut out = Vec::new();
            s.encode(&mut out);
            assert_eq!(Spans::decode(&out).as_ref(), Some(&s));
            entries += s.bucket_count();
            encoded_bytes += out.len();
        }
    }
    assert!(
        encoded_bytes < entries * 4,
        "{encoded_bytes} bytes for {entries} entries"
    );
}

/// Every length of varint in every place: gaps of one, two and three
/// bytes (the first bucket is a gap from 0) and weights of one to four
/// bytes, side by side in every combination, the last entries short of
/// the four bytes the decoder reads at once.
#[test]
fn histograms_with_every_varint_length_round_trip() {
    let mut rng = crate::testing::Rng(17);
    let gaps = [1u32, 5, 127, 128, 200, 16_383, 16_384, 40_000];
    let weights = [1u32, 64, 127, 128, 300, 16_383, 16_384, 2_000_000];
    for round in 0..400 {
        let mut buckets = Vec::new();
        let mut b = rng.below(3) as u32 * 20_000;
        for i in 0..(1 + round % 40) {
            let w = weights[rng.below(weights.len())];
            buckets.push((b, w));
            let gap = gaps[(i + rng.below(gaps.len())) % gaps.len()];
            b += gap;
            if b >= 107_927 {
                break;
            }
        }
        let counted = buckets.iter().map(|&(_, w)| u64::from(w)).sum();
        let s = Spans {
            buckets,
            size: counted + round as u64,
            counted,
            binary: round % 2 == 0,
        };
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(Spans::decode(&out).as_ref(), Some(&s), "round {round}");
    }
}

/// A damaged record never decodes into a histogram that could score:
/// truncated, extended, or with a byte changed so that buckets go out of
/// order, it is refused (or, where the change stays well-formed, decodes
/// to buckets in range).
#[test]
fn damaged_encodings_are_refused_not_trusted() {
    let text = &corpus_texts()[0];
    let mut out = Vec::new();
    Spans::new(text).encode(&mut out);
    for cut in [0, 1, 2, out.len() / 2, out.len() - 1] {
        assert_eq!(Spans::decode(&out[..cut]), None, "cut at {cut}");
    }
    let mut longer = out.clone();
    longer.push(0);
    assert_eq!(Spans::decode(&longer), None);
    for at in 0..out.len().min(400) {
        let mut bad = out.clone();
        bad[at] ^= 0xff;
        if let Some(s) = Spans::decode(&bad) {
            assert!(s.bucket_ids().all(|b| b < 107_927));
            assert!(
                s.bucket_ids()
                    .zip(s.bucket_ids().skip(1))
                    .all(|(a, b)| a < b)
            );
        }
    }
}

/// Decoding without the boilerplate buckets is decoding, then
/// [`Spans::without`]: the same buckets and the same reduced size.
#[test]
fn decoding_without_buckets_equals_taking_them_out_after() {
    let texts = corpus_texts();
    let common: Vec<u32> = Spans::new(&texts[0]).bucket_ids().step_by(3).collect();
    let set = Buckets::new(&common);
    for text in texts.iter().take(100) {
        let s = Spans::new(text);
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(Spans::decode_without(&out, &set), Some(s.without(&common)));
    }
}

#[test]
fn bins_bound_copied_from_above_and_rule_out_unrelated_files() {
    // Real text against real text and against edited copies of itself:
    // the ceiling is never below git's copied bytes (else a pair git
    // scores could be ruled out), and it is tight enough to rule out most
    // pairs of different files at 50%.
    let files = corpus_texts();
    let files: Vec<&Vec<u8>> = files.iter().take(120).collect();
    let mut spans: Vec<Spans> = files.iter().map(|f| Spans::new(f)).collect();
    for f in files.iter().take(40) {
        let mut e = f.to_vec();
        let cut = e.len() / 3;
        e.drain(cut..cut + e.len() / 10);
        e.extend_from_slice(b"// a new ending\nfn added() {}\n");
        spans.push(Spans::new(&e));
    }
    let bins: Vec<Coarse> = spans.iter().map(Coarse::of).collect();
    let (mut unrelated, mut ruled_out) = (0, 0);
    for (a, sa) in spans.iter().enumerate() {
        for (b, sb) in spans.iter().enumerate() {
            let ceiling = bins[a].copied_ceiling(&bins[b]);
            assert!(ceiling >= copied(sa, sb), "pair {a} {b}");
            if a != b && score(sa, sb, 0) < DEFAULT_MIN_SCORE {
                unrelated += 1;
                if ceiling < copied_needed(DEFAULT_MIN_SCORE, sa.size, sb.size) {
                    ruled_out += 1;
                }
            }
        }
    }
    assert!(unrelated > 1000);
    assert!(
        ruled_out * 2 > unrelated,
        "{ruled_out} of {unrelated} ruled out"
    );
}

/// Histograms of whole files, small and large (the large ones' chunks
/// are put in bucket order by a radix sort), equal the definition: every
/// chunk's bucket from git's hash, weights added up per bucket.
#[test]
fn histograms_of_real_files_follow_the_definition() {
    let mut files = corpus_texts();
    // One line many times (one bucket holding all the weight) and lines
    // of nearly every byte value (buckets across the whole range; no CR,
    // which text chunking leaves out before LF).
    files.push(b"the same line\n".repeat(500));
    let whole_range: Vec<u8> = (0..40_000u32)
        .map(|i| match i % 37 {
            0 => b'\n',
            _ => match (i * 131 % 251) as u8 + 1 {
                b'\r' => b'~',
                b => b,
            },
        })
        .collect();
    files.push(whole_range.clone());
    let mut large = 0;
    let mut checked_whole_range = false;
    for data in files.iter().filter(|d| !d.contains(&b'\r')) {
        checked_whole_range |= *data == whole_range;
        let mut expected: std::collections::BTreeMap<u32, u32> = Default::default();
        let mut chunks = 0;
        for line in data.split_inclusive(|&c| c == b'\n') {
            for chunk in line.chunks(64) {
                *expected.entry(bucket_of(chunk)).or_default() += chunk.len() as u32;
                chunks += 1;
            }
        }
        let got: Vec<(u32, u32)> = Spans::new(data).weights().collect();
        let expected: Vec<(u32, u32)> = expected.into_iter().collect();
        assert_eq!(got, expected);
        large += usize::from(chunks >= 1000);
    }
    assert!(large >= 10, "only {large} files of 1,000 chunks or more");
    assert!(checked_whole_range);
}
