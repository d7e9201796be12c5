//! Unit tests of the inexact step's internals: git's slot replay, the
//! sorted matrix and which ties decide a pairing. End-to-end agreement
//! with git's output is tested against the real binary in `tests/`.

use gix::ObjectId;

use super::matrix::sorted_matrix;
use super::sides::{Found, Sides};
use super::ties::{Row, hinged_on_ties, replay_row};
use super::{Dst, RowMap, Scored, Src, basename_same, better};
use crate::repo::{Entry, EntryKind};
use crate::similarity::fingerprint::{Sketch, fingerprint};
use crate::similarity::score::{self, Coarse, Dense, Spans};

fn entry(path: &str, n: u32) -> Entry {
    let mut id = [0u8; 20];
    id[..4].copy_from_slice(&n.to_be_bytes());
    id[19] = 1;
    Entry {
        path: path.as_bytes().to_vec(),
        kind: EntryKind::Regular,
        id: ObjectId::from_bytes_or_panic(&id),
    }
}

/// Sources and destinations borrow their entries from the queue; these
/// have none, so each entry lives as long as the test process.
fn leaked(e: Entry) -> &'static Entry {
    Box::leak(Box::new(e))
}

fn src(path: &str, n: u32) -> Src<'static> {
    Src {
        entry: leaked(entry(path, n)),
        binary: Default::default(),
        change: n as usize,
        used: 0,
        unchanged: false,
        break_dst: None,
        break_score: 0,
    }
}

fn dst(path: &str, n: u32) -> Dst<'static> {
    Dst {
        entry: leaked(entry(path, n)),
        binary: Default::default(),
        change: n as usize,
        pair: None,
    }
}

fn scored(score: u32, src: usize) -> Scored {
    Scored {
        score,
        same_name: false,
        src,
    }
}

/// git's `record_if_better()` over every source in order, with slots that
/// start at score -1 (diffcore-rename.c at v2.47.3): the reference the
/// pruned replay must reproduce exactly.
fn git_slots(
    srcs: &[Src],
    dst: &Dst,
    sketches: &[Sketch],
    spans: &[Spans],
    d: &Spans,
    dsize: u64,
    min_score: u32,
) -> Vec<Scored> {
    // (score, name_score, src); -1 marks an empty slot.
    let mut m: [(i64, bool, usize); 4] = [(-1, false, usize::MAX); 4];
    let compare = |a: &(i64, bool, usize), b: &(i64, bool, usize)| {
        // score_compare: positive when `a` sorts after (is worse than) `b`.
        if a.0 == b.0 {
            (b.1 as i64) - (a.1 as i64)
        } else {
            b.0 - a.0
        }
    };
    for (s, source) in srcs.iter().enumerate() {
        let compatible = sketches[s].size > 0
            && dsize > 0
            && score::sizes_compatible(sketches[s].size, dsize, min_score);
        let sc = if compatible {
            score::score(&spans[s], d, min_score)
        } else {
            0
        };
        let o = (
            i64::from(sc),
            basename_same(&source.entry.path, &dst.entry.path),
            s,
        );
        let mut worst = 0;
        for i in 1..4 {
            if compare(&m[i], &m[worst]) > 0 {
                worst = i;
            }
        }
        if compare(&m[worst], &o) > 0 {
            m[worst] = o;
        }
    }
    m.iter()
        .filter(|(sc, _, _)| *sc >= i64::from(min_score))
        .map(|&(sc, same_name, src)| Scored {
            score: sc as u32,
            same_name,
            src,
        })
        .collect()
}

/// Lines of real text, and variants of it: copies with one line changed
/// (equal scores: ties), heavier edits, shuffles, and unrelated texts, so
/// the slots see ties, the size window and the ceiling skip.
fn variants(base: &[u8], others: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let lines: Vec<&[u8]> = base.split_inclusive(|&b| b == b'\n').collect();
    let mut out = Vec::new();
    for k in 0..6 {
        let mut v = lines.clone();
        let i = (k * 7 + 3) % v.len();
        let changed = format!("changed line {k}\n");
        let mut text: Vec<u8> = Vec::new();
        for (j, l) in v.drain(..).enumerate() {
            if j == i {
                text.extend_from_slice(changed.as_bytes());
            } else {
                text.extend_from_slice(l);
            }
        }
        out.push(text);
    }
    for step in [2, 3, 5] {
        let text: Vec<u8> = lines
            .iter()
            .enumerate()
            .flat_map(|(j, l)| if j % step == 0 { &b"edited\n"[..] } else { l })
            .copied()
            .collect();
        out.push(text);
    }
    let mut shuffled = lines.clone();
    shuffled.reverse();
    out.push(shuffled.concat());
    out.push(base.to_vec());
    out.push(base.to_vec());
    out.extend(others.iter().take(12).cloned());
    out
}

#[test]
fn replay_reproduces_gits_slots_with_ties_and_known_scores() {
    let texts = crate::testing::real_text();
    let usable: Vec<&Vec<u8>> = texts
        .iter()
        .filter(|t| t.len() > 2000 && t.split(|&b| b == b'\n').count() > 40)
        .collect();
    assert!(usable.len() >= 8, "not enough real text for the test");
    let others: Vec<Vec<u8>> = usable.iter().map(|t| t.to_vec()).collect();
    let mut checked = 0;
    let mut with_ties = 0;
    for (n, base) in usable.iter().take(8).enumerate() {
        let bodies = variants(base, &others[n + 1..]);
        let srcs: Vec<Src> = bodies
            .iter()
            .enumerate()
            .map(|(i, _)| {
                // Every third source shares the destination's basename.
                let name = if i % 3 == 0 {
                    format!("a{i}/lib.rs")
                } else {
                    format!("a{i}/f{i}.rs")
                };
                src(&name, i as u32)
            })
            .collect();
        let sketches: Vec<Sketch> = bodies
            .iter()
            .map(|b| Sketch {
                size: b.len() as u64,
                fingerprint: fingerprint(b),
            })
            .collect();
        let spans: Vec<Spans> = bodies.iter().map(|b| Spans::new(b)).collect();
        let coarses: Vec<Coarse> = spans.iter().map(Coarse::of).collect();
        let d = dst("b/lib.rs", 1000);
        let dspans = Spans::new(base);
        let dsketch = Sketch {
            size: base.len() as u64,
            fingerprint: fingerprint(base),
        };
        let dsts = vec![d];
        for min_score in [score::DEFAULT_MIN_SCORE, 45_000, 59_000] {
            let want = git_slots(
                &srcs,
                &dsts[0],
                &sketches,
                &spans,
                &dspans,
                dsketch.size,
                min_score,
            );
            let scores: Vec<u32> = want.iter().map(|s| s.score).collect();
            if scores
                .iter()
                .enumerate()
                .any(|(i, a)| scores[i + 1..].contains(a))
            {
                with_ties += 1;
            }
            // What the candidate search leaves: some sources scored (as
            // fingerprints would propose them), every source at the bound
            // and up scored, and the bound itself.
            let all: Vec<u32> = (0..srcs.len())
                .map(|s| score::score(&spans[s], &dspans, min_score))
                .collect();
            let mut by_score = all.clone();
            by_score.sort_unstable_by(|a, b| b.cmp(a));
            for (known_every, bound) in [
                (0usize, min_score),
                (2, min_score),
                (5, by_score[3].max(min_score)),
                (3, by_score[1].max(min_score)),
                (1, 0),
            ] {
                let found = Found {
                    scored: (0..srcs.len())
                        .filter(|&s| {
                            bound == 0
                                || (known_every > 0 && s % known_every == 0)
                                || all[s] >= bound
                        })
                        .map(|s| (s as u32, all[s]))
                        .collect(),
                    bound,
                    by_fingerprint: 0,
                    ruled_out: 0,
                    tried: 0,
                    partial: false,
                };
                let active: Vec<usize> = (0..srcs.len()).collect();
                let sides =
                    Sides::with_items(&srcs, &dsts, &active, &[0], sketches.clone(), vec![dsketch]);
                let dcoarse = Coarse::of(&dspans);
                let (got, _) = Dense::default().with(&dspans, |loaded| {
                    let row = Row {
                        d: 0,
                        item: &dsketch,
                        loaded,
                        coarse: &dcoarse,
                        found: &found,
                    };
                    replay_row(
                        &sides,
                        &row,
                        min_score,
                        |a| spans.get(a),
                        |a| coarses.get(a),
                    )
                });
                let key = |v: &[Scored]| -> Vec<(u32, bool, usize)> {
                    v.iter().map(|s| (s.score, s.same_name, s.src)).collect()
                };
                assert_eq!(
                    key(&got),
                    key(&want),
                    "text {n}, min {min_score}, known every {known_every}, bound {bound}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 8 * 3 * 5);
    assert!(
        with_ties > 0,
        "no row had tied slots: the test would not test ties"
    );
}

#[test]
fn sorted_matrix_keeps_four_slots_and_git_order_among_equals() {
    let mut full: RowMap<Vec<Scored>> = RowMap::default();
    // Destination 7: six kept pairs, best first; only the best 4 enter.
    full.insert(
        7,
        vec![
            scored(50_000, 1),
            scored(50_000, 2),
            scored(40_000, 3),
            scored(40_000, 4),
            scored(40_000, 5),
            scored(35_000, 6),
        ],
    );
    // Destination 3: one pair equal to 7's best.
    full.insert(3, vec![scored(50_000, 9)]);
    // Destination 5: replayed slots replace its kept list.
    full.insert(5, vec![scored(60_000, 0)]);
    let mut replayed: RowMap<Vec<Scored>> = RowMap::default();
    replayed.insert(5, vec![scored(45_000, 8), scored(45_000, 6)]);
    let matrix = sorted_matrix(&[3, 5, 7], &full, &replayed);
    let got: Vec<(usize, u32, usize)> = matrix.iter().map(|(d, s)| (*d, s.score, s.src)).collect();
    assert_eq!(
        got,
        vec![
            // Equal scores keep destination order, then slot order.
            (3, 50_000, 9),
            (7, 50_000, 1),
            (7, 50_000, 2),
            (5, 45_000, 8),
            (5, 45_000, 6),
            (7, 40_000, 3),
            (7, 40_000, 4),
        ]
    );
    // A same-basename pair goes first among equal scores, as in git.
    let mut named = scored(50_000, 4);
    named.same_name = true;
    full.insert(7, vec![scored(50_000, 1), named]);
    let matrix = sorted_matrix(&[3, 7], &full, &RowMap::default());
    assert_eq!((matrix[0].0, matrix[0].1.src), (7, 4));
    assert!(better(&matrix[0].1, &matrix[1].1).is_lt());
}

#[test]
fn only_ties_that_decide_a_pairing_are_replayed() {
    let srcs: Vec<Src> = (0..6).map(|i| src(&format!("s{i}"), i)).collect();
    let dsts: Vec<Dst> = (0..3).map(|i| dst(&format!("d{i}"), 100 + i)).collect();
    let min = score::DEFAULT_MIN_SCORE;
    let run = |full: &RowMap<Vec<Scored>>, srcs: &[Src]| {
        let matrix = sorted_matrix(&[0, 1, 2], full, &RowMap::default());
        hinged_on_ties(
            &matrix,
            full,
            &RowMap::default(),
            &RowMap::default(),
            srcs,
            &dsts,
            min,
            false,
        )
    };

    // Destination 0 has two equal best sources, both free: git's slot
    // order decides which it takes.
    let mut full = RowMap::default();
    full.insert(0, vec![scored(50_000, 0), scored(50_000, 1)]);
    full.insert(1, vec![scored(55_000, 2)]);
    assert_eq!(run(&full, &srcs), vec![0]);

    // The same tie, but one of the two is taken first by a better pair:
    // nothing is left to decide.
    full.insert(1, vec![scored(55_000, 1)]);
    assert_eq!(run(&full, &srcs), Vec::<usize>::new());

    // Unequal scores: no tie at all.
    full.insert(0, vec![scored(50_000, 0), scored(49_000, 1)]);
    assert_eq!(run(&full, &srcs), Vec::<usize>::new());

    // Five equal sources straddle git's cut at 4, and the destination's
    // kept four are all taken: the fifth (free) might have been kept by
    // git instead, so the pairing hinges on the tie.
    let mut full = RowMap::default();
    full.insert(0, (0..5).map(|s| scored(40_000, s)).collect());
    full.insert(1, (0..4).map(|s| scored(58_000, s)).collect());
    full.insert(
        2,
        vec![
            scored(59_000, 0),
            scored(59_000 - 1, 1),
            scored(57_000, 2),
            scored(56_000, 3),
        ],
    );
    let hinged = run(&full, &srcs);
    assert!(hinged.contains(&0), "{hinged:?}");
}

#[test]
fn partial_rows_are_widened_only_when_the_walk_reads_past_them() {
    let srcs: Vec<Src> = (0..6).map(|i| src(&format!("s{i}"), i)).collect();
    let dsts: Vec<Dst> = (0..3).map(|i| dst(&format!("d{i}"), 100 + i)).collect();
    let min = score::DEFAULT_MIN_SCORE;
    let run = |full: &RowMap<Vec<Scored>>, copies: bool| {
        // Destinations 0 and 1 are known down to their best score only.
        let partial: RowMap<usize> = [0, 1].map(|d| (d, full[&d].len())).into_iter().collect();
        let matrix = sorted_matrix(&[0, 1, 2], full, &RowMap::default());
        hinged_on_ties(
            &matrix,
            full,
            &RowMap::default(),
            &partial,
            &srcs,
            &dsts,
            min,
            copies,
        )
    };
    // Every best source free: each destination pairs at its head.
    let mut full = RowMap::default();
    full.insert(0, vec![scored(50_000, 0)]);
    full.insert(1, vec![scored(48_000, 1), scored(48_000, 2)]);
    full.insert(2, vec![scored(59_000, 3)]);
    // Destination 1's head is two equal entries, both free: the tie
    // decides, so its row is widened before any replay.
    assert_eq!(run(&full, false), vec![1]);

    // Destination 0's only source is taken by a better pair: git would
    // read its next entries, which the search never scored.
    full.insert(1, vec![scored(48_000, 1)]);
    full.insert(2, vec![scored(59_000, 0)]);
    assert_eq!(run(&full, false), vec![0]);
    // With copies too: the rename pass reads past it first.
    assert_eq!(run(&full, true), vec![0]);

    // Destination 1 keeps its second known entry free after the first
    // is taken: it pairs there, within what is known.
    full.insert(1, vec![scored(48_000, 1), scored(48_000, 4)]);
    full.insert(2, vec![scored(59_000, 1)]);
    full.insert(0, vec![scored(50_000, 0)]);
    assert_eq!(run(&full, false), Vec::<usize>::new());
}

/// The span-map hasher tells apart keys that differ in the id or only in
/// the decision, and spreads real blob ids over the high bits the table
/// probes by (and the low bits it indexes by) as evenly as chance would.
#[test]
fn span_keys_hash_apart_and_evenly() {
    use std::hash::BuildHasher;
    let build = std::hash::BuildHasherDefault::<super::KeyHasher>::default();
    let ids: Vec<ObjectId> = (0..20_000u32)
        .map(|i| {
            gix::objs::compute_hash(
                gix::hash::Kind::Sha1,
                gix::object::Kind::Blob,
                &i.to_le_bytes(),
            )
            .expect("hash")
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut high = [0u32; 128];
    let mut low = [0u32; 128];
    for id in &ids {
        for b in [score::Binary::Auto, score::Binary::Yes, score::Binary::No] {
            let h = build.hash_one((*id, b));
            assert!(seen.insert(h), "a collision at {id} {b:?}");
            high[(h >> 57) as usize] += 1;
            low[(h & 127) as usize] += 1;
        }
    }
    // 60,000 hashes in 128 bins: 469 each on average, a standard
    // deviation of about 22.
    for (name, bins) in [("high", high), ("low", low)] {
        let (lo, hi) = (bins.iter().min().copied(), bins.iter().max().copied());
        assert!(
            lo.is_some_and(|v| v > 350) && hi.is_some_and(|v| v < 590),
            "{name} bits: {lo:?}..{hi:?}"
        );
    }
}
