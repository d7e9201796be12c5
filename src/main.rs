//! The `git-simm` binary: parse arguments, run the command, map the outcome
//! to git's exit codes: 0 success, 1 nothing found, 128 fatal, 129 usage,
//! and 130 interrupted (SIGINT or SIGTERM: the work stopped and cleaned up
//! after itself; 130 is what a shell reports for a command Ctrl-C killed,
//! git's included). All work lives in the library.

use std::process::ExitCode;

mod cli;
mod commands;

use clap::Parser;
use cli::Cli;
use commands::Status;

fn main() -> ExitCode {
    limit_malloc_arenas();
    if let Err(e) = commands::terminal::catch_interrupts() {
        eprintln!("warning: Ctrl-C will not stop git-simm cleanly: {e}");
    }
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

/// glibc gives threads their own heaps ("arenas"), up to eight per core,
/// and keeps what a thread frees in its own arena for that arena's next
/// allocations. Work that holds large buffers in turn on each thread
/// (`repack --bases=simm` keeps one path's versions per worker) then
/// leaves freed memory stranded in many arenas: jq's repack peaked at 279
/// MB of RSS for 119 MB of live heap; with one arena per core, 184 MB, at
/// the same speed. `MALLOC_ARENA_MAX` in the environment still decides.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let arenas = i32::try_from(cores).unwrap_or(i32::MAX);
    // SAFETY: mallopt only sets an allocator parameter, and this runs
    // before the program starts any thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas() {}
