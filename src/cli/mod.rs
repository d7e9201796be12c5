//! Command-line definitions (clap derive): the options of every command,
//! their help texts and examples. Shell completions and man pages are
//! generated from the same definitions the binary parses ([`generate`]).

mod gc;
pub mod generate;
mod pack;

pub use gc::GcArgs;
use pack::{PACK_ORDER_HELP, REPACK_HELP};
pub use pack::{PackOrderArgs, RepackArgs};

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
simm.groupThreshold  groups: lowest score that links two files (80%)\n  \
simm.storeDir         the fingerprint store's directory, relative to the\n                        \
git common dir; `~/` expanded (simm: .git/simm)\n\n\
Environment: GIT_SIMM_TRACE=1 prints stage timings of renames, check and repack.\n\n\
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

/// A `--diff-filter` value, checked as [`score_text`] checks scores.
fn diff_filter_text(s: &str) -> Result<String, String> {
    git_simm::output::DiffFilter::parse(s).map(|_| s.to_owned())
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
Prints nothing when nothing applies. Exit status 0, or 1 with --strict
when it warned.

Configuration (flags win): simm.renameThreshold, simm.copyThreshold,
simm.strict (bool), simm.ignore (multi-valued; the patterns mean what
they mean in .gitignore: `*.lock` and `vendor` match a name at any depth,
`/build` and `docs/*.md` only from the top, `vendor/` a directory and all
in it, `**` any number of directories, `!pattern` takes a path back). git's
own diff.renames and diff.renameLimit are read to emulate git.

Examples:
  git simm check --staged
  git simm check --staged --strict --rename-threshold 30
  git config --add simm.ignore vendor/";

/// Arguments of `git-simm check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Compare HEAD with the index (the only mode so far).
    #[arg(long, visible_alias = "cached", required = true)]
    pub staged: bool,

    /// Lowest similarity reported as a rename (git's -M syntax: 25, 25%,
    /// 0.25). Default: simm.renameThreshold, else 25%.
    #[arg(long, value_name = "n", value_parser = score_text)]
    pub rename_threshold: Option<String>,

    /// Lowest similarity of a new file to a tracked one reported as a copy.
    /// Default: simm.copyThreshold, else 90%.
    #[arg(long, value_name = "n", value_parser = score_text)]
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

const RENAMES_HELP: &str = "\
Output: exactly `git diff --name-status -M`: A, D, M, T, R<score> and
C<score> lines in git's order, paths quoted as git quotes them.

Which sides are compared:
  git simm renames <old> <new>          two tree-ishes
  git simm renames --cached [<tree>]    a tree (default HEAD) and the index
  git simm renames [<tree>]             a tree (default HEAD) and the work tree
  git simm renames <a>..<b>             as <a> <b>
  git simm renames <a>...<b>            their merge base and <b>
  ... -- <path>...                      only these paths (before detection)

Options take git's names and syntax: -M[<n>], -C[<n>] (twice for
--find-copies-harder), -l<n>, --diff-filter=<letters>, -z. There is no
rename limit unless -l<n> sets one. Empty files are not paired unless
--rename-empty is given (git's diff pairs them by default).

With --find-splits, extra lines follow git's (not filtered by
--diff-filter), one per split or merge:
  S<covered><TAB><source><TAB><part>...       a source split into parts
  J<covered><TAB><source>...<TAB><destination> sources joined into one
where <covered> is the percentage of the whole (the split source, the
merged destination) its parts hold together, parts listed adding most first.
--json adds arrays \"splits\" and \"merges\".

Examples:
  git simm renames HEAD~1 HEAD
  git simm renames --find-splits=70% HEAD~1 HEAD
  git simm renames -M30% --diff-filter=RC v1.0 v2.0
  git simm renames --cached -C
  git simm renames --json main feature
  git simm renames --exit-code main...feature -- src/";

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
  <resemblance>%<TAB><tag or commit>:<path><TAB><n> identical, <n> modified, ...
where the resemblance is the bytes both hold over the bytes either holds
(a modified file counted by its git similarity), and the name is a
tree-ish git takes (`git ls-tree -r v1.0:lib`). Then, after a blank line,
the best match's files as `git diff --name-status -M` from upstream to the
local copy would list them: M<score> (changed in place, with its
similarity), R<score> (found at another path: upstream path, then local
path), D (upstream file missing here), A (local addition).

Examples:
  git simm origin third_party/zlib --in ~/src/zlib
  git simm origin HEAD~100:deps/lua --in ../lua v5.1..v5.2
  git simm origin --json vendor/xdiff --in ../git";

const GROUPS_HELP: &str = "\
A group is a set of files linked by pairs whose exact git score (the rename
score `git diff -M` prints) is at least the threshold; identical files at
different paths are groups too. Fingerprints only choose which pairs to
score. Output: one block per group, most waste first (the bytes of every
member but the representative, what keeping one copy would save):

  group 1: 3 files, 8410 bytes of waste
  rep\t4210\tsrc/util.c
  100%\t4210\tvendor/util.c
  93%\t4200\tlib/util.c

The representative is the member linked to most others (then the largest);
each other member shows its score against it. Chunks that occur in more
than 10% of the files (and in 50 or more: license headers, generated
preambles) are boilerplate: they are taken out of both files before
scoring, so files sharing only a header do not group (--no-ignore-common
scores as git does; --show-common lists them).

Files: HEAD's tree by default, or <tree-ish>'s, the index (--cached), the
work tree (--worktree), or every blob in the object database (--all), each
named by the newest path it appears at (unreachable ones by their id).
Regular files of --min-size bytes or more only (default 192); binary files
(a NUL in the first 8000 bytes) are left out.

--fail-above <percent> exits 1 when the bytes of non-representative
members exceed that share of all bytes considered (a CI gate).

Examples:
  git simm groups                          groups among HEAD's files
  git simm groups --threshold 95 v2.0      near-identical files of v2.0
  git simm groups --json | jq '.groups[0]'
  git simm groups --format=sarif > groups.sarif
  git simm groups --all --min-size 4096";

/// Arguments of `git-simm groups`.
#[derive(Debug, Args)]
pub struct GroupsArgs {
    /// The tree to search (default `HEAD`).
    #[arg(value_name = "tree-ish", conflicts_with_all = ["cached", "worktree", "all"])]
    pub tree: Option<OsString>,

    /// Group the files of the index.
    #[arg(long, visible_alias = "staged", conflicts_with_all = ["worktree", "all"])]
    pub cached: bool,

    /// Group the files of the work tree (tracked files, as they are now).
    #[arg(long, conflicts_with = "all")]
    pub worktree: bool,

    /// Group every blob in the object database.
    #[arg(long)]
    pub all: bool,

    /// Lowest score that links two files, as git's -M takes it (80, 80%,
    /// 0.8); more than 0 and at most 100%. Default: simm.groupThreshold,
    /// else 80%.
    #[arg(long, short = 't', value_name = "n", value_parser = group_threshold_text)]
    pub threshold: Option<String>,

    /// Leave out files smaller than this many bytes.
    #[arg(long, value_name = "bytes", default_value_t = git_simm::groups::DEFAULT_MIN_SIZE)]
    pub min_size: u64,

    /// Print a JSON document instead of text (the same as --format=json).
    #[arg(long)]
    pub json: bool,

    /// Output format: text, json, or sarif (SARIF 2.1.0, one result per
    /// member that is not its group's representative).
    #[arg(long, value_name = "format", value_parser = ["text", "json", "sarif"])]
    pub format: Option<String>,

    /// Score as git does, boilerplate included.
    #[arg(long)]
    pub no_ignore_common: bool,

    /// Also print the chunks treated as boilerplate.
    #[arg(long, conflicts_with = "no_ignore_common")]
    pub show_common: bool,

    /// Exit 1 when the bytes of non-representative members exceed this
    /// percentage of the bytes of all files considered.
    #[arg(long, value_name = "percent", value_parser = percent_value)]
    pub fail_above: Option<f64>,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// A `--threshold` for `groups`: git's -M syntax, more than 0 and at most
/// 100% (git itself would cap `150%` at 100%; here it is a mistake).
pub fn group_threshold_text(s: &str) -> Result<String, String> {
    let value = git_simm::similarity::score::parse_rename_score(s).map_err(|e| e.to_string())?;
    let number = s.trim_end_matches('%');
    let over = match number.parse::<f64>() {
        Ok(v) if s.ends_with('%') => v > 100.0,
        Ok(v) if s.contains('.') => v > 1.0,
        _ => false,
    };
    if over || value == 0 {
        return Err(format!(
            "'{s}' is out of range: give more than 0 and at most 100%"
        ));
    }
    Ok(s.to_owned())
}

/// A percentage from 0 to 100 (`5`, `5%`, `0.5`).
fn percent_value(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("'{s}' is out of range: give 0 to 100"));
    }
    Ok(v)
}

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

    /// The `repo` column's value. If unset: `remote.origin.url`, else the
    /// repository's directory name (without `.git`).
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

    /// The tree to search.
    #[arg(value_name = "tree-ish", default_value = "HEAD")]
    pub tree: OsString,

    /// Minimum similarity, as git's -M takes it (50, 50%, 0.5).
    #[arg(long, short = 't', value_name = "n", default_value = "50%", value_parser = score_text)]
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

    /// Score as git does, boilerplate included. By default chunks found
    /// in more than a tenth of the tree's files (license headers,
    /// generated preambles) are taken out of both files first, so a file
    /// sharing only them is no match.
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

/// Arguments of `git-simm renames`.
#[derive(Debug, Args)]
pub struct RenamesArgs {
    /// Zero, one or two tree-ishes (see below).
    #[arg(value_name = "tree-ish", num_args = 0..=2)]
    pub revs: Vec<OsString>,

    /// Compare a tree with the index instead of the work tree.
    #[arg(long, visible_alias = "staged")]
    pub cached: bool,

    /// Detect renames, optionally setting the minimum similarity (git's
    /// -M<n>: 50, 50%, 0.5; default 50%). On by default.
    #[arg(short = 'M', long = "find-renames", value_name = "n", num_args = 0..=1, require_equals = true, default_missing_value = "", value_parser = score_text)]
    pub find_renames: Option<String>,

    /// Detect copies as well (git's -C<n>). Give it twice for
    /// --find-copies-harder.
    #[arg(short = 'C', long = "find-copies", value_name = "n", num_args = 0..=1, require_equals = true, default_missing_value = "", action = clap::ArgAction::Append, value_parser = score_text)]
    pub find_copies: Vec<String>,

    /// Consider every file of the old side as a copy source, not only
    /// modified ones.
    #[arg(long)]
    pub find_copies_harder: bool,

    /// Turn rename detection off.
    #[arg(long)]
    pub no_renames: bool,

    /// git's rename limit (-l<n>): skip inexact detection when
    /// destinations x sources exceeds n^2. If unset or 0, there is no limit.
    #[arg(
        short = 'l',
        long = "rename-limit",
        value_name = "n",
        default_value_t = 0
    )]
    pub rename_limit: usize,

    /// Pair empty files too, as git's diff does by default.
    #[arg(long, overrides_with = "no_rename_empty")]
    pub rename_empty: bool,

    /// Never pair empty files (the default).
    #[arg(long)]
    pub no_rename_empty: bool,

    /// Show only changes of these kinds (A C D M R T; lowercase excludes),
    /// e.g. `--diff-filter=RC` for renames and copies only.
    #[arg(long, value_name = "filter", value_parser = diff_filter_text)]
    pub diff_filter: Option<String>,

    /// Accepted for compatibility: name-status is the default format.
    #[arg(long)]
    pub name_status: bool,

    /// Read `.gitattributes` from this tree-ish instead of the work tree
    /// (git's `git --attr-source=<tree-ish>`; also `GIT_ATTR_SOURCE` and
    /// `attr.tree`). Attributes decide which paths are scored as binary
    /// (`binary`, `-diff`, `diff=<driver>` with `diff.<driver>.binary`).
    #[arg(long, value_name = "tree-ish")]
    pub attr_source: Option<String>,

    /// Which submodule changes count, as git diff's option: `none`,
    /// `untracked` (untracked files in a submodule do not make it
    /// modified; git diff's default), `dirty` (only a new commit does),
    /// `all` (submodules are left out; the value when none is given).
    /// Overrides `submodule.<name>.ignore` and `diff.ignoreSubmodules`.
    #[arg(
        long,
        value_name = "when",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all"
    )]
    pub ignore_submodules: Option<String>,

    /// NUL-terminated fields, paths verbatim, as git's -z.
    #[arg(short = 'z')]
    pub nul: bool,

    /// Print a JSON document: status, score, paths, sizes and blob ids of
    /// every change, and counts of the work done.
    #[arg(long)]
    pub json: bool,

    /// After git's pairing, also report splits (a deleted or renamed-away
    /// file whose bytes went, together, into two or more new paths) and
    /// merges (a new path made of two or more sources), when the parts
    /// hold at least <n> of the whole (default 80%).
    #[arg(long, value_name = "n", num_args = 0..=1, require_equals = true,
          default_missing_value = "80%", value_parser = score_text)]
    pub find_splits: Option<String>,

    /// Limit the comparison to these paths (after `--`, relative to the
    /// current directory; a directory takes what is under it; `*`, `?` and
    /// `[...]`, and the magic `:(top)` `:/`, `:(exclude)` `:!` `:^`,
    /// `:(glob)`, `:(icase)`, `:(literal)`, `:(attr:...)` as in git's
    /// pathspecs, with `GIT_{GLOB,NOGLOB,ICASE,LITERAL}_PATHSPECS`), before
    /// rename detection, as git diff does: a file moved in from elsewhere
    /// shows as added.
    #[arg(last = true, value_name = "path")]
    pub pathspecs: Vec<OsString>,

    /// Exit 1 when there are changes (after --diff-filter), 0 when there
    /// are none, as git diff --exit-code.
    #[arg(long)]
    pub exit_code: bool,

    /// Print nothing; implies --exit-code, as git diff --quiet.
    #[arg(long)]
    pub quiet: bool,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Rewrite git's attached short options (`-M50%`, `-C`, `-C -C`, `-l0`)
/// after the `renames` subcommand into long forms clap understands, so the
/// spellings git users type work unchanged. Everything after `--` is left
/// alone.
pub fn normalize_args(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut in_renames = false;
    let mut done = false;
    for arg in args {
        let text = arg.to_str().map(str::to_owned);
        match text.as_deref() {
            Some("--") => {
                done = true;
                out.push(arg);
            }
            Some("renames") if !in_renames && !done => {
                in_renames = true;
                out.push(arg);
            }
            Some(t) if in_renames && !done && t.starts_with("-M") => {
                out.push(format!("--find-renames={}", &t[2..]).into());
            }
            Some(t) if in_renames && !done && t.starts_with("-C") => {
                out.push(format!("--find-copies={}", &t[2..]).into());
            }
            Some(t) if in_renames && !done && t.starts_with("-l") && t.len() > 2 => {
                out.push(format!("--rename-limit={}", &t[2..]).into());
            }
            _ => out.push(arg),
        }
    }
    out
}
