//! One file of a tree, the index or the work tree: the type every
//! comparison in git-simm works on.

use gix::ObjectId;

/// What a tree, index or work tree entry is, as git's file modes tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (mode 100644).
    Regular,
    /// An executable file (mode 100755).
    Executable,
    /// A symbolic link (mode 120000); its blob holds the link target.
    Symlink,
    /// A submodule (gitlink, mode 160000); its id is a commit of another repository.
    Submodule,
}

impl EntryKind {
    pub(super) fn from_tree_mode(mode: gix::objs::tree::EntryMode) -> Option<Self> {
        use gix::objs::tree::EntryKind as K;
        match mode.kind() {
            K::Blob => Some(EntryKind::Regular),
            K::BlobExecutable => Some(EntryKind::Executable),
            K::Link => Some(EntryKind::Symlink),
            K::Commit => Some(EntryKind::Submodule),
            K::Tree => None,
        }
    }

    pub(super) fn from_index_mode(mode: gix::index::entry::Mode) -> Option<Self> {
        use gix::index::entry::Mode;
        if mode == Mode::FILE {
            Some(EntryKind::Regular)
        } else if mode == Mode::FILE_EXECUTABLE {
            Some(EntryKind::Executable)
        } else if mode == Mode::SYMLINK {
            Some(EntryKind::Symlink)
        } else if mode == Mode::COMMIT {
            Some(EntryKind::Submodule)
        } else {
            None
        }
    }
}

/// One file of a tree, the index or the work tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path relative to the repository root, as git stores it: raw bytes,
    /// `/`-separated, possibly not UTF-8 and possibly containing spaces or newlines.
    pub path: Vec<u8>,
    /// What the entry is.
    pub kind: EntryKind,
    /// The blob id (a commit id for submodules).
    pub id: ObjectId,
}
