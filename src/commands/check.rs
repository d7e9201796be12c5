//! `git simm check`: the pre-commit check of what is staged.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use git_simm::output;
use git_simm::progress::Feedback;
use git_simm::similarity::score;

use super::Status;
use super::renames::tree_or_unborn;
use super::settings::{diff_attributes, flush_warnings, open_store, threshold};
use crate::cli::CheckArgs;

pub(super) fn check(
    cwd: &Path,
    no_cache: bool,
    args: &CheckArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    use git_simm::check::{self, Settings};
    feedback.trace("check: start");
    let repo = super::settings::discover(cwd)?;
    let limit = match repo.config_int("diff.renameLimit") {
        Some(n) if n > 0 => n as usize,
        Some(_) => 0,
        None => check::GIT_DEFAULT_RENAME_LIMIT,
    };
    // diff.renames may also be "copies", which still detects renames.
    let git_renames = match repo.config_string("diff.renames") {
        Some(v) if v.eq_ignore_ascii_case("copies") || v.eq_ignore_ascii_case("copy") => true,
        Some(_) => repo.config_bool("diff.renames").unwrap_or(true),
        None => true,
    };
    let settings = Settings {
        rename_threshold: threshold(
            &repo,
            args.rename_threshold.as_ref(),
            "simm.renameThreshold",
            "25%",
        )?,
        copy_threshold: threshold(
            &repo,
            args.copy_threshold.as_ref(),
            "simm.copyThreshold",
            "90%",
        )?,
        git_min_score: score::DEFAULT_MIN_SCORE,
        git_rename_limit: limit,
        git_renames,
        ignore: repo.config_strings("simm.ignore"),
        ignore_common: !args.no_ignore_common,
    };
    // The key is read only when no flag decides, and then as git reads a
    // boolean: a value it would refuse stops the check rather than turn
    // strictness off without a word.
    let strict = if args.no_strict {
        false
    } else {
        args.strict || repo.config_bool_strict("simm.strict")?.unwrap_or(false)
    };
    feedback.trace("check: settings");
    let staged = repo.staged(tree_or_unborn(&repo, "HEAD", true)?)?;
    feedback.trace("check: HEAD's tree and the index");
    // As `git diff --cached`: the work tree's attribute files, the
    // index's where it has none (or GIT_ATTR_SOURCE's, attr.tree's tree).
    let attributes = diff_attributes(&repo, None, git_simm::repo::AttrSource::WorktreeThenIndex)?;
    let mut store = open_store(&repo, no_cache)?;
    let findings = {
        let mut content =
            git_simm::renames::RepoContent::new(&repo, &mut store, Default::default(), feedback)
                .with_attributes(attributes);
        let findings = check::check(&staged, &settings, &mut content, feedback)?;
        content.finish()?;
        findings
    };
    feedback.trace("check: done");
    flush_warnings(&mut store, err);
    if args.json {
        output::json::write(out, &output::check::Check::new(&findings))?;
        out.flush()?;
    } else {
        output::check::write_report(err, &findings, &settings, args.verbose)?;
        err.flush()?;
    }
    Ok(if strict && !findings.is_empty() {
        Status::Refused
    } else {
        Status::Success
    })
}
