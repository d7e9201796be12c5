//! The `git-simm` binary: parse arguments, run the command, map the outcome
//! to git's exit codes (0 success, 1 nothing found, 128 fatal, 129 usage).
//! All work lives in the library.

use std::process::ExitCode;

mod cli;
mod commands;

use clap::Parser;
use cli::Cli;
use commands::Status;

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(cli::normalize_args(std::env::args_os())) {
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
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = std::io::stderr();
    // Nothing interrupts a run yet.
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    let result = commands::run(cli, &interrupt, &mut out, &mut err);
    match result {
        Ok(Status::Success) => ExitCode::SUCCESS,
        Ok(Status::NothingFound | Status::Refused) => ExitCode::from(1),
        Err(e) => {
            drop(out);
            eprintln!("fatal: {}", commands::describe_error(&e));
            ExitCode::from(128)
        }
    }
}
