//! The command layer: one function per subcommand turns parsed arguments,
//! git config and the environment into library calls and writes the
//! results. Errors are `anyhow` with context here, and the exit status is
//! decided here; the library below never prints or reads the environment.
//! What it reports while it works (progress, trace events) and the flag
//! that interrupts it go in through a [`Feedback`] made here
//! ([`terminal`]).

mod check;
mod compare;
#[cfg(feature = "export")]
mod export;
mod fingerprint;
mod gc;
mod generate;
mod groups;
mod hook;
mod origin;
mod pack;
mod renames;
mod settings;
mod similar;
pub mod terminal;

use std::io::Write;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use git_simm::progress::Feedback;
use git_simm::repo::RepoError;

use crate::cli::{Cli, Command};

/// How a command ended, when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Exit 0.
    Success,
    /// Exit 1: the search found nothing (like `git grep`).
    NothingFound,
    /// Exit 1: `check --strict` warned, so the hook refuses the commit.
    Refused,
    /// Exit 1: `groups --fail-above` found more waste than allowed.
    TooMuchWaste,
    /// Exit 1: `renames --exit-code` (or `--quiet`) found changes, as
    /// `git diff --exit-code`.
    Differences,
}

/// Run a parsed command line, writing results to `out` and warnings to
/// `err`; long work stops soon after `interrupt` is set, with an error
/// [`is_interrupted`] recognises.
pub fn run(
    cli: Cli,
    interrupt: &AtomicBool,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    // Like `git -C`: everything, including relative paths, as if started
    // there.
    if let Some(dir) = cli.directory.as_ref().filter(|d| !d.as_os_str().is_empty()) {
        std::env::set_current_dir(dir)
            .with_context(|| format!("cannot change to '{}'", dir.display()))?;
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let quiet = match &cli.command {
        Command::Fingerprint(args) => args.quiet,
        Command::Repack(args) => args.quiet,
        Command::Export(args) => args.quiet,
        Command::Gc(args) => args.quiet,
        _ => false,
    };
    let terminal = settings::terminal(quiet);
    let feedback = Feedback::new(&terminal, interrupt);
    let fb = &feedback;
    let nc = cli.no_cache
        || match &cli.command {
            Command::Fingerprint(args) => args.store.no_cache,
            Command::Similar(args) => args.store.no_cache,
            Command::Compare(args) => args.store.no_cache,
            Command::Origin(args) => args.store.no_cache,
            Command::Groups(args) => args.store.no_cache,
            Command::Renames(args) => args.store.no_cache,
            Command::Check(args) => args.store.no_cache,
            Command::PackOrder(args) => args.store.no_cache,
            Command::Repack(args) => args.store.no_cache,
            Command::Export(args) => args.store.no_cache,
            Command::InstallHook(_)
            | Command::Gc(_)
            | Command::Completions(_)
            | Command::Manpage(_) => false,
        };
    let result = match &cli.command {
        Command::Fingerprint(args) => fingerprint::fingerprint(&cwd, nc, args, fb, out, err),
        Command::Similar(args) => similar::similar(&cwd, nc, args, fb, out, err),
        Command::Compare(args) => compare::compare(&cwd, nc, args, fb, out, err),
        Command::Origin(args) => origin::origin(&cwd, nc, args, fb, out, err),
        Command::Groups(args) => groups::groups(&cwd, nc, args, fb, out, err),
        Command::Renames(args) => {
            renames::renames(&cwd, nc, args, fb, out, err).map_err(renames::blob_is_usage)
        }
        Command::Check(args) => check::check(&cwd, nc, args, fb, out, err),
        Command::InstallHook(args) => hook::install_hook(&cwd, args, out),
        Command::PackOrder(args) => pack::pack_order(&cwd, nc, args, fb, out, err),
        Command::Repack(args) => pack::repack(&cwd, nc, args, fb, out, err),
        #[cfg(feature = "export")]
        Command::Export(args) => export::export(&cwd, nc, args, fb, err),
        #[cfg(not(feature = "export"))]
        Command::Export(_) => Err(anyhow::anyhow!(
            "this git-simm was built without Parquet export (cargo's \"export\" feature, \
             on by default): build it with the default features, `cargo install git-simm` \
             (or `cargo install --path .` in a clone), without --no-default-features"
        )),
        Command::Gc(args) => gc::gc(&cwd, args, out, err),
        Command::Completions(args) => generate::completions(args, out),
        Command::Manpage(args) => generate::manpage(&cwd, args, out),
    };
    // Said before `main` looks at the interrupt flag for the last time:
    // a SIGINT after this line finds nothing left to stop, so the run
    // ends as it would have (what the interrupt tests allow for).
    feedback.trace("command finished");
    match result {
        Err(e) if is_broken_pipe(&e) => Ok(Status::Success),
        other => other,
    }
}

/// The message `main` prints after `fatal: `: the context chain joined as
/// anyhow's `{:#}` does (a cause the message before already ends with
/// left out), except that a "not a git repository" error is
/// complete on its own (gix's cause only repeats it), and a revision that
/// does not resolve reads as git's (`git diff HEAD~999999`), not as gix's
/// account of its walk.
pub fn describe_error(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        if let Some(RepoError::UnknownRevision { spec, .. }) = cause.downcast_ref::<RepoError>() {
            parts.push(unknown_revision(spec));
            break;
        }
        let text = cause.to_string();
        // An error whose message already ends with its cause's (`... at
        // P: Not a directory`) would say it twice.
        if !parts.last().is_some_and(|p: &String| p.ends_with(&text)) {
            parts.push(text);
        }
        if matches!(
            cause.downcast_ref::<RepoError>(),
            Some(
                RepoError::NotARepository { .. }
                    | RepoError::NotARepositoryAt { .. }
                    | RepoError::BadGitDir { .. }
            )
        ) {
            break;
        }
    }
    parts.join(": ")
}

/// What git warns about before the refusal `e` carries (git's warnings
/// while it read `safe.directory`), each to print after `warning: `.
pub fn warnings_before(e: &anyhow::Error) -> Vec<String> {
    e.chain()
        .find_map(|c| match c.downcast_ref::<RepoError>() {
            Some(RepoError::DubiousOwnership { warnings, .. }) => Some(warnings.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// What git says of a revision it cannot resolve (`setup.c`,
/// `die_verify_filename`).
fn unknown_revision(spec: &str) -> String {
    format!(
        "ambiguous argument '{spec}': unknown revision or path not in the working tree.\n\
         Use '--' to separate paths from revisions, like this:\n\
         'git <command> [<revision>...] -- [<file>...]'"
    )
}

/// A command line git refuses with its usage message (exit 129, not 128):
/// what the arguments ask for makes no sense, whatever the repository
/// holds.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// The usage error among `e`'s causes, if any ([`Usage`]).
pub fn usage_error(e: &anyhow::Error) -> Option<&Usage> {
    e.chain().find_map(|c| c.downcast_ref::<Usage>())
}

/// Whether `e` says the work was interrupted
/// ([`git_simm::progress::Interrupted`] among its causes).
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<git_simm::progress::Interrupted>())
}

/// Whether `e` is a closed pipe (`git simm ... | head`), which ends the
/// output quietly with exit 0, as git does: an I/O error among its causes,
/// or one serde_json wrapped while writing a `--json` document.
pub(super) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}
