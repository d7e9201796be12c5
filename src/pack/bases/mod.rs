//! A pack whose delta bases git-simm chooses itself (`repack --bases=simm`),
//! written with [`crate::pack::write`] instead of `git pack-objects`.
//!
//! Blobs and trees are grouped by the path they were listed under (the
//! insight of git's `--path-walk`: versions of one file are each other's
//! best bases). Inside a group objects are visited largest first (git's
//! rule: a delta that removes is cheaper than one that adds), and each is
//! tried against the `window` objects visited just before it and against
//! its neighbours in history, its nearest fingerprints and the ancestors
//! of deep candidates (`search.rs`); real deltas are computed
//! ([`crate::pack::delta`], bounded by the best so far, as git bounds its
//! search) and the smallest is kept. What a group leaves whole is then
//! tried against objects already written at other paths (`cross.rs`).
//! Since a base is always written before the objects that use it, writing
//! each group in visiting order puts every base before its deltas, as an
//! OFS_DELTA needs. Chains respect `depth` (git's meaning: a delta's chain
//! has at most `depth` links).
//!
//! Commits come first, their bases chosen the same way in runs of history
//! (git deltifies commits too: their author lines and messages repeat) and
//! written in `rev-list` order with each base just before its first delta,
//! as git writes them, which keeps history walks reading forwards; then
//! tags, whole; then trees, then blobs. Groups are processed in batches of bounded total size on all
//! the threads of the pool (search and compression both); a batch's
//! entries are then appended in order by one writer, so memory holds one
//! batch, not the repository.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use gix::object::Kind;
use gix::zlib::Compression;
use rayon::prelude::*;

mod cross;
mod grouping;
mod search;

use grouping::{Groups, groups};
use search::{Worker, Workers};

use super::PackError;
use super::list::{ListedObject, PackList};
use super::reread::{Meant, MeantHead};
use super::write::{Head, PackWriter, deflate_into};
use crate::pack::idx::IndexedEntry;
use crate::progress::Feedback;
use crate::repo::Repo;

/// Options of [`write_pack`].
#[derive(Clone, Copy, Debug)]
pub struct BasesOptions {
    /// Longest delta chain (git's `--depth`, default 50).
    pub depth: u32,
    /// How many objects visited before one are tried as its base (git's
    /// `--window`, default 10).
    pub window: usize,
    /// zlib level.
    pub level: Compression,
}

/// Batches hold groups up to this many bytes of content (a single larger
/// group is a batch of its own).
const BATCH_BYTES: u64 = 32 << 20;

/// One entry ready to append: compressed content or delta.
struct Ready {
    /// Position in the list.
    obj: usize,
    head: ReadyHead,
    /// Size before compression.
    size: u64,
    /// CRC-32 before compression, which reading the pack back checks.
    crc32: u32,
    deflated: Vec<u8>,
}

enum ReadyHead {
    Full(Kind),
    /// A delta against this list position (written earlier).
    Delta(usize),
}

/// Write every object of `list` into a pack in `dir` with its `.idx` and
/// `.rev` ([`crate::pack::idx`]), read it back ([`crate::pack::reread`]),
/// and return its name without extension (`pack-<hash>`).
pub fn write_pack(
    repo: &Repo,
    list: &PackList,
    opts: &BasesOptions,
    dir: &Path,
    feedback: &Feedback,
) -> Result<String, PackError> {
    let objects = &list.listed;
    let Groups {
        commits,
        whole,
        groups,
        continues,
    } = groups(objects);
    feedback.trace("bases: groups");
    let tmp_path = dir.join("tmp-simm.pack");
    let io_err = |what: &'static str, path: &Path, source: std::io::Error| PackError::Io {
        what,
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::create(&tmp_path).map_err(|e| io_err("create", &tmp_path, e))?;
    let mut writer = PackWriter::new(
        BufWriter::with_capacity(1 << 20, file),
        objects.len(),
        repo.object_hash(),
        opts.level,
    )
    .map_err(|e| write_err(&tmp_path, e))?;
    // Where each list position landed in the pack (entry index), and
    // for each entry, its object and what it was meant to hold.
    let mut entry_of: Vec<usize> = vec![usize::MAX; objects.len()];
    let mut appended = Appended {
        entry_of: &mut entry_of,
        ids: Vec::with_capacity(objects.len()),
        meant: Vec::with_capacity(objects.len()),
        depth: vec![cross::NOT_WRITTEN; objects.len()],
    };
    let stage = feedback.stage("Writing objects", objects.len() as u64);
    let workers = Workers::new(repo, opts.level);

    // Commits, in runs of history: bases chosen as for a path's versions
    // (the window over size order, and the neighbours in history), then
    // written in history order, each base just before its first delta, as
    // git writes them, so that walking history reads the pack forwards.
    for runs in commits.chunks(COMMIT_RUN * rayon::current_num_threads().max(1)) {
        feedback.check()?;
        let runs: Vec<&[usize]> = runs.chunks(COMMIT_RUN).collect();
        let done = workers.search_all(&runs, objects, opts, &|_| 0, feedback, &tmp_path);
        for run in done {
            for r in bases_first(run?) {
                appended.append(&mut writer, objects, r, &tmp_path)?;
                stage.inc(1);
            }
        }
    }

    // Tags (and anything of unknown kind), whole, in batches too (their
    // content is read and compressed on the pool).
    for chunk in whole.chunks(4096) {
        feedback.check()?;
        let ready: Vec<Result<Ready, PackError>> = chunk
            .par_iter()
            .map(|&obj| {
                workers.with(|Worker { reader, zlib, buf }| {
                    let kind = reader.object_into(&objects[obj].id, buf)?;
                    let mut deflated = Vec::new();
                    deflate_into(zlib, buf, &mut deflated).map_err(|e| write_err(&tmp_path, e))?;
                    deflated.shrink_to_fit();
                    Ok(Ready {
                        obj,
                        head: ReadyHead::Full(kind),
                        size: buf.len() as u64,
                        crc32: crc32fast::hash(buf),
                        deflated,
                    })
                })
            })
            .collect();
        for r in ready {
            appended.append(&mut writer, objects, r?, &tmp_path)?;
            stage.inc(1);
        }
    }
    feedback.trace("bases: commits and tags");

    // Trees and blobs, group by group, in batches of bounded size; then
    // what each group left whole, against the other paths' objects.
    let cross = cross::Cross::new(objects, &groups, &continues);
    let mut settle = cross::Settle::default();
    let mut start = 0;
    while start < groups.len() {
        feedback.check()?;
        let mut end = start;
        let mut bytes = 0u64;
        while end < groups.len() && (end == start || bytes < BATCH_BYTES) {
            bytes += groups[end].iter().map(|&o| objects[o].size).sum::<u64>();
            end += 1;
        }
        let mut done = workers
            .search_all(
                &groups[start..end],
                objects,
                opts,
                &|i| cross.reserved(start + i, opts.depth),
                feedback,
                &tmp_path,
            )
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        cross.improve(
            &workers,
            objects,
            opts.depth,
            start,
            &mut done,
            &appended.depth,
            &mut settle,
            feedback,
            &tmp_path,
        )?;
        for group in done {
            for r in group {
                let r = settle.settle(r, &appended.depth, opts.depth);
                appended.append(&mut writer, objects, r, &tmp_path)?;
                stage.inc(1);
            }
        }
        start = end;
    }
    stage.finish();
    feedback.trace(&format!(
        "bases: {} objects deltified across paths, {} bytes saved",
        settle.count, settle.saved
    ));
    feedback.trace("bases: deltas searched and pack written");
    let pack = writer.finish().map_err(|e| write_err(&tmp_path, e))?;
    pack.out
        .into_inner()
        .map_err(|e| io_err("write", &tmp_path, e.into_error()))?
        .sync_all()
        .map_err(|e| io_err("sync", &tmp_path, e))?;
    let name = format!("pack-{}", pack.checksum.to_hex());
    let pack_path = dir.join(format!("{name}.pack"));
    std::fs::rename(&tmp_path, &pack_path).map_err(|e| io_err("rename", &pack_path, e))?;
    // Read-only, as git leaves packs.
    #[cfg(unix)]
    std::fs::set_permissions(
        &pack_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o444),
    )
    .map_err(|e| io_err("chmod", &pack_path, e))?;
    feedback.check()?;
    crate::pack::reread::check_written(
        &pack_path,
        pack.len,
        pack.checksum.as_bytes().len(),
        &pack.entries,
        &appended.meant,
        feedback,
    )?;
    feedback.trace("bases: pack read back");

    let indexed: Vec<IndexedEntry> = appended
        .ids
        .iter()
        .zip(&pack.entries)
        .map(|(&id, &written)| IndexedEntry { id, written })
        .collect();
    let hash = repo.object_hash();
    let (idx, sorted) = crate::pack::idx::index_bytes(hash, &indexed, &pack.checksum)
        .map_err(|e| write_err(&pack_path, e))?;
    let rev = crate::pack::idx::rev_bytes(hash, &indexed, &sorted, &pack.checksum)
        .map_err(|e| write_err(&pack_path, e))?;
    // The .rev before the .idx: a pack is visible by its index.
    for (ext, bytes) in [("rev", rev), ("idx", idx)] {
        let path = dir.join(format!("{name}.{ext}"));
        write_read_only(&path, &bytes).map_err(|e| io_err("write", &path, e))?;
    }
    feedback.trace("bases: index written");
    Ok(name)
}

/// Write a file as git writes pack indexes: read-only (0444 before the
/// umask), synced.
fn write_read_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o444);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The entries appended so far: where each list position went, and per
/// entry its object and what it holds.
struct Appended<'a> {
    entry_of: &'a mut [usize],
    ids: Vec<gix::ObjectId>,
    meant: Vec<Meant>,
    /// Each list position's delta depth once appended
    /// ([`cross::NOT_WRITTEN`] before).
    depth: Vec<u32>,
}

impl Appended<'_> {
    fn append<W: Write>(
        &mut self,
        writer: &mut PackWriter<W>,
        objects: &[ListedObject],
        r: Ready,
        path: &Path,
    ) -> Result<(), PackError> {
        self.depth[r.obj] = match r.head {
            ReadyHead::Full(_) => 0,
            ReadyHead::Delta(base) => self.depth[base] + 1,
        };
        let (head, meant) = match r.head {
            ReadyHead::Full(kind) => (Head::Full(kind), MeantHead::Full(kind)),
            ReadyHead::Delta(base) => (
                Head::Delta(self.entry_of[base]),
                MeantHead::Delta(self.entry_of[base]),
            ),
        };
        let index = writer
            .add_deflated(head, r.size, &r.deflated)
            .map_err(|e| write_err(path, e))?;
        self.entry_of[r.obj] = index;
        self.ids.push(objects[r.obj].id);
        self.meant.push(Meant {
            head: meant,
            size: r.size,
            crc32: r.crc32,
        });
        Ok(())
    }
}

/// Commits per run whose bases are chosen together: about as many as
/// git's window sees in a few megabytes of commits, and all in memory at
/// once per thread.
const COMMIT_RUN: usize = 8192;

/// A run's entries (in visiting order, each base visited before its
/// deltas) reordered into list order, except that each base comes just
/// before the first entry that needs it: git's write order.
fn bases_first(ready: Vec<Ready>) -> Vec<Ready> {
    let mut order: Vec<usize> = ready.iter().map(|r| r.obj).collect();
    order.sort_unstable();
    let mut by_obj: HashMap<usize, Ready> = ready.into_iter().map(|r| (r.obj, r)).collect();
    let mut out = Vec::with_capacity(by_obj.len());
    let mut chain = Vec::new();
    for obj in order {
        let mut cur = obj;
        while let Some(r) = by_obj.remove(&cur) {
            let base = match r.head {
                ReadyHead::Delta(b) => Some(b),
                ReadyHead::Full(_) => None,
            };
            chain.push(r);
            match base {
                Some(b) => cur = b,
                None => break,
            }
        }
        out.extend(chain.drain(..).rev());
    }
    out
}

fn write_err(path: &Path, e: crate::pack::write::WriteError) -> PackError {
    PackError::Write {
        path: path.to_owned(),
        source: e,
    }
}

/// The zlib level of packs: `pack.compression`, else `core.compression`,
/// else zlib's default (git's `Z_DEFAULT_COMPRESSION`, level 6); -1 means
/// the default, 0-9 a level.
pub fn compression_level(repo: &Repo) -> Compression {
    let level = repo
        .config_int("pack.compression")
        .or_else(|| repo.config_int("core.compression"))
        .unwrap_or(-1);
    i32::try_from(level)
        .ok()
        .filter(|l| (0..=9).contains(l))
        .and_then(Compression::new)
        .unwrap_or(Compression::DEFAULT)
}
