//! The content provider of rename detection over a repository: chunk
//! histograms from the histogram store or read once per blob, with the
//! fingerprints of the histograms that order the search
//! ([`simhash`]), sizes, and the text-or-binary decision of its paths
//! (`.gitattributes`). gsimm fingerprints ([`Content::items`]) are
//! for the commands that rank by them (`similar`).

use std::sync::Arc;

use gix::ObjectId;
use rayon::prelude::*;

use super::ContentError;
use super::{Content, SpanKey, SpanMap};
use crate::progress::Feedback;
use crate::repo::{DiffAttributes, Entry, Fetched, Repo};
use crate::similarity::fingerprint::{Fingerprint, Sketch};
use crate::similarity::score::{Binary, Spans, simhash};
use crate::similarity::store::histograms::{Histograms, Writer};
use crate::similarity::store::{Store, StoreError};

/// Histograms found in the store (decoded, with their prints) and the
/// keys it lacks.
type StoredSplit = (Vec<(SpanKey, Histogram)>, Vec<SpanKey>);

/// A histogram, and its print when one was asked for: made while the
/// histogram is still in the cache.
type Histogram = (Arc<Spans>, Option<Print>);

/// The fingerprint of a histogram ([`simhash`]) that orders the search;
/// `None` for an empty file.
type Print = Option<Fingerprint>;

/// The histogram of `data` chunked as `binary` says, with its print if
/// `print`.
fn histogram(data: &[u8], binary: Binary, print: bool) -> Histogram {
    histogram_of(Spans::with_binary(data, binary), print)
}

fn histogram_of(spans: Spans, print: bool) -> Histogram {
    let print = print.then(|| simhash::fingerprint(&spans));
    (Arc::new(spans), print)
}

/// Whether the histogram of `key` is made with its print: when prints
/// are asked for ([`Content::search_items`]), of content-chunked ones,
/// which are the ones the search orders by.
fn wants_print(key: &SpanKey, prints: bool) -> bool {
    prints && key.1 == Binary::Auto
}

/// Blob contents for rename detection: chunk histograms from the
/// histogram store or read on demand, sizes, fingerprints of the
/// histograms (and gsimm fingerprints through the store for `items`), and
/// work-tree files (which are not in the object database) held in memory
/// under the id they would have.
///
/// Histograms of blobs read here are added to the histogram store, so a
/// second run over the same blobs reads none: the candidate search needs
/// the histogram of every source that can score, not only of the pairs it
/// scores. [`RepoContent::finish`] writes them.
pub struct RepoContent<'a> {
    repo: &'a Repo,
    store: &'a mut Store,
    extra: std::collections::HashMap<ObjectId, Vec<u8>>,
    /// The size and fingerprint of each blob computed here: detection asks
    /// again for the same blobs, and with `--no-cache` (or a store that
    /// cannot be written) asking the store would mean reading them again.
    /// Blobs the store has are not kept: asking it again is a lookup, and
    /// keeping a copy of each of 100,000 costs more than that.
    memo: gix::hashtable::HashMap<ObjectId, crate::similarity::fingerprint::Sketch>,
    spans: SpanMap<Arc<Spans>>,
    /// The prints of blobs of `spans` chunked by content, those made so
    /// far (only the search asks for them).
    prints: gix::hashtable::HashMap<ObjectId, Print>,
    /// git's per-path text-or-binary decision; `None` scores every path by
    /// content alone.
    attributes: Option<DiffAttributes>,
    feedback: Feedback<'a>,
    fetched: Fetched,
    /// The histogram store, opened on first use; `None` with `--no-cache`.
    histograms: Option<Histograms>,
    /// The thread writing histograms read many at once, started with the
    /// first such batch.
    writer: Option<Writer<Arc<Spans>>>,
}

impl<'a> RepoContent<'a> {
    /// Content from `repo`, with `extra` blobs that exist only in memory.
    /// `feedback` sees the fingerprinting of blobs the store lacks, and its
    /// flag stops any reading.
    pub fn new(
        repo: &'a Repo,
        store: &'a mut Store,
        extra: std::collections::HashMap<ObjectId, Vec<u8>>,
        feedback: &Feedback<'a>,
    ) -> Self {
        RepoContent {
            repo,
            store,
            extra,
            memo: Default::default(),
            spans: Default::default(),
            prints: Default::default(),
            attributes: None,
            feedback: *feedback,
            fetched: Fetched::default(),
            histograms: None,
            writer: None,
        }
    }

    /// Write the histograms computed during detection to the histogram
    /// store, and pass its warnings on to the fingerprint store's.
    pub fn finish(mut self) -> Result<(), StoreError> {
        self.flush()
    }

    /// Write what [`RepoContent::finish`] writes, keeping the content
    /// (a command about to exit need not free it).
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if let Some(mut h) = self.histograms.take() {
            if let Some(writer) = self.writer.take() {
                h.finish_writing(writer)?;
            }
            h.flush()?;
            self.store.add_warnings(h.take_warnings());
        }
        Ok(())
    }

    /// The histogram store, opened the first time it is asked for; `None`
    /// when the fingerprint store is disabled (`--no-cache`).
    fn histogram_store(&mut self) -> Result<Option<&mut Histograms>, StoreError> {
        if self.histograms.is_none() && self.store.is_enabled() {
            self.histograms = Some(self.store.histograms()?);
        }
        Ok(self.histograms.as_mut())
    }

    /// Keep histograms computed from blob contents (chunked as the content
    /// says: the only kind the histogram store holds).
    ///
    /// Many at once (a first run's) are written on a thread of their own
    /// while detection goes on, and taken in by [`RepoContent::flush`].
    fn remember(&mut self, read: &[(ObjectId, Arc<Spans>)]) -> Result<(), StoreError> {
        if read.is_empty() || self.histogram_store()?.is_none() {
            return Ok(());
        }
        if read.len() >= BACKGROUND_FROM {
            if self.writer.is_none() {
                self.writer = self.histograms.as_ref().and_then(Histograms::writer);
            }
            // A writer that stopped (on an error it reports when finished)
            // leaves them to be added here.
            if self.writer.as_ref().is_some_and(|w| w.send(read.to_vec())) {
                return Ok(());
            }
        }
        let read: Vec<(ObjectId, &Spans)> = read.iter().map(|(id, s)| (*id, &**s)).collect();
        match self.histograms.as_mut() {
            Some(h) => h.add_many(&read),
            None => Ok(()),
        }
    }

    /// [`RepoContent::remember`] those of `read` the histogram store does
    /// not hold yet: blobs read for their gsimm fingerprints may have
    /// histograms there already (`renames` keeps histograms alone), and
    /// adding them again would grow the store by a copy of each.
    fn remember_new(&mut self, read: &[(ObjectId, Arc<Spans>)]) -> Result<(), StoreError> {
        let Some(h) = self.histogram_store()? else {
            return Ok(());
        };
        let ids: Vec<ObjectId> = read.iter().map(|(id, _)| *id).collect();
        let held = h.locate(&ids);
        let new: Vec<(ObjectId, Arc<Spans>)> = read
            .iter()
            .zip(held)
            .filter(|(_, at)| at.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        self.remember(&new)
    }

    /// The histograms of `keys` the histogram store has, decoded, and the
    /// keys it lacks. A stored histogram serves a path whose attributes
    /// force a decision only if the content decided the same.
    fn stored(&mut self, keys: Vec<SpanKey>, prints: bool) -> Result<StoredSplit, StoreError> {
        let Some(h) = self.histogram_store()? else {
            return Ok((Vec::new(), keys));
        };
        let ids: Vec<ObjectId> = keys.iter().map(|k| k.0).collect();
        let locs = h.locate(&ids);
        let h = &*h;
        let decoded: Vec<Option<Histogram>> = keys
            .par_iter()
            .zip(&locs)
            .map(|(key, loc)| {
                let spans = h.get((*loc)?)?;
                let serves = match key.1 {
                    Binary::Auto => true,
                    Binary::Yes => spans.is_binary(),
                    Binary::No => !spans.is_binary(),
                };
                serves.then(|| histogram_of(spans, wants_print(key, prints)))
            })
            .collect();
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for (key, d) in keys.into_iter().zip(decoded) {
            match d {
                Some(s) => found.push((key, s)),
                None => missing.push(key),
            }
        }
        Ok((found, missing))
    }

    /// What was fetched from a partial clone's promisor remote for
    /// [`Content::prefetch`] (reads that found blobs missing fetch on
    /// their own and are not counted here).
    pub fn fetched(&self) -> Fetched {
        self.fetched
    }

    /// Score paths as their attributes say ([`Repo::diff_attributes`]),
    /// as git does.
    pub fn with_attributes(mut self, attributes: DiffAttributes) -> Self {
        self.attributes = Some(attributes);
        self
    }

    /// Hold histograms made or found, and their prints.
    fn keep(&mut self, histograms: impl IntoIterator<Item = (SpanKey, Histogram)>) {
        for (key, (spans, print)) in histograms {
            if let Some(print) = print {
                self.prints.insert(key.0, print);
            }
            self.spans.insert(key, spans);
        }
    }

    /// The sizes `out` lacks of blobs whose histograms this run holds.
    fn sizes_of_read(&self, ids: &[ObjectId], out: &mut [Option<u64>]) {
        if self.spans.is_empty() {
            return;
        }
        for (slot, id) in out.iter_mut().zip(ids) {
            if slot.is_none() {
                *slot = self.spans.get(&(*id, Binary::Auto)).map(|s| s.size());
            }
        }
    }

    /// The histogram of `key` if one already known serves: a forced
    /// decision equal to what the content decides chunks identically.
    fn known(&self, key: &SpanKey) -> Option<Arc<Spans>> {
        if let Some(s) = self.spans.get(key) {
            return Some(s.clone());
        }
        let auto = self.spans.get(&(key.0, Binary::Auto))?;
        match key.1 {
            Binary::Yes if auto.is_binary() => Some(auto.clone()),
            Binary::No if !auto.is_binary() => Some(auto.clone()),
            _ => None,
        }
    }
}

/// The sizes `out` lacks (one per id of `ids`), from `find` of their ids
/// in order; `find` is not called when nothing is missing.
fn fill_missing(
    ids: &[ObjectId],
    out: &mut [Option<u64>],
    find: impl FnOnce(&[ObjectId]) -> Result<Vec<u64>, ContentError>,
) -> Result<(), ContentError> {
    let missing: Vec<ObjectId> = ids
        .iter()
        .zip(out.iter())
        .filter(|(_, s)| s.is_none())
        .map(|(id, _)| *id)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut found = find(&missing)?.into_iter();
    for slot in out.iter_mut().filter(|s| s.is_none()) {
        *slot = found.next();
    }
    Ok(())
}

impl Content for RepoContent<'_> {
    fn items(
        &mut self,
        ids: &[ObjectId],
    ) -> Result<Vec<crate::similarity::fingerprint::Sketch>, ContentError> {
        let none = crate::similarity::fingerprint::Sketch {
            size: 0,
            fingerprint: None,
        };
        let mut out: Vec<Option<crate::similarity::fingerprint::Sketch>> =
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
            let entries = crate::similarity::compute::fingerprint_contents(self.store, &contents)?;
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
            let (entries, spans, _) = crate::similarity::compute::fingerprint_blobs_with(
                self.repo,
                self.store,
                &in_odb,
                &self.feedback,
                crate::similarity::compute::Signing::Skip,
                |_, data| Arc::new(Spans::new(data)),
            )?;
            // `spans` lists the blobs read, sorted by id: only those are
            // remembered.
            for (&i, e) in positions.iter().zip(entries) {
                out[i] = Some(item(e));
                if spans.binary_search_by(|(k, _)| k.cmp(&ids[i])).is_ok() {
                    self.memo.insert(ids[i], item(e));
                }
            }
            self.remember_new(&spans)?;
            self.spans
                .extend(spans.into_iter().map(|(id, s)| ((id, Binary::Auto), s)));
        }
        Ok(out.into_iter().map(|o| o.unwrap_or(none)).collect())
    }

    fn search_items(&mut self, ids: &[ObjectId]) -> Result<Vec<Sketch>, ContentError> {
        // The histograms are what the search scores with: every blob that
        // can score is read for its histogram anyway (or found in the
        // histogram store), and a fingerprint of the histogram costs a
        // fraction of a gsimm fingerprint of the bytes.
        let keys: Vec<SpanKey> = ids.iter().map(|id| (*id, Binary::Auto)).collect();
        let spans = self.fetch(&keys, true)?;
        let mut out = Vec::with_capacity(ids.len());
        for (s, id) in spans.iter().zip(ids) {
            // Histograms held before the search asked have none yet.
            let print = *self
                .prints
                .entry(*id)
                .or_insert_with(|| simhash::fingerprint(s));
            out.push(Sketch {
                size: s.size(),
                fingerprint: print,
            });
        }
        Ok(out)
    }

    fn sizes(&mut self, ids: &[ObjectId]) -> Result<Vec<u64>, ContentError> {
        // The store first: a blob's size is the same wherever it is found,
        // and asking the memo about 100,000 ids the store has costs more
        // than asking it about the few the store lacks.
        let mut out = self.store.sizes(ids);
        self.sizes_of_read(ids, &mut out);
        // The rest are read for their histograms, which scoring them
        // needs, not for gsimm fingerprints, which detection does not use.
        fill_missing(ids, &mut out, |missing| {
            let keys: Vec<SpanKey> = missing.iter().map(|id| (*id, Binary::Auto)).collect();
            Ok(self.spans(&keys)?.iter().map(|s| s.size()).collect())
        })?;
        Ok(out.into_iter().map(|s| s.unwrap_or(0)).collect())
    }

    fn header_sizes(&mut self, ids: &[ObjectId]) -> Result<Vec<u64>, ContentError> {
        let mut out = self.store.sizes(ids);
        self.sizes_of_read(ids, &mut out);
        for (slot, id) in out.iter_mut().zip(ids) {
            if slot.is_none() {
                *slot = match self.memo.get(id) {
                    Some(item) => Some(item.size),
                    None => self.extra.get(id).map(|d| d.len() as u64),
                };
            }
        }
        let repo = self.repo;
        fill_missing(ids, &mut out, |missing| {
            Ok(missing
                .par_iter()
                .map_init(|| repo.reader(), |reader, id| reader.header(id))
                .map(|header| header.map(|(_, size)| size))
                .collect::<Result<Vec<_>, _>>()?)
        })?;
        Ok(out.into_iter().map(|s| s.unwrap_or(0)).collect())
    }

    fn prefetch(&mut self, ids: &[ObjectId]) -> Result<(), ContentError> {
        if !self.repo.is_partial() {
            return Ok(());
        }
        // Work-tree files are in memory, not in the object database.
        let in_odb: Vec<ObjectId> = ids
            .iter()
            .filter(|id| !self.extra.contains_key(*id))
            .copied()
            .collect();
        let got = self.repo.fetch_missing(&in_odb, &self.feedback)?;
        self.fetched.objects += got.objects;
        self.fetched.batches += got.batches;
        Ok(())
    }

    fn lacks_any(&mut self, ids: &[ObjectId]) -> Result<bool, ContentError> {
        if !self.repo.is_partial() {
            return Ok(false);
        }
        let in_odb: Vec<ObjectId> = ids
            .iter()
            .filter(|id| !self.extra.contains_key(*id))
            .copied()
            .collect();
        Ok(!self.repo.missing_objects(&in_odb).is_empty())
    }

    fn binary(&mut self, entries: &[&Entry]) -> Result<Vec<Binary>, ContentError> {
        let Some(attributes) = &mut self.attributes else {
            return Ok(vec![Binary::Auto; entries.len()]);
        };
        let look_up = |attributes: &mut DiffAttributes, entries: &[&Entry]| {
            entries
                .iter()
                .map(|e| attributes.binary(&e.path))
                .collect::<Result<Vec<_>, _>>()
        };
        // Each lookup walks the attribute stack (and opens the
        // `.gitattributes` of each directory it enters): after a large
        // move, milliseconds on one thread. Each half keeps its paths in
        // order, as the stack wants them.
        if entries.len() < ATTRIBUTES_SPLIT_FROM || rayon::current_num_threads() < 2 {
            return Ok(look_up(attributes, entries)?);
        }
        let (first, second) = entries.split_at(entries.len() / 2);
        let mut other = attributes.clone();
        let (mut found, rest) = rayon::join(
            || look_up(attributes, first),
            || look_up(&mut other, second),
        );
        if let Ok(found) = &mut found {
            found.extend(rest?);
        }
        Ok(found?)
    }

    fn spans(&mut self, keys: &[SpanKey]) -> Result<Vec<Arc<Spans>>, ContentError> {
        self.fetch(keys, false)
    }
}

impl RepoContent<'_> {
    /// [`Content::spans`], making the prints of those made or decoded here
    /// if `prints`.
    fn fetch(&mut self, keys: &[SpanKey], prints: bool) -> Result<Vec<Arc<Spans>>, ContentError> {
        // Detection asks in several rounds (basename pass, candidates,
        // tie replays); reading and chunking a blob once, not once a round,
        // is most of the cost at scale.
        let mut missing: Vec<SpanKey> = keys
            .iter()
            .filter(|k| self.known(k).is_none())
            .copied()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let (in_memory, in_odb): (Vec<SpanKey>, Vec<SpanKey>) = missing
            .into_iter()
            .partition(|(id, _)| self.extra.contains_key(id));
        let (stored, in_odb) = self.stored(in_odb, prints)?;
        self.keep(stored);
        // A blob wanted under two decisions is read once per decision; that
        // takes attributes that split one blob's paths, which is rare.
        let odb_ids: Vec<ObjectId> = in_odb.iter().map(|(id, _)| *id).collect();
        let from_odb = self.repo.map_blobs(&odb_ids, &self.feedback, |i, data| {
            histogram(data, in_odb[i].1, wants_print(&in_odb[i], prints))
        })?;
        let from_memory: Vec<Histogram> = in_memory
            .par_iter()
            .map(|key| {
                let data = self.extra.get(&key.0).map_or(&[][..], |v| v.as_slice());
                histogram(data, key.1, wants_print(key, prints))
            })
            .collect();
        let read: Vec<(ObjectId, Arc<Spans>)> = in_odb
            .iter()
            .zip(&from_odb)
            .filter(|(k, _)| k.1 == Binary::Auto)
            .map(|(k, s)| (k.0, s.0.clone()))
            .collect();
        self.remember(&read)?;
        self.keep(in_odb.into_iter().zip(from_odb));
        self.keep(in_memory.into_iter().zip(from_memory));
        let empty = Arc::new(Spans::new(&[]));
        Ok(keys
            .iter()
            .map(|k| self.known(k).unwrap_or_else(|| empty.clone()))
            .collect())
    }
}

/// Histograms read at once from which they go to the writer thread
/// (fewer, to the table written at the end: a few blobs are not worth a
/// thread).
const BACKGROUND_FROM: usize = 1024;

impl Drop for RepoContent<'_> {
    /// A run that stops before [`RepoContent::flush`] (on an error) still
    /// waits for the histograms its writer holds: they are written, and a
    /// process exit does not cut the writing short.
    fn drop(&mut self) {
        if let (Some(writer), Some(h)) = (self.writer.take(), self.histograms.as_mut()) {
            let _ = h.finish_writing(writer);
        }
    }
}

/// Paths from which [`RepoContent`]'s attribute lookups are split over
/// two threads (a clone of the attribute stack costs about as much as a
/// hundred lookups).
const ATTRIBUTES_SPLIT_FROM: usize = 2048;

fn item(e: Sketch) -> crate::similarity::fingerprint::Sketch {
    crate::similarity::fingerprint::Sketch {
        size: e.size,
        fingerprint: e.fingerprint,
    }
}
