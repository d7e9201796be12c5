//! Tests of the record tables' pending blocks: records of every size
//! read back as they were added.

use super::*;

const TEST: Kind = Kind {
    magic: b"GSIMMTS\0",
    prefix: "test-",
    version: 1,
    what: "test record",
    flush_bytes: FLUSH_BYTES,
};

fn id(n: u32) -> ObjectId {
    let mut b = [0u8; 20];
    b[..4].copy_from_slice(&n.wrapping_mul(0x9e37_79b9).to_be_bytes());
    b[4..8].copy_from_slice(&n.to_le_bytes());
    ObjectId::from_bytes_or_panic(&b)
}

/// Record `n`'s bytes: sizes around the block's quarter and whole, and
/// many small ones between, so that small records fill blocks around
/// the large ones that get blocks of their own.
fn record(n: u32) -> Vec<u8> {
    const SIZES: [usize; 9] = [
        0,
        1,
        200,
        5_000,
        BLOCK / 4,
        BLOCK / 4 + 1,
        300,
        BLOCK + 7,
        60,
    ];
    let len = SIZES[n as usize % SIZES.len()];
    (0..len)
        .map(|i| (i as u32 ^ n.wrapping_mul(31)) as u8)
        .collect()
}

/// Every record reads back as it was added, from the table written to
/// a directory and from one kept in memory.
#[test]
fn records_of_every_size_read_back_as_added() {
    let dir = tempfile::tempdir().expect("tempdir");
    let on_disk = Records::open(TEST, dir.path(), 20).expect("open");
    for mut records in [Records::disabled(TEST, 20), on_disk] {
        for n in 0..600 {
            records.add(id(n), &record(n)).expect("add");
        }
        records.flush().expect("flush");
        let ids: Vec<ObjectId> = (0..600).map(id).collect();
        let locs = records.locate(&ids);
        for (n, loc) in (0..600).zip(locs) {
            let loc = loc.expect("stored");
            assert_eq!(records.record(loc), Some(&record(n)[..]), "record {n}");
        }
    }
    let mut again = Records::open(TEST, dir.path(), 20).expect("reopen");
    let locs = again.locate(&[id(7), id(8)]);
    let got: Vec<_> = locs
        .into_iter()
        .map(|l| again.record(l.expect("stored")).map(<[u8]>::to_vec))
        .collect();
    assert_eq!(got, vec![Some(record(7)), Some(record(8))]);
}
