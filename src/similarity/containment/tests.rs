use super::*;
use crate::testing::{Rng, real_text};

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// Light edits: about one line in 20 replaced, one in 40 inserted.
fn edit(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    for line in lines(data) {
        match rng.below(40) {
            0 | 1 => out.extend_from_slice(format!("// edited {}\n", rng.next()).as_bytes()),
            2 => {
                out.extend_from_slice(line);
                out.extend_from_slice(format!("let added = {};\n", rng.next()).as_bytes());
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

/// `data` cut at line ends into `k` parts of random sizes.
fn cut(rng: &mut Rng, data: &[u8], k: usize) -> Vec<Vec<u8>> {
    let ls = lines(data);
    let mut ends: Vec<usize> = (0..k - 1)
        .map(|_| 1 + rng.below(ls.len().max(2) - 1))
        .collect();
    ends.push(ls.len());
    ends.sort_unstable();
    let mut parts = Vec::new();
    let mut start = 0;
    for end in ends {
        parts.push(ls[start..end.max(start)].concat());
        start = end.max(start);
    }
    parts
}

#[test]
fn containment_is_one_sided() {
    let whole = Spans::new(b"alpha\nbeta\ngamma\ndelta\n");
    let part = Spans::new(b"beta\ngamma\n");
    assert_eq!(contained(&part, &whole), MAX_SCORE);
    // 11 of the whole's 23 bytes are in the part.
    assert_eq!(contained(&whole, &part), 11 * MAX_SCORE / 23);
    assert_eq!(contained(&Spans::new(b""), &whole), 0);
    // Repeats count up to the other side's count only.
    let thrice = Spans::new(b"x\nx\nx\n");
    assert_eq!(
        contained(&thrice, &Spans::new(b"x\ny\n")),
        2 * MAX_SCORE / 6
    );
}

#[test]
fn cover_counts_a_chunk_once_across_parts() {
    let whole = Spans::new(b"a\nb\nc\nd\n");
    let p1 = Spans::new(b"a\nb\n");
    let p2 = Spans::new(b"b\nc\n");
    let mut cover = Cover::new(&whole);
    assert_eq!(cover.gain(&p1), 4);
    assert_eq!(cover.add(&p1), 4);
    // b is already found: only c is new.
    assert_eq!(cover.gain(&p2), 2);
    assert_eq!(cover.add(&p2), 2);
    assert_eq!(cover.covered(), 6);
    assert_eq!(cover.containment(), 6 * MAX_SCORE / 8);
    assert_eq!(cover.add(&p2), 0, "the same part again adds nothing");
}

#[test]
fn cover_of_one_part_is_containment_on_real_text() {
    let files = real_text();
    for pair in files.chunks(2).take(100) {
        let (a, b) = (Spans::new(&pair[0]), Spans::new(&pair[1]));
        let mut cover = Cover::new(&a);
        cover.add(&b);
        assert_eq!(cover.containment(), contained(&a, &b));
    }
}

#[test]
fn rate_one_estimates_exactly() {
    let files = real_text();
    let mut rng = Rng(7);
    for f in files.iter().take(60) {
        let g = &files[rng.below(files.len())];
        let x = [&edit(&mut rng, &f[..f.len() / 2]), &g[..]].concat();
        let (a, b) = (Spans::new(f), Spans::new(&x));
        let (sa, sb) = (Sample::with_rate(&a, 1), Sample::with_rate(&b, 1));
        assert_eq!(estimate(&sa, &sb), Some(contained(&a, &b)));
        assert_eq!(estimate(&sb, &sa), Some(contained(&b, &a)));
    }
}

#[test]
fn rates_nest_and_mixed_rates_compare_at_the_coarser() {
    let files = real_text();
    let a = Spans::new(&files[3]);
    let b = Spans::new(&[&files[3][..files[3].len() / 2], &files[4][..]].concat());
    let (a8, a16) = (Sample::with_rate(&a, 8), Sample::with_rate(&a, 16));
    let b16 = Sample::with_rate(&b, 16);
    assert!(a16.entries.iter().all(|e| a8.entries.contains(e)));
    assert!(a16.len() < a8.len());
    assert_eq!(estimate(&a8, &b16), estimate(&a16, &b16));
    // A rate that is not a power of two is rounded up.
    assert_eq!(Sample::with_rate(&a, 5), a8);
}

#[test]
fn index_overlaps_equal_pairwise_estimates() {
    let files = real_text();
    let mut rng = Rng(11);
    let samples: Vec<Sample> = files
        .iter()
        .take(150)
        .map(|f| Sample::new(&Spans::new(f)))
        .collect();
    let index = SampleIndex::new(&samples);
    for _ in 0..20 {
        let f = &files[rng.below(150)];
        let q = Sample::new(&Spans::new(&edit(&mut rng, &f[..f.len() * 2 / 3])));
        let found = index.overlaps(&q);
        assert!(!found.is_empty());
        for (i, s) in samples.iter().enumerate() {
            match found.iter().find(|o| o.item == i) {
                Some(o) => {
                    assert_eq!(o.query_in_item, estimate(&q, s));
                    assert_eq!(o.item_in_query, estimate(s, &q));
                }
                // Nothing shared: an estimate of zero or none.
                None => assert!(matches!(estimate(&q, s), None | Some(0))),
            }
        }
    }
}

/// The table of docs/design.md: real files of the pinned corpus cut into 2-6 parts
/// and parts of two files merged, lightly edited; the estimate at several
/// rates against the exact containment, by band of the exact value.
#[test]
fn estimate_error_by_band() {
    let files = real_text();
    let mut rng = Rng(2026);
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let g = &files[(i * 7 + 13) % files.len()];
        if i % 2 == 0 {
            let k = 2 + rng.below(5);
            for part in cut(&mut rng, f, k) {
                let part = edit(&mut rng, &part);
                pairs.push((part.clone(), f.clone()));
                pairs.push((f.clone(), part));
            }
        } else {
            let fp = cut(&mut rng, f, 2).swap_remove(rng.below(2));
            let gp = cut(&mut rng, g, 2).swap_remove(rng.below(2));
            let merged = edit(&mut rng, &[fp, gp].concat());
            pairs.push((f.clone(), merged.clone()));
            pairs.push((merged.clone(), f.clone()));
            pairs.push((g.clone(), merged));
        }
    }
    let bands = [(0, 10), (10, 30), (30, 50), (50, 70), (70, 90), (90, 101)];
    let rates = [4u32, 8, 16];
    // errors[rate][band]: absolute errors in percentage points; none[rate][band].
    let mut errors = vec![vec![Vec::<f64>::new(); bands.len()]; rates.len()];
    let mut none = vec![vec![0usize; bands.len()]; rates.len()];
    let mut kept = vec![0usize; rates.len()];
    let mut buckets = 0usize;
    // Parts under 1 KiB (a few lines) are left out: too small to sample,
    // and too small to be worth a split or merge report.
    pairs.retain(|(a, _)| a.len() >= 1024);
    for (a, b) in &pairs {
        let (sa, sb) = (Spans::new(a), Spans::new(b));
        let exact = f64::from(contained(&sa, &sb)) * 100.0 / f64::from(MAX_SCORE);
        let band = bands
            .iter()
            .position(|&(lo, hi)| exact >= f64::from(lo) && exact < f64::from(hi))
            .unwrap_or(bands.len() - 1);
        buckets += sa.bucket_count();
        for (r, &rate) in rates.iter().enumerate() {
            let (xa, xb) = (Sample::with_rate(&sa, rate), Sample::with_rate(&sb, rate));
            kept[r] += xa.len();
            match estimate(&xa, &xb) {
                Some(e) => errors[r][band]
                    .push((f64::from(e) * 100.0 / f64::from(MAX_SCORE) - exact).abs()),
                None => none[r][band] += 1,
            }
        }
    }
    println!(
        "{} pairs; buckets kept per file: {}",
        pairs.len(),
        rates
            .iter()
            .zip(&kept)
            .map(|(r, k)| format!("1/{r}: {:.1}%", *k as f64 * 100.0 / buckets as f64))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "| exact containment | pairs | {} |",
        rates
            .iter()
            .map(|r| format!("1/{r}: mean / p95 / max error, no estimate"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---:|{}", "---:|".repeat(rates.len()));
    for (k, &(lo, hi)) in bands.iter().enumerate() {
        let n = errors[0][k].len() + none[0][k];
        let mut row = format!("| {lo}-{}% | {n} |", hi.min(100));
        for r in 0..rates.len() {
            let e = &mut errors[r][k];
            e.sort_by(f64::total_cmp);
            let mean = e.iter().sum::<f64>() / e.len().max(1) as f64;
            let p95 = e.get(e.len() * 95 / 100).copied().unwrap_or(0.0);
            let max = e.last().copied().unwrap_or(0.0);
            row += &format!(" {mean:.1} / {p95:.1} / {max:.1}, {} |", none[r][k]);
        }
        println!("{row}");
    }
    // What candidate search relies on at the default rate: a pair holding
    // at least a fifth of the file is rarely (under 1%) estimated under the bar
    // (CANDIDATE_BAR) that keeps it a candidate (no estimate counts as a
    // candidate: it is compared exactly).
    let r = rates.iter().position(|&r| r == DEFAULT_RATE).unwrap();
    let mut missed = 0;
    let mut wanted = 0;
    for (a, b) in &pairs {
        let (sa, sb) = (Spans::new(a), Spans::new(b));
        if contained(&sa, &sb) < MAX_SCORE / 5 {
            continue;
        }
        wanted += 1;
        let (xa, xb) = (
            Sample::with_rate(&sa, rates[r]),
            Sample::with_rate(&sb, rates[r]),
        );
        if estimate(&xa, &xb).is_some_and(|e| e < CANDIDATE_BAR) {
            missed += 1;
        }
    }
    println!("pairs of 20% or more estimated under the candidate bar: {missed} of {wanted}");
    assert!(wanted > 1000);
    assert!(missed * 100 < wanted, "{missed} of {wanted} missed");
}

#[test]
fn bounds_hold_the_exact_shared_bytes() {
    let files = real_text();
    let mut rng = Rng(5);
    let spans: Vec<Spans> = files.iter().take(200).map(|f| Spans::new(f)).collect();
    let samples: Vec<Sample> = spans.iter().map(|s| Sample::with_rate(s, 1)).collect();
    let index = SampleIndex::new(&samples);
    let mut tight = 0;
    for max_holders in [0, 3, 20, 1000] {
        for _ in 0..10 {
            let f = &files[rng.below(200)];
            let q = Spans::new(&edit(&mut rng, &f[..f.len() / 2]));
            let bounds = index.bounds(&Sample::with_rate(&q, 1), max_holders);
            assert_eq!(bounds.len(), spans.len());
            for (i, least, most) in bounds {
                let exact = score::copied(&q, &spans[i]);
                assert!(least <= exact && exact <= most, "{least} {exact} {most}");
                tight += usize::from(least == most);
            }
        }
    }
    // With no bucket common (1000 holders), the bounds are exact.
    assert!(tight >= 2000, "{tight}");
}
