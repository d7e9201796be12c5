//! `git simm pack-order` and `git simm repack`.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use git_simm::pack::repack::Bases;
use git_simm::progress::Feedback;

use super::Status;
use super::settings::{flush_warnings, open_store, repack_abort_at, shows_progress};
use crate::cli::{PackOrderArgs, RepackArgs};

pub(super) fn pack_order(
    cwd: &Path,
    no_cache: bool,
    args: &PackOrderArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let mut store = open_store(&repo, no_cache)?;
    let list = git_simm::pack::pack_list(
        &repo,
        &mut store,
        &git_simm::pack::ListOptions {
            revs: &args.revs,
            keep_unreachable: args.keep_unreachable,
            strategy: args.order,
        },
        feedback,
    )?;
    flush_warnings(&mut store, err);
    out.write_all(&list.input)?;
    out.flush()?;
    Ok(Status::Success)
}

pub(super) fn repack(
    cwd: &Path,
    no_cache: bool,
    args: &RepackArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let mut store = open_store(&repo, no_cache)?;
    let opts = git_simm::pack::repack::RepackOptions {
        window: args.window,
        depth: args.depth,
        threads: args.threads,
        strategy: args.order.unwrap_or_default(),
        // An order only means something to git's window.
        bases: args.bases.unwrap_or(if args.order.is_some() {
            Bases::Git
        } else {
            Bases::Simm
        }),
        git_progress: shows_progress(args.quiet),
        write_bitmap: if args.no_write_bitmap_index {
            Some(false)
        } else if args.write_bitmap_index {
            Some(true)
        } else {
            None
        },
        abort_at: repack_abort_at(),
    };
    let report = git_simm::pack::repack::repack(&repo, &mut store, &opts, feedback)?;
    flush_warnings(&mut store, err);
    if report.objects == 0 {
        // git's words, on stdout as git writes them (`builtin/repack.c`).
        if !args.quiet {
            writeln!(out, "Nothing new to pack.")?;
            out.flush()?;
        }
        return Ok(Status::Success);
    }
    if !args.quiet {
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let change = if report.bytes_before > 0 {
            format!(
                " ({:+.1}%)",
                (report.bytes_after as f64 / report.bytes_before as f64 - 1.0) * 100.0
            )
        } else {
            String::new()
        };
        writeln!(
            err,
            "Repacked {} objects ({} blobs) into {}: {:.2} MiB -> {:.2} MiB{change}; {} old pack(s) removed{}",
            report.objects,
            report.blobs,
            report.pack,
            mib(report.bytes_before),
            mib(report.bytes_after),
            report.packs_removed,
            if report.bitmap {
                "; bitmap written"
            } else {
                ""
            },
        )?;
    }
    Ok(Status::Success)
}
