//! Recursive tree listings in git's order (`git ls-tree -r`).

use gix::ObjectId;
use gix::bstr::ByteSlice;
use rayon::prelude::*;

use super::odb::Walker;
use super::{Entry, EntryKind, Repo, RepoError, Shortcut};

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

    /// The entries of trees `a` and `b` ([`Repo::tree_entries`] of each,
    /// in git's path order) but those both hold alike: every file with
    /// the same kind and id at the same path, every subtree with the same
    /// id (unread). What a diff of the two trees needs when unchanged
    /// files play no part, read as git reads it: a small change in a
    /// large tree reads the trees on its path only.
    pub fn tree_entries_differing(
        &self,
        a: ObjectId,
        b: ObjectId,
    ) -> Result<(Vec<Entry>, Vec<Entry>), RepoError> {
        let repo = self.local();
        let objects = &repo.objects;
        let (mut old, mut new) = (Vec::new(), Vec::new());
        let (mut da, mut db) = (Vec::new(), Vec::new());
        // Directories on one side only, listed whole after the walk, in
        // parallel: after a large move they are most of what is read.
        // With each, whether its parent tree was a loose object (then it
        // most likely is one too: see `walk`).
        let mut whole: Vec<(bool, ObjectId, Vec<u8>, bool)> = Vec::new();
        let mut take = |child: &Child,
                        prefix: &[u8],
                        (is_new, parent_loose): (bool, bool),
                        out: &mut Vec<Entry>| {
            let mut path = prefix.to_vec();
            path.extend_from_slice(&child.key);
            match child.kind {
                Some(kind) => out.push(Entry {
                    path,
                    kind,
                    id: child.id,
                }),
                None => whole.push((is_new, child.id, path, parent_loose)),
            }
        };
        // Pairs of directories whose ids differ, with their path: an
        // explicit stack, as in `walk_tree_with`, since depth is the
        // repository's to choose; and whether each one's parent was loose.
        let mut walker = Walker::new(objects);
        struct Differing {
            x: ObjectId,
            y: ObjectId,
            prefix: Vec<u8>,
            /// Each side's tree read from its file first (its parent was
            /// loose).
            first: (bool, bool),
        }
        let mut stack = vec![Differing {
            x: a,
            y: b,
            prefix: Vec::new(),
            first: (false, false),
        }];
        while let Some(Differing {
            x,
            y,
            prefix,
            first,
        }) = stack.pop()
        {
            if x == y {
                continue;
            }
            let lx = load_tree(&mut walker, x, &mut da, first.0)?;
            let ly = load_tree(&mut walker, y, &mut db, first.1)?;
            let xs = children(x, &da)?;
            let ys = children(y, &db)?;
            let (mut i, mut j) = (0, 0);
            while i < xs.len() || j < ys.len() {
                // Tree order: a directory sorts as its name and '/'.
                let order = match (xs.get(i), ys.get(j)) {
                    (Some(p), Some(q)) => p.key().cmp(q.key()),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                match order {
                    std::cmp::Ordering::Less => {
                        take(&xs[i], &prefix, (false, lx), &mut old);
                        i += 1;
                    }
                    std::cmp::Ordering::Greater => {
                        take(&ys[j], &prefix, (true, ly), &mut new);
                        j += 1;
                    }
                    std::cmp::Ordering::Equal => {
                        let (p, q) = (&xs[i], &ys[j]);
                        if p.kind.is_none() {
                            let mut path = prefix.clone();
                            path.extend_from_slice(p.name());
                            path.push(b'/');
                            stack.push(Differing {
                                x: p.id,
                                y: q.id,
                                prefix: path,
                                first: (lx, ly),
                            });
                        } else if p.kind != q.kind || p.id != q.id {
                            take(p, &prefix, (false, lx), &mut old);
                            take(q, &prefix, (true, ly), &mut new);
                        }
                        i += 1;
                        j += 1;
                    }
                }
            }
        }
        let listed: Vec<(bool, Vec<Entry>)> = whole
            .par_iter()
            .map_init(
                || self.local(),
                |repo, (is_new, id, path, loose)| {
                    let mut out = Vec::new();
                    walk(&repo.objects, *id, path, &mut out, None, *loose)?;
                    Ok((*is_new, out))
                },
            )
            .collect::<Result<_, RepoError>>()?;
        for (is_new, entries) in listed {
            if is_new { &mut new } else { &mut old }.extend(entries);
        }
        // Directories were taken last in, first out; git's path order is
        // the byte order of the whole paths.
        old.sort_unstable_by(|p, q| p.path.cmp(&q.path));
        new.sort_unstable_by(|p, q| p.path.cmp(&q.path));
        Ok((old, new))
    }

    /// [`Repo::tree_entries`] without submodules: the files whose blobs
    /// the repository holds.
    pub fn tree_files(&self, tree: ObjectId) -> Result<Vec<Entry>, RepoError> {
        let mut entries = self.tree_entries(tree)?;
        entries.retain(|e| e.kind != EntryKind::Submodule);
        Ok(entries)
    }
}

/// One entry of a tree: its name with a '/' after a directory's (the key
/// of git's tree order), its kind (`None`: a directory) and id.
struct Child {
    key: Vec<u8>,
    kind: Option<EntryKind>,
    id: ObjectId,
}

impl Child {
    fn key(&self) -> &[u8] {
        &self.key
    }

    fn name(&self) -> &[u8] {
        match self.kind {
            None => &self.key[..self.key.len() - 1],
            Some(_) => &self.key,
        }
    }
}

/// The entries of tree `id`, whose content is `data`, in stored order.
fn children(id: ObjectId, data: &[u8]) -> Result<Vec<Child>, RepoError> {
    gix::objs::TreeRefIter::from_bytes(data, id.kind())
        .map(|entry| {
            let entry = entry.map_err(|source| RepoError::CorruptObject {
                id,
                kind: gix::object::Kind::Tree,
                source,
            })?;
            let kind = EntryKind::from_tree_mode(entry.mode);
            let mut key = entry.filename.to_vec();
            if kind.is_none() {
                key.push(b'/');
            }
            Ok(Child {
                key,
                kind,
                id: entry.oid.to_owned(),
            })
        })
        .collect()
}

/// The content of tree `id` into `data` (the empty tree needs no object),
/// read through `walker` (its file first with `loose_first`); whether it
/// was a loose object.
fn load_tree(
    walker: &mut Walker<'_>,
    id: ObjectId,
    data: &mut Vec<u8>,
    loose_first: bool,
) -> Result<bool, RepoError> {
    if id == ObjectId::empty_tree(id.kind()) {
        data.clear();
        return Ok(false);
    }
    let (kind, loose) = walker.find(&id, data, loose_first)?;
    if kind != gix::object::Kind::Tree {
        return Err(RepoError::WrongKind {
            id,
            expected: gix::object::Kind::Tree,
            actual: kind,
        });
    }
    Ok(loose)
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
    walk(objects, root, prefix, out, None, false)
}

/// [`walk_tree`], leaving out the subtrees `shortcut` says the index has
/// (`cache` is the index's cache-tree, whose root is `root`'s directory).
pub(super) fn walk_tree_with(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
    shortcut: Option<(&mut Shortcut<'_>, &gix::index::extension::Tree)>,
) -> Result<(), RepoError> {
    walk(objects, root, prefix, out, shortcut, false)
}

/// [`walk_tree_with`], the root read from its file first with
/// `root_loose_first` (its parent was a loose tree).
fn walk(
    objects: &gix::OdbHandle,
    root: ObjectId,
    prefix: &[u8],
    out: &mut Vec<Entry>,
    mut shortcut: Option<(&mut Shortcut<'_>, &gix::index::extension::Tree)>,
    root_loose_first: bool,
) -> Result<(), RepoError> {
    struct Frame<'t> {
        id: ObjectId,
        data: Vec<u8>,
        pos: usize,
        prefix_len: usize,
        /// The cache-tree node of this directory, if it has one.
        node: Option<&'t gix::index::extension::Tree>,
        /// Whether this tree was a loose object: its subtrees then most
        /// likely are too (a commit writes the trees above what changed).
        loose: bool,
    }
    let hash = root.kind();
    let mut walker = Walker::new(objects);
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
    let loose = load_tree(&mut walker, root, &mut data, root_loose_first)?;
    let mut stack = vec![Frame {
        id: root,
        data,
        pos: 0,
        prefix_len: path.len(),
        node: root_node,
        loose,
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
                let loose = load_tree(&mut walker, id, &mut data, frame.loose)?;
                stack.push(Frame {
                    id,
                    data,
                    pos: 0,
                    prefix_len: path.len(),
                    node,
                    loose,
                });
            }
        }
    }
    Ok(())
}
