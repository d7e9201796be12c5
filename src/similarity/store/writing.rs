//! Record tables written on a thread of their own while a run goes on.
//!
//! A first `renames` has its answer before the histograms it read are
//! encoded and written: done after the search, that was a sixth of the
//! run (10,000 moved files). The records are handed to a writer thread
//! that encodes them, writes tables as [`Records::flush`] does (every
//! [`Kind::flush_bytes`], each synced and renamed into place), and the
//! run takes the tables in when it ends ([`Records::finish_writing`]).
//! Until then the records are in no table: a run that asks the store
//! for them again before it ends does not find them, which costs a read,
//! never an answer.

use std::io;
use std::path::PathBuf;
use std::thread::JoinHandle;

use gix::ObjectId;

use super::StoreError;
use super::records::{Records, write_sorted};

/// Tables being written (`Records::write_in_background`): the paths
/// written, and the error that stopped the writer, if any.
pub struct Writing(JoinHandle<(Vec<PathBuf>, Option<io::Error>)>);

impl Records {
    /// Encode `items` with `encode` and write them as tables on a thread
    /// of their own. The items come back when there is nothing to write
    /// to (a store in memory) or no thread to be had: add them instead.
    pub fn write_in_background<T: Send + 'static>(
        &self,
        items: Vec<(ObjectId, T)>,
        encode: fn(&T, &mut Vec<u8>),
    ) -> Result<Writing, Vec<(ObjectId, T)>> {
        let (kind, Some(dir), hash_len) = self.shape() else {
            return Err(items);
        };
        // The items are shared with the thread until it has started, so
        // that a refused spawn can give them back.
        let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(items)));
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("git-simm-store".into())
            .spawn(move || {
                let items = theirs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .unwrap_or_default();
                drop(theirs);
                let mut batch = Records::disabled(kind, hash_len);
                let mut written = Vec::new();
                let mut record = Vec::new();
                let write = |batch: &mut Records, written: &mut Vec<PathBuf>| {
                    batch
                        .take_pending()
                        .map(|sorted| write_sorted(&kind, &dir, hash_len, &sorted))
                        .transpose()
                        .map(|path| written.extend(path))
                };
                for (id, item) in &items {
                    record.clear();
                    encode(item, &mut record);
                    batch.push(*id, &record);
                    if batch.pending_bytes() >= kind.flush_bytes
                        && let Err(e) = write(&mut batch, &mut written)
                    {
                        return (written, Some(e));
                    }
                }
                let failed = write(&mut batch, &mut written).err();
                (written, failed)
            });
        match spawned {
            Ok(handle) => Ok(Writing(handle)),
            Err(_) => Err(shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .unwrap_or_default()),
        }
    }

    /// Wait for the writer of `writing` and take its tables in; its error,
    /// as [`Records::flush`] reports one (a read-only directory is a
    /// warning).
    pub fn finish_writing(&mut self, writing: Writing) -> Result<(), StoreError> {
        let (paths, failed) = writing.0.join().unwrap_or_else(|_| {
            (
                Vec::new(),
                Some(io::Error::other("the thread writing the store stopped")),
            )
        });
        self.adopt_written(&paths, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::Kind;
    use super::*;

    const KIND: Kind = Kind {
        magic: b"GSIMMTW\0",
        prefix: "tw-",
        version: 1,
        what: "test record",
        flush_bytes: 4096,
    };

    fn id(n: u32) -> ObjectId {
        let mut b = [0u8; 20];
        b[..4].copy_from_slice(&n.wrapping_mul(0x9e37_79b9).to_be_bytes());
        b[4..8].copy_from_slice(&n.to_le_bytes());
        ObjectId::from_bytes_or_panic(&b)
    }

    fn record(n: &u32, out: &mut Vec<u8>) {
        out.extend(std::iter::repeat_n(*n as u8, 10 + (*n as usize % 90)));
    }

    /// What the writer wrote, past several flushes' worth, is found and
    /// read back as written once taken in, as tables in the directory.
    #[test]
    fn records_written_in_the_background_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut records = Records::open(KIND, dir.path(), 20).expect("open");
        let items: Vec<(ObjectId, u32)> = (0..500).map(|n| (id(n), n)).collect();
        let Ok(writing) = records.write_in_background(items, record) else {
            panic!("a store with a directory writes in the background");
        };
        records.finish_writing(writing).expect("written");
        assert!(records.table_count() > 1, "{}", records.table_count());
        let ids: Vec<ObjectId> = (0..500).map(id).collect();
        for (n, at) in (0..500u32).zip(records.locate(&ids)) {
            let mut want = Vec::new();
            record(&n, &mut want);
            let at = at.expect("found");
            assert_eq!(records.record(at), Some(&want[..]));
        }
        let reopened = Records::open(KIND, dir.path(), 20).expect("reopen");
        assert_eq!(reopened.table_count(), records.table_count());
    }

    /// A directory that cannot be made is the run's error, as a flush's.
    #[test]
    fn a_failed_write_is_reported_when_taken_in() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path().join("store");
        let mut records = Records::open(KIND, &store, 20).expect("open");
        // The directory, missing when the store was opened, is a file by
        // the time the writer makes it.
        std::fs::write(&store, b"not a directory").expect("write");
        let Ok(writing) = records.write_in_background(vec![(id(1), 1u32)], record) else {
            panic!("a store with a directory writes in the background");
        };
        assert!(matches!(
            records.finish_writing(writing),
            Err(StoreError::Write { .. })
        ));
    }

    /// A store in memory has nowhere to write: the items come back.
    #[test]
    fn a_store_in_memory_gives_the_items_back() {
        let records = Records::disabled(KIND, 20);
        let back = records.write_in_background(vec![(id(7), 7u32)], record);
        assert!(matches!(back, Err(items) if items == vec![(id(7), 7)]));
    }
}
