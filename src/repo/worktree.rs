//! The work tree as git's diff sees it: every tracked path's current
//! content, read in parallel without leaving the work tree.

use std::path::Path;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use rayon::prelude::*;

use super::clean::Cleaner;
use super::{Entry, EntryKind, ReaderPool, Repo, RepoError};

/// What git's diff sees of one tracked path in the work tree, besides its
/// entry ([`Repo::map_worktree`]).
#[derive(Clone, Copy, Debug)]
pub struct WorktreeRead<'a> {
    /// The file's content as git stores it (read from the work tree and
    /// through git's clean conversions; a symlink's target for a
    /// symlink); `None` where git takes the index's blob without reading
    /// the file, and for submodules, whose contents are never read.
    pub data: Option<&'a [u8]>,
    /// Whether git's diff counts the entry as up to date: skip-worktree
    /// and assume-unchanged entries, and files whose stat data match the
    /// index's (`ie_match_stat`, racily clean ones compared by content).
    /// git's diff compares an entry that is not up to date by content and
    /// drops it when that equals the other side (`diffcore_skip_stat_unmatch`),
    /// so such a path is no copy source for `--find-copies-harder` even
    /// when it did not change. A path in conflict, or added with
    /// `--intent-to-add`, never is.
    pub fresh: bool,
}

/// How an index entry is compared with its file, as git's diff does.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// skip-worktree or assume-unchanged: the index's blob, the file
    /// unread (`do_oneway_diff` takes them as cached).
    Index,
    /// By stat data first (`ie_match_stat`).
    Stat(gix::index::entry::Stat),
    /// In conflict or intent-to-add: never up to date, always read.
    /// `ours`: the blob `text=auto` looks at for CRs, as git's
    /// `has_crlf_in_index()` takes it (stage 2 of a conflict, the entry's
    /// own otherwise).
    Dirty { ours: Option<ObjectId> },
}

/// The configuration `ie_match_stat` reads, and the index's timestamp.
#[derive(Clone, Copy, Debug)]
struct StatRules {
    trust_exec: bool,
    trust_symlinks: bool,
    trust_ctime: bool,
    check_stat: bool,
    /// Seconds of the index file's mtime (0: unknown, nothing is racy).
    index_secs: u32,
}

impl Repo {
    /// The work tree version of each index path, with its contents.
    ///
    /// See [`Repo::map_worktree`] for which paths are reported and how; this
    /// is `map_worktree` keeping the contents, which is convenient but holds
    /// the whole work tree in memory. Every file is read here, those git
    /// would trust the index for included, and skip-worktree entries are
    /// read from the object database. Prefer `map_worktree` for big trees.
    pub fn worktree_entries(&self) -> Result<Vec<(Entry, Vec<u8>)>, RepoError> {
        self.worktree_impl(true, None, |_, read| {
            read.data.map(<[u8]>::to_vec).unwrap_or_default()
        })
    }

    /// The work tree as git's diff sees it, in parallel: `f(entry, read)`
    /// for each index path, the results in index order.
    ///
    /// * A file is read, converted as git would store it (clean filters,
    ///   `working-tree-encoding`, end-of-line conversion and `ident`, by
    ///   gix's filter pipeline, the attributes from `attr_tree` when given:
    ///   see [`Repo::cleaner`]) and hashed as a git blob, unless git would not
    ///   read it: a file whose stat data match the index's (and is not
    ///   racily clean)
    ///   keeps the index's id and kind and is not read, as are
    ///   skip-worktree (sparse checkout) and assume-unchanged entries,
    ///   whose blob may well be missing from a partial clone
    ///   ([`WorktreeRead::data`] is `None` for them).
    /// * The kind comes from the disk (executable bit, symlink) unless
    ///   `core.fileMode` / `core.symlinks` say the file system cannot be
    ///   trusted, in which case the index mode is kept, as git does.
    /// * Paths deleted from disk (or replaced by a directory) are skipped;
    ///   skip-worktree and assume-unchanged ones are not looked for.
    /// * Submodules keep the index's commit id, as long as their directory
    ///   exists (populated or not); their contents are not read.
    /// * Intent-to-add entries *are* reported: the file exists in the work
    ///   tree even though the index has no content for it yet.
    /// * A path in conflict is one file, compared like any other with the
    ///   mode of "ours" where there is one, and never up to date
    ///   ([`WorktreeRead::fresh`]).
    pub fn map_worktree<T: Send>(
        &self,
        attr_tree: Option<ObjectId>,
        f: impl Fn(&Entry, WorktreeRead<'_>) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        self.worktree_impl(false, attr_tree, f)
    }

    /// [`Repo::map_worktree`]; with `read_all`, every file is read (and
    /// hashed), skip-worktree entries from the object database.
    fn worktree_impl<T: Send>(
        &self,
        read_all: bool,
        attr_tree: Option<ObjectId>,
        f: impl Fn(&Entry, WorktreeRead<'_>) -> T + Sync + Send,
    ) -> Result<Vec<(Entry, T)>, RepoError> {
        use gix::index::entry::Flags;
        let work_dir = self.work_dir().ok_or(RepoError::NoWorkTree)?;
        let repo = self.local();
        let config = repo.config_snapshot();
        let mut rules = StatRules {
            trust_exec: config.boolean("core.fileMode").unwrap_or(cfg!(unix)),
            trust_symlinks: config.boolean("core.symlinks").unwrap_or(cfg!(unix)),
            trust_ctime: config.boolean("core.trustctime").unwrap_or(true),
            check_stat: !config
                .string("core.checkStat")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"minimal")),
            index_secs: 0,
        };
        let mut entries: Vec<(Entry, Check)> = Vec::new();
        let index = super::open_index(&repo)?;
        if let Some(index) = &index {
            rules.index_secs = u32::try_from(index.timestamp().unix_seconds()).unwrap_or(0);
            // A path in conflict has up to three stages; its work-tree
            // file is one file.
            super::visit_index_entries(&repo, index, true, |entry, flags, stage, stat| {
                if stage != 0
                    && let Some((last, check)) = entries.last_mut()
                    && last.path == entry.path
                {
                    if stage == 2 {
                        last.kind = entry.kind;
                        *check = Check::Dirty {
                            ours: Some(entry.id),
                        };
                    }
                    return;
                }
                // In `ie_match_stat`'s order: skip-worktree and
                // assume-unchanged before intent-to-add.
                let check = if stage != 0 {
                    Check::Dirty {
                        ours: (stage == 2).then_some(entry.id),
                    }
                } else if flags.intersects(Flags::SKIP_WORKTREE | Flags::ASSUME_VALID) {
                    Check::Index
                } else if flags.contains(Flags::INTENT_TO_ADD) {
                    Check::Dirty {
                        ours: Some(entry.id),
                    }
                } else {
                    Check::Stat(*stat)
                };
                entries.push((entry, check));
            })?;
        }
        drop(repo);
        let index = match index {
            Some(file) => file.into_parts().0,
            None => gix::index::State::new(self.object_hash()),
        };
        let dirs = real_dirs(work_dir, entries.iter().map(|(e, _)| e.path.as_slice()));
        let look = Look {
            work_dir,
            dirs: &dirs,
            rules,
            hash: self.object_hash(),
            readers: &ReaderPool::new(self),
            cleaner: &Cleaner::new(self, index, attr_tree),
            read_all,
        };
        let results = entries
            .into_par_iter()
            .map(|(mut entry, check)| {
                Ok(look.at(&mut entry, check)?.map(|found| {
                    let read = WorktreeRead {
                        data: found.data.as_deref(),
                        fresh: found.fresh,
                    };
                    let value = f(&entry, read);
                    (entry, value)
                }))
            })
            .collect::<Result<Vec<_>, RepoError>>()?;
        Ok(results.into_iter().flatten().collect())
    }
}

/// What [`Look::at`] found of one entry.
struct Found {
    data: Option<Vec<u8>>,
    fresh: bool,
}

/// What looking at work-tree files needs, shared by the threads.
struct Look<'a> {
    work_dir: &'a Path,
    /// [`real_dirs`] of every entry.
    dirs: &'a std::collections::HashMap<Vec<u8>, bool>,
    rules: StatRules,
    hash: gix::hash::Kind,
    readers: &'a ReaderPool<'a>,
    cleaner: &'a Cleaner<'a>,
    read_all: bool,
}

impl Look<'_> {
    /// One index entry in the work tree, `entry` updated to what git's
    /// diff sees (id and kind of the file where it reads it); `None` when
    /// the file is gone.
    fn at(&self, entry: &mut Entry, check: Check) -> Result<Option<Found>, RepoError> {
        let unread = |fresh| Ok(Some(Found { data: None, fresh }));
        if let Check::Index = check {
            if !self.read_all || entry.kind == EntryKind::Submodule {
                return unread(true);
            }
            let data = self.readers.with(|reader| reader.blob(&entry.id))?;
            return Ok(Some(Found {
                data: Some(data),
                fresh: true,
            }));
        }
        let parent = entry
            .path
            .rsplit_once_str(b"/")
            .map_or(&b""[..], |(dir, _)| dir);
        if self.dirs.get(parent) != Some(&true) {
            return Ok(None);
        }
        if entry.kind == EntryKind::Submodule {
            // Present means a directory, populated or not; what is
            // checked out inside is the submodule's business.
            if !submodule_present(self.work_dir, entry)? {
                return Ok(None);
            }
            return unread(true);
        }
        let Some(meta) = worktree_metadata(self.work_dir, entry)? else {
            return Ok(None);
        };
        let (stat_clean, racy) = match check {
            Check::Stat(stat) => (
                !stat_changed(entry, &stat, &meta, &self.rules),
                self.rules.index_secs != 0 && self.rules.index_secs <= stat.mtime.secs,
            ),
            _ => (false, false),
        };
        if stat_clean && !racy && !self.read_all {
            return unread(true);
        }
        let index_id = entry.id;
        let Some(mut data) = read_worktree_file(self.work_dir, entry, &meta, &self.rules)? else {
            return Ok(None);
        };
        // git converts files, never the target a symlink holds; a link
        // checked out as a file (`core.symlinks=false`) is a file to it.
        if meta.file_type().is_file() {
            let index_blob = match check {
                Check::Stat(_) => Some(index_id),
                Check::Dirty { ours } => ours,
                Check::Index => None,
            };
            data = self.cleaner.clean(&entry.path, index_blob, data)?;
        }
        entry.id = gix::objs::compute_hash(self.hash, gix::object::Kind::Blob, &data).map_err(
            |source| RepoError::Hash {
                path: entry.path.clone().into(),
                source,
            },
        )?;
        // Racily clean: git compares the content (`ce_modified_check_fs`).
        let fresh = stat_clean && (!racy || entry.id == index_id);
        Ok(Some(Found {
            data: Some(data),
            fresh,
        }))
    }
}

/// Whether `ie_match_stat` (read-cache.c, `ce_match_stat_basic` and
/// `match_stat_data`) finds the file changed from the index entry's stat
/// data, before the racy-git check: its type, its executable bit (where
/// trusted), mtime, ctime (with `core.trustctime`), owner and inode (unless
/// `core.checkStat=minimal`) and size, and an entry whose recorded size
/// is 0 for a blob that is not empty (smudged when the index was written
/// racily). Seconds only, as git built without `USE_NSEC` compares them.
#[cfg(unix)]
fn stat_changed(
    entry: &Entry,
    stat: &gix::index::entry::Stat,
    meta: &std::fs::Metadata,
    rules: &StatRules,
) -> bool {
    use std::os::unix::fs::MetadataExt;
    let file_type = meta.file_type();
    let type_changed = match entry.kind {
        EntryKind::Regular | EntryKind::Executable => {
            !file_type.is_file()
                || (rules.trust_exec
                    && is_executable(meta) != (entry.kind == EntryKind::Executable))
        }
        EntryKind::Symlink => {
            !file_type.is_symlink() && (rules.trust_symlinks || !file_type.is_file())
        }
        EntryKind::Submodule => !file_type.is_dir(),
    };
    // git keeps the low 32 bits of each (`unsigned int` fields).
    let low = |v: i64| v as u32;
    type_changed
        || stat.mtime.secs != low(meta.mtime())
        || (rules.trust_ctime && rules.check_stat && stat.ctime.secs != low(meta.ctime()))
        || (rules.check_stat
            && (stat.uid != meta.uid() || stat.gid != meta.gid() || stat.ino != meta.ino() as u32))
        || stat.size != meta.size() as u32
        || (stat.size == 0 && !entry.id.is_empty_blob())
}

/// Without unix stat data every file is compared by content.
#[cfg(not(unix))]
fn stat_changed(
    _entry: &Entry,
    _stat: &gix::index::entry::Stat,
    _meta: &std::fs::Metadata,
    _rules: &StatRules,
) -> bool {
    true
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

/// The file of `entry` as `lstat` sees it; `None` when the path is gone
/// from the work tree.
fn worktree_metadata(
    work_dir: &Path,
    entry: &Entry,
) -> Result<Option<std::fs::Metadata>, RepoError> {
    let name = entry
        .path
        .rsplit_once_str(b"/")
        .map_or(&entry.path[..], |(_, name)| name);
    if matches!(name, b"" | b"." | b".." | b".git") || entry.path.starts_with(b"/") {
        return Err(RepoError::BadPath {
            path: entry.path.clone().into(),
        });
    }
    match std::fs::symlink_metadata(worktree_path(work_dir, entry)?) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if is_gone(&e) => Ok(None),
        Err(source) => Err(RepoError::WorkTreeFile {
            path: entry.path.clone().into(),
            source,
        }),
    }
}

fn worktree_path(work_dir: &Path, entry: &Entry) -> Result<std::path::PathBuf, RepoError> {
    let rel = gix::path::from_byte_slice(&entry.path).map_err(|_| RepoError::BadPath {
        path: entry.path.clone().into(),
    })?;
    Ok(work_dir.join(rel))
}

/// Read one work tree file for `entry` (`meta` is its `lstat`), updating
/// its kind from the disk. `Ok(None)` means the path is gone from the
/// work tree.
fn read_worktree_file(
    work_dir: &Path,
    entry: &mut Entry,
    meta: &std::fs::Metadata,
    rules: &StatRules,
) -> Result<Option<Vec<u8>>, RepoError> {
    let full = worktree_path(work_dir, entry)?;
    let io_err = |source: std::io::Error| RepoError::WorkTreeFile {
        path: entry.path.clone().into(),
        source,
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
    if entry.kind != EntryKind::Symlink || rules.trust_symlinks {
        entry.kind = if rules.trust_exec {
            if is_executable(meta) {
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
