//! The `--json` documents: one schema type per command, serialized by
//! serde, so what a script can rely on is written down in one place.
//!
//! Documents are pretty-printed with two-space indentation and end with a
//! newline ([`write()`]). Keys appear in alphabetical order, the order the
//! output has always had (it was first built as a `serde_json::Value`,
//! whose maps sort their keys), so fields are declared in that order.
//! Paths are two fields ([`json_path`]): `path`, the path itself when it
//! is valid UTF-8, and `path_bytes`, `null` then, else the name's bytes
//! as an array of numbers (`path` is then only readable, invalid bytes
//! replaced by U+FFFD), so every name is recovered exactly.
//! Optional values are `null`, never left out.

use std::collections::HashMap;
use std::io::{self, Write};

use gix::ObjectId;
use serde::Serialize;

use super::json_path;
use crate::renames::{Outcome, Record, Status};
use crate::similarity::score;

/// Write `doc` as pretty-printed JSON followed by a newline.
pub fn write(w: &mut impl Write, doc: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, doc)?;
    writeln!(w)
}

/// `git simm renames --json`: the changes between two sides, renames and
/// copies paired, and what detection did.
#[derive(Clone, Debug, Serialize)]
pub struct Renames {
    /// One entry per line `git diff --name-status` prints, in the same
    /// order (after `--diff-filter`).
    pub changes: Vec<Change>,
    /// With `--find-splits`: new paths made of two or more sources. Left
    /// out (not `null`) without the option, so that output stays as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merges: Option<Vec<Spread>>,
    /// With `--find-splits`: sources split into two or more new paths; left
    /// out without the option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splits: Option<Vec<Spread>>,
    /// Counts of detection's work.
    pub stats: Stats,
}

/// A split (`whole` is the source, `parts` the new paths) or a merge
/// (`whole` is the new path, `parts` its sources).
#[derive(Clone, Debug, Serialize)]
pub struct Spread {
    /// How much of the whole the parts hold together, in percent.
    pub covered: u32,
    /// The parts, the one adding most first.
    pub parts: Vec<SpreadPart>,
    /// The source split, or the destination merged into.
    pub whole: SpreadFile,
}

/// One file of a [`Spread`].
#[derive(Clone, Debug, Serialize)]
pub struct SpreadFile {
    /// Its blob id in hex.
    pub blob: String,
    /// Its path (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
}

/// One part of a [`Spread`], with the containments both ways.
#[derive(Clone, Debug, Serialize)]
pub struct SpreadPart {
    /// Its blob id in hex.
    pub blob: String,
    /// How much of the part is in the whole, in percent.
    pub part_in_whole: u32,
    /// Its path (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// How much of the whole is in the part, in percent.
    pub whole_in_part: u32,
}

impl Spread {
    /// The document's form of a split or merge.
    pub fn new(s: &crate::renames::splits::Spread) -> Spread {
        let (path, path_bytes) = json_path(&s.whole.path);
        Spread {
            covered: score::percent(s.covered),
            parts: s
                .parts
                .iter()
                .map(|p| {
                    let (path, path_bytes) = json_path(&p.entry.path);
                    SpreadPart {
                        blob: p.entry.id.to_string(),
                        part_in_whole: score::percent(p.part_in_whole),
                        path,
                        path_bytes,
                        whole_in_part: score::percent(p.whole_in_part),
                    }
                })
                .collect(),
            whole: SpreadFile {
                blob: s.whole.id.to_string(),
                path,
                path_bytes,
            },
        }
    }
}

/// One change: a path added, deleted, modified, or paired with another.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// With `-B`, for a rewrite (the number git prints after `M` or `T`,
    /// as in `M100`, and in rare cases after `A`): the share of the old
    /// content removed, in percent; else `null`.
    pub dissimilarity: Option<u32>,
    /// The file on the new side; `null` when it was deleted.
    pub new: Option<Side>,
    /// The file on the old side (for `R` and `C`, the source); `null`
    /// when it was added.
    pub old: Option<Side>,
    /// For `R` and `C`: git's similarity score in percent (0-100, as in
    /// `R087`); else `null`.
    pub score: Option<u32>,
    /// git's status letter: `A`, `C`, `D`, `M`, `R`, `T` or `U`.
    pub status: char,
}

/// A file on one side of a [`Change`].
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The object id in hex: the blob's (a commit's for a submodule).
    pub blob: String,
    /// The path from the top of the repository (exact when `path_bytes`
    /// is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// The object's size in bytes; `null` when the object database does
    /// not have it (a work-tree file, a submodule's commit, a blob a
    /// partial clone lacks and detection did not need).
    pub size: Option<u64>,
}

/// What rename detection did ([`Outcome`], without the fields that are
/// warnings on stderr).
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Pairs found by the unique-basename pass.
    pub basename: usize,
    /// Pairs proposed because the bound could not rule them out: the
    /// source might score as high as the destination's 4th best (or the
    /// minimum score).
    pub bound_pairs: usize,
    /// Modifications broken into a deletion and an addition by `-B`
    /// (0 without it).
    pub broken: usize,
    /// Proposed pairs that 64 bins of each histogram ruled out without
    /// scoring (the bins bound git's copied bytes from above).
    pub ceiling_ruled_out: usize,
    /// Destinations considered: the added files detection tries to pair.
    pub destinations: usize,
    /// Pairs found by object id (identical content).
    pub exact: usize,
    /// Pairs proposed because fingerprints put the source among a
    /// destination's nearest.
    pub fingerprint_pairs: usize,
    /// Pairs found by scoring content.
    pub inexact: usize,
    /// Pairs scored during tie replays.
    pub replay_scored_pairs: usize,
    /// Destinations whose row of git's matrix was replayed in git's order
    /// because equal scores decided their pairing.
    pub replayed_destinations: usize,
    /// Pairs scored by the inexact step (`fingerprint_pairs` plus
    /// `bound_pairs`, less `ceiling_ruled_out`).
    pub scored_pairs: usize,
    /// Sources considered: the deleted files, with `-C` also the modified
    /// ones, with `-C -C` every file of the old side.
    pub sources: usize,
    /// Destinations searched again for git's 4 candidates, because the
    /// assignment passed over the sources of their best score.
    pub widened_destinations: usize,
}

impl Renames {
    /// The document for `records` and `outcome`; `sizes` holds the size of
    /// each object the object database has.
    pub fn new(records: &[Record], outcome: &Outcome, sizes: &HashMap<ObjectId, u64>) -> Renames {
        let side = |e: &Option<crate::repo::Entry>| {
            e.as_ref().map(|e| {
                let (path, path_bytes) = json_path(&e.path);
                Side {
                    blob: e.id.to_string(),
                    path,
                    path_bytes,
                    size: sizes.get(&e.id).copied(),
                }
            })
        };
        Renames {
            changes: records
                .iter()
                .map(|r| {
                    let pairing = matches!(r.status, Status::Renamed | Status::Copied);
                    Change {
                        dissimilarity: (!pairing && r.score > 0).then(|| score::percent(r.score)),
                        new: side(&r.new),
                        old: side(&r.old),
                        score: pairing.then(|| score::percent(r.score)),
                        status: r.status.letter(),
                    }
                })
                .collect(),
            merges: None,
            splits: None,
            stats: Stats {
                basename: outcome.basename,
                bound_pairs: outcome.bound_pairs,
                broken: outcome.broken,
                ceiling_ruled_out: outcome.ceiling_ruled_out,
                destinations: outcome.destinations,
                exact: outcome.exact,
                fingerprint_pairs: outcome.fingerprint_pairs,
                inexact: outcome.inexact,
                replay_scored_pairs: outcome.replay_scored_pairs,
                replayed_destinations: outcome.replayed_destinations,
                scored_pairs: outcome.scored_pairs,
                sources: outcome.sources,
                widened_destinations: outcome.widened_destinations,
            },
        }
    }
}

/// `git simm similar --json`: the files of a tree most similar to one
/// file.
#[derive(Clone, Debug, Serialize)]
pub struct Similar {
    /// The matches, most similar first (as the plain output lists them).
    pub matches: Vec<Match>,
    /// The file or blob asked about, as given on the command line.
    pub query: String,
    /// The lowest score listed, in percent (`--threshold`).
    pub threshold: u32,
    /// The tree-ish searched, as given (default `HEAD`).
    pub tree: String,
}

/// One file of the tree similar to the query.
#[derive(Clone, Debug, Serialize)]
pub struct Match {
    /// The file's blob id in hex.
    pub blob: String,
    /// How many of the 256 fingerprint bits differ from the query's;
    /// `null` when either has no fingerprint (under 192 bytes).
    pub distance: Option<u32>,
    /// The file's path in the tree (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// git's rename similarity score in percent (0-100).
    pub score: u32,
    /// The file's size in bytes.
    pub size: u64,
}

impl Similar {
    /// The document for `matches` of `query` in `tree` at `min_score`
    /// ([`score::MAX_SCORE`] units).
    pub fn new(
        query: &str,
        tree: &str,
        min_score: u32,
        matches: &[crate::similar::Match],
    ) -> Similar {
        Similar {
            matches: matches
                .iter()
                .map(|m| {
                    let (path, path_bytes) = json_path(&m.path);
                    Match {
                        blob: m.id.to_string(),
                        distance: m.distance,
                        path,
                        path_bytes,
                        score: score::percent(m.score),
                        size: m.size,
                    }
                })
                .collect(),
            query: query.to_owned(),
            threshold: score::percent(min_score),
            tree: tree.to_owned(),
        }
    }
}

/// `git simm groups --json`: every group of similar files, the
/// boilerplate taken out of scores, and what the search did.
#[derive(Clone, Debug, Serialize)]
pub struct Groups {
    /// With `--show-common`, the chunks treated as boilerplate, most
    /// common first; else `null`.
    pub common: Option<Vec<CommonChunk>>,
    /// The groups, most waste first (as the text output lists them).
    pub groups: Vec<GroupDoc>,
    /// Counts of the search's work.
    pub stats: GroupStats,
    /// The lowest score that links two files, in percent.
    pub threshold: u32,
}

/// One group of similar files.
#[derive(Clone, Debug, Serialize)]
pub struct GroupDoc {
    /// The bytes of all members.
    pub bytes: u64,
    /// The pairs scored at or above the threshold that joined the group,
    /// by member position (`a < b`; pairs already joined through others
    /// were not scored, so this is a spanning set, not every similar
    /// pair); empty for a group of exact copies.
    pub links: Vec<LinkDoc>,
    /// The members: the representative first, then by score (highest
    /// first), then by path.
    pub members: Vec<MemberDoc>,
    /// The bytes of every member but the representative: what keeping one
    /// copy would save.
    pub waste: u64,
}

/// One file of a group.
#[derive(Clone, Debug, Serialize)]
pub struct MemberDoc {
    /// Whether its score against the representative is under the
    /// threshold: it joined the group through other members (each link
    /// at the threshold), not through the representative.
    pub chained: bool,
    /// Its blob id in hex.
    pub id: String,
    /// Its path (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// Whether it is the group's representative (only the first member
    /// is).
    pub representative: bool,
    /// Its git score against the representative, in percent (100 for the
    /// representative and its exact copies).
    pub score: u32,
    /// Its size in bytes.
    pub size: u64,
}

/// A scored pair of a group.
#[derive(Clone, Debug, Serialize)]
pub struct LinkDoc {
    /// One member's position in `members`.
    pub a: usize,
    /// The other's.
    pub b: usize,
    /// Their git score in percent.
    pub score: u32,
}

/// A chunk treated as boilerplate.
#[derive(Clone, Debug, Serialize)]
pub struct CommonChunk {
    /// In how many of the sampled files it occurs.
    pub files: usize,
    /// Its text (invalid UTF-8 replaced by U+FFFD).
    pub text: String,
}

/// What `groups` did.
#[derive(Clone, Debug, Serialize)]
pub struct GroupStats {
    /// Files left out as binary.
    pub binary: usize,
    /// Distinct blobs considered.
    pub blobs: usize,
    /// Blobs read because the histogram store lacked their histograms
    /// (each at most once; 0 on a warm store).
    pub blobs_read: usize,
    /// Pairs the prefix index proposed (every pair that can score the
    /// threshold is among them).
    pub candidate_pairs: usize,
    /// Chunks treated as boilerplate.
    pub common_chunks: usize,
    /// Files sampled to find them.
    pub common_sampled: usize,
    /// Candidate pairs not scored because their files were already
    /// grouped.
    pub connected_pairs: usize,
    /// Pairs sharing a prefix bucket that the positional bound proved to
    /// score under the threshold (not scored).
    pub filtered_pairs: usize,
    /// Files given (the tree's regular files, or every blob).
    pub files: usize,
    /// Scored pairs at or above the threshold.
    pub linked_pairs: usize,
    /// Pairs scored exactly.
    pub scored_pairs: usize,
    /// Files left out as smaller than `--min-size` (or empty).
    pub too_small: usize,
    /// Bytes of the files considered (not too small).
    pub total_bytes: u64,
    /// Bytes of every non-representative member of every group.
    pub waste_bytes: u64,
}

impl Groups {
    /// The document for `found` at `min_score` ([`score::MAX_SCORE`]
    /// units); `total_bytes` is the size of all files considered.
    pub fn new(
        found: &crate::groups::Found,
        min_score: u32,
        show_common: bool,
        total_bytes: u64,
    ) -> Groups {
        let o = &found.outcome;
        let groups: Vec<GroupDoc> = found
            .groups
            .iter()
            .map(|g| GroupDoc {
                bytes: g.members.iter().map(|m| m.size).sum(),
                links: g
                    .links
                    .iter()
                    .map(|l| LinkDoc {
                        a: l.a,
                        b: l.b,
                        score: score::percent(l.score),
                    })
                    .collect(),
                members: g
                    .members
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        let (path, path_bytes) = json_path(&m.path);
                        MemberDoc {
                            chained: i > 0 && m.score < min_score,
                            id: m.id.to_string(),
                            path,
                            path_bytes,
                            representative: i == 0,
                            score: score::percent(m.score),
                            size: m.size,
                        }
                    })
                    .collect(),
                waste: g.waste,
            })
            .collect();
        let waste_bytes = groups.iter().map(|g| g.waste).sum();
        Groups {
            common: show_common.then(|| common_chunks(&found.common)),
            groups,
            stats: GroupStats {
                binary: o.binary,
                blobs: o.blobs,
                blobs_read: o.blobs_read,
                candidate_pairs: o.candidate_pairs,
                common_chunks: found.common.buckets.len(),
                common_sampled: found.common.sampled,
                connected_pairs: o.connected_pairs,
                filtered_pairs: o.filtered_pairs,
                files: o.files,
                linked_pairs: o.linked_pairs,
                scored_pairs: o.scored_pairs,
                too_small: o.too_small,
                total_bytes,
                waste_bytes,
            },
            threshold: score::percent(min_score),
        }
    }
}

/// `git simm similar --containment --json`: the files of a tree that hold
/// much of one file, and those it holds much of.
#[derive(Clone, Debug, Serialize)]
pub struct Containing {
    /// Files holding at least the threshold of the query, most first, then
    /// files the query holds at least the threshold of (as the plain output
    /// lists them).
    pub matches: Vec<Contained>,
    /// The file or blob asked about, as given on the command line.
    pub query: String,
    /// The lowest containment listed, in percent (`--threshold`).
    pub threshold: u32,
    /// The tree-ish searched, as given (default `HEAD`).
    pub tree: String,
}

/// One file of [`Containing`].
#[derive(Clone, Debug, Serialize)]
pub struct Contained {
    /// The file's blob id in hex.
    pub blob: String,
    /// How much of the file the query holds, in percent (0-100).
    pub file_in_query: u32,
    /// The file's path in the tree (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// How much of the query the file holds, in percent (0-100).
    pub query_in_file: u32,
    /// `"contains"` when the file holds at least the threshold of the
    /// query, else `"contained"` (the query holds that much of the file).
    pub relation: &'static str,
    /// The file's size in bytes.
    pub size: u64,
}

impl Containing {
    /// The document for `matches` of `query` in `tree` at `min_score`
    /// ([`score::MAX_SCORE`] units).
    pub fn new(
        query: &str,
        tree: &str,
        min_score: u32,
        matches: &[crate::similar::Containment],
    ) -> Containing {
        let min = min_score.max(1);
        Containing {
            matches: matches
                .iter()
                .map(|m| {
                    let (path, path_bytes) = json_path(&m.path);
                    Contained {
                        blob: m.id.to_string(),
                        file_in_query: score::percent(m.file_in_query),
                        path,
                        path_bytes,
                        query_in_file: score::percent(m.query_in_file),
                        relation: if m.contains_query(min) {
                            "contains"
                        } else {
                            "contained"
                        },
                        size: m.size,
                    }
                })
                .collect(),
            query: query.to_owned(),
            threshold: score::percent(min_score),
            tree: tree.to_owned(),
        }
    }
}

/// The boilerplate chunks, most common first, then by text.
pub fn common_chunks(common: &crate::groups::Common) -> Vec<CommonChunk> {
    let mut chunks: Vec<CommonChunk> = common
        .examples
        .iter()
        .map(|(files, text)| CommonChunk {
            files: *files,
            text: String::from_utf8_lossy(text).into_owned(),
        })
        .collect();
    chunks.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.text.cmp(&b.text)));
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(doc: &impl Serialize) -> String {
        let mut out = Vec::new();
        write(&mut out, doc).expect("write to a Vec");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Pins the layout scripts read: key order, `null`s, indentation and
    /// the final newline.
    #[test]
    fn similar_document_is_pinned() {
        let doc = Similar {
            matches: vec![Match {
                blob: "ab".repeat(20),
                distance: None,
                path: "caf\u{fffd}".into(),
                path_bytes: Some(b"caf\xe9".to_vec()),
                score: 94,
                size: 120,
            }],
            query: "q.rs".into(),
            threshold: 50,
            tree: "HEAD".into(),
        };
        let blob = "ab".repeat(20);
        assert_eq!(
            text(&doc),
            format!(
                r#"{{
  "matches": [
    {{
      "blob": "{blob}",
      "distance": null,
      "path": "caf�",
      "path_bytes": [
        99,
        97,
        102,
        233
      ],
      "score": 94,
      "size": 120
    }}
  ],
  "query": "q.rs",
  "threshold": 50,
  "tree": "HEAD"
}}
"#
            )
        );
    }

    #[test]
    fn renames_document_is_pinned() {
        let side = |path: &str, size| Side {
            blob: "0".repeat(40),
            path: path.into(),
            path_bytes: None,
            size,
        };
        let doc = Renames {
            changes: vec![
                Change {
                    dissimilarity: None,
                    new: Some(side("b", None)),
                    old: Some(side("a", Some(7))),
                    score: Some(87),
                    status: 'R',
                },
                Change {
                    dissimilarity: None,
                    new: Some(side("c", Some(1))),
                    old: None,
                    score: None,
                    status: 'A',
                },
                Change {
                    dissimilarity: Some(96),
                    new: Some(side("d", Some(500))),
                    old: Some(side("d", Some(400))),
                    score: None,
                    status: 'M',
                },
            ],
            merges: None,
            splits: None,
            stats: Stats {
                basename: 1,
                bound_pairs: 2,
                broken: 12,
                ceiling_ruled_out: 13,
                destinations: 3,
                exact: 4,
                fingerprint_pairs: 5,
                inexact: 6,
                replay_scored_pairs: 7,
                replayed_destinations: 8,
                scored_pairs: 9,
                sources: 10,
                widened_destinations: 14,
            },
        };
        let z = "0".repeat(40);
        assert_eq!(
            text(&doc),
            format!(
                r#"{{
  "changes": [
    {{
      "dissimilarity": null,
      "new": {{
        "blob": "{z}",
        "path": "b",
        "path_bytes": null,
        "size": null
      }},
      "old": {{
        "blob": "{z}",
        "path": "a",
        "path_bytes": null,
        "size": 7
      }},
      "score": 87,
      "status": "R"
    }},
    {{
      "dissimilarity": null,
      "new": {{
        "blob": "{z}",
        "path": "c",
        "path_bytes": null,
        "size": 1
      }},
      "old": null,
      "score": null,
      "status": "A"
    }},
    {{
      "dissimilarity": 96,
      "new": {{
        "blob": "{z}",
        "path": "d",
        "path_bytes": null,
        "size": 500
      }},
      "old": {{
        "blob": "{z}",
        "path": "d",
        "path_bytes": null,
        "size": 400
      }},
      "score": null,
      "status": "M"
    }}
  ],
  "stats": {{
    "basename": 1,
    "bound_pairs": 2,
    "broken": 12,
    "ceiling_ruled_out": 13,
    "destinations": 3,
    "exact": 4,
    "fingerprint_pairs": 5,
    "inexact": 6,
    "replay_scored_pairs": 7,
    "replayed_destinations": 8,
    "scored_pairs": 9,
    "sources": 10,
    "widened_destinations": 14
  }}
}}
"#
            )
        );
    }

    /// Pins a split or merge as `renames --find-splits --json` prints it.
    #[test]
    fn spread_document_is_pinned() {
        let doc = Spread {
            covered: 91,
            parts: vec![SpreadPart {
                blob: "ab".repeat(20),
                part_in_whole: 97,
                path: "p1.rs".into(),
                path_bytes: None,
                whole_in_part: 48,
            }],
            whole: SpreadFile {
                blob: "cd".repeat(20),
                path: "whole.rs".into(),
                path_bytes: None,
            },
        };
        let (ab, cd) = ("ab".repeat(20), "cd".repeat(20));
        assert_eq!(
            text(&doc),
            format!(
                r#"{{
  "covered": 91,
  "parts": [
    {{
      "blob": "{ab}",
      "part_in_whole": 97,
      "path": "p1.rs",
      "path_bytes": null,
      "whole_in_part": 48
    }}
  ],
  "whole": {{
    "blob": "{cd}",
    "path": "whole.rs",
    "path_bytes": null
  }}
}}
"#
            )
        );
    }
}
