//! Checking a freshly written pack before anything relies on it.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use gix::ObjectId;

use crate::progress::{Feedback, Interrupted};
use crate::repo::RepoError;

/// Check a pack before anything relies on it: the index's and the pack's
/// checksums hold, they belong to each other, the pack holds as many
/// objects as its index, the index lists exactly `expected` (sorted, each
/// once), and every object, rebuilt from the pack along its delta chain,
/// hashes to the id the index gives it (what `git index-pack` checks of a
/// pack it receives): a pack is never
/// installed with an object whose content is not its id's, whatever the
/// writer read. `feedback`'s flag stops it ([`RepoError::Interrupted`]).
pub fn verify_pack(
    idx_path: &Path,
    hash: gix::hash::Kind,
    expected: &[ObjectId],
    feedback: &Feedback,
) -> Result<(), RepoError> {
    // gix reports an interrupt as a failure of what it was doing.
    let fail = |reason: String| {
        if feedback.is_interrupted() {
            RepoError::Interrupted(Interrupted)
        } else {
            RepoError::PackVerification {
                path: idx_path.to_owned(),
                reason,
            }
        }
    };
    let index = gix::odb::pack::index::File::at(idx_path, hash)
        .map_err(|e| fail(format!("index unreadable: {e}")))?;
    let data_path = idx_path.with_extension("pack");
    let data = gix::odb::pack::data::File::at(&data_path, hash)
        .map_err(|e| fail(format!("pack unreadable: {e}")))?;
    let interrupt = feedback.interrupt_flag();
    if index.pack_checksum() != data.checksum() {
        return Err(fail("the index belongs to another pack".into()));
    }
    if data.num_objects() != index.num_objects() {
        return Err(fail(format!(
            "the pack holds {} objects, its index {}",
            data.num_objects(),
            index.num_objects()
        )));
    }
    if index.num_objects() as usize != expected.len() {
        return Err(fail(format!(
            "{} objects instead of {}",
            index.num_objects(),
            expected.len()
        )));
    }
    // Index entries are sorted by id, like `expected`.
    if let Some((got, want)) = index
        .iter()
        .map(|e| e.oid)
        .zip(expected)
        .find(|(got, want)| got != *want)
    {
        return Err(fail(format!(
            "object {want} is missing (found {got} in its place)"
        )));
    }
    index
        .verify_checksum(&mut gix::progress::Discard, interrupt)
        .map_err(|e| fail(format!("index checksum: {e}")))?;
    data.verify_checksum(&mut gix::progress::Discard, interrupt)
        .map_err(|e| fail(format!("pack checksum: {e}")))?;
    verify_objects(&index, &data, hash, feedback).map_err(|e| match e {
        Failed::Interrupted => RepoError::Interrupted(Interrupted),
        Failed::Object(reason) => fail(reason),
    })
}

enum Failed {
    Interrupted,
    Object(String),
}

/// Rebuild every object of the pack along its delta trees (each inflated
/// once, as `git index-pack` resolves a pack) and hash it: the first one
/// whose content is not its id's, or that cannot be rebuilt, fails.
fn verify_objects(
    index: &gix::odb::pack::index::File,
    data: &gix::odb::pack::data::File,
    hash: gix::hash::Kind,
    feedback: &Feedback,
) -> Result<(), Failed> {
    use gix::odb::pack::index::traverse;
    let first: Mutex<Option<String>> = Mutex::new(None);
    let traversed = index.traverse_with_index(
        data,
        |kind, bytes: &[u8], entry: &gix::odb::pack::index::Entry, _: &dyn gix::Progress| {
            match gix::objs::compute_hash(hash, kind, bytes) {
                Ok(actual) if actual == entry.oid => Ok(()),
                other => {
                    let why = match other {
                        Ok(actual) => format!(
                            "{kind} {} does not hash to its id (its content hashes to {actual}): a copy it was read from is corrupt",
                            entry.oid
                        ),
                        Err(e) => format!("{kind} {} cannot be hashed: {e}", entry.oid),
                    };
                    first
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(why);
                    Err(gix::Error::from_error(std::io::Error::other("corrupt")))
                }
            }
        },
        &mut gix::progress::Discard,
        feedback.interrupt_flag(),
        traverse::with_index::Options {
            check: traverse::SafetyCheck::SkipFileAndObjectChecksumVerification,
            thread_limit: Some(rayon::current_num_threads()),
            alloc_limit_bytes: None,
        },
    );
    if feedback.is_interrupted() {
        return Err(Failed::Interrupted);
    }
    if let Some(why) = first.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(Failed::Object(why));
    }
    traversed
        .map(|_| ())
        .map_err(|e| Failed::Object(format!("cannot rebuild its objects: {e}")))
}
