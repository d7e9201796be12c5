//! The histogram store: git's chunk histograms ([`Spans`]) of blobs,
//! kept beside the fingerprints so that scoring a pair exactly needs no
//! blob read.
//!
//! Why: `groups` scores every member of every group exactly, and in a
//! tree of many versions of the same files that is nearly every blob;
//! reading and chunking them was most of a run (a 100,000-file tree:
//! 1.8 GB decoded from the pack and chunked, 2.6 of 4.6 s; `--all` on
//! git.git re-read blobs that fell out of the in-memory cache). A
//! histogram is exact, so the score from a stored one is git's score, and
//! stored it takes about a twentieth of the blob ([`Spans::encode`]).
//!
//! Tables are `hist-*.table` (`records.rs` layout, magic `GSIMMHS\0`,
//! the records [`Spans::encode`]'s form), of [`CHUNKING_VERSION`]: tables
//! of another version are ignored.
//!
//! Only histograms of blobs chunked by content (git's NUL rule, no
//! attributes) are kept: that is how `groups` scores.
//!
//! Histograms are added while blobs are read ([`Histograms::add`]); every
//! [`FLUSH_BYTES`] of them become a table, so memory stays bounded
//! however many blobs a run reads. A disabled store (`--no-cache`) keeps
//! its tables in memory instead.

use std::path::Path;
use std::sync::Arc;

use gix::ObjectId;
use rayon::prelude::*;

pub use super::records::Loc;
use super::records::{Kind, Records};
pub use super::writing::Writer;
use super::{Pruned, StoreError};
use crate::similarity::score::Spans;

/// Version of git's chunking the records follow; bumped if the way
/// [`Spans`] cuts or hashes ever changes, so old tables are ignored.
pub const CHUNKING_VERSION: u32 = 1;

/// Pending histograms become a table once they take this many bytes.
pub const FLUSH_BYTES: usize = 128 << 20;

const KIND: Kind = Kind {
    magic: b"GSIMMHS\0",
    prefix: "hist-",
    version: CHUNKING_VERSION,
    what: "histogram",
    flush_bytes: FLUSH_BYTES,
};

/// The histogram store of one repository (see the module documentation).
pub struct Histograms(Records);

impl Histograms {
    /// A store that keeps what it is given in memory for this run only.
    pub fn disabled(hash_len: usize) -> Histograms {
        Histograms(Records::disabled(KIND, hash_len))
    }

    /// Open the histogram tables in `dir` (the fingerprint store's
    /// directory). Damaged tables are dropped with a warning; more than
    /// 16 are merged into one.
    pub fn open(dir: &Path, hash_len: usize) -> Result<Histograms, StoreError> {
        Records::open(KIND, dir, hash_len).map(Histograms)
    }

    /// Warnings gathered so far (damaged tables, unwritable directory).
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.0.take_warnings()
    }

    /// Number of tables (for tests and diagnostics).
    pub fn table_count(&self) -> usize {
        self.0.table_count()
    }

    /// Where the histogram of each of `ids` is, `None` where the store
    /// has none (or a damaged one: its table is dropped and the lookup
    /// starts over). Every record found is checked against its CRC here,
    /// once, so [`Histograms::get`] can trust it.
    pub fn locate(&mut self, ids: &[ObjectId]) -> Vec<Option<Loc>> {
        self.0.locate(ids)
    }

    /// The histogram at `loc` (from [`Histograms::locate`]), decoded;
    /// `None` only if it does not decode, which a record that passed its
    /// CRC does not do unless written by a broken writer.
    pub fn get(&self, loc: Loc) -> Option<Spans> {
        Spans::decode(self.record(loc)?)
    }

    /// The encoded histogram at `loc` ([`Spans::decode`] or
    /// [`Spans::decode_without`] read it).
    pub fn record(&self, loc: Loc) -> Option<&[u8]> {
        self.0.record(loc)
    }

    /// Add the histogram of `id`; every [`FLUSH_BYTES`] pending become a
    /// table ([`Histograms::flush`]).
    pub fn add(&mut self, id: ObjectId, spans: &Spans) -> Result<(), StoreError> {
        self.0.add(id, &encoded(spans))
    }

    /// [`Histograms::add`] for many, encoded on every thread: a cold
    /// `renames` stores the histograms of every blob it read at once,
    /// and encoding them was a serial tail of the run.
    pub fn add_many(&mut self, histograms: &[(ObjectId, &Spans)]) -> Result<(), StoreError> {
        let records: Vec<Vec<u8>> = histograms
            .par_iter()
            .map(|(_, spans)| encoded(spans))
            .collect();
        for ((id, _), record) in histograms.iter().zip(records) {
            self.0.add(*id, &record)?;
        }
        Ok(())
    }

    /// A writer of histograms to this store on a thread of its own, while
    /// the run goes on; `None` when the store is in memory or no thread
    /// could be had. End it with [`Histograms::finish_writing`].
    pub fn writer(&self) -> Option<Writer<Arc<Spans>>> {
        self.0.writer(|spans, out| spans.encode(out))
    }

    /// End `writer` and take its tables in.
    pub fn finish_writing(&mut self, writer: Writer<Arc<Spans>>) -> Result<(), StoreError> {
        self.0.finish_writing(writer)
    }

    /// Make what was added a table: written to the store's directory, or
    /// kept in memory when the store is disabled or read-only.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.0.flush()
    }

    /// Drop the histograms of blobs `keep` rejects and merge the rest into
    /// one table, as [`Store::prune`](super::Store::prune) does for
    /// fingerprints. With `dry_run`, only count.
    pub fn prune(
        &mut self,
        keep: &dyn Fn(&ObjectId) -> bool,
        dry_run: bool,
    ) -> Result<Pruned, StoreError> {
        self.0.prune(keep, dry_run)
    }

    /// Delete every histogram table of this hash (`git simm gc
    /// --drop-histograms`): they are a cache of what blobs hold, so the
    /// next command that wants one reads the blob again.
    pub fn drop_all(&mut self, dry_run: bool) -> Result<Pruned, StoreError> {
        self.0.drop_all(dry_run)
    }
}

/// The stored form of a histogram.
fn encoded(spans: &Spans) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(spans.bucket_count() * 3 + 16);
    spans.encode(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similarity::store::records::MAX_TABLES;
    use std::fs;
    use std::path::PathBuf;

    fn id(n: u32) -> ObjectId {
        let mut b = [0u8; 20];
        b[..4].copy_from_slice(&n.wrapping_mul(2_654_435_761).to_be_bytes());
        b[19] = n as u8;
        ObjectId::from_bytes_or_panic(&b)
    }

    fn corpus() -> Vec<(ObjectId, Spans)> {
        corpus_of(200)
    }

    /// `n` histograms of real text under distinct ids (texts repeat
    /// past the corpus's length).
    fn corpus_of(n: usize) -> Vec<(ObjectId, Spans)> {
        crate::testing::real_text()
            .iter()
            .cycle()
            .take(n)
            .enumerate()
            .map(|(n, t)| (id(n as u32), Spans::new(t)))
            .collect()
    }

    #[test]
    fn histograms_come_back_from_disk_and_memory() {
        let dir = tempfile::tempdir().unwrap();
        let files = corpus();
        let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
        for enabled in [true, false] {
            let mut h = if enabled {
                Histograms::open(dir.path(), 20).unwrap()
            } else {
                Histograms::disabled(20)
            };
            for (i, s) in &files[..120] {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
            for (i, s) in &files[100..] {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
            let locs = h.locate(&ids);
            for ((_, s), loc) in files.iter().zip(&locs) {
                assert_eq!(h.get(loc.unwrap()).as_ref(), Some(s));
            }
            assert_eq!(h.locate(&[id(9999)]), vec![None]);
        }
        // Reopened: the tables on disk, nothing recomputed.
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 2);
        assert!(h.locate(&ids).iter().all(Option::is_some));
        // Another hash's store sees none of them.
        let mut other = Histograms::open(dir.path(), 32).unwrap();
        assert_eq!(other.table_count(), 0);
        assert!(other.take_warnings().is_empty());
    }

    /// One histogram table holding `files`, written to `dir`: its path.
    fn write_table(dir: &Path, files: &[(ObjectId, Spans)]) -> PathBuf {
        let mut h = Histograms::open(dir, 20).unwrap();
        for (i, s) in files {
            h.add(*i, s).unwrap();
        }
        h.flush().unwrap();
        drop(h);
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("hist-"))
            })
            .unwrap()
    }

    #[test]
    fn a_damaged_record_drops_its_table_and_reads_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        // Few records are checked on one thread, many on several.
        for n in [200, 3 * super::super::records::PARALLEL_CHECKS_FROM] {
            let files = corpus_of(n);
            let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
            let path = write_table(dir.path(), &files);
            let mut bytes = fs::read(&path).unwrap();
            let last = bytes.len() - 10;
            bytes[last] ^= 1;
            fs::write(&path, &bytes).unwrap();
            let mut h = Histograms::open(dir.path(), 20).unwrap();
            let locs = h.locate(&ids);
            assert!(locs.iter().all(Option::is_none), "{n} records");
            assert!(h.take_warnings()[0].contains("fails its checksum"));
            assert!(!path.exists());
        }
        let files = corpus();
        // Cut short: refused when opened.
        let path = write_table(dir.path(), &files);
        let len = fs::metadata(&path).unwrap().len();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 0);
        assert!(h.take_warnings()[0].contains("truncated"));
    }

    #[test]
    fn many_tables_are_merged_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let files = corpus();
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        for chunk in files.chunks(files.len() / (MAX_TABLES + 2)) {
            for (i, s) in chunk {
                h.add(*i, s).unwrap();
            }
            h.flush().unwrap();
        }
        assert!(h.table_count() > MAX_TABLES);
        drop(h);
        let mut h = Histograms::open(dir.path(), 20).unwrap();
        assert_eq!(h.table_count(), 1);
        let ids: Vec<ObjectId> = files.iter().map(|f| f.0).collect();
        let locs = h.locate(&ids);
        for ((_, s), loc) in files.iter().zip(&locs) {
            assert_eq!(h.get(loc.unwrap()).as_ref(), Some(s));
        }
    }
}
