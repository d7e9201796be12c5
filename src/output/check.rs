//! `check --staged`'s report: one warning per finding, the findings of
//! one move (a directory's files gone to one other directory) as one
//! warning with a few examples, a closing line saying what the commit
//! would lose, and the `--json` document, which keeps every file.
//!
//! git's own directory-rename detection and its users think in
//! directories: 1,500 lines for one directory moved with edits hide the
//! one thing to do (commit the pure move first).

use std::io::{self, Write};

use serde::Serialize;

use super::json_path;
use crate::check::{Finding, Reason, Settings};
use crate::similarity::score;

/// A move's findings beyond this many are one warning, which shows this
/// many of them as examples (all with `--verbose`).
pub const EXAMPLES: usize = 3;

/// What the findings of a [`Move`] are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoveKind {
    /// Renames git's defaults will not detect.
    LostRename,
    /// New files that copy tracked ones.
    Copy,
}

/// Findings of one kind between one directory and another: renames from
/// `from` to `to` (the paths below them the same, or only the file name
/// changed), or copies of files in `from` made in `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// Lost renames or copies.
    pub kind: MoveKind,
    /// The directory in HEAD (empty for the top).
    pub from: Vec<u8>,
    /// The directory in the index (empty for the top).
    pub to: Vec<u8>,
    /// The findings, by position, in order.
    pub findings: Vec<usize>,
}

/// The two directories a file went between: when its name stayed, the
/// paths without their common trailing components (`src/a/x.c` to
/// `lib/a/x.c` is a move of `src` to `lib`); else the directories holding
/// it (`a/b/x.c` to `a/c/y.c`, of `a/b` to `a/c`).
pub fn directories(old: &[u8], new: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut o: Vec<&[u8]> = old.split(|&b| b == b'/').collect();
    let mut n: Vec<&[u8]> = new.split(|&b| b == b'/').collect();
    if o.last() != n.last() {
        o.pop();
        n.pop();
    } else {
        while let (Some(a), Some(b)) = (o.last(), n.last()) {
            if a != b {
                break;
            }
            o.pop();
            n.pop();
        }
    }
    (o.join(&b'/'), n.join(&b'/'))
}

/// The moves with more than [`EXAMPLES`] findings, in the order of their
/// first finding.
pub fn moves(findings: &[Finding]) -> Vec<Move> {
    let mut all: Vec<Move> = Vec::new();
    let mut at: std::collections::HashMap<(MoveKind, Vec<u8>, Vec<u8>), usize> =
        std::collections::HashMap::new();
    for (i, f) in findings.iter().enumerate() {
        let (kind, old, new) = match f {
            Finding::LostRename { old, new, .. } => (MoveKind::LostRename, old, new),
            Finding::Copy { new, source, .. } => (MoveKind::Copy, source, new),
            _ => continue,
        };
        let (from, to) = directories(old, new);
        let key = (kind, from, to);
        match at.get(&key) {
            Some(&m) => all[m].findings.push(i),
            None => {
                at.insert(key.clone(), all.len());
                all.push(Move {
                    kind,
                    from: key.1,
                    to: key.2,
                    findings: vec![i],
                });
            }
        }
    }
    all.retain(|m| m.findings.len() > EXAMPLES);
    all
}

/// What the commit would lose, counted over the findings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// New files that copy tracked ones.
    pub copies: usize,
    /// Files whose history `git log --follow` and blame will lose: lost
    /// renames, split files, merged files.
    pub lost_history: usize,
    /// Renames git's defaults will not detect.
    pub lost_renames: usize,
    /// Files merged into another (each merge's sources).
    pub merged: usize,
    /// Files split into others.
    pub split: usize,
}

impl Summary {
    /// The counts of `findings`.
    pub fn of(findings: &[Finding]) -> Summary {
        let mut s = Summary::default();
        for f in findings {
            match f {
                Finding::LostRename { .. } => s.lost_renames += 1,
                Finding::Copy { .. } => s.copies += 1,
                Finding::Split { .. } => s.split += 1,
                Finding::Merge { sources, .. } => s.merged += sources.len(),
            }
        }
        s.lost_history = s.lost_renames + s.split + s.merged;
        s
    }
}

/// A path for a message: `'path'`, or git's C-style quoting (`"a\nb"`)
/// when the path has bytes that would garble a terminal line.
pub fn shown(path: &[u8]) -> String {
    let q = super::quoted(path);
    if q.starts_with('"') {
        q
    } else {
        format!("'{q}'")
    }
}

/// A directory for a message: as [`shown`], with a trailing slash; the
/// top of the work tree said so.
fn shown_dir(dir: &[u8]) -> String {
    if dir.is_empty() {
        return "the top directory".to_owned();
    }
    let mut d = dir.to_vec();
    d.push(b'/');
    shown(&d)
}

/// Paths as `'a', 'b' and 'c'`.
fn listed(paths: &[Vec<u8>]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| shown(p)).collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => shown.join(""),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Why git will not see a rename, in words.
fn why(reason: &Reason, settings: &Settings) -> String {
    match reason {
        Reason::BelowThreshold => format!(
            "below its {}% threshold",
            score::percent(settings.git_min_score)
        ),
        Reason::RenameLimit { needed } => format!(
            "too many files for diff.renameLimit={}; git would need {needed}",
            settings.git_rename_limit
        ),
        Reason::RenamesOff => "diff.renames is false".to_owned(),
        Reason::PairedElsewhere => "git pairs these paths differently".to_owned(),
    }
}

/// Write the report: one warning per finding, except that the findings of
/// a move with more than [`EXAMPLES`] of them are one warning with that
/// many examples (every one with `verbose`); then, when anything was
/// found, one line saying what the commit would lose.
pub fn write_report(
    w: &mut impl Write,
    findings: &[Finding],
    settings: &Settings,
    verbose: bool,
) -> io::Result<()> {
    let moves = moves(findings);
    let mut in_move = vec![None; findings.len()];
    for (m, mv) in moves.iter().enumerate() {
        for &i in &mv.findings {
            in_move[i] = Some(m);
        }
    }
    for (i, f) in findings.iter().enumerate() {
        match in_move[i] {
            Some(m) if moves[m].findings[0] == i => {
                write_move(w, &moves[m], findings, settings, verbose)?;
            }
            Some(_) => {}
            None => write_finding(w, f, settings)?,
        }
    }
    write_summary(w, &Summary::of(findings))
}

/// One warning for a move's findings, with examples.
fn write_move(
    w: &mut impl Write,
    mv: &Move,
    findings: &[Finding],
    settings: &Settings,
    verbose: bool,
) -> io::Result<()> {
    let n = mv.findings.len();
    let members = mv.findings.iter().map(|&i| &findings[i]);
    match mv.kind {
        MoveKind::LostRename => {
            // The reasons, most common first, with their counts when mixed.
            let mut reasons: Vec<(String, usize)> = Vec::new();
            for f in members.clone() {
                if let Finding::LostRename { reason, .. } = f {
                    let r = why(reason, settings);
                    match reasons.iter_mut().find(|(x, _)| *x == r) {
                        Some((_, c)) => *c += 1,
                        None => reasons.push((r, 1)),
                    }
                }
            }
            reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
            let why = if reasons.len() == 1 {
                reasons[0].0.clone()
            } else {
                reasons
                    .iter()
                    .map(|(r, c)| format!("{c} {r}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            writeln!(
                w,
                "warning: {n} files moved from {} to {} are renames that git will not detect ({why}): \
                 'git log --follow' and blame will lose their history. \
                 Commit the pure move first (git mv, commit), then the edits. {}:",
                shown_dir(&mv.from),
                shown_dir(&mv.to),
                if verbose { "They are" } else { "For example" }
            )?;
        }
        MoveKind::Copy => writeln!(
            w,
            "warning: {n} new files in {} are near-copies of files in {}: \
             probable copy-paste duplication. {}:",
            shown_dir(&mv.to),
            shown_dir(&mv.from),
            if verbose { "They are" } else { "For example" }
        )?,
    }
    let shown_count = if verbose { n } else { EXAMPLES };
    for f in members.take(shown_count) {
        match f {
            Finding::LostRename {
                old, new, score, ..
            } => writeln!(
                w,
                "  {} -> {} ({}% similar)",
                shown(old),
                shown(new),
                score::percent(*score)
            )?,
            Finding::Copy { new, source, score } => writeln!(
                w,
                "  {} is a {}% copy of {}",
                shown(new),
                score::percent(*score),
                shown(source)
            )?,
            _ => {}
        }
    }
    if n > shown_count {
        writeln!(
            w,
            "  ... and {} more ('git simm check --staged -v' lists them)",
            n - shown_count
        )?;
    }
    Ok(())
}

/// One warning for one finding, naming the files and the fix.
pub fn write_finding(w: &mut impl Write, f: &Finding, settings: &Settings) -> io::Result<()> {
    match f {
        Finding::LostRename {
            old,
            new,
            score: s,
            reason,
        } => writeln!(
            w,
            "warning: {} -> {} is a rename ({}% similar) that git will not detect ({}): \
             'git log --follow' and blame will lose its history. \
             Commit the pure move first (git mv, commit), then the edits.",
            shown(old),
            shown(new),
            score::percent(*s),
            why(reason, settings)
        ),
        Finding::Copy {
            new,
            source,
            score: s,
        } => writeln!(
            w,
            "warning: {} is a {}% copy of {}: probable copy-paste duplication.",
            shown(new),
            score::percent(*s),
            shown(source)
        ),
        Finding::Split {
            source,
            parts,
            covered,
        } => writeln!(
            w,
            "warning: {} was split into {} ({}% of it): git will see a deletion and new files, \
             and 'git log --follow' and blame will lose its history. To keep it for the \
             largest part, commit the move first (git mv {} {}, commit), then the split; \
             'git blame -C -C' finds the other parts' lines in it.",
            shown(source),
            listed(parts),
            score::percent(*covered),
            shown(source),
            parts.first().map_or_else(String::new, |p| shown(p)),
        ),
        Finding::Merge {
            destination,
            sources,
            covered,
        } => writeln!(
            w,
            "warning: {} is made of {} ({}% of it): git will see deletions and a new file, \
             and 'git log --follow' and blame will lose their history. To keep the largest's, \
             commit its move first (git mv {} {}, commit), then the merge; \
             'git blame -C -C' finds the others' lines.",
            shown(destination),
            listed(sources),
            score::percent(*covered),
            sources.first().map_or_else(String::new, |p| shown(p)),
            shown(destination),
        ),
    }
}

/// The closing line: what the commit would lose (nothing when nothing was
/// found).
pub fn write_summary(w: &mut impl Write, s: &Summary) -> io::Result<()> {
    let mut parts = Vec::new();
    if s.lost_history > 0 {
        let mut why = Vec::new();
        if s.lost_renames > 0 {
            why.push(plural(
                s.lost_renames,
                "rename git will not detect",
                "renames git will not detect",
            ));
        }
        if s.split > 0 {
            why.push(plural(s.split, "file split", "files split"));
        }
        if s.merged > 0 {
            why.push(plural(s.merged, "file merged", "files merged"));
        }
        parts.push(format!(
            "would lose the history of {} ({})",
            plural(s.lost_history, "file", "files"),
            why.join(", ")
        ));
    }
    if s.copies > 0 {
        parts.push(format!(
            "adds {}",
            plural(
                s.copies,
                "near-copy of a tracked file",
                "near-copies of tracked files"
            )
        ));
    }
    if parts.is_empty() {
        return Ok(());
    }
    writeln!(w, "git-simm: this commit {}.", parts.join(", and "))
}

/// `git simm check --staged --json`: every finding, file by file, the
/// moves they were grouped into, and the summary.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// Every finding, in the order the text lists them ungrouped.
    pub findings: Vec<FindingDoc>,
    /// The moves with more than [`EXAMPLES`] findings (the text's grouped
    /// warnings).
    pub moves: Vec<MoveDoc>,
    /// What the commit would lose.
    pub summary: Summary,
    /// The schema's version: 1.
    pub version: u32,
}

/// A path in a JSON document.
#[derive(Clone, Debug, Serialize)]
pub struct PathDoc {
    /// The path (exact when `path_bytes` is `null`).
    pub path: String,
    /// The path's bytes when it is not valid UTF-8; else `null`.
    pub path_bytes: Option<Vec<u8>>,
}

impl PathDoc {
    fn of(path: &[u8]) -> PathDoc {
        let (path, path_bytes) = json_path(path);
        PathDoc { path, path_bytes }
    }
}

/// One finding.
#[derive(Clone, Debug, Serialize)]
pub struct FindingDoc {
    /// For `split` and `merge`, how much of the whole the parts hold
    /// together, in percent; else `null`.
    pub covered: Option<u32>,
    /// `lost-rename`, `copy`, `split` or `merge`.
    pub kind: &'static str,
    /// The position in `moves` of the move it belongs to, or `null`.
    #[serde(rename = "move")]
    pub move_: Option<usize>,
    /// The files in the index: the rename's new path, the copy, a split's
    /// parts (largest first), a merge's destination.
    pub new: Vec<PathDoc>,
    /// The files in HEAD: the rename's old path, the copy's source, the
    /// split source, a merge's sources (largest first).
    pub old: Vec<PathDoc>,
    /// For `lost-rename`, why git will not see it: `below-threshold`,
    /// `rename-limit`, `renames-off`, `paired-elsewhere`; else `null`.
    pub reason: Option<&'static str>,
    /// For `rename-limit`, the `diff.renameLimit` git would need; else
    /// `null`.
    pub rename_limit_needed: Option<usize>,
    /// For `lost-rename` and `copy`, git's similarity in percent; else
    /// `null`.
    pub score: Option<u32>,
}

/// Findings of one move.
#[derive(Clone, Debug, Serialize)]
pub struct MoveDoc {
    /// How many findings.
    pub files: usize,
    /// The directory in HEAD (`""` for the top).
    pub from: PathDoc,
    /// `lost-rename` or `copy`.
    pub kind: &'static str,
    /// The directory in the index (`""` for the top).
    pub to: PathDoc,
}

impl Check {
    /// The document for `findings`.
    pub fn new(findings: &[Finding]) -> Check {
        let moves = moves(findings);
        let mut in_move = vec![None; findings.len()];
        for (m, mv) in moves.iter().enumerate() {
            for &i in &mv.findings {
                in_move[i] = Some(m);
            }
        }
        let paths = |ps: &[Vec<u8>]| ps.iter().map(|p| PathDoc::of(p)).collect::<Vec<_>>();
        let findings_doc = findings
            .iter()
            .zip(in_move)
            .map(|(f, move_)| {
                let mut d = FindingDoc {
                    covered: None,
                    kind: "",
                    move_,
                    new: Vec::new(),
                    old: Vec::new(),
                    reason: None,
                    rename_limit_needed: None,
                    score: None,
                };
                match f {
                    Finding::LostRename {
                        old,
                        new,
                        score,
                        reason,
                    } => {
                        d.kind = "lost-rename";
                        d.old = vec![PathDoc::of(old)];
                        d.new = vec![PathDoc::of(new)];
                        d.score = Some(score::percent(*score));
                        d.reason = Some(match reason {
                            Reason::BelowThreshold => "below-threshold",
                            Reason::RenameLimit { needed } => {
                                d.rename_limit_needed = Some(*needed);
                                "rename-limit"
                            }
                            Reason::RenamesOff => "renames-off",
                            Reason::PairedElsewhere => "paired-elsewhere",
                        });
                    }
                    Finding::Copy { new, source, score } => {
                        d.kind = "copy";
                        d.old = vec![PathDoc::of(source)];
                        d.new = vec![PathDoc::of(new)];
                        d.score = Some(score::percent(*score));
                    }
                    Finding::Split {
                        source,
                        parts,
                        covered,
                    } => {
                        d.kind = "split";
                        d.old = vec![PathDoc::of(source)];
                        d.new = paths(parts);
                        d.covered = Some(score::percent(*covered));
                    }
                    Finding::Merge {
                        destination,
                        sources,
                        covered,
                    } => {
                        d.kind = "merge";
                        d.old = paths(sources);
                        d.new = vec![PathDoc::of(destination)];
                        d.covered = Some(score::percent(*covered));
                    }
                }
                d
            })
            .collect();
        Check {
            findings: findings_doc,
            moves: moves
                .iter()
                .map(|m| MoveDoc {
                    files: m.findings.len(),
                    from: PathDoc::of(&m.from),
                    kind: match m.kind {
                        MoveKind::LostRename => "lost-rename",
                        MoveKind::Copy => "copy",
                    },
                    to: PathDoc::of(&m.to),
                })
                .collect(),
            summary: Summary::of(findings),
            version: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_of_a_move() {
        let d = |a: &str, b: &str| {
            let (x, y) = directories(a.as_bytes(), b.as_bytes());
            (String::from_utf8(x).unwrap(), String::from_utf8(y).unwrap())
        };
        assert_eq!(d("src/a/x.c", "lib/a/x.c"), ("src".into(), "lib".into()));
        assert_eq!(d("a/b/x.c", "a/c/y.c"), ("a/b".into(), "a/c".into()));
        assert_eq!(d("x.c", "lib/x.c"), ("".into(), "lib".into()));
        assert_eq!(d("old/x.c", "new.c"), ("old".into(), "".into()));
        assert_eq!(d("a/x.c", "a/y.c"), ("a".into(), "a".into()));
    }
}
