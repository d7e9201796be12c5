//! What git-simm asks of git's own packing machinery: the list of objects to
//! pack (`git rev-list --objects`), the `delta` attribute of paths, and the
//! input for `git pack-objects` with the blobs renamed into similarity order.
//!
//! git is run as a subprocess, not reimplemented: the object walk must be
//! exactly the one `git repack` does (reflogs, the index of every worktree,
//! the same tree and commit order), and pack writing is git's job. What
//! git-simm changes is only the names blobs are listed under
//! ([`crate::pack_order`]).

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::object::Kind;

use crate::compute;
use crate::pack_order::{self, Object, Strategy};
use crate::progress::{Progress, trace};
use crate::repo::{Repo, RepoError};
use crate::store::Store;

/// Failures of the packing pipeline; each names the git command or object
/// involved.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// git could not be started at all.
    #[error("cannot run '{command}': is git installed and on PATH?")]
    Spawn {
        /// The command line.
        command: String,
        /// What the system reported.
        #[source]
        source: std::io::Error,
    },
    /// A git command failed; its own message is kept.
    #[error("'{command}' failed: {message}")]
    Git {
        /// The command line.
        command: String,
        /// git's stderr, trimmed.
        message: String,
    },
    /// git printed something that is not what its documentation promises.
    #[error("unexpected output from '{command}': {line}")]
    Parse {
        /// The command line.
        command: String,
        /// The offending line.
        line: String,
    },
    /// More blobs or trees than crafted names can order.
    #[error("{0} blobs or trees are more than the {max} a similarity order can express", max = pack_order::MAX_RANKS)]
    TooManyObjects(usize),
    /// Reading the repository failed.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Computing fingerprints failed.
    #[error(transparent)]
    Compute(#[from] compute::ComputeError),
}

/// One object as `git rev-list --objects` listed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The object.
    pub id: ObjectId,
    /// The path it was reached by (empty for a root tree), `None` for
    /// commits and tags.
    pub name: Option<Vec<u8>>,
}

/// A git command against `repo`, with its git dir made explicit so the
/// caller's environment cannot point it elsewhere.
pub fn git(repo: &Repo) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir").arg(repo.git_dir());
    if let Some(work) = repo.work_dir() {
        cmd.arg("--work-tree").arg(work);
    }
    cmd
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run `cmd` feeding it `input`, and return its stdout; a non-zero exit
/// becomes [`PackError::Git`] with git's message.
pub fn run(cmd: Command, input: Option<&[u8]>) -> Result<Vec<u8>, PackError> {
    run_with(cmd, input, false)
}

/// [`run`]; with `relay`, git's stderr (its progress) is also copied to
/// ours as it comes, so the user watches a long pack-objects run.
pub fn run_with(mut cmd: Command, input: Option<&[u8]>, relay: bool) -> Result<Vec<u8>, PackError> {
    let command = describe(&cmd);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let spawn_error = |source| PackError::Spawn {
        command: command.clone(),
        source,
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    // stdin is fed and stdout drained by threads of their own, so a child
    // that writes much before it has read everything cannot deadlock
    // against us while stderr is read here.
    let feeder = match (input, child.stdin.take()) {
        (Some(data), Some(mut stdin)) => {
            let data = data.to_vec();
            Some(std::thread::spawn(move || stdin.write_all(&data)))
        }
        _ => None,
    };
    let drain = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
        })
    });
    let mut stderr_text = Vec::new();
    if let Some(mut stderr) = child.stderr.take() {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = std::io::Read::read(&mut stderr, &mut buf) {
            if relay {
                let _ = std::io::stderr().write_all(&buf[..n]);
            }
            stderr_text.extend_from_slice(&buf[..n]);
        }
    }
    let status = child.wait().map_err(spawn_error)?;
    let panicked = || std::io::Error::other("a thread talking to git panicked");
    let stdout = match drain.map(|t| t.join()) {
        Some(Ok(Ok(out))) => out,
        Some(Ok(Err(e))) => return Err(spawn_error(e)),
        Some(Err(_)) => return Err(spawn_error(panicked())),
        None => Vec::new(),
    };
    let fed = feeder.map(|t| t.join());
    if !status.success() {
        return Err(PackError::Git {
            command,
            message: git_message(&stderr_text, status),
        });
    }
    match fed {
        Some(Ok(Err(e))) => Err(spawn_error(e)),
        Some(Err(_)) => Err(spawn_error(panicked())),
        _ => Ok(stdout),
    }
}

/// git's stderr as one line for an error message.
pub fn git_message(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        format!("exited with {status}")
    } else {
        text.lines()
            .map(|l| l.strip_prefix("fatal: ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The objects `git rev-list --objects <revs>` lists, in its order. With no
/// `revs`, what `git repack -a` packs: every ref, the reflogs and the
/// objects of every worktree's index.
pub fn rev_list_objects(repo: &Repo, revs: &[OsString]) -> Result<Vec<Listed>, PackError> {
    let mut cmd = git(repo);
    cmd.args(["rev-list", "--objects"]);
    if revs.is_empty() {
        cmd.args(["--all", "--reflog", "--indexed-objects"]);
    } else {
        cmd.args(revs);
    }
    let command = describe(&cmd);
    let stdout = run(cmd, None)?;
    let hex_len = repo.object_hash().len_in_hex();
    let mut listed = Vec::new();
    for line in stdout.lines() {
        let bad = || PackError::Parse {
            command: command.clone(),
            line: line.to_str_lossy().into_owned(),
        };
        let hex = line.get(..hex_len).ok_or_else(bad)?;
        let id = ObjectId::from_hex(hex).map_err(|_| bad())?;
        let name = match line.get(hex_len..) {
            Some([]) | None => None,
            Some([b' ', rest @ ..]) => Some(rest.to_vec()),
            Some(_) => return Err(bad()),
        };
        listed.push(Listed { id, name });
    }
    Ok(listed)
}

/// The paths among `paths` whose `delta` attribute is unset (`-delta`):
/// pack-objects must see their real names, or it would deltify them.
pub fn no_delta_paths(repo: &Repo, paths: &[&[u8]]) -> Result<Vec<Vec<u8>>, PackError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = git(repo);
    cmd.args(["check-attr", "--stdin", "-z", "delta"]);
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p);
        input.push(0);
    }
    let out = run(cmd, Some(&input))?;
    // -z output: path NUL attribute NUL value NUL, one triple per path.
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
    Ok(fields
        .chunks_exact(3)
        .filter(|t| t[2] == b"unset")
        .map(|t| t[0].to_vec())
        .collect())
}

/// The version of the `git` on PATH, as (major, minor).
pub fn git_version() -> Result<(u32, u32), PackError> {
    let mut cmd = Command::new("git");
    cmd.arg("version");
    let command = describe(&cmd);
    let out = run(cmd, None)?;
    let text = String::from_utf8_lossy(&out);
    let bad = || PackError::Parse {
        command: command.clone(),
        line: text.trim().to_owned(),
    };
    let version = text.trim().strip_prefix("git version ").ok_or_else(bad)?;
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let minor = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    Ok((major, minor))
}

/// The options `git pack-objects` needs to follow a [`PackList`]: deltas
/// recomputed (so the order matters at all) and name hash version 1, the
/// one the crafted names are built for (git 2.49 added others).
pub fn pack_objects_args(version: (u32, u32)) -> Vec<&'static str> {
    let mut args = vec!["--no-reuse-delta", "--delta-base-offset"];
    if version >= (2, 49) {
        args.push("--name-hash-version=1");
    }
    args
}

/// What to pack and in which order, ready for `git pack-objects` stdin.
pub struct PackList {
    /// `<oid> <name>` lines.
    pub input: Vec<u8>,
    /// Every object listed, sorted (for verifying the pack).
    pub objects: Vec<ObjectId>,
    /// How many of them are blobs.
    pub blobs: usize,
    /// Fingerprints computed (not found in the store).
    pub computed: usize,
}

/// Options of [`pack_list`].
pub struct ListOptions<'a> {
    /// rev-list arguments; empty for what `git repack -a` packs.
    pub revs: &'a [OsString],
    /// Also list every local object the walk did not reach, as
    /// `git repack -a -d --keep-unreachable` keeps them.
    pub keep_unreachable: bool,
    /// How to order blobs.
    pub strategy: Strategy,
    /// Show progress on stderr.
    pub progress: bool,
}

/// Build the pack-objects input: every object of the walk in rev-list
/// order (then unreachable ones, if asked), blobs and trees named into the
/// order of `opts.strategy`, commits and tags under the names git gives
/// them.
pub fn pack_list(
    repo: &Repo,
    store: &mut Store,
    opts: &ListOptions,
) -> Result<PackList, PackError> {
    // git's walk runs in its own process; meanwhile the object kinds and,
    // for a whole-repository walk, every blob's fingerprint are computed
    // here, since nearly every blob will be listed.
    let prefetch = opts.revs.is_empty() && opts.strategy.needs_fingerprints();
    let (walked, kinds, prefetched) = std::thread::scope(|s| {
        let walk = s.spawn(|| rev_list_objects(repo, opts.revs));
        let kinds = repo.all_blobs_and_trees();
        trace("pack list: object kinds and sizes");
        let prefetched = match &kinds {
            Ok((blobs, _)) if prefetch => {
                let ids: Vec<ObjectId> = blobs.iter().map(|(id, _)| *id).collect();
                Some(fingerprint_all(repo, store, &ids, opts.progress).map(|(e, n)| (ids, e, n)))
            }
            _ => None,
        };
        let walked = walk.join().unwrap_or_else(|_| {
            Err(PackError::Parse {
                command: "git rev-list".into(),
                line: "the thread reading it panicked".into(),
            })
        });
        (walked, kinds, prefetched)
    });
    let mut listed = walked?;
    let (all_blobs, all_trees) = kinds?;
    let prefetched = prefetched.transpose()?;
    trace("pack list: rev-list");
    if opts.keep_unreachable {
        let mut seen: Vec<ObjectId> = listed.iter().map(|l| l.id).collect();
        seen.sort_unstable();
        for id in repo.local_objects()? {
            if seen.binary_search(&id).is_err() {
                listed.push(Listed { id, name: None });
            }
        }
    }
    trace("pack list: unreachable objects");
    let kind_of = |id: &ObjectId| -> Option<(Kind, u64)> {
        let find = |list: &[(ObjectId, u64)]| {
            list.binary_search_by(|(o, _)| o.cmp(id))
                .ok()
                .map(|i| list[i].1)
        };
        find(&all_blobs)
            .map(|s| (Kind::Blob, s))
            .or_else(|| find(&all_trees).map(|s| (Kind::Tree, s)))
    };
    // rev-list lists each object once, so positions identify objects.
    let mut blob_pos = Vec::new();
    let mut tree_pos = Vec::new();
    let mut blobs = Vec::new();
    let mut trees = Vec::new();
    for (i, l) in listed.iter().enumerate() {
        let object = |size| Object {
            path: l.name.as_deref(),
            size,
        };
        match kind_of(&l.id) {
            Some((Kind::Blob, size)) => {
                blob_pos.push(i);
                blobs.push(object(size));
            }
            Some((Kind::Tree, size)) => {
                tree_pos.push(i);
                trees.push(object(size));
            }
            _ => {}
        }
    }
    if blobs.len().max(trees.len()) > pack_order::MAX_RANKS {
        return Err(PackError::TooManyObjects(blobs.len().max(trees.len())));
    }
    let mut computed = 0;
    let mut fingerprints = vec![None; blobs.len()];
    if let Some((ids, entries, n)) = prefetched {
        computed = n;
        for (slot, &p) in fingerprints.iter_mut().zip(&blob_pos) {
            if let Ok(i) = ids.binary_search(&listed[p].id) {
                *slot = entries[i].fingerprint;
            }
        }
    } else if opts.strategy.needs_fingerprints() {
        let ids: Vec<ObjectId> = blob_pos.iter().map(|&p| listed[p].id).collect();
        let (entries, n) = fingerprint_all(repo, store, &ids, opts.progress)?;
        computed = n;
        for (slot, e) in fingerprints.iter_mut().zip(entries) {
            *slot = e.fingerprint;
        }
    }
    trace("pack list: fingerprints");
    let mut names: Vec<Option<Vec<u8>>> = listed.iter().map(|l| l.name.clone()).collect();
    let blob_order = pack_order::order(&blobs, &|i| fingerprints[i], opts.strategy);
    let tree_order = pack_order::tree_order(&trees, opts.strategy);
    trace("pack list: order");
    for (order, pos) in [(&blob_order, &blob_pos), (&tree_order, &tree_pos)] {
        for (rank, &k) in order.iter().enumerate() {
            names[pos[k]] = Some(pack_order::crafted_name(rank).to_vec());
        }
    }
    // Blobs whose path is marked -delta keep their names, so pack-objects
    // still sees the attribute and leaves them whole.
    let mut paths: Vec<&[u8]> = blobs.iter().filter_map(|b| b.path).collect();
    paths.sort_unstable();
    paths.dedup();
    let no_delta = no_delta_paths(repo, &paths)?;
    if !no_delta.is_empty() {
        for &p in &blob_pos {
            if listed[p]
                .name
                .as_ref()
                .is_some_and(|n| no_delta.binary_search(n).is_ok())
            {
                names[p] = listed[p].name.clone();
            }
        }
    }
    trace("pack list: delta attributes");
    let mut input = Vec::with_capacity(listed.len() * 56);
    for (l, name) in listed.iter().zip(&names) {
        input.extend_from_slice(l.id.to_hex().to_string().as_bytes());
        if let Some(name) = name {
            input.push(b' ');
            input.extend_from_slice(name);
        }
        input.push(b'\n');
    }
    let mut objects: Vec<ObjectId> = listed.iter().map(|l| l.id).collect();
    objects.sort_unstable();
    objects.dedup();
    Ok(PackList {
        input,
        objects,
        blobs: blobs.len(),
        computed,
    })
}

/// Fingerprints of `ids` through the store, with progress; also how many
/// had to be computed.
fn fingerprint_all(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    progress: bool,
) -> Result<(Vec<crate::store::Entry>, usize), PackError> {
    let progress = if progress {
        Progress::new("Fingerprinting blobs", ids.len() as u64, false)
    } else {
        Progress::hidden()
    };
    let (entries, outcome) = compute::fingerprint_blobs(repo, store, ids, &progress)?;
    progress.finish();
    Ok((entries, outcome.computed))
}
