//! Reading many blobs at once ([`Repo::map_blobs`]): whole packs decoded
//! along their delta trees when much of them is wanted, otherwise one by
//! one in pack order with a reader per thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use gix::ObjectId;
use rayon::prelude::*;

use super::{Pack, ReaderPool, Repo, RepoError, chunk_len};
use crate::progress::Feedback;

/// How [`Repo::for_each_blob_reading`] reads the packs it wants blobs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Whichever [`traversal_pays`] says is cheaper, per pack.
    Cheapest,
    /// Decode every pack along its delta trees.
    #[cfg_attr(not(test), allow(dead_code))]
    Traverse,
    /// Read every object one by one.
    #[cfg_attr(not(test), allow(dead_code))]
    OneByOne,
}

impl Repo {
    /// Read the blobs `ids` in parallel and map each with `f(index, bytes)`,
    /// where `index` is the position in `ids`; results come back in input
    /// order. `f` runs on several threads at once, in no particular order.
    ///
    /// How the blobs are read depends on how many are wanted from a pack:
    /// * When a good part of a pack is wanted (at least 1/10 of its objects),
    ///   the whole pack is decoded along its delta trees (gix's
    ///   `traverse_with_index`, the way `git index-pack` resolves deltas):
    ///   every object is inflated exactly once and each delta is applied to
    ///   its base while that is still in memory. Decoding the unwanted
    ///   objects too is far cheaper than re-inflating delta bases, which
    ///   random access does for every delta whose base is not cached.
    /// * Otherwise the blobs are read one by one, sorted by pack offset so a
    ///   delta's base is often still in the reader's delta-base cache, with
    ///   one [`Reader`](super::Reader) and buffer per rayon thread. Loose
    ///   objects go this way too, read from their files directly.
    ///
    /// The first error stops the work and is returned, and so does
    /// [`Interrupted`](crate::progress::Interrupted) (as
    /// [`RepoError::Interrupted`]) soon after `feedback`'s flag is set: it
    /// is polled per blob and handed to gix's pack traversal.
    pub fn map_blobs<T: Send>(
        &self,
        ids: &[ObjectId],
        feedback: &Feedback,
        f: impl Fn(usize, &[u8]) -> T + Sync + Send,
    ) -> Result<Vec<T>, RepoError> {
        let slots: Vec<Mutex<Option<T>>> = std::iter::repeat_with(|| Mutex::new(None))
            .take(ids.len())
            .collect();
        self.for_each_blob(ids, feedback, |i, data| {
            *slots[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(f(i, data));
        })?;
        slots
            .into_iter()
            .zip(ids)
            .map(|(slot, id)| {
                slot.into_inner()
                    .unwrap_or_else(PoisonError::into_inner)
                    .ok_or(RepoError::MissingObject { id: *id })
            })
            .collect()
    }

    /// [`Repo::map_blobs`] without collecting: `f(index, bytes)` is called
    /// once for each position of `ids`, on several threads, in no
    /// particular order. On an error (or an interrupt) the calls already
    /// made stand: a caller keeping their results keeps what was done.
    pub fn for_each_blob(
        &self,
        ids: &[ObjectId],
        feedback: &Feedback,
        f: impl Fn(usize, &[u8]) + Sync + Send,
    ) -> Result<(), RepoError> {
        self.for_each_blob_reading(ids, Reading::Cheapest, feedback, f)
    }

    /// [`Repo::for_each_blob`], reading packs as `reading` says.
    pub(crate) fn for_each_blob_reading(
        &self,
        ids: &[ObjectId],
        reading: Reading,
        feedback: &Feedback,
        f: impl Fn(usize, &[u8]) + Sync + Send,
    ) -> Result<(), RepoError> {
        let mut packs = self.packs();
        let mut located = locate(&packs, ids);
        if self.is_partial() {
            // A partial clone's missing blobs come in one fetch before any
            // is read, never one fetch per blob; the ids in no pack are
            // the loose ones and those.
            let unpacked: Vec<ObjectId> = located
                .iter()
                .filter(|&&(p, _, _)| p == usize::MAX)
                .map(|&(_, _, i)| ids[i])
                .collect();
            if self.fetch_missing(&unpacked, feedback)?.objects > 0 {
                packs = self.packs();
                located = locate(&packs, ids);
            }
        }

        let delivered: Vec<AtomicBool> = std::iter::repeat_with(|| AtomicBool::new(false))
            .take(ids.len())
            .collect();
        let deliver = |i: usize, data: &[u8]| {
            f(i, data);
            delivered[i].store(true, Ordering::Relaxed);
        };
        // (position, whether it was in no pack: a loose object, read from
        // its file directly).
        let mut one_by_one: Vec<(usize, bool)> = Vec::new();
        let mut traversed = Vec::new();
        for group in located.chunk_by(|a, b| a.0 == b.0) {
            feedback.check()?;
            match packs.get(group[0].0) {
                Some(pack)
                    if match reading {
                        Reading::Cheapest => traversal_pays(pack, self.object_hash(), group),
                        Reading::Traverse => true,
                        Reading::OneByOne => false,
                    } =>
                {
                    traverse_pack(pack, self.object_hash(), group, ids, feedback, &deliver)?;
                    traversed.extend(group.iter().map(|&(_, _, i)| i));
                }
                pack => one_by_one.extend(group.iter().map(|&(_, _, i)| (i, pack.is_none()))),
            }
        }
        // A traversal stops early when interrupted; nothing is to be read
        // one by one then.
        feedback.check()?;
        // Whatever a traversal did not deliver (it stopped at a damaged or
        // thin pack, or the index disagrees with its pack) is read one by
        // one: that either succeeds or fails naming the object at fault.
        one_by_one.extend(
            traversed
                .into_iter()
                .filter(|&i| !delivered[i].load(Ordering::Relaxed))
                .map(|i| (i, false)),
        );

        let readers = ReaderPool::new(self);
        one_by_one
            .par_chunks(chunk_len(one_by_one.len()))
            .try_for_each(|chunk| {
                readers.with(|reader| {
                    for &(i, loose) in chunk {
                        feedback.check()?;
                        let data = if loose {
                            reader.loose_blob_ref(&ids[i])?
                        } else {
                            reader.blob_ref(&ids[i])?
                        };
                        deliver(i, data);
                    }
                    Ok::<_, RepoError>(())
                })
            })
    }
}

/// Whether decoding all of `pack` along its delta trees is cheaper than
/// reading the wanted objects (`group`: pack, offset, index) one by one.
///
/// A traversal inflates every object of the pack once. Reading one by one
/// inflates each wanted object and, at worst, every delta base below it
/// (the reader's delta-base cache saves some of that). So the traversal
/// pays when the wanted objects' delta chains add up to more objects than
/// the pack holds. Measured: git.git (849k objects, delta chains up to
/// 50 deep) broke even near 1/12 of its objects wanted; a rename fixture
/// with half of its 13k blobs wanted and chains of one or two read them
/// one by one in half the time (the traversal also ran on one core there).
/// Only pack entry headers are read to decide, and the count stops at the
/// pack's size.
fn traversal_pays(pack: &Pack, hash: gix::hash::Kind, group: &[(usize, u64, usize)]) -> bool {
    use gix::odb::pack::data::entry::Header;
    let objects = u64::from(pack.index.num_objects());
    if (group.len() as u64) < objects / TRAVERSE_FRACTION_MIN {
        return false;
    }
    let Ok(data) = pack.data(hash) else {
        return false;
    };
    let mut cost: u64 = 0;
    for &(_, offset, _) in group {
        let mut at = offset;
        // A corrupt pack could loop; no real chain is this deep.
        for _ in 0..MAX_CHAIN {
            cost += 1;
            if cost > objects {
                return true;
            }
            let Ok(entry) = data.entry(at) else {
                break;
            };
            let base = match entry.header {
                Header::OfsDelta { base_distance } => entry.checked_base_pack_offset(base_distance),
                Header::RefDelta { base_id } => pack
                    .index
                    .lookup(base_id)
                    .map(|e| pack.index.pack_offset_at_index(e)),
                _ => None,
            };
            match base {
                Some(b) => at = b,
                None => break,
            }
        }
    }
    false
}

/// Below 1/`TRAVERSE_FRACTION_MIN` of a pack's objects, reading one by one
/// always wins and the chains need not be counted.
const TRAVERSE_FRACTION_MIN: u64 = 20;

/// Longest delta chain [`traversal_pays`] follows.
const MAX_CHAIN: usize = 10_000;

/// Decode all of `pack` along its delta trees and hand the wanted objects,
/// `group` (sorted `(_, offset, position)`), to `deliver`.
fn traverse_pack(
    pack: &Pack,
    hash: gix::hash::Kind,
    group: &[(usize, u64, usize)],
    ids: &[ObjectId],
    feedback: &Feedback,
    deliver: &(dyn Fn(usize, &[u8]) + Sync),
) -> Result<(), RepoError> {
    use gix::odb::pack::index::traverse;
    // Any failure other than a wrong kind leaves objects undelivered, and the
    // caller reads those one by one; that path reports errors per object,
    // which is more useful than a pack-level message.
    let Ok(data) = pack.data(hash) else {
        return Ok(());
    };
    let failure: Mutex<Option<RepoError>> = Mutex::new(None);
    let _ = pack.index.traverse_with_index(
        &data,
        |kind, bytes: &[u8], entry: &gix::odb::pack::index::Entry, _: &dyn gix::Progress| {
            let start = group.partition_point(|g| g.1 < entry.pack_offset);
            for &(_, offset, i) in &group[start..] {
                if offset != entry.pack_offset || ids[i] != entry.oid {
                    break;
                }
                if kind != gix::object::Kind::Blob {
                    *failure.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(RepoError::WrongKind {
                            id: entry.oid,
                            expected: gix::object::Kind::Blob,
                            actual: kind,
                        });
                    return Err(gix::Error::from_error(std::io::Error::other("not a blob")));
                }
                // The traversal does not check that each entry's zlib
                // stream ends where it should, as a read one by one does;
                // what it decodes is checked against the id instead.
                match gix::objs::compute_hash(hash, kind, bytes) {
                    Ok(actual) if actual == entry.oid => {}
                    other => {
                        let reason = match other {
                            Ok(actual) => format!("its content hashes to {actual}"),
                            Err(e) => format!("cannot hash it: {e}"),
                        };
                        *failure.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(RepoError::CorruptPacked {
                                id: entry.oid,
                                path: pack.data_path.clone(),
                                reason,
                            });
                        return Err(gix::Error::from_error(std::io::Error::other("corrupt")));
                    }
                }
                deliver(i, bytes);
            }
            Ok(())
        },
        &mut gix::progress::Discard,
        feedback.interrupt_flag(),
        traverse::with_index::Options {
            // Wanted objects are hashed above; the others need not be.
            check: traverse::SafetyCheck::SkipFileAndObjectChecksumVerification,
            thread_limit: Some(rayon::current_num_threads()),
            alloc_limit_bytes: None,
        },
    );
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Where each of `ids` is: (pack, offset, position in `ids`), sorted so
/// each pack's objects come together in offset order; `usize::MAX` for an
/// object in no pack (loose, or missing).
fn locate(packs: &[Pack], ids: &[ObjectId]) -> Vec<(usize, u64, usize)> {
    let mut located: Vec<(usize, u64, usize)> = ids
        .par_iter()
        .enumerate()
        .map(|(i, id)| {
            packs
                .iter()
                .enumerate()
                .find_map(|(p, pack)| {
                    pack.index
                        .lookup(id)
                        .map(|e| (p, pack.index.pack_offset_at_index(e), i))
                })
                .unwrap_or((usize::MAX, 0, i))
        })
        .collect();
    located.par_sort_unstable();
    located
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::git;

    fn read(repo: &Repo, ids: &[ObjectId], reading: Reading) -> Vec<Vec<u8>> {
        let slots: Vec<Mutex<Vec<u8>>> = ids.iter().map(|_| Mutex::new(Vec::new())).collect();
        repo.for_each_blob_reading(ids, reading, &Feedback::none(), |i, data| {
            *slots[i].lock().unwrap() = data.to_vec();
        })
        .expect("read blobs");
        slots.into_iter().map(|m| m.into_inner().unwrap()).collect()
    }

    /// The pack traversal (every object inflated once, deltas applied along
    /// their trees) and one-by-one reading give every blob exactly as git
    /// stores it, over deep delta chains, a pack plus loose objects, and
    /// blobs that are delta bases of others.
    #[test]
    fn traversal_and_one_by_one_read_the_same_blobs_as_git() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        let texts = crate::testing::real_text();
        // Versions of a few files, each an edit of the last: git makes them
        // delta chains.
        for round in 0..12 {
            for (f, text) in texts.iter().take(6).enumerate() {
                let mut body = text.clone();
                for k in 0..=round {
                    body.extend_from_slice(format!("line {k} of round {round}\n").as_bytes());
                }
                std::fs::write(dir.join(format!("f{f}.txt")), body).expect("write");
            }
            git(dir, &["add", "-A"]);
            git(dir, &["commit", "-q", "-m", "round"]);
        }
        git(dir, &["repack", "-adfq", "--depth=50", "--window=50"]);
        // And one more commit whose blobs stay loose.
        std::fs::write(dir.join("loose.txt"), &texts[0]).expect("write");
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "loose"]);

        let listing = git(
            dir,
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname) %(objecttype) %(deltabase)",
            ],
        );
        let listing = String::from_utf8(listing).expect("utf-8");
        let mut ids = Vec::new();
        let mut deltas = 0;
        for line in listing.lines() {
            let mut parts = line.split(' ');
            let (Some(id), Some("blob"), Some(base)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            ids.push(ObjectId::from_hex(id.as_bytes()).expect("hex id"));
            deltas += usize::from(!base.bytes().all(|b| b == b'0'));
        }
        assert!(
            deltas >= 30,
            "only {deltas} deltas: the pack would not test delta chains"
        );
        let repo = Repo::discover(dir).expect("open");
        let want: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| git(dir, &["cat-file", "blob", &id.to_string()]))
            .collect();
        for reading in [Reading::Traverse, Reading::OneByOne, Reading::Cheapest] {
            let got = read(&repo, &ids, reading);
            assert!(got == want, "{reading:?} read different bytes");
        }
        // A subset, in another order, with a duplicate.
        let mut some: Vec<ObjectId> = ids.iter().rev().step_by(3).copied().collect();
        some.push(ids[0]);
        let want: Vec<Vec<u8>> = some
            .iter()
            .map(|id| git(dir, &["cat-file", "blob", &id.to_string()]))
            .collect();
        for reading in [Reading::Traverse, Reading::OneByOne] {
            let got = read(&repo, &some, reading);
            assert!(got == want, "{reading:?} read different bytes for a subset");
        }
    }

    /// Loose blobs, read from their files directly, come out as git stores
    /// them, from the repository's own object directory and from an
    /// alternate's; what is not a blob, or not a valid loose object, is
    /// refused.
    #[test]
    fn loose_blobs_are_read_directly_and_checked() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().join("base");
        let dir = tmp.path().join("clone");
        std::fs::create_dir(&base).expect("mkdir");
        git(&base, &["init", "-q"]);
        let texts = crate::testing::real_text();
        for (i, text) in texts.iter().take(3).enumerate() {
            std::fs::write(base.join(format!("base{i}.txt")), text).expect("write");
        }
        git(&base, &["add", "-A"]);
        git(&base, &["commit", "-q", "-m", "base"]);
        let base_arg = base.to_str().expect("utf-8 path");
        let dir_arg = dir.to_str().expect("utf-8 path");
        git(tmp.path(), &["clone", "-q", "--shared", base_arg, dir_arg]);
        // Blobs of every size class: empty, small, large (several inflate
        // calls), all loose in the clone.
        let mut big = Vec::new();
        for text in texts.iter().skip(3).take(40) {
            big.extend_from_slice(text);
        }
        std::fs::write(dir.join("empty.txt"), b"").expect("write");
        std::fs::write(dir.join("small.txt"), b"one line\n").expect("write");
        std::fs::write(dir.join("big.txt"), &big).expect("write");
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "loose"]);
        let listing = git(&dir, &["ls-tree", "-r", "HEAD"]);
        let listing = String::from_utf8(listing).expect("utf-8");
        let ids: Vec<ObjectId> = listing
            .lines()
            .map(|l| ObjectId::from_hex(l.split(['\t', ' ']).nth(2).expect("id").as_bytes()))
            .collect::<Result<_, _>>()
            .expect("hex ids");
        assert_eq!(ids.len(), 6);
        let repo = Repo::discover(&dir).expect("open");
        let got = read(&repo, &ids, Reading::Cheapest);
        for (id, data) in ids.iter().zip(&got) {
            assert!(
                *data == git(&dir, &["cat-file", "blob", &id.to_string()]),
                "{id} read differently"
            );
        }
        assert!(got.contains(&big), "the large blob was not read");

        // A tree asked for as a blob.
        let tree = git(&dir, &["rev-parse", "HEAD^{tree}"]);
        let tree = ObjectId::from_hex(String::from_utf8(tree).expect("utf-8").trim().as_bytes())
            .expect("hex id");
        let err = repo
            .for_each_blob(&[tree], &Feedback::none(), |_, _| {})
            .expect_err("a tree is not a blob");
        assert!(
            matches!(err, RepoError::WrongKind { id, .. } if id == tree),
            "{err:?}"
        );

        // A loose file that is not zlib: an error naming the object and
        // its file, as git does, never a panic or garbage.
        let small = ids[listing
            .lines()
            .position(|l| l.ends_with("\tsmall.txt"))
            .expect("small.txt listed")];
        let hex = small.to_string();
        let path = dir.join(".git/objects").join(&hex[..2]).join(&hex[2..]);
        let mut perms = std::fs::metadata(&path).expect("stat").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).expect("chmod");
        std::fs::write(&path, b"not a zlib stream").expect("corrupt");
        let err = repo
            .for_each_blob(&[small], &Feedback::none(), |_, _| {})
            .expect_err("corrupt object");
        assert!(
            matches!(&err, RepoError::CorruptLoose { id, path: p, .. } if *id == small && *p == path),
            "{err:?}"
        );
    }
}
