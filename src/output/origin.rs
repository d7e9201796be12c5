//! `origin`'s output: the ranked matches as lines, the best one's files as
//! `--name-status` lines from upstream to the local copy, and the `--json`
//! document.

use std::io::{self, Write};

use serde::Serialize;

use super::{json_path, write_quoted_path};
use crate::origin::{FilePair, Match, OneSide, Outcome, percent};
use crate::similarity::score;

/// How a match is named in text: its tag, else its commit abbreviated to
/// 12 hex digits, then `:<path>`, so that the name is a tree-ish git takes
/// (`git ls-tree v1.0:lib`).
pub fn match_name(m: &Match) -> Vec<u8> {
    let mut name = match &m.tag {
        Some(t) => t.clone().into_bytes(),
        None => m.commit.to_hex_with_len(12).to_string().into_bytes(),
    };
    name.push(b':');
    name.extend_from_slice(&m.path);
    name
}

/// One line per match:
/// `<contained>%<TAB><resemblance>%<TAB><name>:<path><TAB><n> identical,
/// <n> modified, <n> missing, <n> added`: how much of the local copy the
/// state explains (what ranks it), then how alike the two are as wholes
/// (what the state adds lowers it).
pub fn write_matches(w: &mut impl Write, matches: &[Match]) -> io::Result<()> {
    for m in matches {
        write!(
            w,
            "{}%\t{}%\t",
            percent(m.files.contained),
            percent(m.files.resemblance)
        )?;
        write_quoted_path(w, &match_name(m))?;
        writeln!(
            w,
            "\t{} identical, {} modified, {} missing, {} added",
            m.files.identical.len(),
            m.files.modified.len(),
            m.files.missing.len(),
            m.files.added.len()
        )?;
    }
    Ok(())
}

/// The line saying that the copy is, byte for byte, the best match or a
/// subset of it, and which other matches (`others`, compared and ranked
/// after it) hold it byte for byte too; nothing when it is not.
pub fn write_exact(w: &mut impl Write, best: &Match, others: &[Match]) -> io::Result<()> {
    if !best.files.exact() {
        return Ok(());
    }
    let f = &best.files;
    let upstream_files = f.identical.len() + f.missing.len();
    write!(w, "exact: ")?;
    if f.missing.is_empty() {
        write!(w, "the copy is byte for byte ")?;
        write_quoted_path(w, &match_name(best))?;
    } else {
        write!(w, "the copy is byte for byte a subset of ")?;
        write_quoted_path(w, &match_name(best))?;
        write!(
            w,
            " ({} of its {upstream_files} files; {} not copied)",
            f.identical.len(),
            f.missing.len()
        )?;
    }
    let also: Vec<&Match> = others.iter().filter(|m| m.files.exact()).collect();
    if !also.is_empty() {
        write!(w, "; also of ")?;
        for (i, m) in also.iter().take(6).enumerate() {
            if i > 0 {
                write!(w, ", ")?;
            }
            write_quoted_path(w, &match_name(m))?;
        }
        if also.len() > 6 {
            write!(w, " and {} more", also.len() - 6)?;
        }
    }
    writeln!(w)
}

/// The files of one match as `git diff --name-status -M` from the
/// upstream directory to the local copy would list them, in path order:
/// `M<score>` for a file changed in place (its similarity, as an `R`
/// line's), `R<score>` for one found at another path (the upstream path
/// first), `D` for an upstream file the copy lacks, `A` for a local
/// addition. Identical files at the same path are not listed.
pub fn write_files(w: &mut impl Write, m: &Match) -> io::Result<()> {
    let mut lines: Vec<(&[u8], Vec<u8>)> = Vec::new();
    let pair_line = |p: &FilePair| -> io::Result<Vec<u8>> {
        let mut l = Vec::new();
        let pct = score::percent(p.score);
        if p.local.path == p.upstream.path {
            write!(l, "M{pct:03}\t")?;
            write_quoted_path(&mut l, &p.local.path)?;
        } else {
            write!(l, "R{pct:03}\t")?;
            write_quoted_path(&mut l, &p.upstream.path)?;
            l.push(b'\t');
            write_quoted_path(&mut l, &p.local.path)?;
        }
        Ok(l)
    };
    for p in m.files.identical.iter().chain(&m.files.modified) {
        if p.local.id != p.upstream.id || p.local.path != p.upstream.path {
            lines.push((&p.local.path, pair_line(p)?));
        }
    }
    for (letter, files) in [(b'D', &m.files.missing), (b'A', &m.files.added)] {
        for f in files {
            let mut l = vec![letter, b'\t'];
            write_quoted_path(&mut l, &f.path)?;
            lines.push((&f.path, l));
        }
    }
    lines.sort_by(|a, b| a.0.cmp(b.0));
    for (_, l) in lines {
        w.write_all(&l)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// `git simm origin --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Origin {
    /// The directory compared, as given.
    pub directory: String,
    /// Best first.
    pub matches: Vec<OriginMatch>,
    /// The upstream repository, as given.
    pub repository: String,
    /// What the search looked at.
    pub stats: OriginStats,
}

/// One upstream commit and directory.
#[derive(Clone, Debug, Serialize)]
pub struct OriginMatch {
    /// Local files upstream lacks.
    pub added: Vec<OriginFile>,
    /// The commit's full id (the first candidate with this directory
    /// state: a tag's commit before later commits).
    pub commit: String,
    /// The share of the local bytes upstream holds, in percent (modified
    /// files weighed by their score).
    pub contained: u32,
    /// Whether every local file is byte for byte one of this state's:
    /// the copy is this state, or a subset of it (`missing` says which).
    pub exact: bool,
    /// Files byte for byte upstream's.
    pub identical: Vec<OriginPair>,
    /// The last candidate commit with the same directory state.
    pub last_commit: String,
    /// Upstream files the local copy lacks.
    pub missing: Vec<OriginFile>,
    /// Files paired with an upstream file they differ from.
    pub modified: Vec<OriginPair>,
    /// The directory in that commit, `""` for its root.
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// The bytes both hold over the bytes either holds, in percent
    /// (modified files weighed by their score; what the state adds, its
    /// missing files, lowers it).
    pub resemblance: u32,
    /// How many candidate commits have this directory state.
    pub same_state: usize,
    /// The tag naming the commit, if any.
    pub tag: Option<String>,
    /// Every tag with the same state of the directory, oldest first.
    pub tags: Vec<String>,
    /// The directory's tree id.
    pub tree: String,
}

/// A file of one side.
#[derive(Clone, Debug, Serialize)]
pub struct OriginFile {
    /// Its blob id.
    pub blob: String,
    /// Its path relative to its directory.
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// Its size in bytes.
    pub size: u64,
}

/// A local file and its upstream file.
#[derive(Clone, Debug, Serialize)]
pub struct OriginPair {
    /// The local blob id.
    pub blob: String,
    /// The local path, relative to the directory compared.
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
    /// git's similarity of the two, in percent (100 for identical).
    pub score: u32,
    /// The local size in bytes.
    pub size: u64,
    /// The upstream file.
    pub upstream: OriginFile,
}

/// The counts of [`Outcome`].
#[derive(Clone, Debug, Serialize)]
pub struct OriginStats {
    /// Candidate commits.
    pub commits: usize,
    /// Directory states compared file by file.
    pub compared: usize,
    /// Upstream directories looked at in every commit.
    pub paths: usize,
    /// Commits walked in full to find them.
    pub probes: usize,
    /// Distinct directory states sharing a file with the local copy.
    pub states: usize,
    /// Tree objects read.
    pub trees_read: usize,
}

fn file(f: &OneSide) -> OriginFile {
    let (path, path_bytes) = json_path(&f.path);
    OriginFile {
        blob: f.id.to_string(),
        path,
        path_bytes,
        size: f.size,
    }
}

fn pair(p: &FilePair) -> OriginPair {
    let (path, path_bytes) = json_path(&p.local.path);
    OriginPair {
        blob: p.local.id.to_string(),
        path,
        path_bytes,
        score: score::percent(p.score),
        size: p.local.size,
        upstream: file(&p.upstream),
    }
}

impl Origin {
    /// The document for `matches` of `directory` in `repository`.
    pub fn new(directory: &str, repository: &str, matches: &[Match], outcome: &Outcome) -> Origin {
        Origin {
            directory: directory.to_owned(),
            repository: repository.to_owned(),
            matches: matches
                .iter()
                .map(|m| {
                    let (path, path_bytes) = json_path(&m.path);
                    OriginMatch {
                        added: m.files.added.iter().map(file).collect(),
                        commit: m.commit.to_string(),
                        contained: percent(m.files.contained),
                        exact: m.files.exact(),
                        identical: m.files.identical.iter().map(pair).collect(),
                        last_commit: m.last_commit.to_string(),
                        missing: m.files.missing.iter().map(file).collect(),
                        modified: m.files.modified.iter().map(pair).collect(),
                        path,
                        path_bytes,
                        resemblance: percent(m.files.resemblance),
                        same_state: m.same_state,
                        tag: m.tag.clone(),
                        tags: m.tags.clone(),
                        tree: m.tree.to_string(),
                    }
                })
                .collect(),
            stats: OriginStats {
                commits: outcome.commits,
                compared: outcome.compared,
                paths: outcome.paths,
                probes: outcome.probes,
                states: outcome.states,
                trees_read: outcome.trees_read,
            },
        }
    }
}
