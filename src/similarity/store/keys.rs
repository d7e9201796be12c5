//! The band key store: each blob's band keys
//! ([`crate::similarity::bands`]), so that `export` writes them without
//! decoding a histogram and hashing its buckets again (on every blob of
//! git.git that was most of a warm export).
//!
//! Tables are `keys-*.table` (`records.rs` layout); a
//! record is the [`BANDS`] keys as little-endian 64-bit integers, or
//! empty for a blob with no keys (nothing but filler lines).

use std::path::Path;

use gix::ObjectId;
use rayon::prelude::*;

use super::records::{Kind, Records};
use super::{Pruned, StoreError};
use crate::similarity::bands::BANDS;

/// Version of the keys' definition: bumped with anything that changes a
/// blob's keys (git's chunking, the filler list, the hashes, [`BANDS`] or
/// the minima per band), so that old tables are ignored.
pub const KEYS_VERSION: u32 = 1;

const KIND: Kind = Kind {
    magic: b"GSIMMBK\0",
    prefix: "keys-",
    version: KEYS_VERSION,
    what: "band key",
    flush_bytes: super::records::FLUSH_BYTES,
};

/// A blob's keys: `None` when it has none.
pub type Keys = Option<[i64; BANDS]>;

/// The band keys of one store (see the module documentation).
pub struct BandKeys(Records);

impl BandKeys {
    /// A store that keeps what it is given in memory for this run only.
    pub fn disabled(hash_len: usize) -> BandKeys {
        BandKeys(Records::disabled(KIND, hash_len))
    }

    /// Open the key tables in `dir` (the fingerprint store's directory).
    pub fn open(dir: &Path, hash_len: usize) -> Result<BandKeys, StoreError> {
        Records::open(KIND, dir, hash_len).map(BandKeys)
    }

    /// Add the keys of `id` (written with the next flush).
    pub fn add(&mut self, id: ObjectId, keys: &Keys) -> Result<(), StoreError> {
        let bytes = match keys {
            Some(k) => k.iter().flat_map(|v| v.to_le_bytes()).collect(),
            None => Vec::new(),
        };
        self.0.add(id, &bytes)
    }

    /// Write what was added.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.0.flush()
    }

    /// The keys of `ids`; the outer `None` where the store has none (or a
    /// record of the wrong length).
    pub fn get_many(&mut self, ids: &[ObjectId]) -> Vec<Option<Keys>> {
        let locs = self.0.locate(ids);
        let records = &self.0;
        locs.into_par_iter()
            .map(|l| l.and_then(|l| records.record(l)).and_then(decode))
            .collect()
    }

    /// Drop the keys of blobs `keep` rejects; merge the tables.
    pub fn prune(
        &mut self,
        keep: &dyn Fn(&ObjectId) -> bool,
        dry_run: bool,
    ) -> Result<Pruned, StoreError> {
        self.0.prune(keep, dry_run)
    }

    /// Warnings gathered so far.
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.0.take_warnings()
    }
}

fn decode(record: &[u8]) -> Option<Keys> {
    if record.is_empty() {
        return Some(None);
    }
    if record.len() != BANDS * 8 {
        return None;
    }
    let mut keys = [0i64; BANDS];
    for (k, chunk) in keys.iter_mut().zip(record.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *k = i64::from_le_bytes(b);
    }
    Some(Some(keys))
}
