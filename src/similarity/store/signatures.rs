//! The signature store: Coates signatures of blobs
//! ([`crate::similarity::signature`]), kept beside their fingerprints so
//! that estimates and `compare` need no blob, and a store filled in one
//! repository answers for another (or for a partial clone that lacks the
//! blobs).
//!
//! Tables are `sig-*.table` (`records.rs` layout, the records
//! [`Stored`]'s form: symbols only, a few hundred bytes a blob at most), of
//! [`SIGNATURE_VERSION`]: tables of another version are ignored.

use std::path::Path;

use gix::ObjectId;
use rayon::prelude::*;

use super::records::{Kind, Records};
use super::{Pruned, StoreError};
use crate::similarity::signature::{SIGNATURE_VERSION, Stored, Texts};

const KIND: Kind = Kind {
    magic: b"GSIMMSG\0",
    prefix: "sig-",
    version: SIGNATURE_VERSION,
    what: "signature",
    flush_bytes: super::records::FLUSH_BYTES,
};

/// The signatures of one store (see the module documentation).
pub struct Signatures(Records);

impl Signatures {
    /// A store that keeps what it is given in memory for this run only.
    pub fn disabled(hash_len: usize) -> Signatures {
        Signatures(Records::disabled(KIND, hash_len))
    }

    /// Open the signature tables in `dir` (the fingerprint store's
    /// directory).
    pub fn open(dir: &Path, hash_len: usize) -> Result<Signatures, StoreError> {
        Records::open(KIND, dir, hash_len).map(Signatures)
    }

    /// Add the stored form ([`Stored::encode_of`]) of `id`'s signature
    /// (written with the next flush).
    pub fn add_encoded(&mut self, id: ObjectId, record: &[u8]) -> Result<(), StoreError> {
        self.0.add(id, record)
    }

    /// Add the signature of `id` (written with the next flush).
    pub fn add(&mut self, id: ObjectId, signature: &Stored) -> Result<(), StoreError> {
        let mut bytes = Vec::with_capacity(signature.len() * 2 + 16);
        signature.encode(&mut bytes);
        self.0.add(id, &bytes)
    }

    /// Write what was added.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        self.0.flush()
    }

    /// The signatures of `ids`, `None` where the store has none (or one
    /// that does not decode).
    pub fn get_many(&mut self, ids: &[ObjectId]) -> Vec<Option<Stored>> {
        let locs = self.0.locate(ids);
        locs.into_iter()
            .map(|l| l.and_then(|l| self.0.record(l)).and_then(Stored::decode))
            .collect()
    }

    /// The signatures of `ids` as text ([`Stored::texts`]); `None` where
    /// the store has none.
    pub fn texts(&mut self, ids: &[ObjectId]) -> Vec<Option<Texts>> {
        let locs = self.0.locate(ids);
        let records = &self.0;
        locs.into_par_iter()
            .map(|l| {
                l.and_then(|l| records.record(l))
                    .and_then(Stored::decode)
                    .map(|s| s.texts())
            })
            .collect()
    }

    /// Which of `ids` have a signature.
    pub fn contains(&mut self, ids: &[ObjectId]) -> Vec<bool> {
        self.0
            .locate(ids)
            .into_iter()
            .map(|l| l.is_some())
            .collect()
    }

    /// Drop the signatures of blobs `keep` rejects; merge the tables.
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

    /// Number of tables.
    pub fn table_count(&self) -> usize {
        self.0.table_count()
    }
}
