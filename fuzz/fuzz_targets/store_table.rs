//! A fingerprint table (`fp-*.table` of the store) of any bytes, opened
//! and read as every command reads the store: lookups one by one and in
//! bulk agree, nothing panics, and a compaction (what `gc` and a write do)
//! keeps every record that read back intact, unchanged.
#![no_main]

use git_simm::similarity::store::Store;
use gix::ObjectId;
use libfuzzer_sys::fuzz_target;

const HASH_LEN: usize = 20;
/// Header and fan-out: where the sorted ids start.
const KEYS_AT: usize = 32 + 256 * 4;

/// The ids the table lists (as far as its header's count and its length
/// allow), and two it cannot hold, to look up.
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
    std::fs::write(dir.path().join("fp-00000000-00000000.table"), data).expect("write");
    let ids = ids_in(data);
    let mut store = Store::open(dir.path(), HASH_LEN).expect("an existing directory opens");
    let many = store.get_many(&ids);
    let sizes = store.sizes(&ids);
    let warned = !store.take_warnings().is_empty();
    let one: Vec<_> = ids.iter().map(|id| store.get(id)).collect();
    if !warned {
        assert_eq!(many, one, "bulk and single lookups differ");
    }
    for (s, m) in sizes.iter().zip(&many) {
        if let (Some(s), Some(m)) = (s, m) {
            assert_eq!(*s, m.size);
        }
    }
    let _ = store.take_warnings();
    let compacted = store.compact().is_ok();
    // A damaged record found by the compaction drops its table (a cache
    // miss, never a wrong answer); otherwise every record read before is
    // there after. (It may find more: a fan-out that does not match the
    // keys hides records from lookups, not from the rewrite, which reads
    // every record and checks each one's CRC.)
    let dropped = !store.take_warnings().is_empty();
    if compacted {
        let mut again = Store::open(dir.path(), HASH_LEN).expect("reopens");
        let after = again.get_many(&ids);
        assert!(
            again.take_warnings().is_empty(),
            "compaction wrote a damaged table"
        );
        for (a, b) in after.iter().zip(&one) {
            if b.is_some() && !dropped {
                assert_eq!(a, b, "compaction changed or lost a record");
            } else if a.is_some() && b.is_some() {
                assert_eq!(a, b, "compaction changed a record");
            }
        }
    }
});
