//! Command-line definitions (clap derive): the options of every command,
//! their help texts and examples. Shell completions and man pages are
//! generated from the same definitions the binary parses ([`generate`]).

mod compare;
mod gc;
pub mod generate;
mod groups;
mod pack;
mod renames;

use compare::COMPARE_HELP;
pub use compare::CompareArgs;
pub use gc::GcArgs;
use groups::GROUPS_HELP;
pub use groups::{GroupsArgs, group_threshold_text};
use pack::{PACK_ORDER_HELP, REPACK_HELP};
pub use pack::{PackOrderArgs, RepackArgs};
use renames::RENAMES_HELP;
pub use renames::{DetectionArg, RenamesArgs, normalize_args};

use std::ffi::OsString;
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
Configuration (git config; command-line flags win):\n  \
simm.renameThreshold  check: lowest score reported as a rename (25%)\n  \
simm.copyThreshold    check: lowest score reported as a copy (90%)\n  \
simm.strict           check: exit 1 when it warned (false)\n  \
simm.ignore           check: skip paths matching this .gitignore pattern\n                        \
(multi-valued)\n  \
simm.groupThreshold   groups: lowest score that links two files (80%)\n  \
simm.storeDir         the fingerprint store's directory, relative to the\n                        \
git common dir; `~/` expanded (simm: .git/simm)\n\n\
Thresholds of git-simm's own options and settings (--threshold,\n\
--rename-threshold, --copy-threshold, --find-splits, simm.*Threshold) are\n\
percentages (80, 80%) or fractions (0.8): 100 is 100%, more is a usage\n\
error. -M<n> and -C<n> follow git's rule (the digits are a fraction: -M100\n\
is 10%).\n\n\
Environment: GIT_SIMM_TRACE=1 prints every command's stages on stderr, with\n\
the time elapsed since the first.\n\n\
Exit status: 0 on success, 1 when a search found nothing (or check --strict\n\
warned), 128 on errors (as git's `fatal:`), 129 on usage errors, 130 when\n\
interrupted (Ctrl-C; a second Ctrl-C exits at once)."
)]
pub struct Cli {
    /// Run as if started in <path> (like `git -C`; before the subcommand;
    /// an empty path leaves the directory as it is, as in git).
    #[arg(short = 'C', value_name = "path", value_parser = any_path())]
    pub directory: Option<PathBuf>,

    /// `--no-cache` before the command (`git simm --no-cache renames`),
    /// as it was once given; each command that uses the store takes it
    /// ([`StoreArgs`]), and only those list it.
    #[arg(long, hide = true)]
    pub no_cache: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The option of every command that reads or writes the fingerprint
/// store (and only of those).
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Do not read or write the fingerprint store: compute every
    /// fingerprint from the blob.
    #[arg(long)]
    pub no_cache: bool,
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
    /// Compare two files from their signatures: estimated edit distance,
    /// similarity and containment, and the line ranges where they differ.
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// Find the commit of another repository a directory was copied from
    /// (a vendored library): best matches first, and the best one's
    /// identical, modified, missing and added files.
    #[command(after_help = ORIGIN_HELP)]
    Origin(OriginArgs),
    /// Find every group of similar files in a tree, the index, the work
    /// tree or the whole object database, with the bytes each group wastes.
    #[command(after_help = GROUPS_HELP)]
    Groups(GroupsArgs),
    /// Find renames and copies between two trees, the index or the work
    /// tree, like `git diff -M --name-status` without a rename limit.
    #[command(after_help = RENAMES_HELP)]
    Renames(RenamesArgs),
    /// Check staged changes before a commit: renames git will not detect,
    /// new files that copy tracked ones (what the pre-commit hook runs).
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Install git-simm's pre-commit hook into the hooks directory git uses
    /// (`core.hooksPath`, else `.git/hooks`).
    #[command(after_help = INSTALL_HOOK_HELP)]
    InstallHook(InstallHookArgs),
    /// Print the objects to pack as `<oid> <name>` lines, blobs named so
    /// that `git pack-objects` visits them in similarity order.
    #[command(after_help = PACK_ORDER_HELP)]
    PackOrder(PackOrderArgs),
    /// Repack every object into one pack whose deltas git found in
    /// similarity order (like `git repack -a -d -f`, keeping unreachable
    /// objects).
    #[command(after_help = REPACK_HELP)]
    Repack(RepackArgs),
    /// Write the fingerprints of trees or of every blob as Apache Parquet,
    /// for SQL engines that find similar files across repositories.
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),
    /// Drop the store's records of blobs no longer in the object database
    /// and merge its tables.
    #[command(after_help = gc::GC_HELP)]
    Gc(GcArgs),
    /// Print a shell completion script for git-simm (and `git simm`).
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Print git-simm's man page (roff), or write one page per command into
    /// a directory.
    #[command(after_help = MANPAGE_HELP)]
    Manpage(ManpageArgs),
}

/// A similarity as git's `-M<n>` takes it, checked here so that a bad
/// value is a usage error (exit 129) like any other bad option; kept as
/// text, since the empty value of a bare `-M` means git's default.
/// A path as git takes one: any bytes, the empty string included (which
/// the command then judges as git does), not clap's default for paths,
/// which refuses an empty one as a usage error.
fn any_path() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

fn score_text(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    git_simm::similarity::score::parse_rename_score(s)
        .map(|_| s.to_owned())
        .map_err(|e| e.to_string())
}

/// A threshold of git-simm's own options (not git's `-M` digits rule:
/// `100` is 100%, `101` a usage error), checked here so that a bad value
/// is a usage error (exit 129).
fn threshold_text(s: &str) -> Result<String, String> {
    git_simm::similarity::score::parse_threshold(s)
        .map(|_| s.to_owned())
        .map_err(|e| e.to_string())
}

const INSTALL_HOOK_HELP: &str = "\
Writes a pre-commit hook that runs `git-simm check --staged` (only
warning unless simm.strict is set) and lets the commit through, with a
note, when git-simm is not on PATH. An existing hook that is not
git-simm's is left alone unless --force is given, which copies it to
pre-commit.simm-backup first (pre-commit.simm-backup.1, ... if that name
is taken) and says so; to keep it running, add
`git-simm check --staged || exit 1` to it instead. With the pre-commit
framework, use the `git-simm-check` hook of .pre-commit-hooks.yaml.

Examples:
  git simm install-hook
  git config core.hooksPath .githooks && git simm install-hook
  git simm install-hook --force";

const COMPLETIONS_HELP: &str = "\
The script completes subcommands, options and their values. The bash
script also defines _git_simm, which git's own bash completion calls for
`git simm <TAB>`.

Examples:
  git simm completions bash > ~/.local/share/bash-completion/completions/git-simm
  git simm completions zsh > ~/.zfunc/_git-simm     (with ~/.zfunc in fpath)
  git simm completions fish > ~/.config/fish/completions/git-simm.fish
  source <(git simm completions bash)                this shell only";

const MANPAGE_HELP: &str = "\
Without --dir, prints git-simm(1) to stdout. With --dir, writes
git-simm.1 and one page per subcommand (git-simm-renames.1, ...), the
pages `git help simm` and `man git-simm-renames` look for.

Examples:
  git simm manpage | man -l -
  git simm manpage --dir ~/.local/share/man/man1";

/// Arguments of `git-simm completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "shell")]
    pub shell: clap_complete::Shell,
}

/// Arguments of `git-simm manpage`.
#[derive(Debug, Args)]
pub struct ManpageArgs {
    /// Write git-simm.1 and git-simm-<command>.1 into this directory
    /// (created if missing) instead of printing git-simm.1.
    #[arg(long, value_name = "dir")]
    pub dir: Option<PathBuf>,
}

const CHECK_HELP: &str = "\
Compares HEAD with the index and warns, on stderr, about:
  - a staged rename that git-simm finds (at --rename-threshold, default 25%)
    but git's default detection (-M50%, diff.renameLimit 1000) will not:
    'git log --follow' and blame lose the file's history. Fix: commit the
    pure move first (git mv, commit), then the edits.
  - a new file that is a near-copy (--copy-threshold, default 90%) of a
    file still tracked: probable copy-paste duplication.
  - a staged split or merge: each part's history is lost.
The findings of one move (files of one directory gone to one other
directory, or copied into one) are one warning when there are more than
three, with three examples (-v lists every file); a last line says what
the commit would lose. Prints nothing when nothing applies. Exit status
0, or 1 with --strict when it warned.

Configuration (flags win): simm.renameThreshold, simm.copyThreshold,
simm.strict (bool), simm.ignore (multi-valued; the patterns mean what
they mean in .gitignore: `*.lock` and `vendor` match a name at any depth,
`/build` and `docs/*.md` only from the top, `vendor/` a directory and all
in it, `**` any number of directories, `!pattern` takes a path back). git's
own diff.renames and diff.renameLimit are read to emulate git.

Examples:
  git simm check --staged
  git simm check --staged --strict --rename-threshold 30
  git simm check --staged -v
  git simm check --staged --json | jq '.summary'
  git config --add simm.ignore vendor/";

/// Arguments of `git-simm check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Compare HEAD with the index (the only mode so far).
    #[arg(long, visible_alias = "cached", required = true)]
    pub staged: bool,

    /// Lowest similarity reported as a rename, a percentage (25, 25%) or
    /// a fraction (0.25); 100 is 100%, more is an error (git's -M digits
    /// rule, where 100 is 10%, is not used here). Default:
    /// simm.renameThreshold, else 25%.
    #[arg(long, value_name = "n", value_parser = threshold_text)]
    pub rename_threshold: Option<String>,

    /// Lowest similarity of a new file to a tracked one reported as a copy
    /// (as --rename-threshold takes it). Default: simm.copyThreshold, else
    /// 90%.
    #[arg(long, value_name = "n", value_parser = threshold_text)]
    pub copy_threshold: Option<String>,

    /// Report copies by git's plain score, boilerplate included. By
    /// default a copy must also reach the copy threshold with the chunks
    /// found in more than a tenth of the tree's files (license headers,
    /// generated preambles) taken out of both files: a new file sharing
    /// only a license header with a tracked one is no copy.
    #[arg(long)]
    pub no_ignore_common: bool,

    /// Exit 1 when a warning was printed (the hook then refuses the
    /// commit). Default: simm.strict.
    #[arg(long, overrides_with = "no_strict")]
    pub strict: bool,

    /// Never exit 1 for warnings, whatever simm.strict says.
    #[arg(long)]
    pub no_strict: bool,

    /// List every file of a move (by default a move's findings are one
    /// warning with a few examples).
    #[arg(short, long)]
    pub verbose: bool,

    /// Print a JSON document on stdout instead of warnings: every
    /// finding, file by file, the moves and the summary.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Arguments of `git-simm install-hook`.
#[derive(Debug, Args)]
pub struct InstallHookArgs {
    /// Replace an existing pre-commit hook that is not git-simm's, keeping
    /// it as pre-commit.simm-backup.
    #[arg(long, short = 'f')]
    pub force: bool,
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

const EXPORT_HELP: &str = "\
Writes one Parquet file: a row per file of each tree-ish (default HEAD), or
per blob of the object database with --all (no path then). Columns:
version, repo, revision, commit, tree, path, blob, size, fingerprint (the
32 bytes `git simm fingerprint` prints in hex), fp0..fp3 (the same bits as
four signed 64-bit words), band0..band31 (keys for an equi-join: similar
files share one). Blobs under 192 bytes have null fingerprint, words and
bands. Fingerprints come from the store, so exporting again after a commit
fingerprints only the new blobs.

Parquet is binary: without --output, stdout must not be a terminal.
The queries in the repository's queries/ directory read a table or view
`fingerprints`, the union of any number of exports.

Examples:
  git simm export -o simm.parquet                  HEAD's files
  git simm export --all --name git/git -o git.parquet
  git simm export v1.0 v2.0 > releases.parquet";

const SIMILAR_HELP: &str = "\
Output: one line per match, best first: `<score>%<TAB><path>`, where the
score is git's rename similarity (the number `git diff -M` prints after R).

With --containment: `<in-file>%<TAB><in-query>%<TAB><path>`, where
<in-file> is how much of the query the file holds (the query's bytes found
in it, over the query's size) and <in-query> how much of the file the query
holds. Files holding at least the threshold of the query come first, then
files the query holds at least the threshold of: where a split-off part or
a merged whole went.

Both ways, the tree's boilerplate (chunks in more than a tenth of its
files: license headers, generated preambles) is taken out of both files
first, so that a license header never makes one file contain another;
--no-ignore-common counts every byte (as it scores as git does without
--containment).

The query is a file on disk if such a file exists, else a blob
(`HEAD~3:src/main.rs`, a blob id).

Examples:
  git simm similar src/lib.rs            files of HEAD like the working copy
  git simm similar HEAD~10:old.c main    files of branch main like an old blob
  git simm similar --threshold 80 --limit 3 notes.txt
  git simm similar --containment HEAD~1:src/big.rs   where its parts went";

const ORIGIN_HELP: &str = "\
The directory is a path in the work tree (its files as `git ls-files
--cached --others --exclude-standard` lists them; outside any repository,
every file under it) or a tree of this repository (`<rev>:<dir>`).

Candidates: every tag of <repository>, then the first-parent history of its
HEAD; with <rev-range>, the commits `git rev-list <rev-range>` lists there.
Directories upstream that share files (by blob id) with the local copy are
found first; the best few states are then compared file by file.

Output: one line per match, best first:
  <contained>%<TAB><resemblance>%<TAB><tag or commit>:<path><TAB><n> identical, ...
where <contained> is how much of the local copy the state explains (its
bytes found upstream, a modified file counted by its git similarity),
<resemblance> the bytes both hold over the bytes either holds (files
upstream has and the copy lacks lower it), and the name is a tree-ish git
takes (`git ls-tree -r v1.0:lib`). Ranking: a state holding every local
file byte for byte first; then the most local bytes identical, then
contained; among states the copy cannot tell apart, a release before
other commits, paths that line up, then fewer missing files. A vendored
copy is usually a subset (sources without tests or build files), so what
it lacks only breaks ties.

Then, after a blank line, `best:` and, when every local file is byte for
byte upstream's, an `exact:` line (the copy is that state, or a subset of
it, and which other states hold it too); then the best match's files as
`git diff --name-status -M` from upstream to the local copy would list
them: M<score> (changed in place, with its similarity), R<score> (found
at another path: upstream path, then local path), D (upstream file missing
here), A (local addition).

Examples:
  git simm origin third_party/zlib --in ~/src/zlib
  git simm origin HEAD~100:deps/lua --in ../lua v5.1..v5.2
  git simm origin --json vendor/xdiff --in ../git";

/// Arguments of `git-simm fingerprint`.
#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// Tree-ishes (`HEAD`, `v1.0:src`) or paths on disk. A name that is both
    /// is an error, as in git; put paths after `--` to settle it.
    #[arg(value_name = "tree-ish|path")]
    pub targets: Vec<OsString>,

    /// Paths after `--` are always files or directories on disk.
    #[arg(last = true, value_name = "path", value_parser = any_path())]
    pub paths: Vec<PathBuf>,

    /// Fingerprint every blob in the object database (as `git cat-file
    /// --batch-all-objects` lists them) and fill the store. In a partial
    /// clone, the blobs that are present: nothing is fetched.
    #[arg(long, conflicts_with_all = ["targets", "paths"])]
    pub all: bool,

    /// Print nothing, progress included; only fill the store (useful with
    /// --all).
    #[arg(short, long)]
    pub quiet: bool,

    /// End lines with NUL and print paths verbatim, as git's -z.
    #[arg(short = 'z')]
    pub nul: bool,

    /// In a repository, directories on disk include the files git ignores
    /// too (by default they are skipped, as `git ls-files --cached
    /// --others --exclude-standard` skips them).
    #[arg(long)]
    pub no_exclude_standard: bool,

    /// Store fingerprints only, without the Coates signatures `compare`
    /// and `export` read (they sign what they need later, reading those
    /// blobs again). Default: `simm.signatures` (true when unset).
    #[arg(long)]
    pub no_signatures: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Arguments of `git-simm export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Tree-ishes whose files to export (`HEAD`, `v2.0`, `main:src`);
    /// HEAD when none is given.
    #[arg(value_name = "tree-ish")]
    pub trees: Vec<OsString>,

    /// Export every blob in the object database, once each, without paths
    /// (as `fingerprint --all` fingerprints them).
    #[arg(long, conflicts_with = "trees")]
    pub all: bool,

    /// The `repo` column's value. If unset: `remote.origin.url` as
    /// `host/owner/name` (a local path there followed to its own remote),
    /// else the repository's directory name (without `.git`).
    #[arg(long, value_name = "repository name")]
    pub name: Option<String>,

    /// Write to this file (replaced atomically) instead of stdout.
    #[arg(short, long, value_name = "file")]
    pub output: Option<PathBuf>,

    /// Print nothing on stderr, progress included.
    #[arg(short, long)]
    pub quiet: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Arguments of `git-simm similar`.
#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// The file to look for: a path on disk, or a blob (`HEAD:path`, an id).
    #[arg(value_name = "path|blob")]
    pub query: OsString,

    /// The tree to search [default: HEAD; an unborn HEAD is the empty
    /// tree].
    #[arg(value_name = "tree-ish")]
    pub tree: Option<OsString>,

    /// Minimum similarity: a percentage (50, 50%) or a fraction (0.5); 100
    /// is 100%, more is an error (git's -M digits rule, where 100 is 10%,
    /// is not used here).
    #[arg(long, short = 't', value_name = "n", default_value = "50%", value_parser = threshold_text)]
    pub threshold: String,

    /// Show at most this many files; 0 means no limit.
    #[arg(long, short = 'n', value_name = "n", default_value_t = 10)]
    pub limit: usize,

    /// Containment instead of similarity: the files that hold at least the
    /// threshold of the query, then the files the query holds at least
    /// that much of, each with both percentages (reads every file of the
    /// tree).
    #[arg(long)]
    pub containment: bool,

    /// Score as git does, boilerplate included (with --containment: count
    /// every byte). By default chunks found in more than a tenth of the
    /// tree's files (license headers, generated preambles) are taken out
    /// of both files first, so a file sharing only them is no match, and
    /// neither contains the other.
    #[arg(long)]
    pub no_ignore_common: bool,

    /// Print a JSON document instead of lines.
    #[arg(long)]
    pub json: bool,

    /// End lines with NUL and print paths verbatim, as git's -z
    /// (`git ls-tree -z`: `<score>%<TAB><path><NUL>`).
    #[arg(short = 'z')]
    pub nul: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Arguments of `git-simm origin`.
#[derive(Debug, Args)]
pub struct OriginArgs {
    /// The directory: a path in the work tree, or a tree (`<rev>:<dir>`).
    #[arg(value_name = "path|tree-ish")]
    pub directory: OsString,

    /// The repository it may come from: a path to a clone (bare or not).
    #[arg(long = "in", value_name = "repository", required = true)]
    pub repository: PathBuf,

    /// Commits of that repository to compare with, as `git rev-list` takes
    /// them (`v1.0..v2.0`, `main`); default: every tag, then the
    /// first-parent history of its HEAD.
    #[arg(value_name = "rev-range")]
    pub range: Vec<OsString>,

    /// Show at most this many matches; 0 means every state that shares a
    /// file (each compared file by file, which takes longer).
    #[arg(long, short = 'n', value_name = "n", default_value_t = 10)]
    pub limit: usize,

    /// Print a JSON document instead of lines.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

impl Cli {
    /// Parse `args` (after [`normalize_args`]); what clap's derive alone
    /// cannot keep, the order of `renames`' detection options, is noted
    /// from the matches.
    pub fn parse_ordered<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let (Command::Renames(r), Some(("renames", sub))) =
            (&mut cli.command, matches.subcommand())
        {
            r.note_order(sub);
        }
        Ok(cli)
    }
}
