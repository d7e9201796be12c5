//! A histogram table (`hist-*.table` of the store) of any bytes, opened and
//! read as `groups` and `export` read it: every record located decodes or
//! is refused, nothing panics, and a prune rewrites what was readable.
#![no_main]

use git_simm::similarity::store::histograms::Histograms;
use gix::ObjectId;
use libfuzzer_sys::fuzz_target;

const HASH_LEN: usize = 20;
const KEYS_AT: usize = 32 + 256 * 4;

fn ids_in(data: &[u8]) -> Vec<ObjectId> {
    let count = data
        .get(20..28)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    let mut ids: Vec<ObjectId> = data
        .get(KEYS_AT..)
        .unwrap_or_default()
        .chunks_exact(HASH_LEN)
        .take(count.min(64) as usize)
        .map(ObjectId::from_bytes_or_panic)
        .collect();
    ids.push(ObjectId::from_bytes_or_panic(&[0; HASH_LEN]));
    ids.push(ObjectId::from_bytes_or_panic(&[0xff; HASH_LEN]));
    ids
}

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("hist-00000000-00000000.table"), data).expect("write");
    let ids = ids_in(data);
    let mut h = Histograms::open(dir.path(), HASH_LEN).expect("an existing directory opens");
    let locs = h.locate(&ids);
    let found: Vec<_> = locs
        .iter()
        .map(|l| l.map(|l| (h.get(l), h.record(l).map(<[u8]>::to_vec))))
        .collect();
    let _ = h.take_warnings();
    let _ = h.prune(&|_| true, false);
    let mut again = Histograms::open(dir.path(), HASH_LEN).expect("reopens");
    let relocated = again.locate(&ids);
    assert!(
        again.take_warnings().is_empty(),
        "a rewrite left a damaged table"
    );
    for (l, f) in relocated.iter().zip(&found) {
        if let (Some(l), Some((_, Some(record)))) = (l, f) {
            assert_eq!(
                again.record(*l),
                Some(record.as_slice()),
                "a rewrite changed a record"
            );
        }
    }
});
