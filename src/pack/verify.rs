//! Checking a freshly written pack before anything relies on it.

use std::path::Path;

use gix::ObjectId;

use crate::progress::{Feedback, Interrupted};
use crate::repo::RepoError;

/// Check a pack before anything relies on it: the index's and the pack's
/// checksums hold, they belong to each other, the pack holds as many
/// objects as its index, and the index lists exactly `expected` (sorted,
/// each once). This reads the pack once for its checksum but does not
/// inflate objects; `git pack-objects` wrote it and checked its deltas.
/// `feedback`'s flag stops the checksums ([`RepoError::Interrupted`]).
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
    index
        .verify_checksum(&mut gix::progress::Discard, interrupt)
        .map_err(|e| fail(format!("index checksum: {e}")))?;
    data.verify_checksum(&mut gix::progress::Discard, interrupt)
        .map_err(|e| fail(format!("pack checksum: {e}")))?;
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
    Ok(())
}
