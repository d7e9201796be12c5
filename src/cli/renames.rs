//! The options of `renames`, its help, and the rewriting of git's
//! attached short options (`-M50%`, `-B/70%`) before clap parses them.

use clap::Args;

use super::{StoreArgs, score_text};

pub(super) const RENAMES_HELP: &str = "\
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
--find-copies-harder), -B[<n>][/<m>], -l<n>, --diff-filter=<letters>, -z;
-M, -C and --no-renames apply in the order given, as in git (the last
one sets what is detected and the score).
There is no rename limit unless -l<n> sets one. Empty files are not paired
unless --rename-empty is given (git's diff pairs them by default).

With -B, a rewritten file is broken into a deletion and an addition before
rename detection, as git does: its old content can be the source of a
rename or copy, its new content the destination of one. Halves nobody
paired are joined again and print as a rewrite with the share of the old
content removed, M100 (T100 for a file that became a symlink or back),
which --diff-filter selects as B.

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
  git simm renames -B -M v1.0 v2.0
  git simm renames --json main feature
  git simm renames --exit-code main...feature -- src/";

/// A `-B` value (`[<n>][/<m>]`), checked as [`score_text`] checks scores.
fn break_text(s: &str) -> Result<String, String> {
    git_simm::renames::Breaks::parse(s)
        .map(|_| s.to_owned())
        .map_err(|e| e.to_string())
}

/// A `--diff-filter` value, checked as [`score_text`] checks scores.
fn diff_filter_text(s: &str) -> Result<String, String> {
    git_simm::output::DiffFilter::parse(s).map(|_| s.to_owned())
}

/// `-l<n>` as git reads it (`OPT_INTEGER`: `strtol`, saturating, then
/// kept in an `int`), as a limit: 0 and every value git would keep below
/// zero (`-l-1`, `-l99999999999999999999`) mean no limit, git's own
/// meaning of 0 and, for a negative one, its default, which here is no
/// limit.
fn rename_limit_value(s: &str) -> Result<usize, String> {
    let t = s.trim_start();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{s}' is not a number"));
    }
    let magnitude = digits.bytes().fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    let long = if negative { -magnitude } else { magnitude };
    // C's conversion of a long to an int keeps the low 32 bits.
    let int = long as i32;
    Ok(usize::try_from(int).unwrap_or(0))
}

/// Arguments of `git-simm renames`.
#[derive(Debug, Args)]
pub struct RenamesArgs {
    /// -M, -C, --no-renames and --find-copies-harder in the order given
    /// ([`RenamesArgs::note_order`]): git applies them one after another.
    /// Their own fields (`find_renames`, `find_copies`, `no_renames`,
    /// `find_copies_harder`) declare them to clap; what those hold
    /// is read from here, in order, never from them.
    #[arg(skip)]
    pub detection: Vec<DetectionArg>,

    /// Zero, one or two tree-ishes (see below).
    #[arg(value_name = "tree-ish", num_args = 0..=2)]
    pub revs: Vec<std::ffi::OsString>,

    /// Compare a tree with the index instead of the work tree.
    #[arg(long, visible_alias = "staged")]
    pub cached: bool,

    /// Detect renames, optionally setting the minimum similarity (git's
    /// -M<n>: 50, 50%, 0.5; default 50%). On by default.
    #[arg(short = 'M', long = "find-renames", value_name = "n", num_args = 0..=1, require_equals = true, default_missing_value = "", action = clap::ArgAction::Append, value_parser = score_text)]
    pub find_renames: Vec<String>,

    /// Detect copies as well (git's -C<n>). Give it twice for
    /// --find-copies-harder.
    #[arg(short = 'C', long = "find-copies", value_name = "n", num_args = 0..=1, require_equals = true, default_missing_value = "", action = clap::ArgAction::Append, value_parser = score_text)]
    pub find_copies: Vec<String>,

    /// Consider every file of the old side as a copy source, not only
    /// modified ones.
    #[arg(long, action = clap::ArgAction::Count)]
    pub find_copies_harder: u8,

    /// Break complete rewrite changes into pairs of delete and create
    /// (git's -B[<n>][/<m>]): a modification with at least <n> of edit
    /// (default 50%) becomes a deletion and an addition that rename and
    /// copy detection may pair with other paths; halves nobody pairs are
    /// joined again, shown as a rewrite (M100) when less than 100%-<m> of
    /// the original remains (<m> default 60%).
    #[arg(short = 'B', long = "break-rewrites", value_name = "n/m", num_args = 0..=1, require_equals = true, default_missing_value = "", action = clap::ArgAction::Append, value_parser = break_text)]
    pub break_rewrites: Vec<String>,

    /// Turn rename detection off.
    #[arg(long, action = clap::ArgAction::Count)]
    pub no_renames: u8,

    /// git's rename limit (-l<n>): skip inexact detection when
    /// destinations x sources exceeds n^2. If unset or 0, there is no limit.
    #[arg(
        short = 'l',
        long = "rename-limit",
        value_name = "n",
        default_value_t = 0,
        overrides_with = "rename_limit",
        value_parser = rename_limit_value,
        allow_hyphen_values = true
    )]
    pub rename_limit: usize,

    /// Pair empty files too, as git's diff does by default.
    #[arg(long, overrides_with = "no_rename_empty")]
    pub rename_empty: bool,

    /// Never pair empty files (the default).
    #[arg(long)]
    pub no_rename_empty: bool,

    /// Show only changes of these kinds (A C D M R T U, and B for
    /// rewrites that -B reports with a score; lowercase excludes), e.g.
    /// `--diff-filter=RC` for renames and copies only.
    #[arg(long, value_name = "filter", value_parser = diff_filter_text, action = clap::ArgAction::Append)]
    pub diff_filter: Vec<String>,

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
    /// hold at least <n> of the whole (default 80%; a percentage, 100 is
    /// 100%, or a fraction, 0.8).
    #[arg(long, value_name = "n", num_args = 0..=1, require_equals = true,
          default_missing_value = "80%", value_parser = super::threshold_text)]
    pub find_splits: Option<String>,

    /// Limit the comparison to these paths (after `--`, relative to the
    /// current directory; a directory takes what is under it; `*`, `?` and
    /// `[...]`, and the magic `:(top)` `:/`, `:(exclude)` `:!` `:^`,
    /// `:(glob)`, `:(icase)`, `:(literal)`, `:(attr:...)` as in git's
    /// pathspecs, with `GIT_{GLOB,NOGLOB,ICASE,LITERAL}_PATHSPECS`), before
    /// rename detection, as git diff does: a file moved in from elsewhere
    /// shows as added.
    #[arg(last = true, value_name = "path")]
    pub pathspecs: Vec<std::ffi::OsString>,

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
            Some(t) if in_renames && !done && t.starts_with("-B") => {
                out.push(format!("--break-rewrites={}", &t[2..]).into());
            }
            Some(t) if in_renames && !done && t.starts_with("-l") && t.len() > 2 => {
                out.push(format!("--rename-limit={}", &t[2..]).into());
            }
            _ => out.push(arg),
        }
    }
    out
}

/// One of the options that decide what git detects, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectionArg {
    /// `-M[<n>]` (the score as written, empty without one).
    Renames(String),
    /// `-C[<n>]`.
    Copies(String),
    /// `--no-renames`.
    NoRenames,
    /// `--find-copies-harder`.
    CopiesHarder,
}

impl RenamesArgs {
    /// Fill [`RenamesArgs::detection`] from where each option stood on
    /// the command line (`matches` are the `renames` subcommand's).
    pub fn note_order(&mut self, matches: &clap::ArgMatches) {
        // A flag counted but not given still has its default, at an index
        // of its own: only what the command line gave counts.
        let on_line =
            |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        let mut given: Vec<(usize, DetectionArg)> = Vec::new();
        let mut valued = |id: &str, make: fn(String) -> DetectionArg| {
            if let (true, Some(at), Some(values)) = (
                on_line(id),
                matches.indices_of(id),
                matches.get_many::<String>(id),
            ) {
                given.extend(at.zip(values).map(|(i, v)| (i, make(v.clone()))));
            }
        };
        valued("find_renames", DetectionArg::Renames);
        valued("find_copies", DetectionArg::Copies);
        for (id, arg) in [
            ("no_renames", DetectionArg::NoRenames),
            ("find_copies_harder", DetectionArg::CopiesHarder),
        ] {
            if let (true, Some(at)) = (on_line(id), matches.indices_of(id)) {
                given.extend(at.map(|i| (i, arg.clone())));
            }
        }
        given.sort_by_key(|&(i, _)| i);
        self.detection = given.into_iter().map(|(_, a)| a).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::rename_limit_value;

    /// git's int from strtol: negative and overflowing values are no limit,
    /// 2^32 + 10 keeps its low bits (10), a sign or leading blanks are
    /// taken, anything else is refused.
    #[test]
    fn rename_limits_read_as_git_reads_them() {
        for (arg, want) in [
            ("0", 0),
            ("5", 5),
            ("+5", 5),
            (" 7", 7),
            ("-1", 0),
            ("99999999999999999999", 0),
            ("2147483648", 0),
            ("4294967296", 0),
            ("4294967306", 10),
        ] {
            assert_eq!(rename_limit_value(arg), Ok(want), "{arg}");
        }
        for bad in ["", "x", "5k", "-", "1.5"] {
            assert!(rename_limit_value(bad).is_err(), "{bad}");
        }
    }
}
