//! Tests of [`crate::pack::write`], kept apart from the module so that
//! the module reads as the format.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use gix::zlib::{Decompress, FlushDecompress};

use super::*;
use crate::pack::delta::{self, Index, apply};
use crate::testing::Rng;

const SHA1: HashKind = HashKind::Sha1;

/// What a test pack holds: every object's kind and content, and how
/// each entry stores it.
struct Plan {
    objects: Vec<(ObjectKind, Vec<u8>)>,
    /// Per object: `None` for a full entry, `Some((base, by_id))` for a
    /// delta against object `base`, as a REF_DELTA if `by_id`.
    storage: Vec<Option<(usize, bool)>>,
}

impl Plan {
    fn new() -> Plan {
        Plan {
            objects: Vec::new(),
            storage: Vec::new(),
        }
    }

    fn full(&mut self, kind: ObjectKind, data: Vec<u8>) -> usize {
        self.objects.push((kind, data));
        self.storage.push(None);
        self.objects.len() - 1
    }

    fn delta(&mut self, base: usize, by_id: bool, data: Vec<u8>) -> usize {
        let kind = self.objects[base].0;
        self.objects.push((kind, data));
        self.storage.push(Some((base, by_id)));
        self.objects.len() - 1
    }

    fn id(&self, i: usize) -> ObjectId {
        let (kind, data) = &self.objects[i];
        gix::objs::compute_hash(SHA1, *kind, data).unwrap()
    }

    /// The pack, with deltas from this crate's encoder.
    fn write(&self, level: Compression) -> (Vec<u8>, Pack<Vec<u8>>) {
        let deltas: Vec<Option<Vec<u8>>> = self
            .storage
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.map(|(base, _)| delta::delta(&self.objects[base].1, &self.objects[i].1))
            })
            .collect();
        let entries: Vec<Entry<'_>> = (0..self.objects.len())
            .map(|i| match (self.storage[i], &deltas[i]) {
                (Some((base, false)), Some(d)) => Entry::Delta { base, delta: d },
                (Some((base, true)), Some(d)) => Entry::RefDelta {
                    base: self.id(base),
                    delta: d,
                },
                _ => Entry::Full {
                    kind: self.objects[i].0,
                    data: &self.objects[i].1,
                },
            })
            .collect();
        let pack = write_pack(Vec::new(), &entries, SHA1, level).unwrap();
        (pack.out.clone(), pack)
    }
}

/// One entry as read back by [`read_pack`].
struct ReadEntry {
    offset: u64,
    code: u8,
    size: u64,
    ofs_base: Option<u64>,
    ref_base: Option<Vec<u8>>,
    data: Vec<u8>,
    crc32: u32,
}

/// A pack reader written for the test from the format: checks the
/// header and trailer and inflates every entry.
fn read_pack(pack: &[u8]) -> Vec<ReadEntry> {
    assert_eq!(&pack[..8], b"PACK\0\0\0\x02");
    let count = u32::from_be_bytes(pack[8..12].try_into().unwrap());
    let body = &pack[..pack.len() - 20];
    let mut hasher = gix::hash::hasher(SHA1);
    hasher.update(body);
    assert_eq!(
        hasher.try_finalize().unwrap().as_bytes(),
        &pack[pack.len() - 20..]
    );
    let mut at = 12;
    let mut out = Vec::new();
    for _ in 0..count {
        let offset = at;
        let mut byte = body[at];
        at += 1;
        let code = (byte >> 4) & 7;
        let mut size = u64::from(byte & 0x0f);
        let mut shift = 4;
        while byte & 0x80 != 0 {
            byte = body[at];
            at += 1;
            size |= u64::from(byte & 0x7f) << shift;
            shift += 7;
        }
        let (mut ofs_base, mut ref_base) = (None, None);
        if code == OBJ_OFS_DELTA {
            let mut byte = body[at];
            at += 1;
            let mut d = u64::from(byte & 0x7f);
            while byte & 0x80 != 0 {
                byte = body[at];
                at += 1;
                d = ((d + 1) << 7) | u64::from(byte & 0x7f);
            }
            ofs_base = Some(offset as u64 - d);
        } else if code == OBJ_REF_DELTA {
            ref_base = Some(body[at..at + 20].to_vec());
            at += 20;
        }
        let mut z = Decompress::new();
        let mut data = vec![0; size as usize + 1];
        let status = z
            .decompress(&body[at..], &mut data, FlushDecompress::Finish)
            .unwrap();
        assert_eq!(status, gix::zlib::Status::StreamEnd);
        assert_eq!(z.total_out(), size);
        data.truncate(size as usize);
        at += z.total_in() as usize;
        out.push(ReadEntry {
            offset: offset as u64,
            code,
            size,
            ofs_base,
            ref_base,
            data,
            crc32: crc32fast::hash(&body[offset..at]),
        });
    }
    assert_eq!(at, body.len(), "bytes after the last entry");
    out
}

/// git in `dir`, with none of the caller's configuration or `GIT_*`
/// variables.
fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(dir);
    cmd
}

fn git(dir: &Path, args: &[&str]) -> Output {
    git_command(dir).args(args).output().unwrap()
}

fn git_ok(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = git(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn header_and_offset_encodings() {
    let header = |code, size| {
        let mut v = Vec::new();
        push_header(&mut v, code, size);
        v
    };
    assert_eq!(header(OBJ_BLOB, 0), [0x30]);
    assert_eq!(header(OBJ_BLOB, 15), [0x3f]);
    assert_eq!(header(OBJ_BLOB, 16), [0xb0, 0x01]);
    assert_eq!(header(OBJ_COMMIT, 0x7ff), [0x9f, 0x7f]);
    assert_eq!(header(OBJ_OFS_DELTA, 0x800), [0xe0, 0x80, 0x01]);
    assert_eq!(header(OBJ_TAG, u64::MAX).len(), 10);
    let distance = |d| {
        let mut v = Vec::new();
        push_ofs_distance(&mut v, d);
        v
    };
    assert_eq!(distance(1), [0x01]);
    assert_eq!(distance(127), [0x7f]);
    assert_eq!(distance(128), [0x80, 0x00]);
    assert_eq!(distance(16_511), [0xff, 0x7f]);
    assert_eq!(distance(16_512), [0x80, 0x80, 0x00]);
    assert_eq!(distance(u64::MAX).len(), 10);
}

/// Blobs of every awkward shape, versions of the crate's own sources
/// in OFS_DELTA chains, a REF_DELTA, and trees and commits (one tree a
/// delta of the other) that make every object reachable.
fn plan() -> Plan {
    let mut rng = Rng(11);
    let mut plan = Plan::new();
    let mut blobs = Vec::new();
    blobs.push(plan.full(ObjectKind::Blob, Vec::new()));
    blobs.push(plan.full(ObjectKind::Blob, b"x".to_vec()));
    let binary: Vec<u8> = (0..=255u8).cycle().take(256 * 40).collect();
    let b = plan.full(ObjectKind::Blob, binary.clone());
    blobs.push(b);
    let mut binary2 = binary.clone();
    binary2[1000] ^= 0xff;
    binary2.extend(0..=255u8);
    blobs.push(plan.delta(b, false, binary2));
    // A tiny target against a tiny base, and a target that is its base
    // plus one byte (near-identical, since two identical blobs would be
    // one object).
    let t = plan.full(ObjectKind::Blob, b"tiny base".to_vec());
    blobs.push(t);
    blobs.push(plan.delta(t, false, b"tiny base!".to_vec()));
    // Huge: offsets past 16 MiB, copies past 64 KiB and past 24 bits.
    let huge = rng.bytes(18 << 20);
    let mut huge2 = huge[17 << 20..].to_vec();
    huge2.extend(rng.bytes(100));
    huge2.extend_from_slice(&huge[..(17 << 20) + 5]);
    let h = plan.full(ObjectKind::Blob, huge);
    blobs.push(h);
    blobs.push(plan.delta(h, false, huge2));
    // Real text: chains of edited versions of corpus files.
    let corpus = crate::testing::real_text();
    for (name, text) in ["a", "b", "c"]
        .iter()
        .zip([&corpus[3], &corpus[100], &corpus[300]])
    {
        let mut text = text.clone();
        let mut prev = plan.full(ObjectKind::Blob, text.clone());
        blobs.push(prev);
        for depth in 0..5 {
            let at = rng.below(text.len());
            text.splice(at..at, format!("edit {depth} of {name}\n").bytes());
            let cut = rng.below(text.len() - 20);
            text.drain(cut..cut + 20);
            // One link of each chain by object id.
            prev = plan.delta(prev, depth == 2, text.clone());
            blobs.push(prev);
        }
    }
    // Every blob in a tree (named in sorted order), the tree and a second
    // one with one entry less (as a delta) in commits.
    let mut tree = Vec::new();
    for (n, &b) in blobs.iter().enumerate() {
        tree.extend(format!("100644 f{n:03}\0").bytes());
        tree.extend_from_slice(plan.id(b).as_bytes());
    }
    let t1 = plan.full(ObjectKind::Tree, tree.clone());
    let cut = tree.len() - (b"100644 f000\0".len() + 20);
    let t2 = plan.delta(t1, false, tree[..cut].to_vec());
    let commit = |tree: ObjectId, parent: Option<ObjectId>| {
        let mut c = format!("tree {tree}\n");
        if let Some(p) = parent {
            c += &format!("parent {p}\n");
        }
        c += "author A U Thor <author@example.com> 1112911993 +0000\n\
              committer C O Mitter <committer@example.com> 1112911993 +0000\n\nmsg\n";
        c.into_bytes()
    };
    let c1 = plan.full(ObjectKind::Commit, commit(plan.id(t1), None));
    plan.full(ObjectKind::Commit, commit(plan.id(t2), Some(plan.id(c1))));
    plan
}

#[test]
fn packs_read_back() {
    let plan = plan();
    for level in [Compression::NONE, Compression::BEST_SPEED] {
        let (bytes, pack) = plan.write(level);
        assert_eq!(pack.len, bytes.len() as u64);
        let mut h = gix::hash::hasher(SHA1);
        h.update(&bytes[..bytes.len() - 20]);
        assert_eq!(pack.checksum, h.try_finalize().unwrap());
        let read = read_pack(&bytes);
        assert_eq!(read.len(), plan.objects.len());
        let mut contents: Vec<Vec<u8>> = Vec::new();
        for (i, e) in read.iter().enumerate() {
            assert_eq!(pack.entries[i].offset, e.offset);
            assert_eq!(pack.entries[i].crc32, e.crc32);
            let content = match plan.storage[i] {
                None => {
                    assert_eq!(e.size, plan.objects[i].1.len() as u64);
                    assert!(e.code >= 1 && e.code <= 4);
                    e.data.clone()
                }
                Some((base, by_id)) => {
                    if by_id {
                        assert_eq!(e.code, OBJ_REF_DELTA);
                        assert_eq!(e.ref_base.as_deref(), Some(plan.id(base).as_bytes()));
                    } else {
                        assert_eq!(e.code, OBJ_OFS_DELTA);
                        assert_eq!(e.ofs_base, Some(pack.entries[base].offset));
                    }
                    apply(&contents[base], &e.data).unwrap()
                }
            };
            assert!(content == plan.objects[i].1, "object {i} differs");
            contents.push(content);
        }
    }
}

#[test]
fn misuse_is_an_error() {
    let blob = Entry::Full {
        kind: ObjectKind::Blob,
        data: b"x",
    };
    let mut w = PackWriter::new(Vec::new(), 2, SHA1, Compression::DEFAULT).unwrap();
    w.add(&blob).unwrap();
    // A delta may only refer back, not to itself or later entries.
    for base in [1, 2] {
        assert!(matches!(
            w.add(&Entry::Delta {
                base,
                delta: b"\x01\x01\x01y"
            }),
            Err(WriteError::BaseNotWritten { entry: 1, .. })
        ));
    }
    assert!(matches!(
        PackWriter::new(Vec::new(), 2, SHA1, Compression::DEFAULT)
            .unwrap()
            .finish(),
        Err(WriteError::CountMismatch {
            declared: 2,
            written: 0
        })
    ));
    w.add(&blob).unwrap();
    assert!(matches!(
        w.add(&blob),
        Err(WriteError::CountMismatch {
            declared: 2,
            written: 3
        })
    ));
    assert!(w.finish().is_ok());
    #[cfg(target_pointer_width = "64")]
    assert!(matches!(
        PackWriter::new(Vec::new(), 1 << 32, SHA1, Compression::DEFAULT),
        Err(WriteError::TooManyObjects(_))
    ));
}

/// The pack goes through git's own checks: `index-pack --strict`
/// resolves every delta, `verify-pack -v` agrees on every offset and
/// chain, `cat-file` gives back every object, and `fsck --full` finds a
/// repository holding exactly these objects clean.
#[test]
fn git_accepts_the_packs() {
    let plan = plan();
    let ids: Vec<ObjectId> = (0..plan.objects.len()).map(|i| plan.id(i)).collect();
    let (bytes, pack) = plan.write(Compression::DEFAULT);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git_ok(dir, &["init", "-q", "--bare", "repo.git"]);
    let repo = dir.join("repo.git");
    let name = format!("pack-{}", pack.checksum);
    let pack_dir = repo.join("objects/pack");
    let pack_path = pack_dir.join(format!("{name}.pack"));
    std::fs::write(&pack_path, &bytes).unwrap();
    let idx = pack_dir.join(format!("{name}.idx"));
    let out = git_ok(
        &repo,
        &[
            "index-pack",
            "--strict",
            "-o",
            idx.to_str().unwrap(),
            pack_path.to_str().unwrap(),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out).trim(),
        pack.checksum.to_string()
    );

    // The .idx records the CRC-32 and offset of every entry: they must
    // be the ones the writer returned.
    let idx_bytes = std::fs::read(&idx).unwrap();
    let n = ids.len();
    let mut sorted: Vec<usize> = (0..n).collect();
    sorted.sort_by_key(|&i| ids[i]);
    let table = 8 + 256 * 4;
    for (row, &i) in sorted.iter().enumerate() {
        let id_at = table + row * 20;
        assert_eq!(&idx_bytes[id_at..id_at + 20], ids[i].as_bytes());
        let crc_at = table + n * 20 + row * 4;
        let crc = u32::from_be_bytes(idx_bytes[crc_at..crc_at + 4].try_into().unwrap());
        assert_eq!(crc, pack.entries[i].crc32, "CRC of object {i}");
        let off_at = table + n * 24 + row * 4;
        let off = u32::from_be_bytes(idx_bytes[off_at..off_at + 4].try_into().unwrap());
        assert_eq!(
            u64::from(off),
            pack.entries[i].offset,
            "offset of object {i}"
        );
    }

    // verify-pack: every object, at our offset, deltas at the depth of
    // their chain.
    let listing = git_ok(&repo, &["verify-pack", "-v", idx.to_str().unwrap()]);
    let listing = String::from_utf8(listing).unwrap();
    let depth = |mut i: usize| {
        let mut d = 0;
        while let Some((base, _)) = plan.storage[i] {
            i = base;
            d += 1;
        }
        d
    };
    let hex: Vec<String> = ids.iter().map(ObjectId::to_string).collect();
    let mut seen = 0;
    for line in listing.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = hex.iter().position(|id| id == f[0]) else {
            continue;
        };
        seen += 1;
        assert_eq!(f[4], pack.entries[i].offset.to_string(), "{line}");
        match plan.storage[i] {
            None => assert_eq!(f.len(), 5, "{line}"),
            Some((base, _)) => {
                assert_eq!(f[5], depth(i).to_string(), "{line}");
                assert_eq!(f[6], hex[base], "{line}");
            }
        }
    }
    assert_eq!(seen, n);
    assert!(plan.storage.iter().enumerate().any(|(i, _)| depth(i) >= 5));

    // Every object's content, byte for byte.
    for (i, (kind, data)) in plan.objects.iter().enumerate() {
        let out = git_ok(&repo, &["cat-file", &kind.to_string(), &ids[i].to_string()]);
        assert!(out == *data, "object {i} ({kind}) differs");
    }

    // The repository holds exactly these objects, all reachable from
    // the second commit: fsck has nothing to say.
    let head = ids[n - 1].to_string();
    git_ok(&repo, &["update-ref", "refs/heads/main", &head]);
    git_ok(&repo, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    let out = git(&repo, &["fsck", "--full", "--strict", "--no-progress"]);
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "fsck: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let count = git_ok(&repo, &["count-objects", "-v"]);
    let count = String::from_utf8(count).unwrap();
    assert!(count.contains(&format!("in-pack: {n}\n")), "{count}");
    assert!(count.contains("count: 0\n"), "{count}");
}

/// A reused [`Index`] against several targets, one identical to the
/// base, written and read back through git's `unpack-objects`, which
/// resolves deltas without an index (and, unlike `index-pack --strict`,
/// accepts the same object twice in a pack).
#[test]
fn unpack_objects_resolves_the_deltas() {
    let corpus = crate::testing::real_text();
    let base = corpus.iter().max_by_key(|t| t.len()).unwrap().clone();
    let index = Index::new(&base);
    let mut rng = Rng(12);
    let mut targets: Vec<Vec<u8>> = (0..6)
        .map(|_| {
            let mut t = base.clone();
            let at = rng.below(t.len());
            t.splice(at..at, rng.bytes(40));
            t
        })
        .collect();
    targets.push(base.clone());
    let deltas: Vec<Vec<u8>> = targets
        .iter()
        .map(|t| index.delta(t, t.len() / 2).unwrap())
        .collect();
    let mut entries = vec![Entry::Full {
        kind: ObjectKind::Blob,
        data: &base,
    }];
    entries.extend(deltas.iter().map(|d| Entry::Delta { base: 0, delta: d }));
    let pack = write_pack(Vec::new(), &entries, SHA1, Compression::BEST).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    git_ok(tmp.path(), &["init", "-q", "--bare", "r.git"]);
    let repo = tmp.path().join("r.git");
    let mut child = git_command(&repo)
        .args(["unpack-objects", "--strict", "-q"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&pack.out).unwrap();
    assert!(child.wait().unwrap().success());
    for t in targets.iter().chain([&base]) {
        let id = gix::objs::compute_hash(SHA1, ObjectKind::Blob, t).unwrap();
        let out = git_ok(&repo, &["cat-file", "blob", &id.to_string()]);
        assert!(out == *t);
    }
}

/// The other direction: git's own deltas (from `git pack-objects`,
/// OFS_DELTA and REF_DELTA) decode with [`apply`] to git's objects.
#[test]
fn git_deltas_decode() {
    let tmp = tempfile::tempdir().unwrap();
    git_ok(tmp.path(), &["init", "-q", "--bare", "r.git"]);
    let repo = tmp.path().join("r.git");
    let corpus = crate::testing::real_text();
    let mut rng = Rng(13);
    let mut blobs = Vec::new();
    for text in [&corpus[10], &corpus[200], &corpus[400]] {
        let mut text = text.clone();
        for _ in 0..6 {
            blobs.push(text.clone());
            let at = rng.below(text.len());
            text.splice(at..at, rng.bytes(30));
            let cut = rng.below(text.len() - 50);
            text.drain(cut..cut + 50);
        }
    }
    let mut ids = Vec::new();
    for b in &blobs {
        let path = tmp.path().join("blob");
        std::fs::write(&path, b).unwrap();
        let out = git_ok(&repo, &["hash-object", "-w", path.to_str().unwrap()]);
        ids.push(String::from_utf8(out).unwrap().trim().to_owned());
    }
    for ofs in [true, false] {
        let mut cmd = git_command(&repo);
        cmd.args([
            "pack-objects",
            "--stdout",
            "--window=10",
            "--depth=50",
            "-q",
        ]);
        if ofs {
            cmd.arg("--delta-base-offset");
        }
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(ids.join("\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let entries = read_pack(&out.stdout);
        // Resolve in pack order (git writes bases first).
        let mut by_offset: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut by_id: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut deltas = 0;
        for e in &entries {
            let content = match (e.ofs_base, &e.ref_base) {
                (Some(base), _) => apply(&by_offset[&base], &e.data).unwrap(),
                (None, Some(id)) => apply(&by_id[id.as_slice()], &e.data).unwrap(),
                (None, None) => e.data.clone(),
            };
            deltas += usize::from(e.code >= OBJ_OFS_DELTA);
            let id = gix::objs::compute_hash(SHA1, ObjectKind::Blob, &content).unwrap();
            by_id.insert(id.as_bytes().to_vec(), content.clone());
            by_offset.insert(e.offset, content);
        }
        assert!(deltas >= blobs.len() / 2, "only {deltas} deltas");
        for (b, id) in blobs.iter().zip(&ids) {
            let id = ObjectId::from_hex(id.as_bytes()).unwrap();
            assert!(by_id[id.as_bytes()] == *b);
        }
    }
}

#[test]
fn entries_compressed_elsewhere_make_the_same_pack() {
    let base = b"the base object, long enough to be worth a delta: 0123456789".repeat(4);
    let mut target = base.clone();
    target.extend_from_slice(b"and a tail");
    let d = delta::delta(&base, &target);
    let level = Compression::DEFAULT;
    let hash = HashKind::Sha1;
    let whole = write_pack(
        Vec::new(),
        &[
            Entry::Full {
                kind: ObjectKind::Blob,
                data: &base,
            },
            Entry::Delta { base: 0, delta: &d },
        ],
        hash,
        level,
    )
    .expect("pack");
    let mut w = PackWriter::new(Vec::new(), 2, hash, level).expect("writer");
    let mut zlib = Compress::new(level);
    let mut z = Vec::new();
    deflate_into(&mut zlib, &base, &mut z).expect("deflate");
    let b = w
        .add_deflated(Head::Full(ObjectKind::Blob), base.len() as u64, &z)
        .expect("base");
    z.clear();
    deflate_into(&mut zlib, &d, &mut z).expect("deflate");
    w.add_deflated(Head::Delta(b), d.len() as u64, &z)
        .expect("delta");
    let split = w.finish().expect("finish");
    assert_eq!(split.out, whole.out);
    assert_eq!(split.entries, whole.entries);
    // A delta against an entry not written yet is refused.
    let mut w = PackWriter::new(Vec::new(), 1, hash, level).expect("writer");
    assert!(matches!(
        w.add_deflated(Head::Delta(0), 1, &z),
        Err(WriteError::BaseNotWritten { .. })
    ));
}
