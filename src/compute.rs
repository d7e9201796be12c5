//! Fingerprints for a set of blobs: from the store where it has them,
//! otherwise read with gix and fingerprinted in parallel, then stored.
//!
//! Every command that needs fingerprints goes through here, so "compute
//! once, keep forever" holds everywhere and `--no-cache` is one switch.

use std::sync::Arc;

use gix::ObjectId;
use rayon::prelude::*;

use crate::score::Spans;

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
    let (entries, _, outcome) = fingerprint_blobs_with(repo, store, ids, progress, |_| ())?;
    Ok((entries, outcome))
}

/// Entries of every id, the extra value of every blob read (each once,
/// sorted by id), and counts.
pub type WithExtras<T> = (Vec<Entry>, Vec<(ObjectId, T)>, Outcome);

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
    let mut extras = Vec::new();
    if !missing.is_empty() {
        let computed = repo.map_blobs(&missing, |_, data| {
            progress.inc(1);
            (entry_of(data), also(data))
        })?;
        outcome.computed = computed.len();
        outcome.bytes_read = computed.iter().map(|(e, _)| e.size).sum();
        let mut new: Vec<(ObjectId, Entry)> = Vec::with_capacity(computed.len());
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
            e.unwrap_or(Entry {
                size: 0,
                fingerprint: None,
            })
        })
        .collect();
    Ok((entries, extras, outcome))
}

/// A blob's size and fingerprint, with this thread's scratch space.
fn entry_of(data: &[u8]) -> Entry {
    FINGERPRINTER.with_borrow_mut(|f| Entry {
        size: data.len() as u64,
        fingerprint: f.fingerprint(data),
    })
}

/// Fingerprint content already in memory (work-tree files), keyed by the
/// blob id it would have, and remember it like any other blob.
pub fn fingerprint_contents(
    store: &mut Store,
    contents: &[(ObjectId, &[u8])],
) -> Result<Vec<Entry>, StoreError> {
    let entries: Vec<Entry> = contents
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

/// Blob contents for rename detection: sizes and fingerprints through the
/// store, chunk histograms read on demand, and work-tree files (which are
/// not in the object database) held in memory under the id they would have.
pub struct RepoContent<'a> {
    repo: &'a Repo,
    store: &'a mut Store,
    extra: std::collections::HashMap<ObjectId, Vec<u8>>,
    /// The size and fingerprint of each blob computed here: detection asks
    /// again for the same blobs, and with `--no-cache` (or a store that
    /// cannot be written) asking the store would mean reading them again.
    /// Blobs the store has are not kept: asking it again is a lookup, and
    /// keeping a copy of each of 100,000 costs more than that.
    memo: gix::hashtable::HashMap<ObjectId, crate::candidates::Item>,
    spans: gix::hashtable::HashMap<ObjectId, Arc<Spans>>,
}

impl<'a> RepoContent<'a> {
    /// Content from `repo`, with `extra` blobs that exist only in memory.
    pub fn new(
        repo: &'a Repo,
        store: &'a mut Store,
        extra: std::collections::HashMap<ObjectId, Vec<u8>>,
    ) -> Self {
        RepoContent {
            repo,
            store,
            extra,
            memo: Default::default(),
            spans: Default::default(),
        }
    }
}

impl crate::renames::Content for RepoContent<'_> {
    fn items(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<crate::candidates::Item>> {
        let none = crate::candidates::Item {
            size: 0,
            fingerprint: None,
        };
        let mut out: Vec<Option<crate::candidates::Item>> =
            ids.iter().map(|id| self.memo.get(id).copied()).collect();
        let in_memory: Vec<ObjectId> = if self.extra.is_empty() {
            Vec::new()
        } else {
            let mut v: Vec<ObjectId> = ids
                .iter()
                .zip(&out)
                .filter(|(id, known)| known.is_none() && self.extra.contains_key(*id))
                .map(|(id, _)| *id)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        if !in_memory.is_empty() {
            let contents: Vec<(ObjectId, &[u8])> = in_memory
                .iter()
                .filter_map(|id| self.extra.get(id).map(|d| (*id, d.as_slice())))
                .collect();
            let entries = fingerprint_contents(self.store, &contents)?;
            for ((id, _), e) in contents.iter().zip(entries) {
                self.memo.insert(*id, item(e));
            }
            for (slot, id) in out.iter_mut().zip(ids) {
                if slot.is_none() {
                    *slot = self.memo.get(id).copied();
                }
            }
        }
        // The rest is in the object database: the store answers most, the
        // others are read (possibly repeated ids are handled there).
        let positions: Vec<usize> = (0..ids.len()).filter(|&i| out[i].is_none()).collect();
        if !positions.is_empty() {
            let in_odb: Vec<ObjectId> = positions.iter().map(|&i| ids[i]).collect();
            // Blobs the store lacks are read here anyway; detection will
            // almost always score them exactly too, so their chunk
            // histograms are kept from the same read rather than reading
            // them a second time.
            let progress = Progress::new("Fingerprinting blobs", in_odb.len() as u64, false);
            let (entries, spans, _) =
                fingerprint_blobs_with(self.repo, self.store, &in_odb, &progress, |data| {
                    Arc::new(Spans::new(data))
                })?;
            progress.finish();
            // `spans` lists the blobs read, sorted by id: only those are
            // remembered.
            for (&i, e) in positions.iter().zip(entries) {
                out[i] = Some(item(e));
                if spans.binary_search_by(|(k, _)| k.cmp(&ids[i])).is_ok() {
                    self.memo.insert(ids[i], item(e));
                }
            }
            self.spans.extend(spans);
        }
        Ok(out.into_iter().map(|o| o.unwrap_or(none)).collect())
    }

    fn sizes(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<u64>> {
        // The store first: a blob's size is the same wherever it is found,
        // and asking the memo about 100,000 ids the store has costs more
        // than asking it about the few the store lacks.
        let mut out = self.store.sizes(ids);
        let missing: Vec<ObjectId> = ids
            .iter()
            .zip(&out)
            .filter(|(_, s)| s.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !missing.is_empty() {
            let mut items = self.items(&missing)?.into_iter();
            for slot in out.iter_mut().filter(|s| s.is_none()) {
                *slot = items.next().map(|i| i.size);
            }
        }
        Ok(out.into_iter().map(|s| s.unwrap_or(0)).collect())
    }

    fn spans(&mut self, ids: &[ObjectId]) -> anyhow::Result<Vec<Arc<Spans>>> {
        // Detection asks in several rounds (candidates, exhaustive search,
        // tie replays); reading and chunking a blob once, not once a round,
        // is most of the cost at scale.
        let mut missing: Vec<ObjectId> = ids
            .iter()
            .filter(|id| !self.spans.contains_key(*id))
            .copied()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let (in_memory, in_odb): (Vec<ObjectId>, Vec<ObjectId>) = missing
            .into_iter()
            .partition(|id| self.extra.contains_key(id));
        let from_odb = self
            .repo
            .map_blobs(&in_odb, |_, data| Arc::new(Spans::new(data)))?;
        let from_memory: Vec<Arc<Spans>> = in_memory
            .par_iter()
            .map(|id| {
                Arc::new(Spans::new(
                    self.extra.get(id).map_or(&[][..], |v| v.as_slice()),
                ))
            })
            .collect();
        self.spans.extend(in_odb.into_iter().zip(from_odb));
        self.spans.extend(in_memory.into_iter().zip(from_memory));
        let empty = Arc::new(Spans::new(&[]));
        Ok(ids
            .iter()
            .map(|id| self.spans.get(id).cloned().unwrap_or_else(|| empty.clone()))
            .collect())
    }
}

fn item(e: Entry) -> crate::candidates::Item {
    crate::candidates::Item {
        size: e.size,
        fingerprint: e.fingerprint,
    }
}
