//! `git simm gc`: the store's records of blobs gone from the object
//! database dropped, its tables merged.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use git_simm::similarity::store::{Pruned, Store};
use serde_json::json;

use super::Status;
use super::settings::store_dir;
use crate::cli::GcArgs;

pub(super) fn gc(
    cwd: &Path,
    args: &GcArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status> {
    let repo = super::settings::discover(cwd)?;
    let dir = store_dir(&repo)?;
    let own = Store::default_dir(repo.common_dir());
    // A store elsewhere may be shared (blob ids name content, so several
    // repositories can use one): what this repository lacks, another may
    // still have.
    let shared = !same_dir(&dir, &own);
    let prune = !args.no_prune;
    if prune && shared && !args.force && !args.dry_run {
        bail!(
            "the store in {} is set by simm.storeDir and may be shared with other repositories; \
             pruning by this repository's objects would drop their records \
             (--force if it is this repository's alone, --no-prune to only merge tables)",
            dir.display()
        );
    }
    let hash_len = repo.object_hash().len_in_bytes();
    let mut store = Store::open(&dir, hash_len)
        .with_context(|| format!("cannot open the fingerprint store in {}", dir.display()))?;
    let mut histograms = store
        .histograms()
        .with_context(|| format!("cannot open the histogram store in {}", dir.display()))?;
    let present = if prune {
        let blobs = repo.all_blobs()?;
        Some(blobs.into_iter().map(|(id, _)| id).collect::<Vec<_>>())
    } else {
        None
    };
    // Sorted by id, so a lookup is a binary search.
    let keep = |id: &gix::ObjectId| present.as_ref().is_none_or(|p| p.binary_search(id).is_ok());
    let fingerprints = store
        .prune(&keep, args.dry_run)
        .with_context(|| format!("cannot rewrite the fingerprint store in {}", dir.display()))?;
    let hist = if args.drop_histograms {
        histograms.drop_all(args.dry_run)
    } else {
        histograms.prune(&keep, args.dry_run)
    }
    .with_context(|| format!("cannot rewrite the histogram store in {}", dir.display()))?;
    let mut signatures = store
        .signatures()
        .with_context(|| format!("cannot open the signature store in {}", dir.display()))?;
    let sigs = signatures
        .prune(&keep, args.dry_run)
        .with_context(|| format!("cannot rewrite the signature store in {}", dir.display()))?;
    let mut band_keys = store
        .band_keys()
        .with_context(|| format!("cannot open the band key store in {}", dir.display()))?;
    let keys = band_keys
        .prune(&keep, args.dry_run)
        .with_context(|| format!("cannot rewrite the band key store in {}", dir.display()))?;
    for w in store
        .take_warnings()
        .into_iter()
        .chain(histograms.take_warnings())
        .chain(signatures.take_warnings())
        .chain(band_keys.take_warnings())
    {
        writeln!(err, "warning: {w}")?;
    }
    if args.json {
        let doc = json!({
            "store": dir.display().to_string(),
            "dry_run": args.dry_run,
            "pruned": prune,
            "fingerprints": report_json(&fingerprints),
            "histograms": report_json(&hist),
            "signatures": report_json(&sigs),
            "band_keys": report_json(&keys),
        });
        writeln!(out, "{doc:#}")?;
    } else if !args.quiet {
        let (kept, dropped) = if args.dry_run {
            ("to keep", "to drop")
        } else {
            ("kept", "dropped")
        };
        for (name, r) in [
            ("fingerprints", &fingerprints),
            ("histograms", &hist),
            ("signatures", &sigs),
            ("band keys", &keys),
        ] {
            writeln!(
                out,
                "{name}: {} {kept}, {} {dropped}; {} -> {}",
                r.kept,
                r.dropped,
                tables(r.tables_before, r.bytes_before),
                tables(tables_after(r), r.bytes_after),
            )?;
        }
    }
    Ok(Status::Success)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        // Not created yet: compare as written.
        _ => a == b,
    }
}

/// Tables after a rewrite: none when nothing is kept, one when anything
/// changed, else as before.
fn tables_after(r: &Pruned) -> usize {
    if r.kept == 0 {
        0
    } else if r.dropped == 0 && r.tables_before <= 1 {
        r.tables_before
    } else {
        1
    }
}

fn report_json(r: &Pruned) -> serde_json::Value {
    json!({
        "kept": r.kept,
        "dropped": r.dropped,
        "tables_before": r.tables_before,
        "tables_after": tables_after(r),
        "bytes_before": r.bytes_before,
        "bytes_after": r.bytes_after,
    })
}

/// `3 tables, 12.40 MiB`, sizes as `git count-objects -H` prints them.
fn tables(n: usize, bytes: u64) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} table{s}, {}", human(bytes))
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}
