//! What git-simm asks of git's own packing machinery: the list of objects to
//! pack (`git rev-list --objects`), the `delta` attribute of paths, and the
//! input for `git pack-objects` with the blobs renamed into similarity order.
//!
//! git is run as a subprocess, not reimplemented: the object walk must be
//! exactly the one `git repack` does (reflogs, the index of every worktree,
//! the same tree and commit order), and pack writing is git's job. What
//! git-simm changes is only the names blobs are listed under
//! ([`crate::pack::order`]).

use std::ffi::OsString;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::object::Kind;

use super::PackError;
use super::git::{describe, git, run};
use crate::pack::order::{Object, Strategy};
use crate::progress::Feedback;
use crate::repo::Repo;
use crate::similarity::compute;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::store::Store;

/// One object as `git rev-list --objects` listed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The object.
    pub id: ObjectId,
    /// The path it was reached by (empty for a root tree), `None` for
    /// commits and tags.
    pub name: Option<Vec<u8>>,
}

/// The objects `git rev-list --objects <revs>` lists, in its order. With no
/// `revs`, what `git repack -a` packs: every ref, the reflogs and the
/// objects of every worktree's index. `feedback`'s flag stops git.
pub fn rev_list_objects(
    repo: &Repo,
    revs: &[OsString],
    feedback: &Feedback,
) -> Result<Vec<Listed>, PackError> {
    let mut cmd = git(repo);
    cmd.args(["rev-list", "--objects"]);
    if revs.is_empty() {
        cmd.args(["--all", "--reflog", "--indexed-objects"]);
        if repo.is_partial() {
            // What `git repack -a` packs in a partial clone: the objects
            // the promisor remote did not send (promisor packs stay as
            // they are).
            cmd.arg("--exclude-promisor-objects");
        }
    } else {
        cmd.args(revs);
        let chosen = revs.iter().any(|r| {
            let r = r.to_string_lossy();
            r.starts_with("--missing") || r == "--exclude-promisor-objects"
        });
        if repo.is_partial() && !chosen {
            // The objects that are there; those the promisor remote
            // keeps are skipped, not fetched.
            cmd.arg("--missing=allow-promisor");
        }
    }
    let command = describe(&cmd);
    let stdout = run(cmd, None, feedback).map_err(|e| match e {
        // The user's revisions: git's verdict on them, in its words.
        PackError::Git { said, .. } if !revs.is_empty() => PackError::Refused { message: said },
        e => e,
    })?;
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
/// `feedback`'s flag stops git.
pub fn no_delta_paths(
    repo: &Repo,
    paths: &[&[u8]],
    feedback: &Feedback,
) -> Result<Vec<Vec<u8>>, PackError> {
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
    let out = run(cmd, Some(&input), feedback)?;
    // -z output: path NUL attribute NUL value NUL, one triple per path.
    let fields: Vec<&[u8]> = out.split(|&b| b == 0).collect();
    Ok(fields
        .chunks_exact(3)
        .filter(|t| t[2] == b"unset")
        .map(|t| t[0].to_vec())
        .collect())
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
    /// Every object in rev-list order (then unreachable ones), with what
    /// a writer choosing its own delta bases needs to know of it.
    pub listed: Vec<ListedObject>,
}

/// One object of a [`PackList`], for a writer that chooses delta bases
/// itself ([`crate::pack::bases`]).
#[derive(Clone, Debug)]
pub struct ListedObject {
    /// The object.
    pub id: ObjectId,
    /// Blob or tree when known from the pack headers; `None` for commits
    /// and tags (their kind is read with their content).
    pub kind: Option<Kind>,
    /// Size in bytes (0 when `kind` is `None`).
    pub size: u64,
    /// The path it was listed under.
    pub name: Option<Vec<u8>>,
    /// Its path is marked `-delta`: it must be written whole.
    pub no_delta: bool,
    /// Its fingerprint (blobs, when computed).
    pub fingerprint: Option<crate::similarity::fingerprint::Fingerprint>,
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
}

/// Build the pack-objects input: every object of the walk in rev-list
/// order (then unreachable ones, if asked), blobs and trees named into the
/// order of `opts.strategy`, commits and tags under the names git gives
/// them.
///
/// `feedback` sees the fingerprinting of blobs (the stage
/// [`compute::STAGE`]) and the end of each step; once its flag is set,
/// the work stops with [`PackError::Interrupted`] (git's walk included).
pub fn pack_list(
    repo: &Repo,
    store: &mut Store,
    opts: &ListOptions,
    feedback: &Feedback,
) -> Result<PackList, PackError> {
    let (mut listed, all_blobs, all_trees, prefetched) = walk(repo, store, opts, feedback)?;
    feedback.trace("pack list: rev-list");
    feedback.check()?;
    if opts.keep_unreachable {
        let mut seen: Vec<ObjectId> = listed.iter().map(|l| l.id).collect();
        // Promisor packs stay as they are (see `rev_list_objects`).
        seen.extend(repo.promisor_pack_objects()?);
        seen.sort_unstable();
        for id in repo.local_objects()? {
            if seen.binary_search(&id).is_err() {
                listed.push(Listed { id, name: None });
            }
        }
    }
    feedback.trace("pack list: unreachable objects");
    feedback.check()?;
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
    if blobs.len().max(trees.len()) > crate::pack::order::MAX_RANKS {
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
        let (entries, n) = fingerprint_all(repo, store, &ids, feedback)?;
        computed = n;
        for (slot, e) in fingerprints.iter_mut().zip(entries) {
            *slot = e.fingerprint;
        }
    }
    feedback.trace("pack list: fingerprints");
    feedback.check()?;
    let mut names: Vec<Option<Vec<u8>>> = listed.iter().map(|l| l.name.clone()).collect();
    let blob_order = crate::pack::order::order(&blobs, &|i| fingerprints[i], opts.strategy);
    let tree_order = crate::pack::order::tree_order(&trees, opts.strategy);
    feedback.trace("pack list: order");
    feedback.check()?;
    for (order, pos) in [(&blob_order, &blob_pos), (&tree_order, &tree_pos)] {
        for (rank, &k) in order.iter().enumerate() {
            names[pos[k]] = Some(crate::pack::order::crafted_name(rank).to_vec());
        }
    }
    let (input, no_delta) = pack_input(repo, &listed, names, &blobs, &blob_pos, feedback)?;
    let mut entries: Vec<ListedObject> = listed
        .iter()
        .map(|l| {
            let (kind, size) = kind_of(&l.id).map_or((None, 0), |(k, s)| (Some(k), s));
            ListedObject {
                id: l.id,
                kind,
                size,
                name: l.name.clone(),
                no_delta: kind == Some(Kind::Blob)
                    && l.name
                        .as_ref()
                        .is_some_and(|n| no_delta.binary_search(n).is_ok()),
                fingerprint: None,
            }
        })
        .collect();
    for (k, &p) in blob_pos.iter().enumerate() {
        entries[p].fingerprint = fingerprints[k];
    }
    let mut objects: Vec<ObjectId> = listed.iter().map(|l| l.id).collect();
    objects.sort_unstable();
    objects.dedup();
    Ok(PackList {
        input,
        objects,
        blobs: blobs.len(),
        computed,
        listed: entries,
    })
}

/// What [`walk`] found: the objects git's walk listed, every blob and tree
/// with its size (sorted by id), and the fingerprints of all blobs when
/// they were computed during the walk (ids, sketches, how many computed).
type Walked = (
    Vec<Listed>,
    Vec<(ObjectId, u64)>,
    Vec<(ObjectId, u64)>,
    Option<(Vec<ObjectId>, Vec<Sketch>, usize)>,
);

/// Run git's walk and, meanwhile, find every object's kind and size and,
/// for a whole-repository walk, every blob's fingerprint, since nearly
/// every blob will be listed.
fn walk(
    repo: &Repo,
    store: &mut Store,
    opts: &ListOptions,
    feedback: &Feedback,
) -> Result<Walked, PackError> {
    // git's walk runs in its own process; meanwhile the object kinds and,
    // for a whole-repository walk, every blob's fingerprint are computed
    // here, since nearly every blob will be listed.
    // Not in a partial clone: most blobs there are in promisor packs,
    // which are not packed again.
    let prefetch = opts.revs.is_empty() && opts.strategy.needs_fingerprints() && !repo.is_partial();
    let (walked, kinds, prefetched) = std::thread::scope(|s| {
        let walk = s.spawn(|| rev_list_objects(repo, opts.revs, feedback));
        let kinds = repo.all_blobs_and_trees();
        feedback.trace("pack list: object kinds and sizes");
        let prefetched = match &kinds {
            Ok((blobs, _)) if prefetch => {
                let ids: Vec<ObjectId> = blobs.iter().map(|(id, _)| *id).collect();
                Some(fingerprint_all(repo, store, &ids, feedback).map(|(e, n)| (ids, e, n)))
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
    let listed = walked?;
    let (all_blobs, all_trees) = kinds?;
    let prefetched = prefetched.transpose()?;
    Ok((listed, all_blobs, all_trees, prefetched))
}

/// The text pack-objects reads: `<id> <name>` per object, with the crafted
/// `names`, except that blobs whose path is marked `-delta` keep their
/// real names, so pack-objects still sees the attribute and leaves them
/// whole.
fn pack_input(
    repo: &Repo,
    listed: &[Listed],
    mut names: Vec<Option<Vec<u8>>>,
    blobs: &[Object],
    blob_pos: &[usize],
    feedback: &Feedback,
) -> Result<(Vec<u8>, Vec<Vec<u8>>), PackError> {
    let mut paths: Vec<&[u8]> = blobs.iter().filter_map(|b| b.path).collect();
    paths.sort_unstable();
    paths.dedup();
    let no_delta = no_delta_paths(repo, &paths, feedback)?;
    if !no_delta.is_empty() {
        for &p in blob_pos {
            if listed[p]
                .name
                .as_ref()
                .is_some_and(|n| no_delta.binary_search(n).is_ok())
            {
                names[p] = listed[p].name.clone();
            }
        }
    }
    feedback.trace("pack list: delta attributes");
    let mut input = Vec::with_capacity(listed.len() * 56);
    for (l, name) in listed.iter().zip(&names) {
        input.extend_from_slice(l.id.to_hex().to_string().as_bytes());
        if let Some(name) = name {
            input.push(b' ');
            input.extend_from_slice(name);
        }
        input.push(b'\n');
    }
    Ok((input, no_delta))
}

/// Fingerprints of `ids` through the store, with progress; also how many
/// had to be computed.
fn fingerprint_all(
    repo: &Repo,
    store: &mut Store,
    ids: &[ObjectId],
    feedback: &Feedback,
) -> Result<(Vec<crate::similarity::fingerprint::Sketch>, usize), PackError> {
    let (entries, outcome) =
        compute::fingerprint_blobs(repo, store, ids, feedback).map_err(|e| match e {
            compute::ComputeError::Interrupted(i) => PackError::Interrupted(i),
            e => e.into(),
        })?;
    Ok((entries, outcome.computed))
}
