//! The `git-simm` binary: parse arguments, run the command, map the outcome
//! to git's exit codes: 0 success, 1 nothing found, 128 fatal, 129 usage,
//! and 130 interrupted (SIGINT or SIGTERM: the work stopped and cleaned up
//! after itself; 130 is what a shell reports for a command Ctrl-C killed,
//! git's included). All work lives in the library.

use std::process::ExitCode;

mod cli;
mod commands;
mod malloc;

use cli::{Cli, Command};
use commands::Status;

fn main() -> ExitCode {
    malloc::limit_arenas();
    if let Err(e) = commands::terminal::catch_interrupts() {
        eprintln!("warning: Ctrl-C will not stop git-simm cleanly: {e}");
    }
    let cli = match Cli::parse_ordered(cli::normalize_args(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(129)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if matches!(cli.command, Command::Renames(_)) {
        malloc::prepare_for_short_run();
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = std::io::stderr();
    let result = commands::run(cli, &commands::terminal::INTERRUPTED, &mut out, &mut err);
    // Interrupted, the work stopped where it was (or had just finished):
    // like a command killed by Ctrl-C, nothing more is said.
    if commands::terminal::interrupted() || result.as_ref().is_err_and(commands::is_interrupted) {
        commands::terminal::end_children();
        return ExitCode::from(commands::terminal::EXIT_INTERRUPTED);
    }
    match result {
        Ok(Status::Success) => ExitCode::SUCCESS,
        Ok(Status::NothingFound | Status::Refused | Status::Differences | Status::TooMuchWaste) => {
            ExitCode::from(1)
        }
        Err(e) if commands::usage_error(&e).is_some() => {
            drop(out);
            if let Some(usage) = commands::usage_error(&e) {
                eprintln!("error: {usage}\n\nFor more information, try '--help'.");
            }
            ExitCode::from(129)
        }
        Err(e) => {
            drop(out);
            for warning in commands::warnings_before(&e) {
                eprintln!("warning: {warning}");
            }
            eprintln!("fatal: {}", commands::describe_error(&e));
            ExitCode::from(128)
        }
    }
}
