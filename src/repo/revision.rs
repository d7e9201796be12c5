//! Revisions to objects: tree-ishes peeled the way git peels them.

//!
//! Revisions are bytes, as git takes them: a path in `<rev>:<path>` need
//! not be UTF-8. Every function takes any `AsRef<[u8]>` (`&str` included)
//! and names the revision in errors as text.

use gix::ObjectId;
use gix::bstr::ByteSlice;

use super::{Repo, RepoError, find, header};

/// A revision as text, for messages.
fn text(spec: &[u8]) -> String {
    String::from_utf8_lossy(spec).into_owned()
}

impl Repo {
    fn rev_parse(&self, repo: &gix::Repository, spec: &[u8]) -> Result<ObjectId, RepoError> {
        if self.refs == super::RefStorage::Reftable {
            return self.rev_parse_with_git(repo, spec);
        }
        repo.rev_parse_single(spec.as_bstr())
            .map(|id| id.detach())
            .map_err(|source| RepoError::UnknownRevision {
                spec: text(spec),
                source,
            })
    }

    /// The two trees `git diff` compares for a range: `A..B` as `A` and
    /// `B`, `A...B` as the merge base of `A` and `B`, and `B`; an end left
    /// out is `HEAD`. `None` when `spec` is not a range (no `..`).
    pub fn resolve_diff_range(
        &self,
        spec: &(impl AsRef<[u8]> + ?Sized),
    ) -> Result<Option<(ObjectId, ObjectId)>, RepoError> {
        use gix::revision::plumbing::Spec;
        let spec = spec.as_ref();
        if spec.find(b"..").is_none() {
            return Ok(None);
        }
        let repo = self.local();
        let unknown = |source: gix::Error| RepoError::UnknownRevision {
            spec: text(spec),
            source,
        };
        let parsed = repo.rev_parse(spec.as_bstr()).map_err(unknown)?.detach();
        let (old, new) = match parsed {
            Spec::Range { from, to } => (from, to),
            Spec::Merge { theirs, ours } => {
                let base = repo
                    .merge_base(theirs, ours)
                    .ok()
                    .flatten()
                    .ok_or_else(|| RepoError::NoMergeBase { spec: text(spec) })?;
                (base.detach(), ours)
            }
            _ => return Ok(None),
        };
        Ok(Some((
            self.resolve_tree(&old.to_string())?,
            self.resolve_tree(&new.to_string())?,
        )))
    }

    /// Resolve a tree-ish (commit, tag, tree, `HEAD~2`, `v1.0^{tree}`,
    /// `HEAD:dir`) to a tree id, peeling tags and commits like git does.
    pub fn resolve_tree(&self, spec: &(impl AsRef<[u8]> + ?Sized)) -> Result<ObjectId, RepoError> {
        let repo = self.local();
        let id = self.rev_parse(&repo, spec.as_ref())?;
        self.peel(&repo, id, spec.as_ref())
    }

    /// The tree of an object [`Repo::resolve_object`] found for `spec`
    /// (named in errors): itself if a tree, a commit's, a tag's target's.
    pub fn peel_to_tree(
        &self,
        id: ObjectId,
        spec: &(impl AsRef<[u8]> + ?Sized),
    ) -> Result<ObjectId, RepoError> {
        self.peel(&self.local(), id, spec.as_ref())
    }

    fn peel(
        &self,
        repo: &gix::Repository,
        mut id: ObjectId,
        spec: &[u8],
    ) -> Result<ObjectId, RepoError> {
        let hash = self.object_hash();
        let mut buf = Vec::new();
        // Tags can point at tags; a chain longer than this is a cycle.
        for _ in 0..64 {
            if id == ObjectId::empty_tree(hash) {
                return Ok(id);
            }
            let data = find(&repo.objects, &id, &mut buf)?;
            let corrupt = |source| RepoError::CorruptObject {
                id,
                kind: data.kind,
                source,
            };
            match data.kind {
                gix::object::Kind::Tree => return Ok(id),
                gix::object::Kind::Commit => {
                    id = gix::objs::CommitRefIter::from_bytes(data.data, hash)
                        .tree_id()
                        .map_err(corrupt)?;
                }
                gix::object::Kind::Tag => {
                    id = gix::objs::TagRefIter::from_bytes(data.data, hash)
                        .target_id()
                        .map_err(corrupt)?;
                }
                kind @ gix::object::Kind::Blob => {
                    return Err(RepoError::NotATreeish {
                        spec: text(spec),
                        kind,
                    });
                }
            }
        }
        Err(RepoError::NotATreeish {
            spec: text(spec),
            kind: gix::object::Kind::Tag,
        })
    }

    /// Resolve any revision to an object id and its kind, e.g. `HEAD:path`
    /// or a blob's hex id. The object must exist.
    ///
    /// In a partial clone a missing object is fetched, as git fetches an
    /// object a command names (`git cat-file -t`): one object, one fetch.
    pub fn resolve_object(
        &self,
        spec: &(impl AsRef<[u8]> + ?Sized),
    ) -> Result<(ObjectId, gix::object::Kind), RepoError> {
        let repo = self.local();
        let id = self.rev_parse(&repo, spec.as_ref())?;
        let kind = match header(&repo.objects, &id) {
            Err(RepoError::MissingObject { .. }) if self.is_partial() => {
                self.fetch_missing(&[id], &crate::progress::Feedback::none())?;
                header(&self.local().objects, &id)?.0
            }
            found => found?.0,
        };
        Ok((id, kind))
    }

    /// The object id a revision names, without looking the object up: in
    /// a partial clone it may be missing, and a caller fetching it with
    /// others needs its id first.
    pub fn resolve_id(&self, spec: &(impl AsRef<[u8]> + ?Sized)) -> Result<ObjectId, RepoError> {
        self.rev_parse(&self.local(), spec.as_ref())
    }
}
