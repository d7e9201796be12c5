use super::estimate::{estimate, regions};
use super::*;
use crate::similarity::score::for_each_chunk;
use crate::testing::{Rng, real_text, with_crlf};

/// splitmix64's finaliser, as the definition uses it.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Straight from the definition, over git's own chunking (text without
/// CRs): (chunk start, line, value, coarse) of every symbol.
fn reference(data: &[u8], shape: &Shape) -> Vec<(u64, u64, u8, bool)> {
    let mut out = Vec::new();
    let (mut at, mut line) = (0usize, 0u64);
    for_each_chunk(data, |_, chunk| {
        let h = hash::chunk_hash(chunk);
        let phase = (h & 1023) as usize;
        let mut k = 0;
        for o in 0..chunk.len() {
            if (o + phase).is_multiple_of(shape.c) {
                let value = if k < 9 {
                    ((h >> (10 + 6 * k)) & 63) as u8
                } else {
                    (mix(h ^ k as u64) >> 58) as u8
                };
                out.push((
                    at as u64,
                    line,
                    value,
                    (o + phase).is_multiple_of(shape.coarse_c),
                ));
                k += 1;
            }
        }
        at += chunk.len();
        if chunk.last() == Some(&b'\n') {
            line += 1;
        }
    });
    out
}

fn flat(s: &Signature) -> Vec<(u64, u64, u8, bool)> {
    (0..s.len())
        .map(|i| {
            let m = s.mark(i);
            (
                m.chunk,
                m.line,
                s.symbols[i] & 63,
                s.symbols[i] & COARSE != 0,
            )
        })
        .collect()
}

#[test]
fn signing_follows_the_definition() {
    let texts = real_text();
    let mut rng = Rng(24);
    let mut inputs: Vec<Vec<u8>> = texts.iter().take(40).cloned().collect();
    let mut binary = rng.bytes(20_000);
    binary.retain(|&b| b != b'\r');
    inputs.push(binary);
    inputs.push(vec![0; 5000]);
    inputs.push(b"ab\n".repeat(3000));
    inputs.push(vec![b'x'; 1000]);
    for len in 0..70 {
        inputs.push(texts[1][..len].to_vec());
    }
    // Lines of every length around git's 64-byte cut, at every offset of
    // the 64-byte words the LF bits are read in.
    let mut lines = Vec::new();
    for len in 0..200 {
        lines.extend(std::iter::repeat_n(b'a' + (len % 26) as u8, len));
        lines.push(b'\n');
    }
    for skip in 0..64 {
        inputs.push(lines[skip..].to_vec());
    }
    for shape in [
        Shape::STORED,
        Shape { c: 8, coarse_c: 8 },
        Shape {
            c: 32,
            coarse_c: 1024,
        },
    ] {
        for data in &inputs {
            let sig = Signature::with_shape(data, &shape);
            assert_eq!(
                flat(&sig),
                reference(data, &shape),
                "{shape:?}, {} bytes",
                data.len()
            );
            assert_eq!(sig.size(), data.len() as u64);
        }
    }
}

#[test]
fn about_one_symbol_per_c_bytes_on_text() {
    let texts = real_text();
    let bytes: usize = texts.iter().map(Vec::len).sum();
    let full: Vec<Signature> = texts
        .iter()
        .map(|t| Signature::with_shape(t, &Shape::STORED))
        .collect();
    let symbols: usize = full.iter().map(Signature::len).sum();
    let coarse: usize = full.iter().map(|s| s.coarse().len()).sum();
    let per = bytes as f64 / symbols as f64;
    let per_coarse = bytes as f64 / coarse as f64;
    assert!((0.9 * C as f64..1.1 * C as f64).contains(&per), "{per}");
    assert!(
        (0.9 * COARSE_C as f64..1.1 * COARSE_C as f64).contains(&per_coarse),
        "{per_coarse}"
    );
    // Stored: large files keep the coarse level only.
    for t in &texts {
        let s = Signature::new(t);
        assert_eq!(s.is_fine(), (t.len() as u64) < FINE_LIMIT);
        assert_eq!(
            s.coarse_text(),
            Signature::with_shape(t, &Shape::STORED).coarse_text()
        );
    }
}

#[test]
fn a_text_embedded_keeps_its_symbols() {
    let texts = real_text();
    for k in 0..20 {
        let (left, text, right) = (&texts[k], &texts[k + 100], &texts[k + 200]);
        let mut left = left.clone();
        if left.last() != Some(&b'\n') {
            left.push(b'\n');
        }
        let alone = Signature::with_shape(text, &Shape::STORED);
        let whole = Signature::with_shape(&[&left[..], text, right].concat(), &Shape::STORED);
        let off = left.len() as u64;
        let lines = left.iter().filter(|&&b| b == b'\n').count() as u64;
        // Every chunk but the last (which may run into the text after
        // it) is the same alone and embedded.
        let last = text
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p as u64);
        let want: Vec<_> = flat(&alone)
            .into_iter()
            .filter(|&(c, ..)| c <= last)
            .map(|(c, l, v, k)| (c + off, l + lines, v, k))
            .collect();
        let got: Vec<_> = flat(&whole)
            .into_iter()
            .filter(|&(c, ..)| c >= off && c <= last + off)
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn marks_point_at_their_chunks() {
    for text in real_text().iter().take(50) {
        let sig = Signature::with_shape(text, &Shape::STORED);
        let lf = text.iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(sig.lines(), lf + u64::from(text.last() != Some(&b'\n')));
        for i in 0..sig.len() {
            let m = sig.mark(i);
            let (start, end) = (m.chunk as usize, (m.chunk + m.len) as usize);
            let before = text[..start].iter().filter(|&&b| b == b'\n').count();
            assert_eq!(m.line, before as u64);
            assert_eq!(m.line_start, start == 0 || text[start - 1] == b'\n');
            assert_eq!(m.line_end, text[end - 1] == b'\n');
            assert!(m.len as usize <= CHUNK);
            assert!(text[start..end - 1].iter().all(|&b| b != b'\n'));
        }
    }
}

#[test]
fn crlf_text_is_signed_without_its_crs() {
    for text in real_text().iter().take(30) {
        let crlf = with_crlf(text);
        let (lf, cr) = (
            Signature::with_shape(text, &Shape::STORED),
            Signature::with_shape(&crlf, &Shape::STORED),
        );
        assert_eq!(lf.symbols, cr.symbols);
        assert_eq!(cr.size(), crlf.len() as u64);
        for i in 0..lf.len() {
            let (a, b) = (lf.mark(i), cr.mark(i));
            // One CR before each earlier line end, and one more inside a
            // chunk that ends its line.
            assert_eq!(b.chunk - a.chunk, a.line);
            assert_eq!(b.len - a.len, u64::from(a.line_end));
            assert_eq!(
                &crlf[b.chunk as usize..(b.chunk + b.len) as usize]
                    .iter()
                    .filter(|&&c| c != b'\r')
                    .copied()
                    .collect::<Vec<u8>>()[..],
                &text[a.chunk as usize..(a.chunk + a.len) as usize]
            );
        }
        // Binary content keeps its CRs.
        let mut binary = crlf.clone();
        binary[0] = 0;
        let mut binary_lf = text.clone();
        binary_lf[0] = 0;
        assert_ne!(
            Signature::with_shape(&binary, &Shape::STORED).chunks,
            Signature::with_shape(&binary_lf, &Shape::STORED).chunks
        );
        // Signing the coarse level alone gives the coarse symbols.
        assert_eq!(
            sign(&crlf, &Shape::STORED, true),
            Signature::with_shape(&crlf, &Shape::STORED).coarse()
        );
    }
}

#[test]
fn stored_form_round_trips_and_refuses_garbage() {
    let mut rng = Rng(7);
    let mut big = real_text()[..8].concat();
    big.extend_from_slice(&real_text()[9]);
    let crlf = with_crlf(&real_text()[3]);
    let huge = real_text()[..200].concat();
    let binary = rng.some_bytes(20_000);
    let mut lines = Vec::new();
    for len in 0..300 {
        lines.extend(std::iter::repeat_n(b'a' + (len % 26) as u8, len % 150));
        lines.push(b'\n');
    }
    let mut extra = vec![
        big.clone(),
        crlf,
        huge.clone(),
        binary,
        Vec::new(),
        b"x".to_vec(),
    ];
    for skip in [0, 1, 7, 31, 63] {
        extra.push(lines[skip..].to_vec());
        extra.push(lines[skip..4000 + skip].to_vec());
    }
    for text in real_text().iter().take(30).chain(&extra) {
        let sig = Signature::new(text);
        // The fast path (no positions, keys as they stream by) is the
        // definition's signature, kept as the store keeps it.
        let stored = Stored::of(text);
        assert_eq!(stored, Stored::from_signature(&sig), "{} bytes", text.len());
        assert_eq!(stored.texts(), sig.texts());
        assert_eq!((stored.size(), stored.lines()), (sig.size(), sig.lines()));
        let mut bytes = Vec::new();
        stored.encode(&mut bytes);
        let mut direct = Vec::new();
        Stored::encode_of(text, &mut direct);
        assert_eq!(bytes, direct);
        assert_eq!(Stored::decode(&bytes), Some(stored.clone()));
        assert_eq!(Stored::decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Stored::decode(&longer), None);
        // Whatever the bytes, decoding never panics.
        for _ in 0..20 {
            let mut b = bytes.clone();
            let i = rng.below(b.len());
            b[i] ^= 1 << rng.below(8);
            let _ = Stored::decode(&b);
        }
        let _ = Stored::decode(&rng.some_bytes(300));
    }
    assert!(!Signature::new(&big).is_fine());
    // A large file keeps its sketch only: 64 to 128 symbols or so,
    // whatever its size, two bytes or less each.
    let stored = Stored::of(&huge);
    assert!(!stored.is_fine());
    assert!(stored.len() <= 256, "{}", stored.len());
    let mut bytes = Vec::new();
    stored.encode(&mut bytes);
    assert!(bytes.len() <= stored.len() * 3 / 2 + 16, "{}", bytes.len());
}

/// `a` with every tenth line (from the fourth) replaced by `line(i)`.
fn every_tenth_line(a: &[u8], line: impl Fn(usize) -> Vec<u8>) -> Vec<u8> {
    a.split_inclusive(|&c| c == b'\n')
        .enumerate()
        .flat_map(|(i, l)| if i % 10 == 3 { line(i) } else { l.to_vec() })
        .collect()
}

/// The similarity estimated from the full signatures and from the stored
/// forms of `a` and `b`.
fn full_and_stored(a: &[u8], b: &[u8]) -> (f64, f64) {
    let full = estimate(&Signature::new(a), &Signature::new(b));
    let kept = super::estimate::estimate_stored(&Stored::of(a), &Stored::of(b));
    if a.len() < FINE_LIMIT as usize && b.len() < FINE_LIMIT as usize {
        assert_eq!(full, kept);
    }
    (full.similarity.unwrap(), kept.similarity.unwrap())
}

#[test]
fn stored_estimates_track_the_full_ones() {
    let texts = real_text();
    // Small and large files, each against a copy with a tenth of its
    // lines replaced, all different: from the stored forms the estimate
    // is the full one's for small files, and near it for large ones
    // (sketches, where each replaced symbol and its replacement are kept
    // independently).
    for k in [1usize, 12] {
        let a = texts[20..20 + k].concat();
        let b = every_tenth_line(&a, |i| {
            format!("    a line of new code({i});\n").into_bytes()
        });
        let (f, s) = full_and_stored(&a, &b);
        assert!((f - s).abs() < 0.15, "{} bytes: {f} {s}", a.len());
        let u = texts[100..100 + k].concat();
        let unrelated = super::estimate::estimate_stored(&Stored::of(&a), &Stored::of(&u));
        assert!(unrelated.similarity.unwrap() < s - 0.3, "{unrelated:?}");
    }
}

#[test]
fn stored_estimates_of_a_line_copied_in_many_places_track_the_full_ones_on_average() {
    // One line copied into a tenth of the lines is one chunk: a sketch
    // keeps its symbol in all the copies or in none, so one such edit is
    // a coin, but over many different lines the sketch's estimate is the
    // full one's.
    let texts = real_text();
    let a = texts[20..32].concat();
    let (mut full, mut stored) = (0.0, 0.0);
    let lines = 48;
    for n in 0..lines {
        let b = every_tenth_line(&a, |_| format!("    new_code_{n}();\n").into_bytes());
        let (f, s) = full_and_stored(&a, &b);
        full += f / f64::from(lines);
        stored += s / f64::from(lines);
    }
    assert!((full - stored).abs() < 0.05, "{full} {stored}");
}

/// Plain dynamic programming: the Levenshtein distance, or with `inside`
/// the least distance of `a` to a substring of `b`.
fn dp(a: &[u8], b: &[u8], inside: bool) -> usize {
    let last = dp_last_row(a, b, inside);
    if inside {
        last.into_iter().min().unwrap_or(0)
    } else {
        last[b.len()]
    }
}

/// The programme's last row: entry `j` is the distance of `a` to `b[..j]`
/// (with `inside`, to the best substring of `b` ending at `j`).
fn dp_last_row(a: &[u8], b: &[u8], inside: bool) -> Vec<usize> {
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| if inside { 0 } else { j }).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(x & 63 != y & 63);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev
}

/// Every distance of `align` for `a` and `b` against the programme: the
/// global one both ways, each inside the other with the first end of a
/// best substring, and the three at once ([`align::distances`]).
fn check_against_dp(a: &[u8], b: &[u8]) {
    let d = dp(a, b, false);
    assert_eq!(align::distance(a, b), d, "{a:?} {b:?}");
    assert_eq!(align::distance(b, a), d, "{b:?} {a:?}");
    let mut inside = [0; 2];
    for (k, (x, y)) in [(a, b), (b, a)].into_iter().enumerate() {
        let row = dp_last_row(x, y, true);
        let best = row.iter().copied().min().unwrap_or(0);
        let first = row.iter().position(|&r| r == best).unwrap_or(0);
        assert_eq!(
            align::distance_inside(x, y),
            (best, first),
            "{x:?} inside {y:?}"
        );
        inside[k] = best;
    }
    let all = align::distances(a, b);
    let want = align::Distances {
        distance: d,
        a_in_b: inside[0],
        b_in_a: inside[1],
        common: lcs_len(a, b),
    };
    assert_eq!(all, want, "{a:?} {b:?}");
    // The portable walk too, where the processor would take AVX2's.
    assert_eq!(align::distances_portable(a, b), want, "{a:?} {b:?}");
}

/// Random symbols (flags in bits 6 and 7 too) from an alphabet of `sigma`.
fn symbols(rng: &mut Rng, len: usize, sigma: usize) -> Vec<u8> {
    (0..len)
        .map(|_| rng.below(sigma) as u8 | (rng.next() as u8 & 0xc0))
        .collect()
}

#[test]
fn distances_match_dynamic_programming_at_every_length() {
    // Every pattern length from 0 to 300 crosses the word sizes (64, 128,
    // 192, 256) and the longer patterns' block walk, against an edited
    // copy (small distances), a string of the same length, one of any
    // length up to 300 and its own first half.
    let mut rng = Rng(2024);
    for len in 0..=300 {
        let sigma = [2, 4, 64][len % 3];
        let a = symbols(&mut rng, len, sigma);
        let mut edited = a.clone();
        for _ in 0..rng.below(len / 8 + 2) {
            let at = rng.below(edited.len() + 1);
            match rng.below(3) {
                0 if at < edited.len() => {
                    edited.remove(at);
                }
                1 => edited.insert(at, rng.below(sigma) as u8),
                _ if at < edited.len() => edited[at] = rng.below(sigma) as u8,
                _ => {}
            }
        }
        let same = symbols(&mut rng, len, sigma);
        let any_len = rng.below(301);
        let any = symbols(&mut rng, any_len, sigma);
        for b in [&edited[..], &same, &any, &a[..len / 2]] {
            check_against_dp(&a, b);
        }
    }
}

#[test]
fn signature_distances_match_dynamic_programming() {
    // Real signatures at every level the estimates compare: fine, coarse,
    // and the stored sketches, of files of one to twelve corpus texts,
    // each against an edited copy and an unrelated file.
    let texts = real_text();
    for k in 1..=12 {
        let a = texts[30..30 + k].concat();
        let edited: Vec<u8> = a
            .split_inclusive(|&c| c == b'\n')
            .enumerate()
            .flat_map(|(i, l)| if i % 7 == 2 { &b"changed();\n"[..] } else { l })
            .copied()
            .collect();
        let other = texts[200..200 + k].concat();
        for b in [&edited, &other] {
            let sa = Signature::with_shape(&a, &Shape::STORED);
            let sb = Signature::with_shape(b, &Shape::STORED);
            check_against_dp(sa.symbols(), sb.symbols());
            check_against_dp(sa.coarse().symbols(), sb.coarse().symbols());
            let (xa, xb) = (Stored::of(&a), Stored::of(b));
            let l = xa.level().max(xb.level()).max(2);
            let ka = xa.sketch(l).unwrap_or_default();
            let kb = xb.sketch(l).unwrap_or_default();
            check_against_dp(&ka, &kb);
        }
    }
}

#[test]
fn stored_estimates_walk_as_the_portable_walk() {
    // What estimates compare, from real files: the stored forms of corpus
    // texts cut to sizes from 1 KB (fine symbols) to 40 KB (sketches),
    // each against a copy with a tenth of its lines replaced and against
    // the next text, at the level an estimate reads them. The walk the
    // processor takes (AVX2 where it has it) gives the portable walk's
    // numbers, on strings of every length up to 256 symbols.
    let texts = real_text();
    let mut lengths = std::collections::BTreeSet::new();
    for size in [1_000, 3_000, 6_000, 10_000, 16_000, 40_000] {
        let cut: Vec<&[u8]> = texts
            .iter()
            .filter(|t| t.len() >= size)
            .map(|t| &t[..size])
            .take(60)
            .collect();
        for (i, &a) in cut.iter().enumerate() {
            let edited = every_tenth_line(a, |k| format!("    changed({k});\n").into_bytes());
            for b in [&edited[..], cut[(i + 1) % cut.len()]] {
                let (xa, xb) = (Stored::of(a), Stored::of(b));
                let (sa, sb) = match (xa.fine(), xb.fine()) {
                    (Some(fa), Some(fb)) => (fa.to_vec(), fb.to_vec()),
                    _ => {
                        let l = xa.level().max(xb.level()).max(2);
                        (xa.sketch(l).unwrap(), xb.sketch(l).unwrap())
                    }
                };
                let want = align::distances_portable(&sa, &sb);
                assert_eq!(align::distances(&sa, &sb), want, "{sa:?} {sb:?}");
                assert_eq!(align::distances(&sb, &sa).distance, want.distance);
                lengths.insert(sa.len().max(sb.len()).div_ceil(64));
            }
        }
    }
    // Pairs for each number of 64-symbol blocks, 1 to 4, and longer.
    assert!(
        (1..=4).all(|b| lengths.contains(&b)) && lengths.iter().any(|&b| b > 4),
        "{lengths:?}"
    );
}

#[test]
fn sketches_read_in_place_are_the_sketches() {
    // Files under and over FINE_LIMIT, at their own level and above, as
    // estimates read them.
    let texts = real_text();
    for k in [1, 2, 4, 8, 16, 40, 100] {
        let data = texts[50..50 + k].concat();
        for stored in [Stored::of(&data), Stored::of(&data[..data.len() / 3])] {
            for l in 2..12 {
                let mut buf = [0; 256];
                let fast = stored.sketch_in(l, &mut buf).map(|s| s.into_owned());
                assert_eq!(fast, stored.sketch(l), "{} bytes, level {l}", stored.size());
            }
        }
    }
}

/// Plain dynamic programming: the length of the longest common
/// subsequence (symbols compared on their values).
pub(super) fn lcs_len(a: &[u8], b: &[u8]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    for &x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x & 63 == y & 63 {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    prev[b.len()]
}

#[test]
fn distances_match_dynamic_programming() {
    let mut rng = Rng(99);
    for round in 0..400 {
        let alphabet = [2, 4, 64][round % 3];
        let len_a = rng.below([20, 70, 200][round % 3]);
        let a: Vec<u8> = (0..len_a).map(|_| rng.below(alphabet) as u8).collect();
        // Related strings as well as unrelated ones.
        let mut b = a.clone();
        for _ in 0..rng.below(30) {
            let at = rng.below(b.len() + 1);
            match rng.below(3) {
                0 if at < b.len() => {
                    b.remove(at);
                }
                1 => b.insert(at, rng.below(alphabet) as u8),
                _ if at < b.len() => b[at] = rng.below(alphabet) as u8 | 64,
                _ => {}
            }
        }
        if round % 5 == 0 {
            b = (0..rng.below(150))
                .map(|_| rng.below(alphabet) as u8)
                .collect();
        }
        assert_eq!(align::distance(&a, &b), dp(&a, &b, false), "{a:?} {b:?}");
        assert_eq!(align::distance(&b, &a), dp(&b, &a, false));
        let (d, end) = align::distance_inside(&a, &b);
        assert_eq!(d, dp(&a, &b, true), "{a:?} inside {b:?}");
        assert!(end <= b.len());
        let (ka, kb): (Vec<u8>, Vec<u8>) = (
            a.iter().map(|x| x & 63).collect(),
            b.iter().map(|x| x & 63).collect(),
        );
        let m = align::matches(&ka, &kb);
        assert_eq!(m.len(), lcs_len(&a, &b), "{a:?} {b:?}");
        for w in m.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
        }
        assert!(m.iter().all(|&(i, j)| a[i] & 63 == b[j] & 63));
    }
}

#[test]
fn identical_files_estimate_as_identical() {
    let text = &real_text()[10];
    let s = Signature::new(text);
    let e = estimate(&s, &s);
    assert_eq!(e.symbol_distance, 0);
    assert_eq!(e.edit_distance, 0);
    assert_eq!(e.similarity, Some(1.0));
    assert_eq!((e.a_in_b, e.b_in_a), (Some(1.0), Some(1.0)));
    assert!(regions(&s, &s).is_empty());
}

#[test]
fn regions_hold_the_lines_edited() {
    let texts = real_text();
    let mut rng = Rng(5);
    let mut edits = 0;
    for text in texts
        .iter()
        .filter(|t| t.len() > 3000 && (t.len() as u64) < FINE_LIMIT)
        .take(40)
    {
        // Replace a few lines in the middle by lines of another file.
        let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
        if lines.len() < 40 {
            continue;
        }
        let from = 10 + rng.below(lines.len() - 30);
        let count = 1 + rng.below(5);
        let other = &texts[rng.below(texts.len())];
        let new_lines: Vec<&[u8]> = other.split_inclusive(|&b| b == b'\n').take(count).collect();
        let mut b = Vec::new();
        for l in lines[..from]
            .iter()
            .chain(&new_lines)
            .chain(&lines[from + count..])
        {
            b.extend_from_slice(l);
        }
        let (sa, sb) = (Signature::new(text), Signature::new(&b));
        let rs = regions(&sa, &sb);
        edits += 1;
        let (first, last) = (from as u64, (from + count - 1) as u64);
        // Every line that changed is inside a region, in both files.
        let changed = |l: u64| {
            let k = (l - first) as usize;
            new_lines.get(k) != Some(&lines[l as usize])
        };
        for l in (first..=last).filter(|&l| changed(l)) {
            assert!(
                rs.iter()
                    .any(|r| r.a.line_count() > 0 && r.a.first_line <= l && r.a.last_line >= l),
                "line {l} of {first}..={last}: {rs:?}"
            );
        }
        for l in (first..first + new_lines.len() as u64).filter(|&l| l > last || changed(l)) {
            assert!(
                rs.iter()
                    .any(|r| r.b.line_count() > 0 && r.b.first_line <= l && r.b.last_line >= l),
                "new line {l}: {rs:?}"
            );
        }
        // Regions stay near the edit: a few chunks without a symbol
        // around it at most.
        let claimed: u64 = rs.iter().map(|r| r.a.line_count()).sum();
        assert!(
            claimed <= count as u64 + 12,
            "{claimed} lines claimed for {count}: {rs:?}"
        );
    }
    assert!(edits >= 20);
}

#[test]
fn containment_sees_a_text_inside_another() {
    let texts = real_text();
    for k in 0..10 {
        let (left, text, right) = (&texts[k], &texts[k + 300], &texts[k + 400]);
        let whole = [&left[..], text, right].concat();
        let (s, w) = (Signature::new(text), Signature::new(&whole));
        let e = estimate(&s, &w);
        assert!(e.a_in_b.unwrap() > 0.9, "{e:?}");
        // At most the text's share of the whole, and some noise.
        let share = text.len() as f64 / whole.len() as f64;
        assert!(e.b_in_a.unwrap() < share + 0.1, "{e:?}, {share}");
        let unrelated = estimate(&s, &Signature::new(left));
        assert!(unrelated.a_in_b.unwrap() < 0.6, "{unrelated:?}");
    }
}

#[test]
fn byte_distances_match_dynamic_programming() {
    let texts = real_text();
    let mut rng = Rng(3);
    for text in texts.iter().take(40) {
        let a = &text[..rng.below(text.len().min(400))];
        let mut b = a.to_vec();
        for _ in 0..rng.below(20) {
            let at = rng.below(b.len() + 1);
            if rng.below(2) == 0 && at < b.len() {
                b.remove(at);
            } else {
                b.insert(at, rng.below(256) as u8);
            }
        }
        // The plain programme over whole bytes.
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, &x) in a.iter().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(x != y))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1);
            }
            prev = cur;
        }
        assert_eq!(align::byte_distance(a, &b), prev[b.len()]);
    }
}

#[test]
fn sketches_stay_short_and_share_a_level_within_the_size_window() {
    let texts = real_text();
    let mut sizes = Vec::new();
    for k in [1, 2, 5, 20, 60] {
        let data = texts[..k].concat();
        let t = Signature::new(&data).texts();
        assert_eq!(t.level, sketch::level(data.len() as u64));
        // About 128 symbols at the level, 64 at the next: never many
        // more (a 2x margin for chance).
        assert!(
            t.sketch.len() <= 256,
            "{} bytes: {}",
            data.len(),
            t.sketch.len()
        );
        assert!(t.sketch_next.len() <= t.sketch.len() + 8);
        if data.len() > 4096 {
            assert!(
                t.sketch.len() >= 32,
                "{} bytes: {}",
                data.len(),
                t.sketch.len()
            );
        }
        sizes.push(data.len() as u64);
    }
    // Git's size window (4/5) never spans two level boundaries.
    for s in (1000..2_000_000u64).step_by(997) {
        let lo = sketch::level(s * 4 / 5);
        let hi = sketch::level(s);
        assert!(hi - lo <= 1, "{s}");
    }
    // An edited copy keeps most of its sketch; an unrelated file does not.
    let a = texts[..6].concat();
    let b: Vec<u8> = a
        .split_inclusive(|&c| c == b'\n')
        .enumerate()
        .flat_map(|(i, l)| {
            if i % 20 == 7 {
                &b"    changed();\n"[..]
            } else {
                l
            }
        })
        .copied()
        .collect();
    let (ta, tb) = (Signature::new(&a).texts(), Signature::new(&b).texts());
    let tu = Signature::new(&texts[100..106].concat()).texts();
    let d = |x: &str, y: &str| {
        align::byte_distance(x.as_bytes(), y.as_bytes()) as f64 / x.len().max(y.len()) as f64
    };
    assert_eq!(ta.level, tb.level);
    assert!(d(&ta.sketch, &tb.sketch) < 0.25, "{ta:?} {tb:?}");
    let unrelated = if ta.level == tu.level {
        d(&ta.sketch, &tu.sketch)
    } else {
        d(&ta.sketch_next, &tu.sketch)
    };
    assert!(unrelated > 0.6, "{unrelated}");
}
