//! Recursive tree listings in git's order (`git ls-tree -r`).

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Entry, EntryKind, Repo, RepoError, Shortcut, find};

impl Repo {
    /// All entries of a tree, recursively, in git's path order (the order
    /// `git ls-tree -r` prints). Submodules are listed with kind
    /// [`EntryKind::Submodule`]; trees themselves are not listed.
    pub fn tree_entries(&self, tree: ObjectId) -> Result<Vec<Entry>, RepoError> {
        let repo = self.local();
        let mut out = Vec::new();
        walk_tree(&repo.objects, tree, b"", &mut out)?;
        Ok(out)
    }

    /// [`Repo::tree_entries`] without submodules: the files whose blobs
    /// the repository holds.
    pub fn tree_files(&self, tree: ObjectId) -> Result<Vec<Entry>, RepoError> {
        let mut entries = self.tree_entries(tree)?;
        entries.retain(|e| e.kind != EntryKind::Submodule);
        Ok(entries)
    }
}

/// Depth-first, in stored order: exactly what `git ls-tree -r` prints. An
/// explicit stack instead of recursion, because tree depth is controlled by
/// the repository's contents and a hostile one must not overflow the stack.
pub(super) fn walk_tree(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
) -> Result<(), RepoError> {
    walk_tree_with(objects, root, prefix, out, None)
}

/// [`walk_tree`], leaving out the subtrees `shortcut` says the index has
/// (`cache` is the index's cache-tree, whose root is `root`'s directory).
pub(super) fn walk_tree_with(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
    mut shortcut: Option<(&mut Shortcut<'_>, &gix::index::extension::Tree)>,
) -> Result<(), RepoError> {
    struct Frame<'t> {
        id: ObjectId,
        data: Vec<u8>,
        pos: usize,
        prefix_len: usize,
        /// The cache-tree node of this directory, if it has one.
        node: Option<&'t gix::index::extension::Tree>,
    }
    let hash = root.kind();
    let load = |id: ObjectId, data: &mut Vec<u8>| -> Result<(), RepoError> {
        if id == ObjectId::empty_tree(hash) {
            data.clear();
            return Ok(());
        }
        let kind = find(objects, &id, data)?.kind;
        if kind != gix::object::Kind::Tree {
            return Err(RepoError::WrongKind {
                id,
                expected: gix::object::Kind::Tree,
                actual: kind,
            });
        }
        Ok(())
    };
    let mut path = prefix.to_vec();
    let root_node = match &mut shortcut {
        Some((s, node)) => {
            if s.take(node, &root, &path) {
                return Ok(());
            }
            Some(*node)
        }
        None => None,
    };
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut data = Vec::new();
    load(root, &mut data)?;
    let mut stack = vec![Frame {
        id: root,
        data,
        pos: 0,
        prefix_len: path.len(),
        node: root_node,
    }];
    while let Some(frame) = stack.last_mut() {
        let rest = &frame.data[frame.pos..];
        let mut iter = gix::objs::TreeRefIter::from_bytes(rest, hash);
        let Some(entry) = iter.next() else {
            if let Some(done) = stack.pop() {
                spare.push(done.data);
            }
            continue;
        };
        let entry = entry.map_err(|source| RepoError::CorruptObject {
            id: frame.id,
            kind: gix::object::Kind::Tree,
            source,
        })?;
        frame.pos += iter.offset_to_next_entry(rest);
        path.truncate(frame.prefix_len);
        path.extend_from_slice(entry.filename);
        match EntryKind::from_tree_mode(entry.mode) {
            Some(kind) => out.push(Entry {
                path: path.clone(),
                kind,
                id: entry.oid.to_owned(),
            }),
            None => {
                let id = entry.oid.to_owned();
                path.push(b'/');
                // git sorts cache-tree children by name, as gix keeps them.
                let node = frame.node.and_then(|n| {
                    n.children
                        .binary_search_by(|c| c.name.as_slice().cmp(entry.filename.as_bytes()))
                        .ok()
                        .map(|i| &n.children[i])
                });
                if let (Some((s, _)), Some(node)) = (&mut shortcut, node)
                    && s.take(node, &id, &path)
                {
                    continue;
                }
                let mut data = spare.pop().unwrap_or_default();
                load(id, &mut data)?;
                stack.push(Frame {
                    id,
                    data,
                    pos: 0,
                    prefix_len: path.len(),
                    node,
                });
            }
        }
    }
    Ok(())
}
