//! History as lists of commits and their trees, one directory level at a
//! time: what comparing a directory with many states of another repository
//! (`origin`) reads.
//!
//! Which commits a range names is git's decision (`git rev-list`, `git
//! for-each-ref`): ranges, tags and their dates then mean exactly what they
//! mean to git, reftable repositories included. The objects themselves are
//! read here, through gix, many at a time and in parallel.

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{EntryKind, Reader, Repo, RepoError, find};

/// One entry of a tree, without descending: a file, a submodule or a
/// subtree.
#[derive(Clone, Debug)]
pub struct TreeItem {
    /// The entry's name (one path component).
    pub name: Vec<u8>,
    /// Its object.
    pub id: ObjectId,
    /// What it is; `None` for a subtree.
    pub kind: Option<EntryKind>,
}

impl Repo {
    /// Every tag that leads to a commit (annotated tags peeled), oldest
    /// first as `git for-each-ref --sort=creatordate` orders them, with
    /// its short name. Tags of trees or blobs are left out.
    pub fn tagged_commits(&self) -> Result<Vec<(String, ObjectId)>, RepoError> {
        let out = self.run_listing(&[
            "for-each-ref".as_ref(),
            "--sort=creatordate".as_ref(),
            "--format=%(objectname) %(refname:strip=2)".as_ref(),
            "refs/tags".as_ref(),
        ])?;
        let hash = self.object_hash();
        let repo = self.local();
        let mut buf = Vec::new();
        let mut tags = Vec::new();
        for line in out.lines() {
            let Some((hex, name)) = line.split_once(' ') else {
                continue;
            };
            let Ok(mut id) = ObjectId::from_hex(hex.as_bytes()) else {
                continue;
            };
            // Tags can point at tags; a chain longer than this is a cycle.
            for _ in 0..64 {
                let data = find(&repo.objects, &id, &mut buf)?;
                match data.kind {
                    gix::object::Kind::Commit => {
                        tags.push((name.to_owned(), id));
                        break;
                    }
                    gix::object::Kind::Tag => {
                        id = gix::objs::TagRefIter::from_bytes(data.data, hash)
                            .target_id()
                            .map_err(|source| RepoError::CorruptObject {
                                id,
                                kind: data.kind,
                                source,
                            })?;
                    }
                    _ => break,
                }
            }
        }
        Ok(tags)
    }

    /// The commits `git rev-list <args>` lists, in its order (newest
    /// first). `args` are revisions and ranges only: they follow
    /// `--end-of-options`, so none is taken for an option.
    pub fn rev_list(
        &self,
        options: &[&str],
        args: &[impl AsRef<std::ffi::OsStr>],
    ) -> Result<Vec<ObjectId>, RepoError> {
        let mut all: Vec<&std::ffi::OsStr> = vec!["rev-list".as_ref()];
        all.extend(options.iter().map(std::ffi::OsStr::new));
        all.push("--end-of-options".as_ref());
        all.extend(args.iter().map(AsRef::as_ref));
        // Revisions only: a file named like one (a bare repository's own
        // `HEAD`, in the current directory) must not make them ambiguous.
        all.push("--".as_ref());
        let out = self.run_listing(&all)?;
        Ok(out
            .lines()
            .filter_map(|l| ObjectId::from_hex(l.trim().as_bytes()).ok())
            .collect())
    }

    fn run_listing(&self, args: &[&std::ffi::OsStr]) -> Result<String, RepoError> {
        let out = self
            .git_command()
            .args(args)
            .output()
            .map_err(|e| RepoError::Listing {
                message: format!("cannot run git {}: {e}", args[0].to_string_lossy()),
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().next().unwrap_or("failed");
            return Err(RepoError::Listing {
                message: first.trim_start_matches("fatal: ").to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Reader {
    /// The tree of a commit.
    pub fn commit_tree(&mut self, id: &gix::oid) -> Result<ObjectId, RepoError> {
        let mut buf = Vec::new();
        let kind = self.object_into(id, &mut buf)?;
        if kind != gix::object::Kind::Commit {
            return Err(RepoError::WrongKind {
                id: id.to_owned(),
                expected: gix::object::Kind::Commit,
                actual: kind,
            });
        }
        gix::objs::CommitRefIter::from_bytes(&buf, id.kind())
            .tree_id()
            .map_err(|source| RepoError::CorruptObject {
                id: id.to_owned(),
                kind,
                source,
            })
    }

    /// The entries of one tree, in stored order, into `out` (cleared
    /// first); `buf` holds the tree's bytes meanwhile.
    pub fn tree_items(
        &mut self,
        id: &gix::oid,
        buf: &mut Vec<u8>,
        out: &mut Vec<TreeItem>,
    ) -> Result<(), RepoError> {
        out.clear();
        let kind = self.object_into(id, buf)?;
        if kind != gix::object::Kind::Tree {
            return Err(RepoError::WrongKind {
                id: id.to_owned(),
                expected: gix::object::Kind::Tree,
                actual: kind,
            });
        }
        for entry in gix::objs::TreeRefIter::from_bytes(buf, id.kind()) {
            let entry = entry.map_err(|source| RepoError::CorruptObject {
                id: id.to_owned(),
                kind,
                source,
            })?;
            out.push(TreeItem {
                name: entry.filename.as_bytes().to_vec(),
                id: entry.oid.to_owned(),
                kind: EntryKind::from_tree_mode(entry.mode),
            });
        }
        Ok(())
    }

    /// The subtree at `path` (components separated by `/`; empty for
    /// `root` itself) of the tree `root`, or `None` when there is none.
    pub fn subtree(
        &mut self,
        root: ObjectId,
        path: &[u8],
        buf: &mut Vec<u8>,
        items: &mut Vec<TreeItem>,
    ) -> Result<Option<ObjectId>, RepoError> {
        let mut id = root;
        for part in path.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
            self.tree_items(&id, buf, items)?;
            match items.iter().find(|i| i.name == part && i.kind.is_none()) {
                Some(item) => id = item.id,
                None => return Ok(None),
            }
        }
        Ok(Some(id))
    }
}
