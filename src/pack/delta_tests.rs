//! Tests of [`crate::pack::delta`], kept apart from the module so that
//! the module reads as the format and the algorithm.

use super::*;
use crate::testing::Rng;

/// One decoded instruction, to check what the encoder chose.
#[derive(Debug, PartialEq)]
enum Op {
    Copy { offset: u64, size: u64 },
    Insert(usize),
}

/// The instructions of a valid delta (the test's own parser, written
/// separately from [`apply`] so the two check each other).
fn ops(delta: &[u8]) -> Vec<Op> {
    let mut at = 0;
    read_size(delta, &mut at).unwrap();
    read_size(delta, &mut at).unwrap();
    let mut ops = Vec::new();
    while at < delta.len() {
        let cmd = delta[at];
        at += 1;
        if cmd & 0x80 == 0 {
            ops.push(Op::Insert(cmd as usize));
            at += cmd as usize;
            continue;
        }
        let mut v = [0u64; 7];
        for (i, v) in v.iter_mut().enumerate() {
            if cmd & (1 << i) != 0 {
                *v = delta[at] as u64;
                at += 1;
            }
        }
        let offset = v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24;
        let size = match v[4] | v[5] << 8 | v[6] << 16 {
            0 => 0x10000,
            s => s,
        };
        ops.push(Op::Copy { offset, size });
    }
    ops
}

/// Encodes, decodes and checks the bound: the delta reproduces the
/// target, and `max_size` is exact (the delta's own length passes, one
/// byte less fails).
fn round_trip(base: &[u8], target: &[u8]) -> Vec<u8> {
    let index = Index::new(base);
    let d = index.delta(target, usize::MAX).unwrap();
    assert_eq!(sizes(&d).unwrap(), (base.len() as u64, target.len() as u64));
    let out = apply(base, &d).unwrap();
    assert!(out == target, "delta does not reproduce the target");
    assert_eq!(index.delta(target, d.len()).as_deref(), Some(&d[..]));
    assert_eq!(index.delta(target, d.len() - 1), None);
    // Literals are cut into inserts only where they must be: every
    // insert followed by another is full.
    let ops = ops(&d);
    for w in ops.windows(2) {
        if let [Op::Insert(n), Op::Insert(_)] = w {
            assert_eq!(*n, MAX_INSERT);
        }
    }
    // No copy costs more than its bytes would as an insert of their own.
    for op in &ops {
        if let Op::Copy { offset, size } = *op {
            let cost = copy_cost(offset as usize, size.min(MAX_COPY as u64) as usize);
            assert!(size as usize + 1 >= cost, "{op:?}");
        }
    }
    d
}

/// Real text of the pinned corpus (code in three languages, prose).
fn sources() -> Vec<Vec<u8>> {
    crate::testing::real_text()
}

/// Line-level edits a commit makes: insertions (from other files),
/// deletions, moves of a block of lines, and small in-line changes.
fn edit(data: &[u8], donors: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = data
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    for _ in 0..1 + rng.below(8) {
        let n = lines.len();
        match rng.below(4) {
            0 => {
                let donor = &donors[rng.below(donors.len())];
                let donor: Vec<_> = donor.split_inclusive(|&b| b == b'\n').collect();
                let from = rng.below(donor.len());
                let k = 1 + rng.below(20);
                let new: Vec<_> = donor[from..(from + k).min(donor.len())]
                    .iter()
                    .map(|l| l.to_vec())
                    .collect();
                let at = rng.below(n + 1);
                lines.splice(at..at, new);
            }
            1 if n > 0 => {
                let at = rng.below(n);
                let k = (1 + rng.below(30)).min(n - at);
                lines.drain(at..at + k);
            }
            2 if n > 2 => {
                let at = rng.below(n);
                let k = (1 + rng.below(40)).min(n - at);
                let block: Vec<_> = lines.drain(at..at + k).collect();
                let to = rng.below(lines.len() + 1);
                lines.splice(to..to, block);
            }
            _ if n > 0 => {
                let line = &mut lines[rng.below(n)];
                if !line.is_empty() {
                    let i = rng.below(line.len());
                    line[i] = b"abcxyz_(){};"[rng.below(12)];
                }
            }
            _ => {}
        }
    }
    lines.concat()
}

#[test]
fn empty_and_tiny() {
    round_trip(b"", b"");
    round_trip(b"", b"x");
    round_trip(b"x", b"");
    round_trip(b"some base text", b"");
    let mut rng = Rng(1);
    for _ in 0..2000 {
        let base = rng.some_bytes(48);
        let target = match rng.below(3) {
            0 => rng.some_bytes(48),
            1 => base.clone(),
            _ => {
                let mut t = base.clone();
                t.extend(rng.some_bytes(8));
                t
            }
        };
        round_trip(&base, &target);
    }
    // Literals only: the header and one insert of the byte.
    assert_eq!(delta(b"", b"x"), [0, 1, 1, b'x']);
    assert_eq!(delta(b"", b""), [0, 0]);
}

#[test]
fn identical_inputs_are_one_copy() {
    let mut rng = Rng(2);
    for n in [1, 15, 16, 17, 100, 4096, 0x10000, 0x10001, 1 << 20] {
        let data = rng.bytes(n);
        let d = round_trip(&data, &data);
        assert_eq!(
            ops(&d),
            [Op::Copy {
                offset: 0,
                size: n as u64
            }]
        );
    }
    // A 64 KiB copy needs no size bytes at all.
    let d = delta(&[7; 0x10000], &[7; 0x10000]);
    assert_eq!(&d[d.len() - 1..], [0x80]);
}

#[test]
fn binary_with_every_byte_value() {
    let mut rng = Rng(3);
    let all: Vec<u8> = (0..=255u8).cycle().take(256 * 64).collect();
    for _ in 0..200 {
        let mut base = all.clone();
        // Shuffle blocks of bytes so copies come from everywhere.
        for _ in 0..rng.below(50) {
            let (i, j) = (rng.below(base.len()), rng.below(base.len()));
            base.swap(i, j);
        }
        let mut target = Vec::new();
        while target.len() < 20_000 {
            if rng.below(3) == 0 {
                target.extend(rng.some_bytes(300));
            } else {
                let at = rng.below(base.len());
                let n = rng.below(2000).min(base.len() - at);
                target.extend_from_slice(&base[at..at + n]);
            }
        }
        round_trip(&base, &target);
        round_trip(&target, &base);
    }
}

#[test]
fn runs_and_repetitive_data() {
    let mut rng = Rng(4);
    for _ in 0..100 {
        let unit = rng.some_bytes(40);
        let unit = if unit.is_empty() { vec![b'u'] } else { unit };
        let base: Vec<u8> = unit
            .iter()
            .copied()
            .cycle()
            .take(rng.below(100_000))
            .collect();
        let mut target = base.clone();
        for _ in 0..rng.below(10) {
            let at = rng.below(target.len() + 1);
            target.splice(at..at, rng.some_bytes(50));
        }
        round_trip(&base, &target);
        round_trip(&vec![0; rng.below(300_000)], &vec![0; rng.below(300_000)]);
    }
}

#[test]
fn real_text_edits() {
    let files = sources();
    let mut rng = Rng(5);
    let (mut delta_bytes, mut target_bytes) = (0, 0);
    for round in 0..600 {
        let base = &files[round % files.len()];
        let target = edit(base, &files, &mut rng);
        let d = round_trip(base, &target);
        delta_bytes += d.len();
        target_bytes += target.len();
        // Edits of the edit: a chain, as a packer builds.
        let again = edit(&target, &files, &mut rng);
        round_trip(&target, &again);
        round_trip(&again, base);
    }
    // A handful of line edits leave most of a file to copies.
    assert!(
        delta_bytes * 10 < target_bytes,
        "{delta_bytes} delta bytes for {target_bytes} target bytes"
    );
}

#[test]
fn unrelated_text_gives_up_early() {
    let files = sources();
    let (a, b) = (&files[0], &files[1]);
    let index = Index::new(a);
    assert_eq!(index.delta(b, b.len() / 10), None);
    assert!(index.delta(b, usize::MAX).is_some());
}

#[test]
fn large_copies_and_offsets() {
    let mut rng = Rng(6);
    // Over 16 MiB, so copies need all four offset bytes, and runs long
    // enough for copies over 64 KiB and over the 24-bit copy size.
    let base = rng.bytes(20 << 20);
    let mut target = Vec::new();
    target.extend_from_slice(&base[17 << 20..(17 << 20) + 300_000]);
    target.extend(rng.bytes(1000));
    target.extend_from_slice(&base[100..(100 + (17 << 20))]);
    target.extend_from_slice(&base[5 << 20..(5 << 20) + 70_000]);
    let d = round_trip(&base, &target);
    let ops = ops(&d);
    assert!(ops.contains(&Op::Copy {
        offset: 17 << 20,
        size: 300_000
    }));
    assert!(ops.contains(&Op::Copy {
        offset: 100,
        size: MAX_COPY as u64
    }));
    assert!(
        ops.contains(&Op::Copy {
            offset: (5 << 20) - 1,
            size: 70_001
        }) || ops.contains(&Op::Copy {
            offset: 5 << 20,
            size: 70_000
        })
    );
    assert!(d.len() < 1200, "{} bytes", d.len());
}

#[test]
fn several_megabytes_of_edited_text() {
    let files = sources();
    let mut rng = Rng(7);
    let mut base = Vec::new();
    while base.len() < 4 << 20 {
        base.extend_from_slice(&files[rng.below(files.len())]);
    }
    let mut target = base.clone();
    for _ in 0..20 {
        target = edit(&target, &files, &mut rng);
    }
    let d = round_trip(&base, &target);
    assert!(d.len() < target.len() / 50, "{} bytes", d.len());
}

#[test]
fn corrupt_deltas_are_errors() {
    let base = b"0123456789abcdefghij";
    // Header truncated, or sizes that do not fit.
    assert_eq!(apply(base, b""), Err(DeltaError::Truncated { at: 0 }));
    assert_eq!(apply(base, b"\x14"), Err(DeltaError::Truncated { at: 1 }));
    assert_eq!(apply(base, b"\x94"), Err(DeltaError::Truncated { at: 1 }));
    let huge = [0xff; 10];
    assert_eq!(
        apply(base, &[&huge[..], &[0x7f]].concat()),
        Err(DeltaError::SizeOverflow { at: 0 })
    );
    // Exactly u64::MAX still parses, as a mismatch.
    let max = [&[0xff; 9][..], &[0x01]].concat();
    assert_eq!(sizes(&[&max[..], &[0]].concat()), Ok((u64::MAX, 0)));
    assert_eq!(
        apply(base, &[&max[..], &[0]].concat()),
        Err(DeltaError::BaseSizeMismatch {
            expected: u64::MAX,
            actual: 20
        })
    );
    assert_eq!(
        apply(base, b"\x13\x05"),
        Err(DeltaError::BaseSizeMismatch {
            expected: 19,
            actual: 20
        })
    );
    // Instructions: reserved byte, truncated copy arguments and literals.
    assert_eq!(
        apply(base, b"\x14\x05\x00"),
        Err(DeltaError::Reserved { at: 2 })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x91\x02"),
        Err(DeltaError::Truncated { at: 4 })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x05abc"),
        Err(DeltaError::Truncated { at: 3 })
    );
    // Copies outside the base: past its end, and size 0 meaning 64 KiB.
    assert_eq!(
        apply(base, b"\x14\x05\x91\x10\x05"),
        Err(DeltaError::CopyOutOfRange {
            offset: 16,
            size: 5,
            base_len: 20
        })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x80"),
        Err(DeltaError::CopyOutOfRange {
            offset: 0,
            size: 0x10000,
            base_len: 20
        })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x8f\xff\xff\xff\xff"),
        Err(DeltaError::CopyOutOfRange {
            offset: u32::MAX as u64,
            size: 0x10000,
            base_len: 20
        })
    );
    // Too few and too many bytes for the header's result size.
    assert_eq!(
        apply(base, b"\x14\x05\x91\x02\x04"),
        Err(DeltaError::ResultSizeMismatch {
            expected: 5,
            actual: 4
        })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x91\x02\x06"),
        Err(DeltaError::ResultSizeMismatch {
            expected: 5,
            actual: 6
        })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x91\x02\x04\x02xy"),
        Err(DeltaError::ResultSizeMismatch {
            expected: 5,
            actual: 6
        })
    );
    assert_eq!(
        apply(base, b"\x14\x05\x91\x02\x04\x01x"),
        Ok(b"2345x".to_vec())
    );
    // A result size too large to allocate is refused when the
    // instructions run out, not by allocating it.
    assert_eq!(
        apply(base, &[&b"\x14"[..], &max[..], b"\x01x"].concat()),
        Err(DeltaError::ResultSizeMismatch {
            expected: u64::MAX,
            actual: 1
        })
    );
}

#[test]
fn mutated_deltas_never_panic() {
    let files = sources();
    let mut rng = Rng(8);
    for round in 0..300 {
        let base = &files[round % files.len()];
        let target = edit(base, &files, &mut rng);
        let d = delta(base, &target);
        // Every truncation is an error.
        for cut in 0..d.len().min(200) {
            assert!(apply(base, &d[..cut]).is_err());
        }
        assert!(apply(base, &d[..d.len() - 1]).is_err());
        for _ in 0..20 {
            let mut bad = d.clone();
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(bad.len());
                bad[i] = rng.next() as u8;
            }
            // Whatever comes out, it must not panic, and a success must
            // honour the header.
            if let Ok(out) = apply(base, &bad) {
                assert_eq!(sizes(&bad).unwrap().1, out.len() as u64);
            }
        }
    }
}

/// Delta sizes against git's, and throughput, on pairs of real files:
/// set `GIT_SIMM_DELTA_PAIRS` to a directory of `NNNN.base` and
/// `NNNN.target` files and a `git-sizes.txt` of lines `NNNN <size>
/// <size-in-packfile> ...` (-1 -1 where git made no delta), and run with
/// `--ignored --nocapture`. The sizes are the delta's two columns in
/// `git verify-pack -v` of the pack that `git pack-objects --window=10
/// --depth=50 --no-reuse-delta --no-reuse-object --delta-base-offset`
/// makes of the two blobs (git picks the direction; NNNN.base is the
/// blob git used as the base). The test profile keeps debug assertions,
/// so a release build measures faster.
#[test]
#[ignore = "a measurement; needs GIT_SIMM_DELTA_PAIRS"]
fn measure_pairs() {
    let Some(dir) = std::env::var_os("GIT_SIMM_DELTA_PAIRS") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let listing = std::fs::read_to_string(dir.join("git-sizes.txt")).unwrap();
    let mut pairs = Vec::new();
    let mut git_packed = Vec::new();
    for line in listing.lines() {
        let mut f = line.split_whitespace();
        let (name, git) = (f.next().unwrap(), f.next().unwrap());
        git_packed.push(f.next().unwrap().parse::<i64>().unwrap());
        let base = std::fs::read(dir.join(format!("{name}.base"))).unwrap();
        let target = std::fs::read(dir.join(format!("{name}.target"))).unwrap();
        pairs.push((git.parse::<i64>().unwrap(), base, target));
    }
    // Raw delta bytes, and the delta's entry in a pack (header, offset
    // and zlib stream at git's default level) against git's
    // size-in-packfile for the same pair.
    let (mut raw, mut packed, mut n, mut better, mut worse) = ([0; 2], [0; 2], 0, 0, 0);
    let mut deltas = Vec::new();
    for ((git, base, target), &git_packed) in pairs.iter().zip(&git_packed) {
        let d = delta(base, target);
        assert!(apply(base, &d).unwrap() == *target);
        if *git >= 0 {
            use crate::pack::write::{Entry, write_pack};
            let entries = [
                Entry::Full {
                    kind: gix::objs::Kind::Blob,
                    data: base,
                },
                Entry::Delta { base: 0, delta: &d },
            ];
            let level = gix::zlib::Compression::DEFAULT;
            let pack = write_pack(Vec::new(), &entries, gix::hash::Kind::Sha1, level).unwrap();
            let entry = pack.len as usize - 20 - pack.entries[1].offset as usize;
            let g = *git as usize;
            raw[0] += d.len();
            raw[1] += g;
            packed[0] += entry;
            packed[1] += git_packed as usize;
            n += 1;
            better += usize::from(d.len() < g);
            worse += usize::from(d.len() > g);
        }
        deltas.push(d);
    }
    let pct = |x: [usize; 2]| (x[0] as f64 / x[1] as f64 - 1.0) * 100.0;
    println!(
        "{n} pairs git deltified: ours {} bytes, git {} ({:+.2}%), smaller in \
         {better}, larger in {worse}; in the pack ours {} bytes, git {} ({:+.2}%)",
        raw[0],
        raw[1],
        pct(raw),
        packed[0],
        packed[1],
        pct(packed)
    );
    let target_bytes: usize = pairs.iter().map(|p| p.2.len()).sum();
    let rounds = (100_000_000 / target_bytes.max(1)).max(1);
    let mb = (target_bytes * rounds) as f64 / 1e6;
    // CPU time of this thread where Linux tells it: the machine may be
    // shared, and wall time then measures the neighbours.
    let cpu = || -> f64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
            .map_or_else(
                || std::time::UNIX_EPOCH.elapsed().unwrap().as_secs_f64(),
                |ns| ns / 1e9,
            )
    };
    let time = |f: &mut dyn FnMut()| {
        let t = cpu();
        f();
        cpu() - t
    };
    let with_index = time(&mut || {
        for _ in 0..rounds {
            for (_, base, target) in &pairs {
                std::hint::black_box(delta(base, target));
            }
        }
    });
    let indexes: Vec<_> = pairs.iter().map(|p| Index::new(&p.1)).collect();
    let scan = time(&mut || {
        for _ in 0..rounds {
            for (index, (_, _, target)) in indexes.iter().zip(&pairs) {
                std::hint::black_box(index.delta(target, usize::MAX));
            }
        }
    });
    // A packer's usual try: a base unrelated to the target, with git's
    // bound of half the target size.
    let unrelated = time(&mut || {
        for _ in 0..rounds {
            for (i, (_, _, target)) in pairs.iter().enumerate() {
                let index = &indexes[(i + pairs.len() / 2) % pairs.len()];
                std::hint::black_box(index.delta(target, target.len() / 2));
            }
        }
    });
    let decode = time(&mut || {
        for _ in 0..rounds {
            for (d, (_, base, _)) in deltas.iter().zip(&pairs) {
                std::hint::black_box(apply(base, d).unwrap());
            }
        }
    });
    println!(
        "{} pairs, {target_bytes} target bytes x {rounds}: encode {:.0} MB/s \
         (index included), {:.0} MB/s (index reused), {:.0} MB/s (unrelated \
         base, bound size/2); decode {:.0} MB/s",
        pairs.len(),
        mb / with_index,
        mb / scan,
        mb / unrelated,
        mb / decode
    );
}
