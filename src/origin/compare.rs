//! The second pass of `origin`: one upstream directory state against the
//! local copy, file by file, as `git diff -M --name-status` from upstream
//! to the local copy would pair them.
//!
//! Files pair in this order, each step only among files still unpaired:
//! 1. the same relative path (identical when the blobs are, else
//!    modified, whatever its score: the path says they are one file);
//! 2. the same blob elsewhere (an identical file moved);
//! 3. the same name in another directory, scoring at least 50%;
//! 4. by content: the nearest fingerprints (upstream's from its own
//!    store), scored exactly, best pairs first, at least 50%.
//!
//! What is left is missing (upstream only) or added (local only).

use std::collections::HashMap;

use gix::ObjectId;

use crate::progress::Feedback;
use crate::repo::{Repo, RepoError};
use crate::similarity::candidates;
use crate::similarity::compute::{self, ComputeError};
use crate::similarity::fingerprint::{Fingerprinter, Sketch};
use crate::similarity::score::{self, Spans};
use crate::similarity::store::Store;

use super::{FilePair, Files, LocalFile, OneSide};

/// The local copy, prepared once for every state compared with it.
pub struct Local<'a> {
    /// The files, in path order.
    pub files: &'a [LocalFile],
    /// Blob ids, in the upstream repository's hash.
    pub ids: Vec<ObjectId>,
    /// Total size in bytes.
    pub bytes: u64,
    spans: Vec<Option<Spans>>,
    sketches: Vec<Option<Sketch>>,
}

impl<'a> Local<'a> {
    /// `files` with their blob ids in the hash `hash`.
    pub fn new(files: &'a [LocalFile], hash: gix::hash::Kind) -> Result<Self, RepoError> {
        let ids = files
            .iter()
            .map(|f| {
                gix::objs::compute_hash(hash, gix::object::Kind::Blob, &f.data).map_err(|source| {
                    RepoError::Hash {
                        path: String::from_utf8_lossy(&f.path).into_owned().into(),
                        source,
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Local {
            files,
            ids,
            bytes: files.iter().map(|f| f.data.len() as u64).sum(),
            spans: vec![None; files.len()],
            sketches: vec![None; files.len()],
        })
    }

    fn spans(&mut self, i: usize) -> &Spans {
        self.spans[i].get_or_insert_with(|| Spans::new(&self.files[i].data))
    }

    fn sketch(&mut self, i: usize) -> Sketch {
        *self.sketches[i].get_or_insert_with(|| Sketch {
            size: self.files[i].data.len() as u64,
            fingerprint: Fingerprinter::new().fingerprint(&self.files[i].data),
        })
    }
}

/// The error returned by comparing one state file by file (inside [`super::find_origin`]).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The upstream tree or a blob could not be read.
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// Upstream fingerprints could not be computed or stored.
    #[error(transparent)]
    Compute(#[from] ComputeError),
}

struct Upstream {
    path: Vec<u8>,
    id: ObjectId,
    size: u64,
}

/// The files of the upstream tree `tree` against the local copy.
pub fn compare(
    repo: &Repo,
    store: &mut Store,
    tree: ObjectId,
    local: &mut Local<'_>,
    feedback: &Feedback,
) -> Result<Files, CompareError> {
    let entries = repo.tree_files(tree)?;
    // A partial clone lacks blobs: one fetch for the directory's, not one
    // per file (a no-op elsewhere). The first pass needed only trees.
    let ids: Vec<ObjectId> = entries.iter().map(|e| e.id).collect();
    repo.fetch_missing(&ids, feedback)?;
    let mut reader = repo.reader();
    let upstream: Vec<Upstream> = entries
        .into_iter()
        .map(|e| {
            let size = reader.header(&e.id).map(|(_, s)| s)?;
            Ok(Upstream {
                path: e.path,
                id: e.id,
                size,
            })
        })
        .collect::<Result<_, RepoError>>()?;
    let n_local = local.files.len();
    let mut local_pair: Vec<Option<usize>> = vec![None; n_local];
    let mut up_paired = vec![false; upstream.len()];
    let mut files = Files::default();
    let mut pairs: Vec<(usize, usize, u32)> = Vec::new();

    // 1. Same path.
    let by_path: HashMap<&[u8], usize> = upstream
        .iter()
        .enumerate()
        .map(|(i, u)| (u.path.as_slice(), i))
        .collect();
    for (l, f) in local.files.iter().enumerate() {
        if let Some(&u) = by_path.get(f.path.as_slice()) {
            let score = if upstream[u].id == local.ids[l] {
                score::MAX_SCORE
            } else {
                let data = reader.blob(&upstream[u].id)?;
                score::score(&Spans::new(&data), local.spans(l), 0)
            };
            local_pair[l] = Some(u);
            up_paired[u] = true;
            pairs.push((l, u, score));
        }
    }
    // 2. The same blob elsewhere.
    let mut by_id: HashMap<ObjectId, Vec<usize>> = HashMap::new();
    for (i, u) in upstream.iter().enumerate() {
        if !up_paired[i] {
            by_id.entry(u.id).or_default().push(i);
        }
    }
    for (l, paired) in local_pair.iter_mut().enumerate() {
        if paired.is_some() {
            continue;
        }
        if let Some(list) = by_id.get_mut(&local.ids[l])
            && let Some(u) = list.pop()
        {
            *paired = Some(u);
            up_paired[u] = true;
            pairs.push((l, u, score::MAX_SCORE));
        }
    }
    // 3. The same name elsewhere, when that name is unique on both sides.
    let name =
        |p: &[u8]| -> Vec<u8> { p.rsplit(|&b| b == b'/').next().unwrap_or_default().to_vec() };
    let mut up_names: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    for (i, u) in upstream.iter().enumerate() {
        if !up_paired[i] {
            up_names.entry(name(&u.path)).or_default().push(i);
        }
    }
    let mut local_names: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    for (l, paired) in local_pair.iter().enumerate() {
        if paired.is_none() {
            local_names
                .entry(name(&local.files[l].path))
                .or_default()
                .push(l);
        }
    }
    for (n, ls) in &local_names {
        if let (Some(us), [l]) = (up_names.get(n), ls.as_slice())
            && let [u] = us.as_slice()
        {
            let data = reader.blob(&upstream[*u].id)?;
            let s = score::score(
                &Spans::new(&data),
                local.spans(*l),
                score::DEFAULT_MIN_SCORE,
            );
            if s >= score::DEFAULT_MIN_SCORE {
                local_pair[*l] = Some(*u);
                up_paired[*u] = true;
                pairs.push((*l, *u, s));
            }
        }
    }
    // 4. By content, through fingerprints.
    let rest_up: Vec<usize> = (0..upstream.len()).filter(|&i| !up_paired[i]).collect();
    let rest_local: Vec<usize> = (0..n_local).filter(|&l| local_pair[l].is_none()).collect();
    if !rest_up.is_empty() && !rest_local.is_empty() {
        let ids: Vec<ObjectId> = rest_up.iter().map(|&i| upstream[i].id).collect();
        let (sources, _) = compute::fingerprint_blobs(repo, store, &ids, &feedback.silent())?;
        let destinations: Vec<Sketch> = rest_local.iter().map(|&l| local.sketch(l)).collect();
        let found = candidates::search(
            &sources,
            &destinations,
            &candidates::Options {
                min_score: score::DEFAULT_MIN_SCORE,
                per_destination: 4,
                tie_margin: 0,
                max_ties: 4,
            },
        );
        let mut scored: Vec<(u32, usize, usize)> = Vec::new();
        let mut up_spans: HashMap<usize, Spans> = HashMap::new();
        for (d, c) in found.iter().enumerate() {
            for &s in &c.sources {
                let u = rest_up[s];
                if let std::collections::hash_map::Entry::Vacant(e) = up_spans.entry(u) {
                    e.insert(Spans::new(&reader.blob(&upstream[u].id)?));
                }
                let l = rest_local[d];
                let sc = score::score(&up_spans[&u], local.spans(l), score::DEFAULT_MIN_SCORE);
                if sc >= score::DEFAULT_MIN_SCORE {
                    scored.push((sc, l, u));
                }
            }
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        for (sc, l, u) in scored {
            if local_pair[l].is_none() && !up_paired[u] {
                local_pair[l] = Some(u);
                up_paired[u] = true;
                pairs.push((l, u, sc));
            }
        }
    }

    pairs.sort_by(|a, b| local.files[a.0].path.cmp(&local.files[b.0].path));
    let mut shared: u128 = 0;
    for (l, u, s) in pairs {
        let size = local.files[l].data.len() as u64;
        let pair = FilePair {
            local: OneSide {
                path: local.files[l].path.clone(),
                id: local.ids[l],
                size,
            },
            upstream: OneSide {
                path: upstream[u].path.clone(),
                id: upstream[u].id,
                size: upstream[u].size,
            },
            score: s,
        };
        if local.ids[l] == upstream[u].id {
            shared += u128::from(size) * u128::from(score::MAX_SCORE);
            files.identical_bytes += size;
            files.identical.push(pair);
        } else {
            shared += u128::from(size) * u128::from(s);
            files.modified.push(pair);
        }
    }
    for (l, f) in local.files.iter().enumerate() {
        if local_pair[l].is_none() {
            files.added.push(OneSide {
                path: f.path.clone(),
                id: local.ids[l],
                size: f.data.len() as u64,
            });
        }
    }
    let mut missing_bytes = 0u64;
    for (u, up) in upstream.iter().enumerate() {
        if !up_paired[u] {
            missing_bytes += up.size;
            files.missing.push(OneSide {
                path: up.path.clone(),
                id: up.id,
                size: up.size,
            });
        }
    }
    files.missing.sort_by(|a, b| a.path.cmp(&b.path));
    let ratio = |den: u64| -> u32 {
        if den == 0 {
            0
        } else {
            u32::try_from(shared / u128::from(den)).unwrap_or(score::MAX_SCORE)
        }
    };
    files.missing_bytes = missing_bytes;
    files.contained = ratio(local.bytes);
    files.resemblance = ratio(local.bytes + missing_bytes);
    Ok(files)
}
