//! Record tables written on a thread of their own while a run goes on.
//!
//! A first `renames` has its answer before the histograms it read are
//! encoded and written: done after the search, that was a twelfth of the
//! run (10,000 moved files). A [`Writer`] takes batches of records as
//! they come, encodes them on its thread and writes tables as
//! [`Records::flush`] does (every `flush_bytes` of its kind, each synced
//! and renamed into place, one for the rest at the end), and the run
//! takes the tables in when it ends ([`Records::finish_writing`]). Until
//! then the records are in no table: a run that asks the store for them
//! again before it ends does not find them, which costs a read, never an
//! answer.
//!
//! A writer dropped without [`Records::finish_writing`] (a run that
//! stops on an error) ends its thread once the batches sent are written;
//! a process that exits first leaves a locked temporary, which the next
//! writer to the store removes ([`crate::fsutil::clean_dead_temporaries`]).

use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use gix::ObjectId;

use super::StoreError;
use super::records::{Records, write_sorted};

/// A thread writing the records it is sent as tables (made by
/// `Records::writer`).
pub struct Writer<T> {
    batches: Sender<Vec<(ObjectId, T)>>,
    thread: JoinHandle<Written>,
    dir: PathBuf,
}

/// The tables a writer published, and the error that stopped it, if any.
type Written = (Vec<PathBuf>, Option<io::Error>);

impl<T: Send + 'static> Writer<T> {
    /// Hand `items` to the writer; `false` if its thread has stopped (on
    /// an error it reports when finished): add them instead.
    pub fn send(&self, items: Vec<(ObjectId, T)>) -> bool {
        self.batches.send(items).is_ok()
    }
}

impl Records {
    /// A writer of records of this store's kind, encoded by `encode`;
    /// `None` when there is nothing to write to (a store in memory) or no
    /// thread to be had: add the records instead.
    pub fn writer<T: Send + 'static>(&self, encode: fn(&T, &mut Vec<u8>)) -> Option<Writer<T>> {
        let (kind, Some(dir), hash_len) = self.shape() else {
            return None;
        };
        let (batches, received) = channel::<Vec<(ObjectId, T)>>();
        let to = dir.clone();
        let thread = std::thread::Builder::new()
            .name("git-simm-store".into())
            .spawn(move || {
                let mut batch = Records::disabled(kind, hash_len);
                let mut written = Vec::new();
                let mut record = Vec::new();
                let write = |batch: &mut Records, written: &mut Vec<PathBuf>| {
                    batch
                        .take_pending()
                        .map(|sorted| write_sorted(&kind, &to, hash_len, &sorted))
                        .transpose()
                        .map(|path| written.extend(path))
                };
                for (id, item) in received.iter().flatten() {
                    record.clear();
                    encode(&item, &mut record);
                    batch.push(id, &record);
                    if batch.pending_bytes() >= kind.flush_bytes
                        && let Err(e) = write(&mut batch, &mut written)
                    {
                        return (written, Some(e));
                    }
                }
                let failed = write(&mut batch, &mut written).err();
                (written, failed)
            })
            .ok()?;
        Some(Writer {
            batches,
            thread,
            dir,
        })
    }

    /// End `writer`: wait for it to write what it was sent and take its
    /// tables in; its error, as [`Records::flush`] reports one (a
    /// read-only directory is a warning). A writer that panicked is a
    /// warning too: what it held is only a cache.
    pub fn finish_writing<T>(&mut self, writer: Writer<T>) -> Result<(), StoreError> {
        let Writer {
            batches,
            thread,
            dir,
        } = writer;
        // The channel closed: the thread writes the rest and ends.
        drop(batches);
        match thread.join() {
            Ok((paths, failed)) => self.adopt_written(dir, &paths, failed),
            Err(_) => {
                self.warn(format!(
                    "the thread writing to {} stopped; continuing without caching what it held",
                    dir.display()
                ));
                Ok(())
            }
        }
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
        let writer = records.writer(record).expect("a store with a directory");
        // Batches as a run sends them: one table for many of them.
        for part in (0..500).collect::<Vec<u32>>().chunks(100) {
            let items: Vec<(ObjectId, u32)> = part.iter().map(|&n| (id(n), n)).collect();
            assert!(writer.send(items));
        }
        records.finish_writing(writer).expect("written");
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
        let writer = records.writer(record).expect("a store with a directory");
        assert!(writer.send(vec![(id(1), 1u32)]));
        assert!(matches!(
            records.finish_writing(writer),
            Err(StoreError::Write { .. })
        ));
    }

    /// A store in memory has nowhere to write: no writer.
    #[test]
    fn a_store_in_memory_has_no_writer() {
        assert!(Records::disabled(KIND, 20).writer(record).is_none());
    }
}
