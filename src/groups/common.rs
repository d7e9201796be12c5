//! Boilerplate: the chunks (git's score chunks, lines cut at 64 bytes) that
//! occur in so large a share of the files that sharing them says nothing
//! about two files being related. The musings seed's "emphasize unusual
//! strings": license headers, generated preambles and lockfile stanzas
//! make unrelated files look alike to git's score, so they are taken out
//! of the score of both files of every pair ([`Spans::without`]).
//!
//! The statistics are a document frequency per chunk bucket, counted per
//! run over a sample of the distinct blobs considered ([`SAMPLE`], spread
//! evenly over them in id order, which is random with respect to content):
//! a share is estimated well from a few thousand files. The sample's
//! histograms come from the histogram store
//! ([`crate::similarity::store::histograms`]), so on a warm store counting
//! reads no blob. The statistics themselves are not stored: they belong
//! to the set of files considered (a tree, the index, every blob), and a
//! table keyed by tree would be stale after every commit while counting
//! costs a few hundredths of a second.
//!
//! `groups`, `similar` ([`of_blobs`]) and the pre-commit check's copy
//! warning use them; `renames` never does (it must agree with git).

use std::collections::HashMap;

use gix::ObjectId;

use crate::progress::Feedback;
use crate::repo::{Repo, RepoError};
use crate::similarity::score::{self, Spans};
use crate::similarity::store::StoreError;
use crate::similarity::store::histograms::Histograms;

/// The error returned by [`of_blobs`].
#[derive(Debug, thiserror::Error)]
pub enum CommonError {
    /// A sampled blob could not be read (or Ctrl-C).
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Histograms could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The boilerplate of a collection of distinct blobs (`ids`, sorted by
/// id, so that the evenly spread sample is random with respect to
/// content), counted over the histograms of up to [`SAMPLE`] of them:
/// taken from `histograms` where stored, read and stored otherwise (so a
/// second run on the same tree reads nothing). What `similar` uses; the
/// texts ([`Common::examples`]) are not filled in.
pub fn of_blobs(
    repo: &Repo,
    histograms: &mut Histograms,
    ids: &[ObjectId],
    share: f64,
    feedback: &Feedback,
) -> Result<Common, CommonError> {
    let picks: Vec<ObjectId> = Common::sample_positions(ids.len())
        .into_iter()
        .map(|p| ids[p])
        .collect();
    let locs = histograms.locate(&picks);
    let missing: Vec<ObjectId> = picks
        .iter()
        .zip(&locs)
        .filter(|(_, l)| l.is_none())
        .map(|(&id, _)| id)
        .collect();
    let read: Vec<Spans> = repo.map_blobs(&missing, feedback, |_, data| Spans::new(data))?;
    let added: Vec<(ObjectId, &Spans)> = missing.iter().copied().zip(&read).collect();
    histograms.add_many(&added)?;
    histograms.flush()?;
    let stored: Vec<Spans> = locs
        .iter()
        .flatten()
        .filter_map(|&l| histograms.get(l))
        .collect();
    Ok(Common::from_histograms(stored.iter().chain(&read), share))
}

/// At most this many blobs are read to count how common each chunk is.
pub const SAMPLE: usize = 2000;

/// A chunk is boilerplate when it is in more than this share of the
/// sampled files...
pub const DEFAULT_SHARE: f64 = 0.10;

/// ...and in at least this many of them, so that in a small tree a file
/// copied a few times is not its own boilerplate (its copies would then
/// not group).
pub const MIN_FILES: usize = 50;

/// The boilerplate of one run: the common buckets and what they hold.
#[derive(Clone, Debug, Default)]
pub struct Common {
    /// The common buckets, ascending ([`Spans::without`] takes them so).
    pub buckets: Vec<u32>,
    /// For each common bucket (same order): in how many sampled files it
    /// occurs, and the text of one chunk that fell into it.
    pub examples: Vec<(usize, Vec<u8>)>,
    /// How many files were sampled.
    pub sampled: usize,
    /// The share (of `sampled`) above which a chunk counted as common.
    pub share: f64,
}

impl Common {
    /// Count, over `sample` (the contents of distinct text blobs), the
    /// files each chunk bucket occurs in, and keep those in more than
    /// `share` of them and in at least [`MIN_FILES`]; with the text of
    /// one chunk of each.
    pub fn from_sample<'a>(sample: impl Iterator<Item = &'a [u8]> + Clone, share: f64) -> Common {
        let spans: Vec<Spans> = sample.clone().map(Spans::new).collect();
        let mut common = Common::from_histograms(spans.iter(), share);
        common.fill_examples(sample);
        common
    }

    /// [`Common::from_sample`] from the sample's histograms (binary ones
    /// are skipped), without the texts: the histogram store has the
    /// histograms, so counting needs no blob read.
    pub fn from_histograms<'a>(sample: impl Iterator<Item = &'a Spans>, share: f64) -> Common {
        let mut files_of: HashMap<u32, usize> = HashMap::new();
        let mut sampled = 0;
        for spans in sample.filter(|s| !s.is_binary()) {
            for b in spans.bucket_ids() {
                *files_of.entry(b).or_default() += 1;
            }
            sampled += 1;
        }
        let floor = ((share * sampled as f64).floor() as usize + 1).max(MIN_FILES);
        let mut buckets: Vec<u32> = files_of
            .iter()
            .filter(|&(_, &n)| n >= floor)
            .map(|(&b, _)| b)
            .collect();
        buckets.sort_unstable();
        let examples = buckets
            .iter()
            .map(|b| (files_of.get(b).copied().unwrap_or(0), Vec::new()))
            .collect();
        Common {
            buckets,
            examples,
            sampled,
            share,
        }
    }

    /// Fill in [`Common::examples`]' texts from `texts` (the sample's
    /// contents): for each common bucket, the first chunk seen in it (a
    /// bucket may hold other chunks too, by collision; the first seen is
    /// the one shown).
    pub fn fill_examples<'a>(&mut self, texts: impl Iterator<Item = &'a [u8]>) {
        let mut example: HashMap<u32, Vec<u8>> = HashMap::new();
        for data in texts.filter(|d| !score::is_binary(d)) {
            if example.len() == self.buckets.len() {
                break;
            }
            score::for_each_chunk(data, |b, chunk| {
                if self.buckets.binary_search(&b).is_ok() {
                    example.entry(b).or_insert_with(|| chunk.to_vec());
                }
            });
        }
        for (b, (_, text)) in self.buckets.iter().zip(&mut self.examples) {
            if let Some(t) = example.remove(b) {
                *text = t;
            }
        }
    }

    /// The sample positions to read from `n` distinct blobs: all of them
    /// up to [`SAMPLE`], else [`SAMPLE`] spread evenly.
    pub fn sample_positions(n: usize) -> Vec<usize> {
        if n <= SAMPLE {
            return (0..n).collect();
        }
        (0..SAMPLE).map(|k| k * n / SAMPLE).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_in_every_file_is_common_and_their_own_lines_are_not() {
        let texts = crate::testing::real_text();
        let header = b"// Copyright (c) The Example Authors. All rights reserved.\n\
// Licensed under the Example License, Version 2.0.\n";
        let files: Vec<Vec<u8>> = texts
            .iter()
            .take(120)
            .map(|t| [header.as_slice(), t].concat())
            .collect();
        let common = Common::from_sample(files.iter().map(Vec::as_slice), DEFAULT_SHARE);
        assert_eq!(common.sampled, 120);
        let shown: Vec<&[u8]> = common.examples.iter().map(|(_, t)| t.as_slice()).collect();
        for line in header.split_inclusive(|&c| c == b'\n') {
            for piece in line.chunks(64) {
                assert!(
                    shown.contains(&piece),
                    "{:?} not common",
                    String::from_utf8_lossy(piece)
                );
            }
        }
        // Real files' own lines are rarely in 10% of 120 unrelated files;
        // a few universal ones ("}\n", blank lines) may be.
        assert!(
            common.buckets.len() < 40,
            "{} common buckets",
            common.buckets.len()
        );
        let with = Spans::new(&files[0]);
        let without = with.without(&common.buckets);
        assert!(without.size() <= with.size() - header.len() as u64);
    }

    #[test]
    fn too_few_files_make_nothing_common() {
        let texts = crate::testing::real_text();
        let copies: Vec<&[u8]> = std::iter::repeat_n(texts[0].as_slice(), MIN_FILES - 1).collect();
        let common = Common::from_sample(copies.iter().copied(), DEFAULT_SHARE);
        assert!(common.buckets.is_empty());
    }
}
