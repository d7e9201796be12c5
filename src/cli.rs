//! Command-line definitions. Kept in the library, apart from `main.rs`, so
//! tests, shell completions and the man page are generated from the same
//! definitions the binary parses.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Content similarity for git: gsimm fingerprints of blobs, stored by blob
/// id, to find similar files, renames and copies, and better pack orders.
#[derive(Debug, Parser)]
#[command(
    name = "git-simm",
    version,
    bin_name = "git-simm",
    after_help = "Run as `git simm <command>` too, when git-simm is on PATH.\n\n\
Exit status: 0 on success, 1 when a search found nothing, 128 on errors\n\
(as git's `fatal:`), 129 on usage errors."
)]
pub struct Cli {
    /// Run as if started in <path> (like `git -C`).
    #[arg(short = 'C', global = true, value_name = "path")]
    pub directory: Option<PathBuf>,

    /// Do not read or write the fingerprint store: compute every
    /// fingerprint from the blob.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the gsimm fingerprint of blobs, like `git hash-object` for
    /// similarity.
    #[command(after_help = FINGERPRINT_HELP)]
    Fingerprint(FingerprintArgs),
    /// List the files of a tree most similar to a given file, with git's
    /// similarity score.
    #[command(after_help = SIMILAR_HELP)]
    Similar(SimilarArgs),
}

const FINGERPRINT_HELP: &str = "\
Output: one line per blob, `<fingerprint> <size> <path>`, where the
fingerprint is 64 hex digits (256 bits). Blobs under 192 bytes have no
fingerprint and print 64 zeros: they are compared exactly instead.
With --all, the blob id stands in place of the path.

Examples:
  git simm fingerprint HEAD              every blob of HEAD's tree
  git simm fingerprint v1.0:src          a subtree
  git simm fingerprint README.md src/    files on disk
  git simm fingerprint --all             fill the store with every blob";

const SIMILAR_HELP: &str = "\
Output: one line per match, best first: `<score>%<TAB><path>`, where the
score is git's rename similarity (the number `git diff -M` prints after R).

The query is a file on disk if such a file exists, else a blob
(`HEAD~3:src/main.rs`, a blob id).

Examples:
  git simm similar src/lib.rs            files of HEAD like the working copy
  git simm similar HEAD~10:old.c main    files of branch main like an old blob
  git simm similar --threshold 80 --limit 3 notes.txt";

/// Arguments of `git-simm fingerprint`.
#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// Tree-ishes (`HEAD`, `v1.0:src`) or paths on disk. A name that is both
    /// is an error, as in git; put paths after `--` to settle it.
    #[arg(value_name = "tree-ish|path")]
    pub targets: Vec<String>,

    /// Paths after `--` are always files or directories on disk.
    #[arg(last = true, value_name = "path")]
    pub paths: Vec<PathBuf>,

    /// Fingerprint every blob in the object database (as `git cat-file
    /// --batch-all-objects` lists them) and fill the store.
    #[arg(long, conflicts_with_all = ["targets", "paths"])]
    pub all: bool,

    /// Print nothing; only fill the store (useful with --all).
    #[arg(short, long)]
    pub quiet: bool,

    /// End lines with NUL and print paths verbatim, as git's -z.
    #[arg(short = 'z')]
    pub nul: bool,
}

/// Arguments of `git-simm similar`.
#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// The file to look for: a path on disk, or a blob (`HEAD:path`, an id).
    #[arg(value_name = "path|blob")]
    pub query: String,

    /// The tree to search.
    #[arg(value_name = "tree-ish", default_value = "HEAD")]
    pub tree: String,

    /// Minimum similarity, as git's -M takes it (50, 50%, 0.5).
    #[arg(long, short = 't', value_name = "n", default_value = "50%")]
    pub threshold: String,

    /// Show at most this many files; 0 means no limit.
    #[arg(long, short = 'n', value_name = "n", default_value_t = 10)]
    pub limit: usize,

    /// Print a JSON document instead of lines.
    #[arg(long)]
    pub json: bool,
}
