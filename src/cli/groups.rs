//! `groups`: its options, help, and the checks that make a bad
//! threshold or percentage a usage error.

use clap::Args;

use super::StoreArgs;

pub(super) const GROUPS_HELP: &str = "\
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
each other member shows its score against it, marked `*` when that is
under the threshold (the member joined through others: A-B and B-C at 80%
or more put C in A's group whatever A-C scores). Where one path holds two
different blobs of a group (--all: two versions of a file), each is shown
as <path>@<blob id, 12 hex digits>. Chunks that occur in more
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
    pub tree: Option<std::ffi::OsString>,

    /// Group the files of the index.
    #[arg(long, visible_alias = "staged", conflicts_with_all = ["worktree", "all"])]
    pub cached: bool,

    /// Group the files of the work tree (tracked files, as they are now).
    #[arg(long, conflicts_with = "all")]
    pub worktree: bool,

    /// Group every blob in the object database.
    #[arg(long)]
    pub all: bool,

    /// Lowest score that links two files: a percentage (80, 80%) or a
    /// fraction (0.8), more than 0 and at most 100 (100 is 100%; git's -M
    /// digits rule, where 100 is 10%, is not used here). Default:
    /// simm.groupThreshold, else 80%.
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

/// A `--threshold` for `groups`: a threshold of git-simm's own
/// ([`threshold_text`]), more than 0.
pub fn group_threshold_text(s: &str) -> Result<String, String> {
    let value = git_simm::similarity::score::parse_threshold(s).map_err(|e| e.to_string())?;
    if value == 0 {
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
