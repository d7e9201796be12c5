//! Gathering an export's rows: the files of the trees (or every blob),
//! and for each blob its fingerprint, band keys and signature, from the
//! store where it has them, otherwise from one read of the blob.
//!
//! A warm export reads nothing but the store: fingerprints, band keys
//! (kept per blob, [`BandKeys`]) and signatures ([`Signatures`]). What
//! is missing comes from the fewest reads: a blob without a fingerprint
//! is read once for all three (and its chunk histogram stored); a blob
//! without keys has them from its stored histogram, or is read once for
//! them and, if it lacks it, its signature; a blob without a signature
//! only is read once for that.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use gix::ObjectId;
use rayon::prelude::*;

use super::{EMPTY, Export, ExportError, Row, Selection, Texts};
use crate::progress::Feedback;
use crate::repo::{EntryKind, Repo, RepoError};
use crate::similarity::bands::{BANDS, band_keys, band_keys_of_record};
use crate::similarity::compute::{self, Signed};
use crate::similarity::fingerprint::{MAX_SIZE, MIN_SIZE};
use crate::similarity::score::Spans;
use crate::similarity::signature::Stored;
use crate::similarity::store::histograms::Histograms;
use crate::similarity::store::keys::{BandKeys, Keys};
use crate::similarity::store::{Store, StoreError};

/// Band keys by blob id, sorted.
type Keyed = Vec<(ObjectId, Keys)>;

/// The rows of `selection`, fingerprints from (and into) `store`.
/// Submodules (gitlinks) are left out: their ids are commits of another
/// repository.
pub fn collect(
    repo: &Repo,
    store: &mut Store,
    name: &str,
    selection: &Selection,
    feedback: &Feedback,
) -> Result<Export, ExportError> {
    let (mut rows, sources) = list(repo, selection, feedback)?;
    feedback.trace("export: rows listed");
    let ids: Vec<ObjectId> = rows.iter().map(|r| r.blob).collect();
    let mut histograms = store.histograms()?;
    // With a disabled store nothing keeps the signatures of the blobs read
    // for their fingerprints: they are kept here instead.
    let keep_signatures = !store.is_enabled();
    // Blobs the fingerprint store lacks are read now: their histograms,
    // keys and signatures come from the same read.
    let fresh = Fresh::new(&mut histograms);
    let (sketches, extras, outcome) = compute::fingerprint_blobs_with(
        repo,
        store,
        &ids,
        feedback,
        compute::Signing::Sign,
        |id, data| {
            let keys = fresh.keys(id, data);
            let sig = keep_signatures.then(|| Stored::of(data));
            (keys, sig)
        },
    )?;
    fresh.finish()?;
    for (row, sketch) in rows.iter_mut().zip(sketches) {
        row.sketch = sketch;
    }
    feedback.trace("export: fingerprints known");
    let mut fingerprinted: Vec<ObjectId> = rows
        .iter()
        .filter(|r| r.sketch.fingerprint.is_some())
        .map(|r| r.blob)
        .collect();
    fingerprinted.sort_unstable();
    fingerprinted.dedup();

    // What is known of each fingerprinted blob, by its place in
    // `fingerprinted`: keys (`None` until known) and signature texts.
    let at = |id: &ObjectId| fingerprinted.binary_search(id).ok();
    let mut keys: Vec<Option<Keys>> = vec![None; fingerprinted.len()];
    let mut texts: Vec<Option<Texts>> = vec![None; fingerprinted.len()];
    let mut new_keys: Keyed = Vec::new();
    for (id, (k, sig)) in extras {
        if let Some(k) = k {
            new_keys.push((id, k));
        }
        if let Some(j) = at(&id) {
            keys[j] = k;
            texts[j] = sig.map(|s| s.texts());
        }
    }

    // Signatures: the stored ones, as text. Keys: the stored ones, else
    // from stored histograms, else read (signing those blobs in the same
    // read where they lack a signature). The two stores are read at once.
    let mut signatures = store.signatures()?;
    let mut key_store = store.band_keys()?;
    let wanted: Vec<usize> = (0..texts.len()).filter(|&j| texts[j].is_none()).collect();
    let rest: Vec<usize> = (0..keys.len()).filter(|&j| keys[j].is_none()).collect();
    let ids_at =
        |places: &[usize]| -> Vec<ObjectId> { places.iter().map(|&j| fingerprinted[j]).collect() };
    let (wanted_ids, rest_ids) = (ids_at(&wanted), ids_at(&rest));
    let (stored_texts, stored) = rayon::join(
        || signatures.texts(&wanted_ids),
        || key_store.get_many(&rest_ids),
    );
    let mut unsigned: HashSet<ObjectId> = HashSet::new();
    for ((&j, id), t) in wanted.iter().zip(wanted_ids).zip(stored_texts) {
        if t.is_none() {
            unsigned.insert(id);
        }
        texts[j] = t;
    }
    store.add_warnings(signatures.take_warnings());
    let mut unkeyed: Vec<ObjectId> = Vec::new();
    for ((&j, id), k) in rest.iter().zip(rest_ids).zip(stored) {
        if k.is_none() {
            unkeyed.push(id);
        }
        keys[j] = k;
    }
    let signed = Signed::new(signatures);
    let made: Mutex<Vec<(ObjectId, Texts)>> = Mutex::new(Vec::new());
    let sign_one = |id: ObjectId, data: &[u8]| {
        let sig = signed.add_decoded(id, data);
        made.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, sig.texts()));
    };
    let (found, read) = stored_keys(
        repo,
        &mut histograms,
        &unkeyed,
        &unsigned,
        &sign_one,
        feedback,
    )?;
    let histograms_computed = new_keys.len() + read.len();
    for id in &read {
        unsigned.remove(id);
    }
    for (id, k) in &found {
        if let Some(j) = at(id) {
            keys[j] = Some(*k);
        }
    }
    new_keys.extend(found);
    histograms.flush()?;
    store.add_warnings(histograms.take_warnings());
    store_keys(store, &mut key_store, &new_keys)?;
    feedback.trace("export: band keys known");

    // Signatures still missing: one read each.
    let mut last: Vec<ObjectId> = unsigned.into_iter().collect();
    last.sort_unstable();
    sign(repo, &sign_one, &last, feedback)?;
    store.add_warnings(signed.finish()?);
    let made = made.into_inner().unwrap_or_else(PoisonError::into_inner);
    let signatures_computed = made.len();
    for (id, t) in made {
        if let Some(j) = at(&id) {
            texts[j].get_or_insert(t);
        }
    }

    attach(&mut rows, &fingerprinted, keys, texts);
    feedback.trace("export: signatures known");
    Ok(Export {
        repo: name.to_owned(),
        sources,
        rows,
        outcome,
        histograms_computed,
        signatures_computed,
    })
}

/// Give each fingerprinted row its blob's keys and signature texts (by
/// the blob's place in `fingerprinted`, sorted): the texts are moved to
/// the last row of their blob and cloned for the others.
fn attach(
    rows: &mut [Row],
    fingerprinted: &[ObjectId],
    keys: Vec<Option<Keys>>,
    mut texts: Vec<Option<Texts>>,
) {
    let places: Vec<Option<usize>> = rows
        .par_iter()
        .map(|r| {
            r.sketch
                .fingerprint
                .and_then(|_| fingerprinted.binary_search(&r.blob).ok())
        })
        .collect();
    let mut uses = vec![0u32; texts.len()];
    for &j in places.iter().flatten() {
        uses[j] += 1;
    }
    for (row, place) in rows.iter_mut().zip(places) {
        let Some(j) = place else { continue };
        row.keys = keys[j].flatten();
        uses[j] -= 1;
        row.signature = if uses[j] == 0 {
            texts[j].take()
        } else {
            texts[j].clone()
        };
    }
}

/// The rows of `selection`, with nothing known of their blobs yet.
fn list(
    repo: &Repo,
    selection: &Selection,
    feedback: &Feedback,
) -> Result<(Vec<Row>, Vec<super::TreeSource>), ExportError> {
    let row = |source, path, blob| Row {
        source,
        path,
        blob,
        sketch: EMPTY,
        keys: None,
        signature: None,
    };
    let mut rows = Vec::new();
    let sources = match selection {
        Selection::All => {
            // Sizes come from the store with the fingerprints.
            let ids = repo.all_blob_ids()?;
            rows.reserve_exact(ids.len());
            rows.extend(ids.into_iter().map(|id| row(None, None, id)));
            Vec::new()
        }
        Selection::Trees(sources) => {
            for (i, s) in sources.iter().enumerate() {
                feedback.check()?;
                for e in repo.tree_entries(s.tree)? {
                    if e.kind == EntryKind::Submodule {
                        continue;
                    }
                    rows.push(row(Some(i), Some(e.path), e.id));
                }
            }
            sources.clone()
        }
    };
    Ok((rows, sources))
}

/// Keep the keys computed in this run, so the next export reads them.
fn store_keys(store: &mut Store, key_store: &mut BandKeys, new: &Keyed) -> Result<(), ExportError> {
    for (id, keys) in new {
        key_store.add(*id, keys)?;
    }
    key_store.flush()?;
    store.add_warnings(key_store.take_warnings());
    Ok(())
}

/// Sign the blobs of `ids` with `sign_one`, each read once.
fn sign(
    repo: &Repo,
    sign_one: &(dyn Fn(ObjectId, &[u8]) + Sync),
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<(), ExportError> {
    if ids.is_empty() {
        return Ok(());
    }
    let progress = feedback.stage("Signing blobs", ids.len() as u64);
    repo.for_each_blob(ids, feedback, |i, data| {
        sign_one(ids[i], data);
        progress.inc(1);
    })
    .map_err(read_error)?;
    progress.finish();
    Ok(())
}

fn read_error(e: RepoError) -> ExportError {
    match e {
        RepoError::Interrupted(i) => ExportError::Interrupted(i),
        e => ExportError::Repo(e),
    }
}

/// The histogram store as blobs read on several threads add to it: the
/// first error is kept and reported by [`Fresh::finish`].
struct Fresh<'a>(Mutex<(&'a mut Histograms, Option<StoreError>)>);

impl<'a> Fresh<'a> {
    fn new(histograms: &'a mut Histograms) -> Fresh<'a> {
        Fresh(Mutex::new((histograms, None)))
    }

    /// The keys of a blob read now, its histogram added to the store
    /// (when it is of a size that gets a fingerprint, the only rows with
    /// keys); `None` for other sizes.
    fn keys(&self, id: ObjectId, data: &[u8]) -> Option<Keys> {
        if data.len() < MIN_SIZE || data.len() as u64 > MAX_SIZE {
            return None;
        }
        let spans = Spans::new(data);
        let keys = band_keys(&spans);
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (histograms, failed) = &mut *guard;
        if failed.is_none()
            && let Err(e) = histograms.add(id, &spans)
        {
            *failed = Some(e);
        }
        Some(keys)
    }

    fn finish(self) -> Result<(), StoreError> {
        match self.0.into_inner().unwrap_or_else(PoisonError::into_inner) {
            (_, Some(e)) => Err(e),
            (_, None) => Ok(()),
        }
    }
}

/// The keys of `ids` (sorted, distinct) from the histogram store, the
/// blobs it lacks read and their histograms stored (and those in
/// `unsigned` signed by `sign_one` in the same read); with the ids read.
fn stored_keys(
    repo: &Repo,
    histograms: &mut Histograms,
    ids: &[ObjectId],
    unsigned: &HashSet<ObjectId>,
    sign_one: &(dyn Fn(ObjectId, &[u8]) + Sync),
    feedback: &Feedback,
) -> Result<(Keyed, Vec<ObjectId>), ExportError> {
    let progress = feedback.stage("Computing band keys", ids.len() as u64);
    let locs = histograms.locate(ids);
    let (found, missing): (Vec<_>, Vec<_>) = ids.iter().zip(locs).partition(|(_, l)| l.is_some());
    let store: &Histograms = histograms;
    let decoded: Vec<(ObjectId, Option<Keys>)> = found
        .par_iter()
        .map(|&(id, loc)| {
            progress.inc(1);
            // A record that does not decode is read again below.
            let keys = loc
                .and_then(|l| store.record(l))
                .and_then(band_keys_of_record);
            (*id, keys)
        })
        .collect();
    let mut out: Keyed = Vec::with_capacity(decoded.len());
    let mut unreadable: Vec<ObjectId> = Vec::new();
    for (id, keys) in decoded {
        match keys {
            Some(k) => out.push((id, k)),
            None => unreadable.push(id),
        }
    }
    let mut read: Vec<ObjectId> = missing.iter().map(|(id, _)| **id).collect();
    read.extend(unreadable);
    read.sort_unstable();
    if !read.is_empty() {
        let fresh = Fresh::new(histograms);
        let keys = repo
            .map_blobs(&read, feedback, |i, data| {
                progress.inc(1);
                if unsigned.contains(&read[i]) {
                    sign_one(read[i], data);
                }
                fresh.keys(read[i], data)
            })
            .map_err(read_error)?;
        fresh.finish()?;
        out.extend(
            read.iter()
                .copied()
                .zip(keys)
                .filter_map(|(id, k)| k.map(|k| (id, k))),
        );
    }
    progress.finish();
    Ok((out, read))
}

/// [`BANDS`] is what a stored record holds.
const _: () = assert!(BANDS == 32);
