//! Partial clones: objects missing on purpose, fetched from the promisor
//! remote in one batch the way git fetches them.
//!
//! A clone made with `--filter=blob:none` (or `blob:limit=<n>`) lacks
//! blobs; git fetches them from a promisor remote when a command needs
//! them. gix does not: to gix a missing blob is missing. Reading blob after
//! blob would also be the wrong way to fetch: each lazy fetch is a
//! `git fetch` of its own (a process, a connection, a pack), which is why
//! git batches what a command is about to need (the prefetches of
//! `diffcore-rename.c`, `git checkout`, `git backfill`) and so does
//! git-simm: [`Repo::fetch_missing`] takes every id a step will read,
//! keeps those not stored locally and fetches them all with the command
//! git's `promisor-remote.c` (2.47) runs,
//!
//! ```text
//! git -c fetch.negotiationAlgorithm=noop fetch <remote> --no-tags
//!     --no-write-fetch-head --recurse-submodules=no --filter=blob:none --stdin
//! ```
//!
//! the ids on its standard input, trying the promisor remotes in git's
//! order (those with `remote.<name>.promisor` or
//! `remote.<name>.partialCloneFilter`, then the one
//! `extensions.partialClone` names) until everything is there.
//! `promisor.quiet` adds `--quiet`, as in git. `GIT_NO_LAZY_FETCH` (set by
//! `git --no-lazy-fetch`) forbids fetching, as it does git's lazy fetches:
//! then, as when every remote fails, the error names the first missing
//! object, how many are missing and the clone's filter.
//!
//! ### Deviation
//! git fetches objects a command needs one by one wherever it has no
//! prefetch (`git cat-file`, tree walks); git-simm fetches only blobs, in
//! batches. A clone missing trees (`--filter=tree:0`) is read as far as its
//! trees are present: a missing tree is the error
//! [`RepoError::MissingObject`], not a fetch per tree.

use std::io::{Read, Write};
use std::process::Stdio;

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Repo, RepoError};
use crate::progress::Feedback;

/// What makes a repository a partial clone, read once when it is opened.
#[derive(Clone, Debug, Default)]
pub(super) struct Promisor {
    /// Promisor remotes in the order git tries them.
    remotes: Vec<String>,
    /// The filter the clone was made with (`remote.<name>.partialCloneFilter`
    /// of the first remote that has one).
    filter: Option<String>,
    /// `objects/pack` holds promisor packs (`.promisor` files).
    promisor_packs: bool,
    /// `GIT_NO_LAZY_FETCH` is true: git's lazy fetching is disabled.
    no_lazy_fetch: bool,
}

/// What [`Repo::fetch_missing`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Objects that were missing and were fetched.
    pub objects: usize,
    /// `git fetch` processes run (0 when nothing was missing, 1 unless a
    /// remote failed and the next was tried).
    pub batches: usize,
}

/// The `.promisor` files of a pack directory mark the packs a promisor
/// remote sent; `pack-<hash>.promisor` names `pack-<hash>.pack`.
pub(super) fn has_promisor_packs(pack_dir: &std::path::Path) -> bool {
    std::fs::read_dir(pack_dir).is_ok_and(|dir| {
        dir.filter_map(Result::ok)
            .any(|e| e.path().extension().is_some_and(|x| x == "promisor"))
    })
}

/// The promisor remotes of `repo` in git's order (`promisor_remote_init`):
/// every remote with `promisor = true` or a `partialCloneFilter`, in the
/// order the configuration names them, then the one of
/// `extensions.partialClone` moved (or added) last.
pub(super) fn promisor(repo: &gix::Repository, objects_dir: &std::path::Path) -> Promisor {
    let config = repo.config_snapshot();
    let plumbing = config.plumbing();
    let mut remotes: Vec<String> = Vec::new();
    let mut filters: Vec<(String, String)> = Vec::new();
    if let Some(sections) = plumbing.sections_by_name("remote") {
        for section in sections {
            let Some(name) = section.header().subsection_name() else {
                continue;
            };
            let name = name.to_str_lossy().into_owned();
            let promised = section.values("promisor").iter().any(|v| {
                // A key without `=` is true, as in git.
                v.is_empty()
                    || gix::config::Boolean::try_from(v.as_ref() as &gix::bstr::BStr)
                        .is_ok_and(|b| b.0)
            });
            let filter = section.values("partialclonefilter").pop();
            if (promised || filter.is_some()) && !remotes.contains(&name) {
                remotes.push(name.clone());
            }
            if let Some(f) = filter {
                filters.retain(|(n, _)| *n != name);
                filters.push((name, f.to_str_lossy().into_owned()));
            }
        }
    }
    if let Some(named) = plumbing.string("extensions.partialClone") {
        let named = named.to_str_lossy().into_owned();
        remotes.retain(|r| *r != named);
        remotes.push(named);
    }
    // git refuses such names (they would be read as paths).
    remotes.retain(|r| !r.starts_with('/'));
    let filter = remotes
        .iter()
        .find_map(|r| filters.iter().find(|(n, _)| n == r).map(|(_, f)| f.clone()));
    Promisor {
        remotes,
        filter,
        promisor_packs: has_promisor_packs(&objects_dir.join("pack")),
        no_lazy_fetch: std::env::var_os("GIT_NO_LAZY_FETCH").is_some_and(|v| git_env_bool(&v)),
    }
}

/// git's `git_env_bool`: a set variable is true unless it says false.
fn git_env_bool(value: &std::ffi::OsStr) -> bool {
    let v = value.to_string_lossy();
    let v = v.trim();
    match gix::config::Boolean::try_from(gix::bstr::BStr::new(v.as_bytes())) {
        Ok(b) => b.0,
        // An integer, as git reads one: non-zero is true.
        Err(_) => !v.parse::<i64>().is_ok_and(|n| n == 0),
    }
}

impl Repo {
    /// Whether objects may be missing on purpose: the repository has a
    /// promisor remote (a partial clone) or promisor packs.
    pub fn is_partial(&self) -> bool {
        !self.promisor.remotes.is_empty() || self.promisor.promisor_packs
    }

    /// The filter the partial clone was made with (`blob:none`,
    /// `blob:limit=1k`, ...), when the configuration records one.
    pub fn partial_clone_filter(&self) -> Option<&str> {
        self.promisor.filter.as_deref()
    }

    /// The promisor remotes, in the order git fetches from them.
    pub fn promisor_remotes(&self) -> &[String] {
        &self.promisor.remotes
    }

    /// Every object in the local promisor packs (those a promisor remote
    /// sent, marked by a `.promisor` file), each once, sorted.
    pub fn promisor_pack_objects(&self) -> Result<Vec<ObjectId>, RepoError> {
        if !self.promisor.promisor_packs {
            return Ok(Vec::new());
        }
        let mut ids = Vec::new();
        for idx in super::odb::idx_files(&self.objects_dir().join("pack")) {
            if !idx.with_extension("promisor").exists() {
                continue;
            }
            let index =
                gix::odb::pack::index::File::at(&idx, self.object_hash()).map_err(|source| {
                    RepoError::Pack {
                        path: idx.clone(),
                        source: gix::Error::from_error(source),
                    }
                })?;
            ids.extend(index.iter().map(|e| e.oid));
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// The ids among `ids` that are not stored locally (in a pack, loose,
    /// or in an alternate), each once, sorted. The empty blob and tree
    /// count as present, as git synthesises them.
    pub fn missing_objects(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        let local = self.local();
        let mut missing: Vec<ObjectId> = ids
            .iter()
            .filter(|id| !id.is_empty_blob() && !id.is_empty_tree())
            // Without refresh: a miss would otherwise list the pack
            // directory again, once per missing id.
            .filter(|id| !local.objects.exists_without_refresh(id))
            .copied()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        missing
    }

    /// Fetch those of `ids` that are missing, all in one `git fetch`, from
    /// the promisor remotes as git does (see the module documentation).
    ///
    /// Outside a partial clone nothing is fetched: a missing object is
    /// then the reader's [`RepoError::MissingObject`], as before. In a
    /// partial clone with lazy fetching disabled (`GIT_NO_LAZY_FETCH`), or
    /// when no remote could provide everything, the error is
    /// [`RepoError::PromisorFetch`]. `feedback` sees a stage counting the
    /// objects, a trace event saying how many were fetched, and git's
    /// stderr; its flag is looked at before git starts (Ctrl-C reaches
    /// git's fetch as well).
    pub fn fetch_missing(
        &self,
        ids: &[ObjectId],
        feedback: &Feedback,
    ) -> Result<Fetched, RepoError> {
        if !self.is_partial() {
            return Ok(Fetched::default());
        }
        let mut missing = self.missing_objects(ids);
        if missing.is_empty() {
            return Ok(Fetched::default());
        }
        let wanted = missing.len();
        let failed = |missing: &[ObjectId], reason: String| RepoError::PromisorFetch {
            id: missing[0],
            count: missing.len(),
            filter: self
                .partial_clone_filter()
                .unwrap_or("unknown filter")
                .to_owned(),
            reason,
        };
        if self.promisor.no_lazy_fetch {
            return Err(failed(
                &missing,
                "lazy fetching is disabled (GIT_NO_LAZY_FETCH, git --no-lazy-fetch)".into(),
            ));
        }
        if self.promisor.remotes.is_empty() {
            return Err(failed(&missing, "no promisor remote is configured".into()));
        }
        feedback.check()?;
        let stage = feedback.stage("Fetching missing objects", wanted as u64);
        let mut batches = 0;
        let mut reasons = Vec::new();
        for remote in &self.promisor.remotes {
            batches += 1;
            match self.fetch_batch(remote, &missing, feedback) {
                Ok(()) => {}
                Err(reason) => reasons.push(format!("{remote}: {reason}")),
            }
            // git checks what is still missing only after a failure; a
            // fetch that succeeded without sending everything is caught
            // here too, rather than by a reader later.
            missing = self.still_missing(&missing);
            if missing.is_empty() {
                break;
            }
        }
        if !missing.is_empty() {
            if reasons.is_empty() {
                reasons.push("the remote did not send them".into());
            }
            return Err(failed(&missing, reasons.join("; ")));
        }
        stage.inc(wanted as u64);
        stage.finish();
        feedback.trace(&format!(
            "promisor: fetched {wanted} missing object(s) in {batches} batch(es)"
        ));
        Ok(Fetched {
            objects: wanted,
            batches,
        })
    }

    /// The ids of `ids` (sorted, missing before a fetch) still missing.
    fn still_missing(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        let local = self.local();
        // A lookup that misses lists the pack directory again (the fetch
        // wrote a pack); one such refresh is enough for all.
        let Some(first) = ids.first() else {
            return Vec::new();
        };
        let _ = gix::objs::Exists::exists(&local.objects, first);
        ids.iter()
            .filter(|id| !local.objects.exists_without_refresh(id))
            .copied()
            .collect()
    }

    /// One `git fetch --stdin` of `ids` from `remote`; git's message when
    /// it fails.
    fn fetch_batch(
        &self,
        remote: &str,
        ids: &[ObjectId],
        feedback: &Feedback,
    ) -> Result<(), String> {
        let mut cmd = self.git_command();
        cmd.args([
            "-c",
            "fetch.negotiationAlgorithm=noop",
            "fetch",
            remote,
            "--no-tags",
            "--no-write-fetch-head",
            "--recurse-submodules=no",
            "--filter=blob:none",
            "--stdin",
        ]);
        if self.config_bool("promisor.quiet") == Some(true) {
            cmd.arg("--quiet");
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
        let mut input = Vec::with_capacity(ids.len() * 65);
        for id in ids {
            input.extend_from_slice(id.to_hex().to_string().as_bytes());
            input.push(b'\n');
        }
        let stdin = child.stdin.take();
        let stderr = child.stderr.take();
        // Fed and drained on threads of their own, so a git that writes
        // much before reading all its input cannot block against us.
        let (fed, text) = std::thread::scope(|scope| {
            let feeder = stdin.map(|mut stdin| scope.spawn(move || stdin.write_all(&input)));
            let mut text = Vec::new();
            if let Some(mut stderr) = stderr {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut buf) {
                    feedback.git_stderr(&buf[..n]);
                    text.extend_from_slice(&buf[..n]);
                }
            }
            let fed = feeder.map_or(Ok(()), |t| {
                t.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("the feeding thread panicked")))
            });
            (fed, text)
        });
        let status = child.wait().map_err(|e| format!("cannot run git: {e}"))?;
        if !status.success() {
            return Err(super::refs::git_stderr(&text, status));
        }
        fed.map_err(|e| format!("cannot write to git fetch: {e}"))
    }
}
