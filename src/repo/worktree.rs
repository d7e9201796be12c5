//! The work tree as git's diff sees it: every tracked path's current
//! content, read in parallel without leaving the work tree.

use std::path::Path;

use gix::bstr::ByteSlice;
use rayon::prelude::*;

use super::{Entry, EntryKind, ReaderPool, Repo, RepoError, for_each_index_entry};

impl Repo {
    /// The work tree version of each index path, with its contents.
    ///
    /// See [`Repo::map_worktree`] for which paths are reported and how; this
    /// is `map_worktree` keeping the contents, which is convenient but holds
    /// the whole work tree in memory. Prefer `map_worktree` for big trees.
    pub fn worktree_entries(&self) -> Result<Vec<(Entry, Vec<u8>)>, RepoError> {
        self.worktree_impl(|_, data| data)
    }

    /// Read the work tree version of each index path in parallel and map it
    /// with `f(entry, contents)`, returning the results in index order.
    ///
    /// * The file's bytes are read from disk; for a symlink its target
    ///   (as git stores it). They are hashed as a git blob *without* clean
    ///   filters or end-of-line conversion (a deliberate deviation from
    ///   `git add`, see the module documentation).
    /// * The kind comes from the disk (executable bit, symlink) unless
    ///   `core.fileMode` / `core.symlinks` say the file system cannot be
    ///   trusted, in which case the index mode is kept, as git does.
    /// * Paths deleted from disk (or replaced by a directory) are skipped.
    /// * Submodules keep the index's commit id, as long as their directory
    ///   exists (populated or not); their contents are not read and `f`
    ///   sees an empty slice.
    /// * `skip-worktree` entries (sparse checkout) are taken from the index:
    ///   git treats them as unchanged, so their blob is read from the object
    ///   database.
    /// * Intent-to-add entries *are* reported: the file exists in the work
    ///   tree even though the index has no content for it yet.
    pub fn map_worktree<T: Send>(
        &self,
        f: impl Fn(&Entry, &[u8]) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        self.worktree_impl(|entry, data| f(entry, &data))
    }

    fn worktree_impl<T: Send>(
        &self,
        f: impl Fn(&Entry, Vec<u8>) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        let work_dir = self.work_dir().ok_or(RepoError::NoWorkTree)?;
        let repo = self.local();
        let config = repo.config_snapshot();
        let trust_exec = config.boolean("core.fileMode").unwrap_or(cfg!(unix));
        let trust_symlinks = config.boolean("core.symlinks").unwrap_or(cfg!(unix));
        let mut entries: Vec<(Entry, bool)> = Vec::new();
        // A path in conflict has up to three stages; its work-tree file is
        // one file, compared like any other (git's diff against the work
        // tree does the same), with the mode of "ours" where there is one.
        for_each_index_entry(self, &repo, true, |entry, flags, stage| {
            if stage != 0
                && let Some((last, _)) = entries.last_mut()
                && last.path == entry.path
            {
                if stage == 2 {
                    last.kind = entry.kind;
                }
                return;
            }
            entries.push((
                entry,
                flags.contains(gix::index::entry::Flags::SKIP_WORKTREE),
            ));
        })?;
        drop(repo);
        let dirs = real_dirs(work_dir, entries.iter().map(|(e, _)| e.path.as_slice()));
        let hash = self.object_hash();
        let readers = ReaderPool::new(self);
        let results = entries
            .into_par_iter()
            .map(|(mut entry, skip_worktree)| {
                if skip_worktree {
                    let data = match entry.kind {
                        EntryKind::Submodule => Vec::new(),
                        _ => readers.with(|reader| reader.blob(&entry.id))?,
                    };
                    let value = f(&entry, data);
                    return Ok(Some((entry, value)));
                }
                let parent = entry
                    .path
                    .rsplit_once_str(b"/")
                    .map_or(&b""[..], |(dir, _)| dir);
                if dirs.get(parent) != Some(&true) {
                    return Ok(None);
                }
                if entry.kind == EntryKind::Submodule {
                    // Present means a directory, populated or not; what is
                    // checked out inside is the submodule's business.
                    if !submodule_present(work_dir, &entry)? {
                        return Ok(None);
                    }
                    let value = f(&entry, Vec::new());
                    return Ok(Some((entry, value)));
                }
                let Some(data) =
                    read_worktree_file(work_dir, &mut entry, trust_exec, trust_symlinks)?
                else {
                    return Ok(None);
                };
                entry.id = gix::objs::compute_hash(hash, gix::object::Kind::Blob, &data).map_err(
                    |source| RepoError::Hash {
                        path: entry.path.clone().into(),
                        source,
                    },
                )?;
                let value = f(&entry, data);
                Ok(Some((entry, value)))
            })
            .collect::<Result<Vec<_>, RepoError>>()?;
        Ok(results.into_iter().flatten().collect())
    }
}

/// For every parent directory of `paths`: is it a real directory in the
/// work tree, reached without following a symlink, like git's
/// `has_symlink_leading_path`: a file under a directory that became a
/// symlink (or a file) is gone from the work tree, and reading through the
/// link could leave the work tree altogether. Paths with `..` or other
/// unsafe components never get a real directory.
///
/// Each directory is checked once, sequentially; there are far fewer
/// directories than files.
fn real_dirs<'p>(
    work_dir: &Path,
    paths: impl Iterator<Item = &'p [u8]>,
) -> std::collections::HashMap<Vec<u8>, bool> {
    let mut checked = std::collections::HashMap::new();
    checked.insert(Vec::new(), true);
    for path in paths {
        let Some((parent, _)) = path.rsplit_once_str(b"/") else {
            continue;
        };
        if checked.contains_key(parent) {
            continue;
        }
        // Walk down from the top so every prefix is decided before its
        // children.
        let mut end = 0;
        while end < parent.len() {
            end = parent[end..]
                .find_byte(b'/')
                .map_or(parent.len(), |i| end + i);
            let dir = &parent[..end];
            if !checked.contains_key(dir) {
                let (up, name) = dir.rsplit_once_str(b"/").unwrap_or((b"", dir));
                let ok = checked.get(up).copied().unwrap_or(false)
                    && !matches!(name, b"" | b"." | b".." | b".git")
                    && gix::path::from_byte_slice(dir)
                        .ok()
                        .and_then(|rel| std::fs::symlink_metadata(work_dir.join(rel)).ok())
                        .is_some_and(|m| m.file_type().is_dir());
                checked.insert(dir.to_vec(), ok);
            }
            end += 1;
        }
    }
    checked
}

/// Whether a submodule's directory exists, which is all git asks before
/// calling a gitlink deleted.
fn submodule_present(work_dir: &Path, entry: &Entry) -> Result<bool, RepoError> {
    let rel = gix::path::from_byte_slice(&entry.path).map_err(|_| RepoError::BadPath {
        path: entry.path.clone().into(),
    })?;
    match std::fs::symlink_metadata(work_dir.join(rel)) {
        Ok(meta) => Ok(meta.is_dir()),
        Err(e) if is_gone(&e) => Ok(false),
        Err(source) => Err(RepoError::WorkTreeFile {
            path: entry.path.clone().into(),
            source,
        }),
    }
}

/// Read one work tree file for `entry`, updating its kind from the disk.
/// `Ok(None)` means the path is gone from the work tree.
fn read_worktree_file(
    work_dir: &Path,
    entry: &mut Entry,
    trust_exec: bool,
    trust_symlinks: bool,
) -> Result<Option<Vec<u8>>, RepoError> {
    let name = entry
        .path
        .rsplit_once_str(b"/")
        .map_or(&entry.path[..], |(_, name)| name);
    if matches!(name, b"" | b"." | b".." | b".git") || entry.path.starts_with(b"/") {
        return Err(RepoError::BadPath {
            path: entry.path.clone().into(),
        });
    }
    let rel = gix::path::from_byte_slice(&entry.path).map_err(|_| RepoError::BadPath {
        path: entry.path.clone().into(),
    })?;
    let full = work_dir.join(rel);
    let io_err = |source: std::io::Error| RepoError::WorkTreeFile {
        path: entry.path.clone().into(),
        source,
    };
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        let target = match std::fs::read_link(&full) {
            Ok(target) => target,
            Err(e) if is_gone(&e) => return Ok(None),
            Err(e) => return Err(io_err(e)),
        };
        entry.kind = EntryKind::Symlink;
        let bytes = gix::path::into_bstr(target).map_err(|_| RepoError::BadPath {
            path: entry.path.clone().into(),
        })?;
        return Ok(Some(bytes.into_owned().into()));
    }
    if !file_type.is_file() {
        // A directory where a file was: git reports the file as deleted.
        return Ok(None);
    }
    let data = match std::fs::read(&full) {
        Ok(data) => data,
        Err(e) if is_gone(&e) => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    // Without trustworthy symlinks git checks links out as plain files
    // holding the target, so the index mode is the truth.
    if entry.kind != EntryKind::Symlink || trust_symlinks {
        entry.kind = if trust_exec {
            if is_executable(&meta) {
                EntryKind::Executable
            } else {
                EntryKind::Regular
            }
        } else if entry.kind == EntryKind::Executable {
            EntryKind::Executable
        } else {
            EntryKind::Regular
        };
    }
    Ok(Some(data))
}

fn is_gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o100 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}
