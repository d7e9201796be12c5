//! Fingerprints for a set of blobs: from the store where it has them,
//! otherwise read with gix and fingerprinted in parallel, then stored.
//!
//! Every command that needs fingerprints goes through here, so "compute
//! once, keep forever" holds everywhere and `--no-cache` is one switch.

use gix::ObjectId;
use rayon::prelude::*;

use crate::fingerprint::Fingerprinter;
use crate::progress::Progress;
use crate::repo::{Repo, RepoError};
use crate::store::{Entry, Store, StoreError};

/// The error returned by [`fingerprint_blobs`].
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// A blob could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// New fingerprints could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`fingerprint_blobs`] did, so nothing is silently partial.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Blobs answered by the store.
    pub cached: usize,
    /// Blobs read and fingerprinted now.
    pub computed: usize,
    /// Bytes read to compute them.
    pub bytes_read: u64,
}

/// Sizes and fingerprints of `ids` (in the same order). Duplicated ids are
/// computed once.
pub fn fingerprint_blobs(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    progress: &Progress,
) -> Result<(Vec<Entry>, Outcome), ComputeError> {
    let mut out: Vec<Option<Entry>> = store.get_many(ids);
    let mut missing: Vec<ObjectId> = ids
        .iter()
        .zip(&out)
        .filter(|(_, e)| e.is_none())
        .map(|(id, _)| *id)
        .collect();
    missing.sort_unstable();
    missing.dedup();
    let mut outcome = Outcome {
        cached: ids.len() - missing.len(),
        ..Outcome::default()
    };
    progress.inc(outcome.cached as u64);
    if !missing.is_empty() {
        let computed = repo.map_blobs(&missing, |_, data| {
            let entry = FINGERPRINTER.with_borrow_mut(|f| Entry {
                size: data.len() as u64,
                fingerprint: f.fingerprint(data),
            });
            progress.inc(1);
            entry
        })?;
        outcome.computed = computed.len();
        outcome.bytes_read = computed.iter().map(|e| e.size).sum();
        let new: Vec<(ObjectId, Entry)> = missing.iter().copied().zip(computed).collect();
        for (slot, id) in out.iter_mut().zip(ids) {
            if slot.is_none()
                && let Ok(i) = new.binary_search_by(|(k, _)| k.cmp(id))
            {
                *slot = Some(new[i].1);
            }
        }
        store.insert(new)?;
    }
    // Every missing id was computed above or the call returned an error.
    let entries = out
        .into_iter()
        .map(|e| {
            e.unwrap_or(Entry {
                size: 0,
                fingerprint: None,
            })
        })
        .collect();
    Ok((entries, outcome))
}

/// Fingerprint content already in memory (work-tree files), keyed by the
/// blob id it would have, and remember it like any other blob.
pub fn fingerprint_contents(
    store: &mut Store,
    contents: &[(ObjectId, &[u8])],
) -> Result<Vec<Entry>, StoreError> {
    let entries: Vec<Entry> = contents
        .par_iter()
        .map(|(_, data)| {
            FINGERPRINTER.with_borrow_mut(|f| Entry {
                size: data.len() as u64,
                fingerprint: f.fingerprint(data),
            })
        })
        .collect();
    store.insert(
        contents
            .iter()
            .map(|(id, _)| *id)
            .zip(entries.iter().copied())
            .collect(),
    )?;
    Ok(entries)
}

thread_local! {
    /// One set of fingerprint scratch space per rayon thread.
    static FINGERPRINTER: std::cell::RefCell<Fingerprinter> = std::cell::RefCell::new(Fingerprinter::new());
}
