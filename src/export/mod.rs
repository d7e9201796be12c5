//! A repository's fingerprints as Apache Parquet, for the engines that
//! find similar files across thousands of repositories (Spark, DataFusion,
//! DuckDB): git-simm produces the columns, the engine does the join
//! (`queries/` in the repository holds the ready-made queries).
//!
//! One row per (tree, path) of the chosen trees, or per blob of the object
//! database. Fingerprints come from the store ([`compute`]), so exporting
//! again after a commit computes only the new blobs. The columns are
//! [`schema`]'s; [`SCHEMA_VERSION`] names their layout and the fingerprint
//! definition together, so exports that cannot be compared are told apart.

mod collect;

pub use collect::collect;

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{FixedSizeBinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use gix::ObjectId;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnChunk, ArrowColumnWriter, compute_leaves};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::progress::{Feedback, Interrupted};
use crate::repo::RepoError;
use crate::similarity::bands::{BANDS, HASHES, ROWS, name_key};
use crate::similarity::compute::{self, ComputeError};
use crate::similarity::fingerprint::{FINGERPRINT_VERSION, Sketch};
use crate::similarity::signature::{self, SIGNATURE_VERSION};
use crate::similarity::store::StoreError;

/// The version of the export's columns. Bumped when a column is added,
/// removed or changes meaning (band layout and signature definition
/// included). 2: MinHash band keys over git's chunk buckets
/// (`mh0`..`mh31`) instead of layout 1's bands of fingerprint bits. 3:
/// the Coates signature of a file under 8 KiB (`signature`) and the
/// sketches of every file's for SQL (`sketch_level`, `sketch`,
/// `sketch_next`), of signature version 2.
pub const EXPORT_VERSION: u32 = 3;

/// What the `version` column holds and the Parquet metadata key
/// `git-simm.schema_version` says: the export layout times 1000 plus the
/// fingerprint version, so rows are comparable exactly when it is equal.
pub const SCHEMA_VERSION: i32 = (EXPORT_VERSION * 1000 + FINGERPRINT_VERSION) as i32;

/// A row's sketch before the store answers.
const EMPTY: Sketch = Sketch {
    size: 0,
    fingerprint: None,
};

/// Rows per record batch handed to the Parquet writer: large enough for
/// good column chunks, small enough that a batch's buffers stay a few
/// megabytes.
const BATCH_ROWS: usize = 1 << 16;

/// The error returned by [`collect`] and [`write_parquet`].
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The repository could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Fingerprints could not be computed or stored.
    #[error(transparent)]
    Compute(#[from] ComputeError),
    /// Chunk histograms could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Building the columns failed.
    #[error("cannot build the export's columns: {0}")]
    Arrow(#[from] ArrowError),
    /// Writing Parquet failed (an I/O error underneath included).
    #[error("cannot write Parquet: {0}")]
    Parquet(#[from] ParquetError),
    /// The work was interrupted.
    #[error("interrupted")]
    Interrupted(#[from] Interrupted),
}

/// Where rows come from: every blob of the object database, or trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every blob in the object database, once, without a path.
    All,
    /// The files of these trees.
    Trees(Vec<TreeSource>),
}

/// One tree to export, and what named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSource {
    /// The tree-ish as given (`HEAD`, `v2.47.0`, `main:src`).
    pub revision: String,
    /// The commit it names, when it names one (through tags).
    pub commit: Option<ObjectId>,
    /// Its tree.
    pub tree: ObjectId,
}

/// The rows of an export, before they are written.
#[derive(Debug, Default)]
pub struct Export {
    /// The `repo` column's value.
    pub repo: String,
    /// The trees the rows come from (empty for [`Selection::All`]).
    pub sources: Vec<TreeSource>,
    /// The rows, in tree order per source (by blob id for `All`).
    pub rows: Vec<Row>,
    /// What the store answered and what was computed.
    pub outcome: compute::Outcome,
    /// Blobs whose chunk histograms the histogram store lacked: read (or
    /// chunked from the fingerprinting read) and stored.
    pub histograms_computed: usize,
    /// Blobs that had a fingerprint but no signature: read (or signed
    /// from the read for their histogram) and signed. Blobs fingerprinted
    /// now are signed in that read and not counted here.
    pub signatures_computed: usize,
}

/// One row: a file of a source tree, or a blob.
#[derive(Debug, Clone)]
pub struct Row {
    /// Index into [`Export::sources`], `None` for a blob of `--all`.
    pub source: Option<usize>,
    /// The path within the tree (`None` for `--all`).
    pub path: Option<Vec<u8>>,
    /// The blob.
    pub blob: ObjectId,
    /// Its size and fingerprint.
    pub sketch: Sketch,
    /// Its band keys ([`band_keys`](crate::similarity::bands::band_keys)):
    /// `None` without a fingerprint or when the file is all filler.
    pub keys: Option<[i64; BANDS]>,
    /// Its signature as text
    /// ([`Signature::texts`](crate::similarity::signature::Signature::texts)):
    /// `None` without a fingerprint.
    pub signature: Option<Texts>,
}

pub use crate::similarity::signature::Texts;

/// The Arrow schema of an export, also the Parquet file's. Metadata keys:
/// `git-simm.schema_version` ([`SCHEMA_VERSION`]),
/// `git-simm.fingerprint_version`, `git-simm.bands`,
/// `git-simm.band_rows` (minima per band), `git-simm.minhashes`,
/// `git-simm.signature_version`, `git-simm.signature_c`,
/// `git-simm.signature_coarse_c` and `git-simm.signature_fine_limit`.
pub fn schema() -> Schema {
    let mut fields = vec![
        Field::new("version", DataType::Int32, false),
        Field::new("repo", DataType::Utf8, false),
        Field::new("revision", DataType::Utf8, true),
        Field::new("commit", DataType::Utf8, true),
        Field::new("tree", DataType::Utf8, true),
        Field::new("path", DataType::Utf8, true),
        Field::new("blob", DataType::Utf8, false),
        Field::new("blob_key", DataType::Int64, false),
        Field::new("size", DataType::Int64, false),
        Field::new("fingerprint", DataType::FixedSizeBinary(32), true),
    ];
    for i in 0..4 {
        fields.push(Field::new(format!("fp{i}"), DataType::Int64, true));
    }
    for i in 0..BANDS {
        fields.push(Field::new(format!("mh{i}"), DataType::Int64, true));
    }
    fields.push(Field::new("name_key", DataType::Int64, true));
    fields.push(Field::new("signature", DataType::Utf8, true));
    fields.push(Field::new("sketch_level", DataType::Int32, true));
    fields.push(Field::new("sketch", DataType::Utf8, true));
    fields.push(Field::new("sketch_next", DataType::Utf8, true));
    let metadata: std::collections::HashMap<String, String> = [
        ("git-simm.schema_version", SCHEMA_VERSION.to_string()),
        (
            "git-simm.fingerprint_version",
            FINGERPRINT_VERSION.to_string(),
        ),
        ("git-simm.bands", BANDS.to_string()),
        ("git-simm.band_rows", ROWS.to_string()),
        ("git-simm.minhashes", HASHES.to_string()),
        ("git-simm.signature_version", SIGNATURE_VERSION.to_string()),
        ("git-simm.signature_c", signature::C.to_string()),
        (
            "git-simm.signature_coarse_c",
            signature::COARSE_C.to_string(),
        ),
        (
            "git-simm.signature_fine_limit",
            signature::FINE_LIMIT.to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Schema::new_with_metadata(fields, metadata)
}

/// What [`write_parquet`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Rows written.
    pub rows: usize,
    /// Rows with a fingerprint (the others are too small or too large).
    pub fingerprinted: usize,
}

/// Write `export` as one Parquet file to `out` (uncompressed: fingerprints
/// and keys are random bits). Columns of repeated values (names, paths,
/// sizes, band keys) are dictionary-encoded; the columns of each blob's
/// own values (ids, fingerprints, signatures) are too where blobs repeat
/// (several trees), not where nearly every row is another blob, whose
/// values a dictionary would only copy.
/// Paths are written as [`crate::output::path_text`] gives them: as `git
/// -c core.quotePath=false ls-tree` prints a UTF-8 path, in git's quoted
/// form (`"\303..."`) a path that is not UTF-8, so that a value names one
/// path.
///
/// Columns are encoded on all threads, and the next batch of rows is
/// built while one is encoded.
pub fn write_parquet<W: Write + Send>(
    export: &Export,
    out: W,
    feedback: &Feedback,
) -> Result<Written, ExportError> {
    let schema = Arc::new(schema());
    let props = properties(per_blob_dictionary(export));
    let (mut file, factory) =
        ArrowWriter::try_new(out, schema.clone(), Some(props))?.into_serialized_writer()?;
    let progress = feedback.stage("Writing rows", export.rows.len() as u64);
    let mut written = Written::default();
    for (g, group) in export.rows.chunks(GROUP_ROWS).enumerate() {
        let mut columns = factory.create_column_writers(g)?;
        let mut chunks = group.chunks(BATCH_ROWS);
        let mut next = chunks.next().map(|c| (c, batch(export, c, &schema)));
        while let Some((chunk, built)) = next.take() {
            feedback.check()?;
            let built = built?;
            let (encoded, following) = rayon::join(
                || encode(&mut columns, &built, &schema),
                || chunks.next().map(|c| (c, batch(export, c, &schema))),
            );
            encoded?;
            next = following;
            written.rows += chunk.len();
            written.fingerprinted += chunk
                .iter()
                .filter(|r| r.sketch.fingerprint.is_some())
                .count();
            progress.inc(chunk.len() as u64);
        }
        let chunks = columns
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<Result<Vec<ArrowColumnChunk>, ParquetError>>()?;
        let mut row_group = file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
    }
    file.close()?;
    progress.finish();
    Ok(written)
}

/// Rows per row group: a million rows make a row group of about 400 MB.
const GROUP_ROWS: usize = 1 << 20;

/// The columns that hold a value of its own for nearly every blob (ids,
/// fingerprints, signatures), whose dictionary encoding pays only where
/// blobs repeat. Band keys and sizes are not among them: similar blobs
/// share them, and a dictionary makes those columns less than half as
/// large.
fn per_blob_columns() -> Vec<String> {
    let mut names: Vec<String> = ["blob", "blob_key", "fingerprint"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    names.extend((0..4).map(|i| format!("fp{i}")));
    names.extend(["signature", "sketch", "sketch_next"].map(str::to_owned));
    names
}

/// Whether to dictionary-encode the [`per_blob_columns`]: when at most
/// half the rows are distinct blobs (the same files in several trees).
/// An export of every blob, or of one tree, has nearly a distinct blob
/// per row: a dictionary there is built, found too large and dropped.
fn per_blob_dictionary(export: &Export) -> bool {
    if export.sources.len() <= 1 {
        return false;
    }
    let mut ids: Vec<ObjectId> = export.rows.iter().map(|r| r.blob).collect();
    ids.par_sort_unstable();
    ids.dedup();
    ids.len() * 2 <= export.rows.len()
}

/// The writer's properties: no compression, row groups of
/// [`GROUP_ROWS`], dictionaries as [`write_parquet`] says.
fn properties(per_blob_dictionary: bool) -> WriterProperties {
    let mut builder = WriterProperties::builder().set_max_row_group_row_count(Some(GROUP_ROWS));
    if !per_blob_dictionary {
        for name in per_blob_columns() {
            builder = builder.set_column_dictionary_enabled(ColumnPath::from(name), false);
        }
    }
    builder.build()
}

/// Encode the columns of `batch`, one column writer per column, on all
/// threads.
fn encode(
    columns: &mut [ArrowColumnWriter],
    batch: &RecordBatch,
    schema: &Schema,
) -> Result<(), ParquetError> {
    let mut leaves = Vec::with_capacity(columns.len());
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        leaves.extend(compute_leaves(field, array)?);
    }
    if leaves.len() != columns.len() {
        return Err(ParquetError::General(format!(
            "{} columns for {} column writers",
            leaves.len(),
            columns.len()
        )));
    }
    columns
        .par_iter_mut()
        .zip(leaves.par_iter())
        .try_for_each(|(writer, leaf)| writer.write(leaf))
}

/// The `blob_key` of a blob: the first 8 bytes of its id, big-endian, as a
/// signed integer. Queries join contents on it: an integer is a quarter of
/// the hex string's width in an engine's hash tables and sorts, and two
/// different blobs share it with probability 2^-64 per pair.
pub fn key_of_blob(id: &ObjectId) -> i64 {
    let mut bytes = [0u8; 8];
    let raw = id.as_slice();
    let n = raw.len().min(8);
    bytes[..n].copy_from_slice(&raw[..n]);
    i64::from_be_bytes(bytes)
}

/// The columns of `rows`, in [`schema`]'s order.
fn batch(export: &Export, rows: &[Row], schema: &Arc<Schema>) -> Result<RecordBatch, ArrowError> {
    let n = rows.len();
    let mut hex = gix::hash::Kind::hex_buf();
    // The sources' ids as text once, not once per row.
    let source_hex: Vec<(Option<String>, String)> = export
        .sources
        .iter()
        .map(|s| (s.commit.map(|c| c.to_string()), s.tree.to_string()))
        .collect();
    let mut version = Int32Builder::with_capacity(n);
    let mut repo = StringBuilder::with_capacity(n, n * export.repo.len());
    let mut revision = StringBuilder::new();
    let mut commit = StringBuilder::new();
    let mut tree = StringBuilder::new();
    let mut path = StringBuilder::new();
    let mut blob = StringBuilder::with_capacity(n, n * 40);
    let mut blob_key = Int64Builder::with_capacity(n);
    let mut size = Int64Builder::with_capacity(n);
    let mut fingerprint = FixedSizeBinaryBuilder::with_capacity(n, 32);
    let mut words: Vec<Int64Builder> = (0..4).map(|_| Int64Builder::with_capacity(n)).collect();
    let mut bands: Vec<Int64Builder> = (0..BANDS).map(|_| Int64Builder::with_capacity(n)).collect();
    let mut names = Int64Builder::with_capacity(n);
    let text_bytes: usize = rows
        .iter()
        .filter_map(|r| r.signature.as_ref())
        .map(|t| t.fine.as_ref().map_or(0, String::len))
        .sum();
    let mut fine = StringBuilder::with_capacity(n, text_bytes);
    let mut level = Int32Builder::with_capacity(n);
    let mut sketch = StringBuilder::with_capacity(n, n * 128);
    let mut sketch_next = StringBuilder::with_capacity(n, n * 64);
    for r in rows {
        version.append_value(SCHEMA_VERSION);
        repo.append_value(&export.repo);
        let source = r.source.and_then(|i| export.sources.get(i));
        let ids = r.source.and_then(|i| source_hex.get(i));
        revision.append_option(source.map(|s| s.revision.as_str()));
        commit.append_option(ids.and_then(|(c, _)| c.as_deref()));
        tree.append_option(ids.map(|(_, t)| t.as_str()));
        names.append_option(r.path.as_deref().map(name_key));
        match &r.path {
            Some(p) => path.append_value(crate::output::path_text(p)),
            None => path.append_null(),
        }
        blob.append_value(r.blob.hex_to_buf(&mut hex));
        blob_key.append_value(key_of_blob(&r.blob));
        size.append_value(i64::try_from(r.sketch.size).unwrap_or(i64::MAX));
        match &r.sketch.fingerprint {
            Some(fp) => {
                fingerprint.append_value(fp.to_bytes())?;
                for (b, w) in words.iter_mut().zip(fp.words) {
                    // The same 64 bits, read as an engine's signed BIGINT.
                    b.append_value(w as i64);
                }
            }
            None => {
                fingerprint.append_null();
                words.iter_mut().for_each(|b| b.append_null());
            }
        }
        match &r.keys {
            Some(keys) => {
                for (b, &k) in bands.iter_mut().zip(keys) {
                    b.append_value(k);
                }
            }
            None => bands.iter_mut().for_each(|b| b.append_null()),
        }
        match &r.signature {
            Some(t) => {
                fine.append_option(t.fine.as_deref());
                level.append_value(t.level as i32);
                sketch.append_value(&t.sketch);
                sketch_next.append_value(&t.sketch_next);
            }
            None => {
                fine.append_null();
                level.append_null();
                sketch.append_null();
                sketch_next.append_null();
            }
        }
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(version.finish()),
        Arc::new(repo.finish()),
        Arc::new(revision.finish()),
        Arc::new(commit.finish()),
        Arc::new(tree.finish()),
        Arc::new(path.finish()),
        Arc::new(blob.finish()),
        Arc::new(blob_key.finish()),
        Arc::new(size.finish()),
        Arc::new(fingerprint.finish()),
    ];
    columns.extend(words.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    columns.extend(bands.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    columns.push(Arc::new(names.finish()));
    columns.push(Arc::new(fine.finish()));
    columns.push(Arc::new(level.finish()));
    columns.push(Arc::new(sketch.finish()));
    columns.push(Arc::new(sketch_next.finish()));
    RecordBatch::try_new(schema.clone(), columns)
}
