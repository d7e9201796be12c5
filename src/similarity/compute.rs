//! Fingerprints for a set of blobs: from the store where it has them,
//! otherwise read with gix and fingerprinted in parallel, then stored.
//!
//! Every command that needs fingerprints goes through here, so "compute
//! once, keep forever" holds everywhere and `--no-cache` is one switch.

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::Progress;
use crate::repo::{Repo, RepoError};
use crate::similarity::fingerprint::Fingerprinter;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::store::{Store, StoreError};

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
) -> Result<(Vec<Sketch>, Outcome), ComputeError> {
    let (entries, _, outcome) = fingerprint_blobs_with(repo, store, ids, progress, |_| ())?;
    Ok((entries, outcome))
}

/// Entries of every id, the extra value of every blob read (each once,
/// sorted by id), and counts.
pub type WithExtras<T> = (Vec<Sketch>, Vec<(ObjectId, T)>, Outcome);

/// [`fingerprint_blobs`], also computing `also(content)` for every blob it
/// has to read (those the store lacks), from the same read: callers that
/// need more than the fingerprint of a blob avoid reading it twice.
pub fn fingerprint_blobs_with<T: Send>(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    progress: &Progress,
    also: impl Fn(&[u8]) -> T + Sync + Send,
) -> Result<WithExtras<T>, ComputeError> {
    let mut out: Vec<Option<Sketch>> = store.get_many(ids);
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
    let mut extras = Vec::new();
    if !missing.is_empty() {
        let computed = repo.map_blobs(&missing, |_, data| {
            progress.inc(1);
            (entry_of(data), also(data))
        })?;
        outcome.computed = computed.len();
        outcome.bytes_read = computed.iter().map(|(e, _)| e.size).sum();
        let mut new: Vec<(ObjectId, Sketch)> = Vec::with_capacity(computed.len());
        for (id, (entry, extra)) in missing.iter().copied().zip(computed) {
            new.push((id, entry));
            extras.push((id, extra));
        }
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
            e.unwrap_or(Sketch {
                size: 0,
                fingerprint: None,
            })
        })
        .collect();
    Ok((entries, extras, outcome))
}

/// A blob's size and fingerprint, with this thread's scratch space.
fn entry_of(data: &[u8]) -> Sketch {
    FINGERPRINTER.with_borrow_mut(|f| Sketch {
        size: data.len() as u64,
        fingerprint: f.fingerprint(data),
    })
}

/// Fingerprint content already in memory (work-tree files), keyed by the
/// blob id it would have, and remember it like any other blob.
pub fn fingerprint_contents(
    store: &mut Store,
    contents: &[(ObjectId, &[u8])],
) -> Result<Vec<Sketch>, StoreError> {
    let entries: Vec<Sketch> = contents
        .par_iter()
        .map(|(_, data)| entry_of(data))
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
