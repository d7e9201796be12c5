//! Fingerprints for a set of blobs: from the store where it has them,
//! otherwise read with gix and fingerprinted in parallel, then stored.
//!
//! Every command that needs fingerprints goes through here, so "compute
//! once, keep forever" holds everywhere and `--no-cache` is one switch.

use std::sync::{Mutex, PoisonError};

use gix::ObjectId;
use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted};
use crate::repo::{Repo, RepoError};
use crate::similarity::fingerprint::Fingerprinter;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::signature::Stored;
use crate::similarity::store::signatures::Signatures;
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
    /// The work was interrupted; the fingerprints computed until then are
    /// in the store.
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
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

/// The title of the stage [`fingerprint_blobs`] reports to its
/// [`Feedback`], counting `ids`.
pub const STAGE: &str = "Fingerprinting blobs";

/// Sizes and fingerprints of `ids` (in the same order). Duplicated ids are
/// computed once.
///
/// Progress is the stage [`STAGE`] of `feedback`. Interrupted, it returns
/// [`ComputeError::Interrupted`] after storing the fingerprints computed
/// so far (in one table, like any insert), so a later run resumes.
pub fn fingerprint_blobs(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<(Vec<Sketch>, Outcome), ComputeError> {
    let (entries, _, outcome) =
        fingerprint_blobs_with(repo, store, ids, feedback, Signing::Skip, |_, _| ())?;
    Ok((entries, outcome))
}

/// Entries of every id, the extra value of every blob read (each once,
/// sorted by id), and counts.
pub type WithExtras<T> = (Vec<Sketch>, Vec<(ObjectId, T)>, Outcome);

/// Whether a fingerprinting read also signs the blobs it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signing {
    /// Sign every blob read and store its signature ([`Stored`]) beside
    /// its fingerprint (`fingerprint`, `export`: the commands that
    /// fill the store for signatures' readers), not with a disabled
    /// store, which would only hold them in memory for nobody.
    Sign,
    /// Fingerprints only: renames, `similar`, `check`, `groups` and packs
    /// never read a signature, and signing would add to every cold run of
    /// them.
    Skip,
}

/// [`fingerprint_blobs`], also computing `also(id, content)` for every
/// blob it has to read (those the store lacks), from the same read:
/// callers that need more than the fingerprint of a blob avoid reading it
/// twice. With [`Signing::Sign`], signatures too.
pub fn fingerprint_blobs_with<T: Send>(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
    signing: Signing,
    also: impl Fn(ObjectId, &[u8]) -> T + Sync + Send,
) -> Result<WithExtras<T>, ComputeError> {
    let progress = feedback.stage(STAGE, ids.len() as u64);
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
        let slots: Vec<Mutex<Option<(Sketch, T)>>> = std::iter::repeat_with(|| Mutex::new(None))
            .take(missing.len())
            .collect();
        let signed = if store.is_enabled() && signing == Signing::Sign {
            Some(Signed::new(store.signatures()?))
        } else {
            None
        };
        let read = repo.for_each_blob(&missing, feedback, |i, data| {
            // Signed first: its pass over the LFs tells whether the blob
            // holds a CR, which spares the fingerprint its CRLF search.
            let has_cr = signed.as_ref().is_none_or(|s| s.add(missing[i], data));
            let value = (entry_of(data, has_cr), also(missing[i], data));
            *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
            progress.inc(1);
        });
        // Interrupted, the signatures made are kept like the
        // fingerprints; a read that failed (a corrupt object) stores
        // nothing. The signature table is written on a thread of its own
        // while the fingerprints are gathered and written here: both are
        // serial tails of a cold run (tens of milliseconds each for
        // 45,000 blobs), and the other cores are idle by then.
        let signed = signed.filter(|_| kept_after(&read));
        let (kept, signed) = std::thread::scope(|scope| {
            let writing = signed.map(|signed| scope.spawn(move || signed.finish()));
            let kept = keep_fingerprints(
                store,
                Read {
                    missing: &missing,
                    slots,
                    read,
                },
                &mut outcome,
                &mut extras,
                (ids, &mut out),
            );
            let signed = writing.map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (kept, signed)
        });
        // The signature store's warnings are kept whatever happened to
        // the fingerprints; a failed fingerprint write (or an interrupted
        // read) is reported before a failed signature write, and the
        // fingerprints kept are kept either way.
        let signed = signed
            .transpose()
            .map(|warnings| store.add_warnings(warnings.unwrap_or_default()));
        kept?;
        signed?;
    }
    progress.finish();
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

/// What the fingerprinting read of [`fingerprint_blobs_with`] left: the
/// ids it read, in order, what it computed for each, and how it ended.
struct Read<'a, T> {
    missing: &'a [ObjectId],
    slots: Vec<Mutex<Option<(Sketch, T)>>>,
    read: Result<(), RepoError>,
}

/// Store the fingerprints a read computed and fill `out`'s empty slots
/// with them (`out[k]` is `ids[k]`'s), count them in `outcome` and keep
/// their extra values in `extras`.
fn keep_fingerprints<T>(
    store: &mut Store,
    read: Read<'_, T>,
    outcome: &mut Outcome,
    extras: &mut Vec<(ObjectId, T)>,
    (ids, out): (&[ObjectId], &mut [Option<Sketch>]),
) -> Result<(), ComputeError> {
    let Read {
        missing,
        slots,
        read,
    } = read;
    let computed: Vec<Option<(Sketch, T)>> = slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect();
    if let Err(e) = read {
        // Interrupted, what was computed is kept, so the next run
        // starts from there (the store writes whole tables, so it
        // stays valid however this ends). A read that failed (a
        // corrupt object) leaves the store as it was: the run is
        // refused, not half done.
        let RepoError::Interrupted(i) = e else {
            return Err(ComputeError::Repo(e));
        };
        let partial: Vec<(ObjectId, Sketch)> = missing
            .iter()
            .zip(&computed)
            .filter_map(|(id, c)| c.as_ref().map(|(e, _)| (*id, *e)))
            .collect();
        // Failing to keep them is not worth reporting over `e`.
        if !partial.is_empty() {
            let _ = store.insert(partial);
        }
        return Err(ComputeError::Interrupted(i));
    }
    let mut new: Vec<(ObjectId, Sketch)> = Vec::with_capacity(computed.len());
    for (id, c) in missing.iter().copied().zip(computed) {
        // Every position was delivered, or the read failed above.
        let Some((entry, extra)) = c else {
            return Err(RepoError::MissingObject { id }.into());
        };
        outcome.bytes_read += entry.size;
        new.push((id, entry));
        extras.push((id, extra));
    }
    outcome.computed = new.len();
    for (slot, id) in out.iter_mut().zip(ids) {
        if slot.is_none()
            && let Ok(i) = new.binary_search_by(|(k, _)| k.cmp(id))
        {
            *slot = Some(new[i].1);
        }
    }
    store.insert(new)?;
    Ok(())
}

/// Whether what a read computed is stored: when it finished, or was
/// interrupted (a later run resumes); not when it failed.
fn kept_after(read: &Result<(), RepoError>) -> bool {
    matches!(read, Ok(()) | Err(RepoError::Interrupted(_)))
}

/// The signature store as blobs read on several threads add to it: the
/// first error is kept and reported by [`Signed::finish`].
pub struct Signed(Mutex<(Signatures, Option<StoreError>)>);

impl Signed {
    /// Collect into `signatures`.
    pub fn new(signatures: Signatures) -> Signed {
        Signed(Mutex::new((signatures, None)))
    }

    /// Sign `data`, the content of `id`, and keep its signature (signed
    /// outside the lock, into this thread's buffer; only the bytes are
    /// handed over under it). Whether `data` holds a CR, as
    /// [`Stored::encode_of`] says.
    pub fn add(&self, id: ObjectId, data: &[u8]) -> bool {
        self.sign_and_keep(id, data, |_, has_cr| has_cr)
    }

    /// [`Signed::add`], returning the signature.
    pub fn add_decoded(&self, id: ObjectId, data: &[u8]) -> Stored {
        // What was just encoded decodes.
        self.sign_and_keep(id, data, |record, _| {
            Stored::decode(record).unwrap_or_default()
        })
    }

    /// Sign `data` into this thread's buffer, keep the record, and give
    /// `then` the record and whether `data` holds a CR.
    fn sign_and_keep<R>(
        &self,
        id: ObjectId,
        data: &[u8],
        then: impl FnOnce(&[u8], bool) -> R,
    ) -> R {
        RECORD.with_borrow_mut(|record| {
            record.clear();
            let has_cr = Stored::encode_of(data, record);
            self.keep(id, record);
            then(record, has_cr)
        })
    }

    fn keep(&self, id: ObjectId, record: &[u8]) {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (store, failed) = &mut *guard;
        if failed.is_none()
            && let Err(e) = store.add_encoded(id, record)
        {
            *failed = Some(e);
        }
    }

    /// Write what was added; the warnings of the signature store.
    pub fn finish(self) -> Result<Vec<String>, StoreError> {
        let (mut store, failed) = self.0.into_inner().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = failed {
            return Err(e);
        }
        store.flush()?;
        Ok(store.take_warnings())
    }
}

thread_local! {
    /// Each thread's buffer for the stored signature of the blob it signs.
    static RECORD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The signatures of `ids` (in the same order): from the signature store,
/// the blobs it lacks read once (in a partial clone, fetched as git
/// fetches them), signed and stored.
pub fn signatures(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<Vec<Stored>, ComputeError> {
    let mut sigs = store.signatures()?;
    let mut out = sigs.get_many(ids);
    let mut wanted: Vec<ObjectId> = ids
        .iter()
        .zip(&out)
        .filter(|(_, s)| s.is_none())
        .map(|(id, _)| *id)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    store.add_warnings(sigs.take_warnings());
    if !wanted.is_empty() {
        let made = repo
            .map_blobs(&wanted, feedback, |_, data| Stored::of(data))
            .map_err(|e| match e {
                RepoError::Interrupted(i) => ComputeError::Interrupted(i),
                e => ComputeError::Repo(e),
            })?;
        for (id, sig) in wanted.iter().zip(&made) {
            sigs.add(*id, sig)?;
        }
        sigs.flush()?;
        store.add_warnings(sigs.take_warnings());
        for (slot, id) in out.iter_mut().zip(ids) {
            if slot.is_none()
                && let Ok(i) = wanted.binary_search(id)
            {
                *slot = Some(made[i].clone());
            }
        }
    }
    // Every id was found or read, or the read failed above.
    Ok(out.into_iter().map(Option::unwrap_or_default).collect())
}

/// Sign the blobs of `ids` the signature store lacks (each read once);
/// how many were read. What `fingerprint --all` does after the
/// fingerprints, so that a store filled by a git-simm without signatures
/// gains them.
pub fn fill_signatures(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<usize, ComputeError> {
    if !store.is_enabled() {
        return Ok(0);
    }
    let mut sigs = store.signatures()?;
    let have = sigs.contains(ids);
    let mut wanted: Vec<ObjectId> = ids
        .iter()
        .zip(have)
        .filter(|(_, h)| !h)
        .map(|(id, _)| *id)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        store.add_warnings(sigs.take_warnings());
        return Ok(0);
    }
    let progress = feedback.stage("Signing blobs", wanted.len() as u64);
    let signed = Signed::new(sigs);
    let read = repo.for_each_blob(&wanted, feedback, |i, data| {
        signed.add(wanted[i], data);
        progress.inc(1);
    });
    // Kept when interrupted, as fingerprints are; nothing stored when a
    // read failed (a corrupt object).
    if kept_after(&read) {
        let warnings = signed.finish()?;
        store.add_warnings(warnings);
    }
    read.map_err(|e| match e {
        RepoError::Interrupted(i) => ComputeError::Interrupted(i),
        e => ComputeError::Repo(e),
    })?;
    progress.finish();
    Ok(wanted.len())
}

/// A blob's size and fingerprint, with this thread's scratch space;
/// `has_cr` as [`Fingerprinter::fingerprint_knowing_cr`] takes it.
fn entry_of(data: &[u8], has_cr: bool) -> Sketch {
    FINGERPRINTER.with_borrow_mut(|f| Sketch {
        size: data.len() as u64,
        fingerprint: f.fingerprint_knowing_cr(data, has_cr),
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
        .map(|(_, data)| entry_of(data, true))
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
