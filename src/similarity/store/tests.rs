//! Tests of the fingerprint store: lookups, damage, temporaries, and two
//! hashes sharing a directory.

use std::fs::File;

use super::table::RECORD_LEN;
use super::*;
use crate::similarity::fingerprint::Fingerprint;

fn id(n: u64) -> ObjectId {
    // Spread over the whole id space, so every fan-out bucket is used.
    let mut b = [0u8; 20];
    let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555;
    for chunk in b.chunks_mut(8) {
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(n);
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    ObjectId::from_bytes_or_panic(&b)
}

fn entry(n: u64) -> Sketch {
    Sketch {
        size: n,
        fingerprint: (!n.is_multiple_of(3)).then_some(Fingerprint { words: [n; 4] }),
    }
}

/// The sorted walk of get_many answers exactly as one get per id:
/// ids in either of two tables, in neither, repeated, in any order.
#[test]
fn many_lookups_agree_with_single_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path(), 20).expect("open");
    store
        .insert((0..3000).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    store
        .insert((2000..6000).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    assert_eq!(store.table_count(), 2);
    let queries: Vec<ObjectId> = (0..5000u64)
        .map(|k| id((k * 7919) % 9000))
        .chain([id(5), id(5), id(8999)])
        .collect();
    assert!(queries.len() >= SORTED_LOOKUPS);
    let many = store.get_many(&queries);
    let single: Vec<Option<Sketch>> = queries.iter().map(|q| store.get(q)).collect();
    assert_eq!(many, single);
    let sizes: Vec<Option<u64>> = single.iter().map(|e| e.map(|e| e.size)).collect();
    assert_eq!(store.sizes(&queries), sizes);
    assert_eq!(store.sizes(&queries[..10]), sizes[..10]);
    let found = many.iter().filter(|e| e.is_some()).count();
    assert!(found > 2000 && found < queries.len(), "{found}");
    for (q, e) in queries.iter().zip(&many) {
        let n = (0..9000).find(|&n| id(n) == *q).expect("a query id");
        assert_eq!(*e, (n < 6000).then(|| entry(n)), "id {n}");
    }
}

/// Writes leave no temporary file behind; compaction removes the ones a
/// killed process left (unlocked, the store's content), old-style ones
/// after an hour, and nothing that is not provably the store's.
#[test]
fn temporaries_are_renamed_or_cleaned_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .expect("read")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp-"))
            .collect();
        v.sort();
        v
    };
    let mut store = Store::open(dir.path(), 20).expect("open");
    store
        .insert((0..10).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    assert_eq!(names(dir.path()), Vec::<String>::new());
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let old = |name: &str, content: &[u8]| {
        fs::write(dir.path().join(name), content).expect("write");
        File::options()
            .write(true)
            .open(dir.path().join(name))
            .and_then(|f| f.set_modified(two_hours_ago))
            .expect("old file");
    };
    // A killed writer's: unlocked, the store's magic (or empty, and
    // idle for longer than a writer takes from its create to its lock).
    fs::write(dir.path().join("tmp-simm-dead01"), b"GSIMMFP\0 partial").expect("write");
    old("tmp-simm-dead02", b"");
    // A live writer's: locked.
    let live = files::temporary_in(dir.path()).expect("temporary");
    // Old style: removed only when old and the store's.
    old("tmp-a1b2c3", b"GSIMMHS\0 partial");
    old("tmp-d4e5f6", b"not the store's");
    old("tmp-important", b"GSIMMFP\0 a user's file of that name");
    fs::write(dir.path().join("tmp-simm-notes"), b"mine").expect("write");
    store.compact().expect("compact");
    let live_name = live
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let mut want = vec![
        live_name,
        "tmp-d4e5f6".to_owned(),
        "tmp-important".to_owned(),
        "tmp-simm-notes".to_owned(),
    ];
    want.sort();
    assert_eq!(names(dir.path()), want);
    assert_eq!(store.get(&id(3)), Some(entry(3)));
}

/// A SHA-1 and a SHA-256 repository sharing one store directory: each
/// sees only its own tables, neither warns about nor deletes the
/// other's (not even by compacting), and an id of one length is never
/// looked up among ids of the other.
#[test]
fn sha1_and_sha256_tables_share_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = |n: u64| {
        let mut b = [0u8; 32];
        b[..20].copy_from_slice(id(n).as_slice());
        b[20..28].copy_from_slice(&n.to_le_bytes());
        ObjectId::from_bytes_or_panic(&b)
    };
    let mut sha1 = Store::open(dir.path(), 20).expect("open");
    sha1.insert((0..100).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    let mut sha256 = Store::open(dir.path(), 32).expect("open");
    assert_eq!(sha256.table_count(), 0);
    for round in 0..=MAX_TABLES as u64 {
        sha256
            .insert(vec![(long(round), entry(round + 1))])
            .expect("insert");
    }
    assert!(sha256.table_count() < MAX_TABLES, "compacted");
    assert!(sha256.take_warnings().is_empty());
    assert_eq!(sha256.get(&long(3)), Some(entry(4)));
    // The same first 20 bytes, another hash: not the SHA-1 blob.
    assert_eq!(sha256.get(&id(3)), None);
    assert_eq!(sha256.get(&long(500)), None);

    let mut sha1 = Store::open(dir.path(), 20).expect("reopen");
    assert!(sha1.take_warnings().is_empty());
    assert_eq!(sha1.table_count(), 1);
    assert_eq!(sha1.get(&id(3)), Some(entry(3)));
    assert_eq!(sha1.get(&long(3)), None);
    sha1.compact().expect("compact");
    let sha256 = Store::open(dir.path(), 32).expect("reopen");
    assert_eq!(sha256.table_count(), 1);
}

/// A damaged record found by the size-only walk drops its table, as
/// one found by get_many does: its blobs read as unknown, with a
/// warning, and are recomputed by the caller.
#[test]
fn sizes_notice_a_damaged_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = Store::open(dir.path(), 20).expect("open");
    store
        .insert((0..2000).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    let path = store.tables[0].path.clone();
    drop(store);
    let mut bytes = fs::read(&path).expect("table");
    // The size field of the last record.
    let at = bytes.len() - RECORD_LEN + 32;
    bytes[at] ^= 1;
    fs::write(&path, &bytes).expect("write");
    let mut store = Store::open(dir.path(), 20).expect("open");
    let queries: Vec<ObjectId> = (0..2000).map(id).collect();
    assert!(store.sizes(&queries).iter().all(Option::is_none));
    let warnings = store.take_warnings();
    assert!(
        warnings.len() == 1 && warnings[0].contains("fails its checksum"),
        "{warnings:?}"
    );
}

/// Pruning one hash's records leaves the other hash's tables in a shared
/// directory alone, and merges what it keeps into one table.
#[test]
fn prune_keeps_wanted_records_and_the_other_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sha1 = Store::open(dir.path(), 20).expect("open");
    sha1.insert((0..100).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    sha1.insert((50..150).map(|n| (id(n), entry(n))).collect())
        .expect("insert");
    let mut sha256 = Store::open(dir.path(), 32).expect("open");
    let long = ObjectId::from_bytes_or_panic(&[7u8; 32]);
    sha256.insert(vec![(long, entry(7))]).expect("insert");

    let even = |i: &ObjectId| (0..150).any(|n| n % 2 == 0 && id(n) == *i);
    let dry = sha1.prune(&even, true).expect("dry run");
    assert_eq!((dry.kept, dry.dropped, dry.tables_before), (75, 75, 2));
    assert_eq!(sha1.table_count(), 2, "a dry run writes nothing");
    let done = sha1.prune(&even, false).expect("prune");
    assert_eq!(done, dry);
    assert_eq!(sha1.table_count(), 1);
    for n in 0..150 {
        assert_eq!(sha1.get(&id(n)), (n % 2 == 0).then(|| entry(n)), "id {n}");
    }
    let mut sha256 = Store::open(dir.path(), 32).expect("reopen");
    assert_eq!(sha256.get(&long), Some(entry(7)));

    let none = sha1.prune(&|_| false, false).expect("prune all");
    assert_eq!((none.kept, none.dropped, none.bytes_after), (0, 75, 0));
    assert_eq!(sha1.table_count(), 0);
    assert_eq!(
        Store::open(dir.path(), 32).expect("reopen").table_count(),
        1
    );
}
