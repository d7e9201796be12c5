//! The `.idx` (version 2) and `.rev` files of a pack git-simm wrote, made
//! from what the writer already knows (each entry's object id, offset and
//! CRC-32) instead of by `git index-pack`, which inflates and hashes every
//! object again: on ripgrep and jq that took a third of `repack
//! --bases=simm`'s time. What index-pack's re-reading guarded against is
//! checked by [`crate::pack::reread`] instead, at a fraction of the cost.
//!
//! Both layouts are `gitformat-pack(5)`'s; the tests compare our files with
//! the ones `git index-pack --rev-index` writes for the same pack, byte for
//! byte.

use gix::hash::{Kind as HashKind, ObjectId};

use super::write::{WriteError, Written};

/// The first four bytes of a version-2 index (`\377tOc`).
const IDX_MAGIC: [u8; 4] = [0xff, b't', b'O', b'c'];

/// The first four bytes of a reverse index.
const RIDX_MAGIC: [u8; 4] = *b"RIDX";

/// Offsets above this go to the index's 64-bit table, as git puts them
/// (`pack_idx_opts.off32_limit`).
const OFF32_LIMIT: u64 = 0x7fff_ffff;

/// One object of the pack: its id and where its entry is.
#[derive(Debug, Clone, Copy)]
pub struct IndexedEntry {
    /// The object's id.
    pub id: ObjectId,
    /// Offset and CRC-32 of its entry, from the writer.
    pub written: Written,
}

/// The bytes of a version-2 `.idx` for a pack of `entries` (any order) whose
/// trailer is `pack_checksum`, and the order of the entries in it (sorted by
/// id), which the `.rev` is built from.
///
/// # Errors
///
/// [`WriteError::Backend`] when the hash refuses its input (SHA-1 collision
/// detection).
pub fn index_bytes(
    hash: HashKind,
    entries: &[IndexedEntry],
    pack_checksum: &ObjectId,
) -> Result<(Vec<u8>, Vec<u32>), WriteError> {
    let mut sorted: Vec<u32> = (0..entries.len() as u32).collect();
    sorted.sort_unstable_by_key(|&i| entries[i as usize].id);
    let id_len = hash.len_in_bytes();
    let mut out = Vec::with_capacity(8 + 256 * 4 + entries.len() * (id_len + 8) + 2 * id_len);
    out.extend_from_slice(&IDX_MAGIC);
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for e in entries {
        fanout[usize::from(e.id.as_bytes()[0])] += 1;
    }
    let mut total = 0u32;
    for n in fanout {
        total += n;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for &i in &sorted {
        out.extend_from_slice(entries[i as usize].id.as_bytes());
    }
    for &i in &sorted {
        out.extend_from_slice(&entries[i as usize].written.crc32.to_be_bytes());
    }
    let mut large: Vec<u64> = Vec::new();
    for &i in &sorted {
        let offset = entries[i as usize].written.offset;
        let word = if offset > OFF32_LIMIT {
            large.push(offset);
            0x8000_0000 | (large.len() as u32 - 1)
        } else {
            offset as u32
        };
        out.extend_from_slice(&word.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum.as_bytes());
    append_checksum(hash, &mut out)?;
    Ok((out, sorted))
}

/// The bytes of the `.rev` of the same pack: for each entry in pack order,
/// its position in the index. `sorted` is [`index_bytes`]' second result:
/// the entries in index order, given as positions in `entries`.
///
/// # Errors
///
/// As [`index_bytes`].
pub fn rev_bytes(
    hash: HashKind,
    entries: &[IndexedEntry],
    sorted: &[u32],
    pack_checksum: &ObjectId,
) -> Result<Vec<u8>, WriteError> {
    // Index positions ordered by the offset of the entry they name.
    let mut by_offset: Vec<u32> = (0..sorted.len() as u32).collect();
    by_offset.sort_unstable_by_key(|&pos| entries[sorted[pos as usize] as usize].written.offset);
    let id_len = hash.len_in_bytes();
    let mut out = Vec::with_capacity(12 + by_offset.len() * 4 + 2 * id_len);
    out.extend_from_slice(&RIDX_MAGIC);
    out.extend_from_slice(&1u32.to_be_bytes());
    // gitformat-pack(5)'s numbers for the hash functions.
    let hash_id: u32 = match hash {
        HashKind::Sha1 => 1,
        HashKind::Sha256 => 2,
        other => {
            return Err(WriteError::Backend(format!(
                "no reverse index format for {other}"
            )));
        }
    };
    out.extend_from_slice(&hash_id.to_be_bytes());
    for pos in by_offset {
        out.extend_from_slice(&pos.to_be_bytes());
    }
    out.extend_from_slice(pack_checksum.as_bytes());
    append_checksum(hash, &mut out)?;
    Ok(out)
}

/// Appends the hash of `out` to it: every index file's trailer.
fn append_checksum(hash: HashKind, out: &mut Vec<u8>) -> Result<(), WriteError> {
    let mut hasher = gix::hash::hasher(hash);
    hasher.update(out);
    let sum = hasher
        .try_finalize()
        .map_err(|e| WriteError::Backend(e.to_string()))?;
    out.extend_from_slice(sum.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::write::{Entry, write_pack};
    use crate::testing::git;
    use gix::objs::Kind as ObjectKind;
    use gix::zlib::Compression;

    /// Write `objects` as a pack (some as deltas), our `.idx`/`.rev` beside
    /// it, and compare with what `git index-pack --rev-index` makes.
    fn same_as_git(hash: HashKind, contents: &[Vec<u8>]) {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path().join("repo");
        let format = if hash == HashKind::Sha256 {
            "sha256"
        } else {
            "sha1"
        };
        git(
            dir.path(),
            &[
                "init",
                "-q",
                "--bare",
                &format!("--object-format={format}"),
                "repo",
            ],
        );
        // Entries: the first whole, each next one a delta against the
        // previous one when that is smaller, else whole.
        let mut deltas = Vec::new();
        for w in contents.windows(2) {
            deltas.push(
                crate::pack::delta::Index::new(&w[0]).delta(&w[1], w[1].len().saturating_sub(1)),
            );
        }
        let mut entries = vec![Entry::Full {
            kind: ObjectKind::Blob,
            data: &contents[0],
        }];
        for (i, d) in deltas.iter().enumerate() {
            entries.push(match d {
                Some(d) => Entry::Delta { base: i, delta: d },
                None => Entry::Full {
                    kind: ObjectKind::Blob,
                    data: &contents[i + 1],
                },
            });
        }
        let pack = write_pack(Vec::new(), &entries, hash, Compression::DEFAULT).unwrap();
        let ids: Vec<ObjectId> = contents
            .iter()
            .map(|c| gix::objs::compute_hash(hash, ObjectKind::Blob, c).unwrap())
            .collect();
        let indexed: Vec<IndexedEntry> = ids
            .iter()
            .zip(&pack.entries)
            .map(|(&id, &written)| IndexedEntry { id, written })
            .collect();
        let (idx, sorted) = index_bytes(hash, &indexed, &pack.checksum).unwrap();
        let rev = rev_bytes(hash, &indexed, &sorted, &pack.checksum).unwrap();

        let pack_dir = git_dir.join("objects/pack");
        std::fs::write(pack_dir.join("pack-x.pack"), &pack.out).unwrap();
        git(&pack_dir, &["index-pack", "--rev-index", "pack-x.pack"]);
        let theirs_idx = std::fs::read(pack_dir.join("pack-x.idx")).unwrap();
        let theirs_rev = std::fs::read(pack_dir.join("pack-x.rev")).unwrap();
        assert_eq!(idx.len(), theirs_idx.len(), "idx length");
        assert!(idx == theirs_idx, "idx bytes differ from git's");
        assert!(rev == theirs_rev, "rev bytes differ from git's");
    }

    fn corpus_versions(n: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for f in crate::testing::real_text().into_iter().take(n) {
            // Each file, then an edited version of it, so some entries are
            // deltas.
            let mut edited = f.clone();
            edited.extend_from_slice(b"\n// an edit\n");
            out.push(f);
            out.push(edited);
        }
        out
    }

    #[test]
    fn idx_and_rev_are_gits_sha1() {
        same_as_git(HashKind::Sha1, &corpus_versions(150));
    }

    #[test]
    fn idx_and_rev_are_gits_sha256() {
        same_as_git(HashKind::Sha256, &corpus_versions(40));
    }

    /// Offsets past 2 GiB go to the 64-bit table (no test writes such a
    /// pack; gix's index reader, which knows the layout independently,
    /// reads the offsets back).
    #[test]
    fn large_offsets_read_back() {
        let offsets = [12u64, 0x7fff_ffff, 0x8000_0000, 5 << 32, 77, (1 << 40) + 3];
        let entries: Vec<IndexedEntry> = offsets
            .iter()
            .enumerate()
            .map(|(i, &offset)| IndexedEntry {
                id: gix::objs::compute_hash(HashKind::Sha1, ObjectKind::Blob, &[i as u8]).unwrap(),
                written: Written {
                    offset,
                    crc32: i as u32 * 7,
                },
            })
            .collect();
        let checksum = ObjectId::null(HashKind::Sha1);
        let (idx, _) = index_bytes(HashKind::Sha1, &entries, &checksum).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pack-x.idx");
        std::fs::write(&path, &idx).unwrap();
        let file = gix::odb::pack::index::File::at(&path, HashKind::Sha1).unwrap();
        assert_eq!(file.version(), gix::odb::pack::index::Version::V2);
        assert_eq!(file.num_objects() as usize, entries.len());
        for e in &entries {
            let at = file.lookup(e.id).unwrap();
            assert_eq!(file.pack_offset_at_index(at), e.written.offset);
            assert_eq!(file.crc32_at_index(at), Some(e.written.crc32));
        }
        file.verify_checksum(
            &mut gix::progress::Discard,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
    }
}
