//! The options of `compare` and its help.

use std::path::PathBuf;

use clap::Args;

use super::StoreArgs;

pub(super) const COMPARE_HELP: &str = "\
Both files are compared through their Coates signatures (about one symbol
per 64 bytes, kept in the store beside the fingerprints): the estimate
needs no blob, so it works where the blobs are absent (a blob-less
partial clone whose store was filled elsewhere, or a blob of another
repository given with --in, from that repository's store). A blob whose
signature the store lacks is read (and its signature stored).

The output: the estimated similarity (the share of the larger file left
unchanged) and edit distance in bytes, how much of each file the other
holds (containment), then the regions where the files differ as diff
hunk headers, `@@ -<line>,<count> +<line>,<count> @@` (lines from 1): a
region lies between two stretches both files share, so it holds the
change and a few bytes around it. An edit that keeps the length of what
it replaces and emits no symbol goes unseen; the estimate is not git's
score. When both contents are at hand, git's exact rename score is shown
beside the estimate and the line numbers are exact.

Sides: a path on disk, a blob id, or `<rev>:<path>`; with --in, <b> is
looked up in that repository (its objects and its store).

Examples:
  git simm compare HEAD~10:src/lib.rs src/lib.rs
  git simm compare old.c new.c
  git simm compare HEAD:vendor/zlib/inflate.c --in ../zlib HEAD:inflate.c
  git simm compare --json v1.0:README.md README.md";

/// Arguments of `git-simm compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first file: a path on disk, or a blob (`<rev>:<path>`, an id).
    #[arg(value_name = "a")]
    pub a: std::ffi::OsString,

    /// The second file: the same, or with --in a blob of that repository.
    #[arg(value_name = "b")]
    pub b: std::ffi::OsString,

    /// Look <b> up in this repository (a path to a clone, bare or not):
    /// its objects and its store.
    #[arg(long = "in", value_name = "repository")]
    pub repository: Option<PathBuf>,

    /// Print a JSON document instead of text.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}
