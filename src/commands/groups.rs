//! `git simm groups`: every group of similar files among a tree's files,
//! the index's, the work tree's or every blob's.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};
use git_simm::groups::{self, Contents, File, Found};
use git_simm::output::{self, write_quoted_path};
use git_simm::progress::Feedback;
use git_simm::repo::{Entry, EntryKind, Repo};
use git_simm::similarity::score;
use gix::ObjectId;

use super::Status;
use super::renames::tree_side;
use super::settings::{exhaustive, flush_warnings, open_store, threshold};
use crate::cli::{GroupsArgs, group_threshold_text};

pub(super) fn groups(
    cwd: &Path,
    no_cache: bool,
    args: &GroupsArgs,
    feedback: &Feedback,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let min_score = threshold(&repo, args.threshold.as_ref(), "simm.groupThreshold", "80%")?;
    if args.threshold.is_none()
        && let Some(text) = repo.config_string("simm.groupThreshold")
        && let Err(e) = group_threshold_text(&text)
    {
        bail!("invalid simm.groupThreshold value: {e}");
    }
    let (files, contents) = files(&repo, args, feedback)?;
    feedback.trace("groups: files listed");
    let mut store = open_store(&repo, no_cache)?;
    let mut opts = groups::Options {
        min_score,
        min_size: args.min_size,
        ignore_common: !args.no_ignore_common,
        show_common: args.show_common,
        cache_bytes: cache_limit(&repo)?,
        ..groups::Options::default()
    };
    if exhaustive() {
        opts.every_pair = true;
    }
    let found = groups::find_groups(&repo, &mut store, &files, &contents, &opts, feedback)?;
    flush_warnings(&mut store, err);
    let total = found.outcome.bytes;
    let waste: u64 = found.groups.iter().map(|g| g.waste).sum();
    let format = match (&args.format, args.json) {
        (Some(f), true) if f != "json" => bail!("--json and --format={f} contradict each other"),
        (Some(f), _) => f.as_str(),
        (None, true) => "json",
        (None, false) => "text",
    };
    match format {
        "json" => {
            let doc = output::json::Groups::new(&found, min_score, args.show_common, total);
            output::json::write(out, &doc)?;
        }
        "sarif" => output::json::write(out, &output::sarif::Log::new(&found.groups))?,
        _ => write_text(&found, min_score, args.show_common, out)?,
    }
    out.flush()?;
    if found.groups.is_empty() && format == "text" {
        let o = &found.outcome;
        let _ = writeln!(
            err,
            "no similar files at {}% among {} files ({} under {} bytes, {} binary)",
            score::percent(min_score),
            o.files,
            o.too_small,
            args.min_size,
            o.binary
        );
    }
    if let Some(limit) = args.fail_above
        && total > 0
        && waste as f64 * 100.0 / total as f64 > limit
    {
        let _ = writeln!(
            err,
            "error: {:.1}% of the bytes ({waste} of {total}) are in copies, above --fail-above {limit}%",
            waste as f64 * 100.0 / total as f64
        );
        return Ok(Status::TooMuchWaste);
    }
    Ok(Status::Success)
}

/// `simm.groupCacheLimit` (git's integer syntax, `k`, `m`, `g` suffixes):
/// the bytes of decoded histograms kept between batches, else
/// [`groups::DEFAULT_CACHE_BYTES`]; a bad value is fatal, in git's words.
fn cache_limit(repo: &Repo) -> Result<usize> {
    const KEY: &str = "simm.groupCacheLimit";
    match (repo.config_int(KEY), repo.config_string(KEY)) {
        (Some(n), _) if n >= 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        (_, Some(v)) => bail!(
            "bad numeric config value '{v}' for '{}': invalid unit",
            KEY.to_ascii_lowercase()
        ),
        _ => Ok(groups::DEFAULT_CACHE_BYTES),
    }
}

/// The files to group, and the contents of work-tree files.
fn files(repo: &Repo, args: &GroupsArgs, feedback: &Feedback) -> Result<(Vec<File>, Contents)> {
    let regular = |e: &Entry| matches!(e.kind, EntryKind::Regular | EntryKind::Executable);
    let as_file = |e: Entry| File {
        path: e.path,
        id: e.id,
    };
    if args.all {
        return Ok((all_blobs(repo, feedback)?, Contents::default()));
    }
    if args.cached {
        let entries = repo.index_entries()?;
        return Ok((
            entries.into_iter().filter(regular).map(as_file).collect(),
            Contents::default(),
        ));
    }
    if args.worktree {
        let index: HashMap<Vec<u8>, ObjectId> = repo
            .index_entries()?
            .into_iter()
            .map(|e| (e.path, e.id))
            .collect();
        // Files as the index has them are blobs already; only changed
        // ones are kept in memory.
        // Files git takes the index's blob for come without their bytes:
        // the blob is in the object database.
        let attr_tree = super::settings::attr_tree(repo, None)?;
        let mapped = repo.map_worktree(attr_tree, |entry, read| {
            let changed = index.get(&entry.path) != Some(&entry.id);
            read.data
                .filter(|_| changed && regular(entry))
                .map(<[u8]>::to_vec)
        })?;
        let mut contents = Contents::default();
        let mut files = Vec::with_capacity(mapped.len());
        for (entry, data) in mapped {
            if !regular(&entry) {
                continue;
            }
            if let Some(data) = data {
                contents.insert(entry.id, data);
            }
            files.push(as_file(entry));
        }
        return Ok((files, contents));
    }
    let (spec, defaulted) = match &args.tree {
        Some(t) => (t.as_encoded_bytes(), false),
        None => (b"HEAD".as_slice(), true),
    };
    let entries = tree_side(repo, spec, defaulted)?;
    Ok((
        entries.into_iter().filter(regular).map(as_file).collect(),
        Contents::default(),
    ))
}

/// Every blob of the object database, named by the path `git rev-list
/// --objects` first reaches it by (the newest commit's), or by its id
/// when no ref, reflog or index reaches it.
fn all_blobs(repo: &Repo, feedback: &Feedback) -> Result<Vec<File>> {
    let blobs = repo.all_blobs()?;
    feedback.trace("groups: blobs listed");
    let listed = git_simm::pack::list::rev_list_objects(repo, &[], feedback)?;
    feedback.trace("groups: names listed");
    let mut name_of: HashMap<ObjectId, Vec<u8>> = HashMap::with_capacity(blobs.len());
    for l in listed {
        if let Some(name) = l.name
            && !name.is_empty()
        {
            name_of.entry(l.id).or_insert(name);
        }
    }
    Ok(blobs
        .into_iter()
        .map(|(id, _)| File {
            path: name_of
                .remove(&id)
                .unwrap_or_else(|| id.to_string().into_bytes()),
            id,
        })
        .collect())
}

/// How a member is named: its path, and where one path holds two
/// different blobs of the group (`--all`: two versions of a file),
/// `@` and the blob id (12 hex digits), so that a reader sees why one
/// path is listed twice.
fn member_names(g: &groups::Group) -> Vec<Vec<u8>> {
    let mut ids_at: HashMap<&[u8], Vec<ObjectId>> = HashMap::new();
    for m in &g.members {
        let ids = ids_at.entry(&m.path).or_default();
        if !ids.contains(&m.id) {
            ids.push(m.id);
        }
    }
    g.members
        .iter()
        .map(|m| {
            let mut name = m.path.clone();
            if ids_at
                .get(m.path.as_slice())
                .is_some_and(|ids| ids.len() > 1)
            {
                name.push(b'@');
                name.extend_from_slice(m.id.to_hex_with_len(12).to_string().as_bytes());
            }
            name
        })
        .collect()
}

fn write_text(
    found: &Found,
    min_score: u32,
    show_common: bool,
    out: &mut impl Write,
) -> Result<()> {
    let mut buf = Vec::new();
    let mut chained = false;
    if show_common {
        let c = &found.common;
        writeln!(
            buf,
            "boilerplate: {} chunks in more than {}% (and at least {}) of {} sampled files",
            c.buckets.len(),
            (c.share * 100.0).round(),
            groups::common::MIN_FILES,
            c.sampled
        )?;
        for chunk in output::json::common_chunks(c) {
            write!(buf, "{}\t", chunk.files)?;
            write_quoted_path(&mut buf, chunk.text.as_bytes())?;
            buf.push(b'\n');
        }
        buf.push(b'\n');
    }
    for (n, g) in found.groups.iter().enumerate() {
        if n > 0 {
            buf.push(b'\n');
        }
        writeln!(
            buf,
            "group {}: {} files, {} bytes of waste",
            n + 1,
            g.members.len(),
            g.waste
        )?;
        for (i, (m, name)) in g.members.iter().zip(member_names(g)).enumerate() {
            if i == 0 {
                write!(buf, "rep\t{}\t", m.size)?;
            } else {
                // Under the threshold against the representative: it
                // joined through other members, each link at the threshold.
                let mark = if m.score < min_score {
                    chained = true;
                    "*"
                } else {
                    ""
                };
                write!(buf, "{}%{mark}\t{}\t", score::percent(m.score), m.size)?;
            }
            write_quoted_path(&mut buf, &name)?;
            buf.push(b'\n');
        }
        if buf.len() > 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    if chained {
        writeln!(
            buf,
            "\n* under {}% against the representative: linked to it through other members, \
             each link at least {}%",
            score::percent(min_score),
            score::percent(min_score)
        )?;
    }
    out.write_all(&buf)?;
    Ok(())
}
