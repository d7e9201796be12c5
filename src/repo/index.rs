//! The index: its stage-0 entries (expanded from a sparse index), read in
//! place, and the conflicts of a merge.

use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

use super::{Entry, EntryKind, Repo, RepoError, walk_tree};

/// The index's entries as [`Repo::index_entries`] lists them, by position
/// ([`crate::repo::changes::Listing`]). Read in place from the index file: copying
/// each of 100,000 paths into an [`Entry`] (and freeing it) was a quarter
/// of the pre-commit check of an ordinary commit, which uses only a
/// handful of them whole.
#[derive(Clone, Debug)]
pub struct IndexEntries(pub(super) IndexRepr);

#[derive(Clone, Debug)]
pub(super) enum IndexRepr {
    /// The index file, and the positions and kinds of the entries listed.
    File {
        file: gix::index::File,
        listed: Vec<(usize, EntryKind)>,
    },
    /// Entries copied out: a sparse index, whose directories are expanded
    /// (the file is kept for its cache-tree), or no index at all.
    Owned {
        file: Option<gix::index::File>,
        entries: Vec<Entry>,
    },
}

impl Default for IndexEntries {
    fn default() -> Self {
        IndexEntries(IndexRepr::Owned {
            file: None,
            entries: Vec::new(),
        })
    }
}

impl IndexEntries {
    /// The index's cache-tree, if it has one.
    pub(super) fn cache_tree(&self) -> Option<&gix::index::extension::Tree> {
        match &self.0 {
            IndexRepr::File { file, .. } => file.tree(),
            IndexRepr::Owned { file, .. } => file.as_ref().and_then(|f| f.tree()),
        }
    }

    /// Whether the index is sparse (see [`Shortcut::exact_counts`](super::staged::Shortcut::exact_counts)).
    pub(super) fn is_sparse(&self) -> bool {
        match &self.0 {
            IndexRepr::File { file, .. } => file.is_sparse(),
            IndexRepr::Owned { file, .. } => file.as_ref().is_some_and(|f| f.is_sparse()),
        }
    }

    /// Every entry, copied out.
    pub fn to_vec(&self) -> Vec<Entry> {
        use crate::repo::changes::Listing;
        (0..self.len()).map(|i| self.entry(i)).collect()
    }
}

impl crate::repo::changes::Listing for IndexEntries {
    fn len(&self) -> usize {
        match &self.0 {
            IndexRepr::File { listed, .. } => listed.len(),
            IndexRepr::Owned { entries, .. } => entries.len(),
        }
    }
    fn path(&self, i: usize) -> &[u8] {
        match &self.0 {
            IndexRepr::File { file, listed } => file.entries()[listed[i].0].path(file),
            IndexRepr::Owned { entries, .. } => &entries[i].path,
        }
    }
    fn kind(&self, i: usize) -> EntryKind {
        match &self.0 {
            IndexRepr::File { listed, .. } => listed[i].1,
            IndexRepr::Owned { entries, .. } => entries[i].kind,
        }
    }
    fn id(&self, i: usize) -> ObjectId {
        match &self.0 {
            IndexRepr::File { file, listed } => file.entries()[listed[i].0].id,
            IndexRepr::Owned { entries, .. } => entries[i].id,
        }
    }
}

impl Repo {
    /// Stage-0 entries of the index in index order (which is path order).
    ///
    /// Conflicted entries (stages 1-3) are an error naming the first such
    /// path, like git's "you need to resolve your current index first".
    /// Intent-to-add entries (`git add -N`) are skipped: they have no blob
    /// yet. Sparse-index directory entries are expanded from their trees, so
    /// callers always see files. A repository without an index file (nothing
    /// added yet) has no entries.
    pub fn index_entries(&self) -> Result<Vec<Entry>, RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        for_each_index_entry(&repo, false, |entry, flags, _, _| {
            if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                out.push(entry);
            }
        })?;
        Ok(out)
    }

    /// Like [`Repo::index_entries`], but during a merge conflict: the
    /// stage-0 entries, and separately the paths in conflict (each once, in
    /// path order), which git's diff against the index reports as `U`
    /// (a copy source by its tree side's version only).
    pub fn index_entries_with_conflicts(&self) -> Result<(Vec<Entry>, Vec<Vec<u8>>), RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        let mut unmerged: Vec<Vec<u8>> = Vec::new();
        for_each_index_entry(&repo, true, |entry, flags, stage, _| {
            if stage != 0 {
                if unmerged.last() != Some(&entry.path) {
                    unmerged.push(entry.path);
                }
            } else if !flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                out.push(entry);
            }
        })?;
        Ok((out, unmerged))
    }
}

/// The index file, or `None` when there is none yet (nothing added).
///
/// Read without verifying its trailing checksum, as git reads it (only
/// `git fsck` verifies): the checksum guards against torn writes, which
/// writing `index.lock` and renaming it already rule out, and hashing a
/// large index costs as much as decoding it (5 ms of a 100,000-file
/// `check --staged`). An index damaged so that it does not decode (cut
/// short, say) is still an error; as in git, other damage goes unnoticed.
///
/// A bare repository has an index only if something wrote one, and git
/// reads it (or none: nothing staged) all the same: `git diff --cached`
/// there lists every file of `HEAD` as deleted.
pub(super) fn open_index(repo: &gix::Repository) -> Result<Option<gix::index::File>, RepoError> {
    let path = repo.index_path();
    // git's index.threads: true (the default) or 0 for as many as there are
    // cores, false or 1 for none.
    let config = repo.config_snapshot();
    let thread_limit = match config.integer("index.threads") {
        Some(n) if n > 0 => usize::try_from(n).ok(),
        Some(_) => None,
        None if config.boolean("index.threads") == Some(false) => Some(1),
        None => None,
    };
    let options = gix::index::decode::Options {
        thread_limit,
        ..Default::default()
    };
    match gix::index::File::at(&path, repo.object_hash(), true, options) {
        Ok(file) => Ok(Some(file)),
        Err(source)
            if source
                .downcast_any_ref::<gix::index::file::init::OpenError>()
                .is_some_and(|e| {
                    e.path == path && e.source.kind() == std::io::ErrorKind::NotFound
                }) =>
        {
            Ok(None)
        }
        Err(source) => Err(RepoError::Index { path, source }),
    }
}

/// Visit the stage-0 entries of the index with their flags, stage and
/// stat data, expanding sparse directory entries (which have no stat
/// data: theirs is zero); fail on the first conflicted path unless
/// `allow_unmerged`.
pub(super) fn for_each_index_entry(
    repo: &gix::Repository,
    allow_unmerged: bool,
    visit: impl FnMut(Entry, gix::index::entry::Flags, u32, &gix::index::entry::Stat),
) -> Result<(), RepoError> {
    match open_index(repo)? {
        Some(index) => visit_index_entries(repo, &index, allow_unmerged, visit),
        None => Ok(()),
    }
}

/// [`for_each_index_entry`] on an index already open.
pub(super) fn visit_index_entries(
    repo: &gix::Repository,
    index: &gix::index::File,
    allow_unmerged: bool,
    mut visit: impl FnMut(Entry, gix::index::entry::Flags, u32, &gix::index::entry::Stat),
) -> Result<(), RepoError> {
    let no_stat = gix::index::entry::Stat::default();
    for entry in index.entries() {
        let path: &BStr = entry.path(index);
        let stage = entry.stage_raw();
        if stage != 0 && !allow_unmerged {
            return Err(RepoError::Unmerged {
                path: path.to_owned(),
            });
        }
        match EntryKind::from_index_mode(entry.mode) {
            Some(kind) => visit(
                Entry {
                    path: path.to_vec(),
                    kind,
                    id: entry.id,
                },
                entry.flags,
                stage,
                &entry.stat,
            ),
            None if entry.mode.is_sparse() => {
                let mut expanded = Vec::new();
                let prefix = path.trim_end_with(|c| c == '/');
                let mut prefix = prefix.to_vec();
                prefix.push(b'/');
                walk_tree(&repo.objects, entry.id, &prefix, &mut expanded)?;
                for e in expanded {
                    // Everything under a sparse directory is outside the
                    // sparse checkout, hence skip-worktree.
                    visit(
                        e,
                        entry.flags | gix::index::entry::Flags::SKIP_WORKTREE,
                        stage,
                        &no_stat,
                    );
                }
            }
            None => {}
        }
    }
    Ok(())
}
