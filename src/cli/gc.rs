//! The options of `gc` and its help.

use clap::Args;

pub(super) const GC_HELP: &str = "\
The store keeps the fingerprint of every blob git-simm has seen, and
`groups` and `export` keep git's chunk histograms beside them (about a
fifth of the text's size). After `git gc` has pruned objects, their
records stay until this command drops them. It also merges each kind's
tables into one. A rewrite is atomic: the new table is written to a
temporary file, synced, renamed into place and read back record by
record before the old tables are deleted.

A store shared through simm.storeDir may hold other repositories' blobs:
this repository's objects cannot tell which records are still wanted, so
pruning it needs --force (or --no-prune to only merge tables).

Examples:
  git simm gc                      # prune and merge
  git simm gc --dry-run            # what would go
  git simm gc --drop-histograms    # free the histograms' space too";

/// Arguments of `git-simm gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Report what would be dropped; change nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,

    /// Only merge tables; keep the records of blobs no longer in the object
    /// database.
    #[arg(long, conflicts_with = "force")]
    pub no_prune: bool,

    /// Delete every histogram table: they are rebuilt from the blobs when a
    /// command wants them again.
    #[arg(long)]
    pub drop_histograms: bool,

    /// Prune a store that simm.storeDir places outside this repository's
    /// git directory (which other repositories may share).
    #[arg(long)]
    pub force: bool,

    /// Print a JSON document instead of text.
    #[arg(long)]
    pub json: bool,

    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
}
