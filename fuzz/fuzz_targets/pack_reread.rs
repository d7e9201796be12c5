//! A pack git-simm writes (`repack --bases=simm`), its `.idx`, and the two
//! checks made before it is installed: reading every entry back
//! (`pack::reread`) and verifying pack and index (`pack::verify`, gix's
//! `.idx` and pack readers). Objects and deltas come from the input; then
//! bytes of the pack or of the index are changed as the input says. An
//! intact pack passes both checks; a changed one fails at least one, and
//! neither panics.
#![no_main]

use git_simm::pack::delta;
use git_simm::pack::idx::{IndexedEntry, index_bytes};
use git_simm::pack::reread::{Meant, MeantHead, check_written};
use git_simm::pack::verify::verify_pack;
use git_simm::pack::write::{Entry, write_pack};
use git_simm::progress::Feedback;
use gix::hash::Kind as HashKind;
use gix::objs::Kind as ObjectKind;
use gix::zlib::Compression;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

struct Object {
    data: Vec<u8>,
    /// An earlier object it is stored as a delta against.
    base: Option<usize>,
}

fn objects(u: &mut Unstructured) -> Result<Vec<Object>> {
    let n = u.int_in_range(1..=6)?;
    let mut out: Vec<Object> = Vec::new();
    for i in 0..n {
        let mut data: Vec<u8> = u.arbitrary()?;
        let base = if i > 0 && u.arbitrary()? {
            let b = u.int_in_range(0..=i - 1)?;
            // Mostly the base with a change, so the delta has copies.
            if u.arbitrary()? {
                let mut similar = out[b].data.clone();
                similar.extend_from_slice(&data);
                data = similar;
            }
            Some(b)
        } else {
            None
        };
        out.push(Object { data, base });
    }
    // Distinct contents: a pack holds each object once.
    let mut seen = std::collections::HashSet::new();
    for (i, o) in out.iter_mut().enumerate() {
        if !seen.insert(o.data.clone()) {
            o.data.extend_from_slice(format!("#{i}").as_bytes());
            seen.insert(o.data.clone());
        }
    }
    Ok(out)
}

fn run(u: &mut Unstructured) -> Result<()> {
    let objs = objects(u)?;
    let deltas: Vec<Option<Vec<u8>>> = objs
        .iter()
        .map(|o| o.base.map(|b| delta::delta(&objs[b].data, &o.data)))
        .collect();
    let entries: Vec<Entry> = objs
        .iter()
        .zip(&deltas)
        .map(|(o, d)| match (o.base, d) {
            (Some(base), Some(d)) => Entry::Delta { base, delta: d },
            _ => Entry::Full {
                kind: ObjectKind::Blob,
                data: &o.data,
            },
        })
        .collect();
    let meant: Vec<Meant> = objs
        .iter()
        .zip(&deltas)
        .map(|(o, d)| {
            let (head, bytes) = match (o.base, d) {
                (Some(b), Some(d)) => (MeantHead::Delta(b), d.as_slice()),
                _ => (MeantHead::Full(ObjectKind::Blob), o.data.as_slice()),
            };
            Meant {
                head,
                size: bytes.len() as u64,
                crc32: crc32fast::hash(bytes),
            }
        })
        .collect();
    let ids: Vec<gix::ObjectId> = objs
        .iter()
        .map(|o| gix::objs::compute_hash(HashKind::Sha1, ObjectKind::Blob, &o.data).expect("hash"))
        .collect();

    let pack = write_pack(
        Vec::new(),
        &entries,
        HashKind::Sha1,
        Compression::BEST_SPEED,
    )
    .expect("the writer writes what it is given");
    let indexed: Vec<IndexedEntry> = ids
        .iter()
        .zip(&pack.entries)
        .map(|(&id, &written)| IndexedEntry { id, written })
        .collect();
    let (idx, _) = index_bytes(HashKind::Sha1, &indexed, &pack.checksum).expect("index");
    let mut expected = ids.clone();
    expected.sort();

    let dir = tempfile::tempdir().expect("temporary directory");
    let pack_path = dir.path().join("pack-test.pack");
    let idx_path = dir.path().join("pack-test.idx");
    let mut pack_bytes = pack.out.clone();
    let mut idx_bytes = idx.clone();
    // Change some bytes of one of the two files, or none.
    let target: u8 = u.int_in_range(0..=2)?;
    let flips: u8 = u.int_in_range(0..=3)?;
    for _ in 0..flips {
        let file = if target == 1 {
            &mut pack_bytes
        } else {
            &mut idx_bytes
        };
        if target == 0 || file.is_empty() {
            break;
        }
        let at = u.choose_index(file.len())?;
        file[at] ^= u.int_in_range(1..=255)?;
    }
    if u.arbitrary()? && target == 1 {
        let keep = u.choose_index(pack_bytes.len())?;
        pack_bytes.truncate(keep);
    }
    std::fs::write(&pack_path, &pack_bytes).expect("write");
    std::fs::write(&idx_path, &idx_bytes).expect("write");
    let changed = pack_bytes != pack.out || idx_bytes != idx;

    let feedback = Feedback::none();
    let reread = check_written(&pack_path, pack.len, 20, &pack.entries, &meant, &feedback);
    let verified = verify_pack(&idx_path, HashKind::Sha1, &expected, &feedback);
    if changed {
        assert!(
            reread.is_err() || verified.is_err(),
            "a changed pack or index passed both checks"
        );
    } else {
        reread.expect("an intact pack reads back");
        verified.expect("an intact pack verifies");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
