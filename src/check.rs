//! `git-simm check --staged`: what a pre-commit hook should say about the
//! staged changes before history is lost.
//!
//! Why this exists: git does not record renames; `git log --follow`, blame
//! and merges rediscover them later with git's *default* detection (-M50%,
//! `diff.renameLimit` 1000). A move committed together with heavy edits, or
//! as part of a move too large for the limit, is therefore a delete plus an
//! add forever after. The only cheap moment to fix that is before the commit
//! exists (commit the pure move first, then the edits), so the check runs
//! rename detection twice on the same HEAD-to-index changes: once at a low
//! threshold with no limit (what really happened), once as git's defaults
//! would (what git will see), and reports the difference. It also flags a
//! new file that is a near-copy of a tracked one, usually copy-paste.
//!
//! Nothing here prints: findings are returned, and
//! [`crate::output::check`] writes them.

use crate::progress::Feedback;
use crate::renames::{self, Content, ContentError, Detect, DetectError, Record, Status};
use crate::repo::changes::{self, Listing};
use crate::repo::{Entry, EntryKind, Staged};
use crate::similarity::score;

/// What to check and how git is configured.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Renames git-simm reports as renames at all: this score and up
    /// ([`score::MAX_SCORE`] units).
    pub rename_threshold: u32,
    /// A new file this similar to a tracked one is a copy.
    pub copy_threshold: u32,
    /// The minimum score of git's default detection (50%).
    pub git_min_score: u32,
    /// git's `diff.renameLimit` (0: none).
    pub git_rename_limit: usize,
    /// git's `diff.renames` (false: git detects no renames at all).
    pub git_renames: bool,
    /// `simm.ignore` patterns, as in `.gitignore` ([`ignored`]): findings
    /// naming a matching path are dropped.
    pub ignore: Vec<String>,
    /// A copy must also reach `copy_threshold` with the index's
    /// boilerplate ([`crate::groups::common`]) taken out of both files.
    pub ignore_common: bool,
}

/// git's default `diff.renameLimit` for diff and log.
pub const GIT_DEFAULT_RENAME_LIMIT: usize = 1000;

/// Why git will not see a rename.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The pair scores under git's threshold.
    BelowThreshold,
    /// destinations x sources exceeds `diff.renameLimit`^2; `needed` is the
    /// limit git would need.
    RenameLimit {
        /// The limit that would have been needed.
        needed: usize,
    },
    /// `diff.renames` is false.
    RenamesOff,
    /// git pairs the paths differently (another source scored higher).
    PairedElsewhere,
}

/// One thing worth warning about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A staged rename git's default detection will not find.
    LostRename {
        /// Path in HEAD.
        old: Vec<u8>,
        /// Path in the index.
        new: Vec<u8>,
        /// git's score of the pair.
        score: u32,
        /// Why git misses it.
        reason: Reason,
    },
    /// A new file that is a near-copy of a file still tracked.
    Copy {
        /// The new file.
        new: Vec<u8>,
        /// The tracked file it copies.
        source: Vec<u8>,
        /// git's score of the pair.
        score: u32,
    },
    /// A deleted (or renamed-away) file whose content went into two or
    /// more new files ([`renames::splits`]).
    Split {
        /// The file in HEAD.
        source: Vec<u8>,
        /// The new files, the one holding most of it first.
        parts: Vec<Vec<u8>>,
        /// How much of the source they hold together.
        covered: u32,
    },
    /// A new file made of two or more deleted (or renamed-away) files.
    Merge {
        /// The new file.
        destination: Vec<u8>,
        /// The files in HEAD, the one adding most first.
        sources: Vec<Vec<u8>>,
        /// How much of the new file they make together.
        covered: u32,
    },
}

fn renamed(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.status == Status::Renamed)
        .collect()
}

fn path_of(e: &Option<Entry>) -> &[u8] {
    e.as_ref().map_or(&[][..], |e| e.path.as_slice())
}

/// The error returned by [`check`]: rename detection, or reading the
/// content of the candidate copy sources, failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Rename or copy detection failed.
    #[error(transparent)]
    Detect(#[from] DetectError),
    /// The content of a copy source could not be read.
    #[error(transparent)]
    Content(#[from] ContentError),
}

/// Compare HEAD with the index (`staged`, from [`crate::repo::Repo::staged`])
/// and return the findings, renames first, each group in path order.
/// `feedback` is told when each step ends, and its flag stops detection.
pub fn check(
    staged: &Staged,
    settings: &Settings,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<Vec<Finding>, CheckError> {
    let index = &staged.index;
    let (changes, unchanged) = changes::diff_staged(&staged.tree, index, &staged.same);
    if changes.is_empty() {
        return Ok(Vec::new());
    }
    prefetch_when_copies_are_sure(&changes, index, &unchanged, content)?;
    let low = renames::Options {
        detect: Detect::Renames,
        min_score: settings.rename_threshold,
        limit: 0,
        ..renames::Options::default()
    };
    let (ours, _) = renames::detect(&changes, &low, content, feedback)?;
    feedback.trace("check: renames");
    let mut findings = Vec::new();
    let ours_renamed = renamed(&ours);
    if !ours_renamed.is_empty() {
        let git = renames::Options {
            detect: if settings.git_renames {
                Detect::Renames
            } else {
                Detect::Off
            },
            min_score: settings.git_min_score,
            limit: settings.git_rename_limit,
            ..renames::Options::default()
        };
        let (theirs, outcome) = renames::detect(&changes, &git, content, feedback)?;
        let seen: std::collections::HashSet<(&[u8], &[u8])> = renamed(&theirs)
            .into_iter()
            .map(|r| (path_of(&r.old), path_of(&r.new)))
            .collect();
        for r in ours_renamed {
            let (old, new) = (path_of(&r.old), path_of(&r.new));
            if seen.contains(&(old, new)) {
                continue;
            }
            let reason = if !settings.git_renames {
                Reason::RenamesOff
            } else if let Some(needed) = outcome.limit_needed {
                Reason::RenameLimit { needed }
            } else if r.score < settings.git_min_score {
                Reason::BelowThreshold
            } else {
                Reason::PairedElsewhere
            };
            findings.push(Finding::LostRename {
                old: old.to_vec(),
                new: new.to_vec(),
                score: r.score,
                reason,
            });
        }
    }
    // A split out of a file that stays keeps that file's history: what
    // the warning says (history lost, commit the move first) does not
    // apply to it.
    let split_opts = renames::splits::Options {
        stays: false,
        ..Default::default()
    };
    let (splits, merges) = renames::splits::find(&ours, &split_opts, content)?;
    feedback.trace("check: splits and merges");
    let paths = |s: &renames::splits::Spread| -> Vec<Vec<u8>> {
        s.parts.iter().map(|p| p.entry.path.clone()).collect()
    };
    let spread_findings: Vec<Finding> = splits
        .iter()
        .map(|s| Finding::Split {
            source: s.whole.path.clone(),
            parts: paths(s),
            covered: s.covered,
        })
        .chain(merges.iter().map(|m| Finding::Merge {
            destination: m.whole.path.clone(),
            sources: paths(m),
            covered: m.covered,
        }))
        .collect();
    // Copies: only files that are still plain additions after generous
    // rename detection, against every file of HEAD still in the index.
    let added: std::collections::HashSet<&[u8]> = ours
        .iter()
        .filter(|r| r.status == Status::Added)
        .map(|r| path_of(&r.new))
        .collect();
    if !added.is_empty() {
        let opts = renames::Options {
            detect: Detect::CopiesHarder,
            min_score: settings.copy_threshold,
            limit: 0,
            ..renames::Options::default()
        };
        let all = copy_changes(
            index,
            &unchanged,
            &changes,
            opts.min_score,
            content,
            feedback,
        )?;
        feedback.trace("check: copy sources");
        let (copies, _) = renames::detect(&all, &opts, content, feedback)?;
        feedback.trace("check: copies");
        // The index is sorted by path: a search, not a set of every path.
        let present = |path: &[u8]| index.position(path).is_some();
        let mut found: Vec<(Entry, Entry, u32)> = Vec::new();
        for r in copies {
            let (old, new) = (path_of(&r.old), path_of(&r.new));
            if r.status == Status::Copied
                && added.contains(new)
                && present(old)
                && let (Some(o), Some(n)) = (r.old, r.new)
            {
                found.push((o, n, r.score));
            }
        }
        if settings.ignore_common && !found.is_empty() {
            found = without_boilerplate(found, index, settings.copy_threshold, content)?;
            feedback.trace("check: copies without boilerplate");
        }
        for (old, new, score) in found {
            findings.push(Finding::Copy {
                new: new.path,
                source: old.path,
                score,
            });
        }
    }
    // A lost rename between a split's source and one of its parts (or a
    // merge's source and its destination) is said better by the split.
    findings.retain(|f| match f {
        Finding::LostRename { old, new, .. } => !spread_findings.iter().any(|s| match s {
            Finding::Split { source, parts, .. } => source == old && parts.contains(new),
            Finding::Merge {
                destination,
                sources,
                ..
            } => destination == new && sources.contains(old),
            _ => false,
        }),
        _ => true,
    });
    findings.extend(spread_findings);
    findings.retain(|f| {
        let paths: Vec<&[u8]> = match f {
            Finding::LostRename { old, new, .. } => vec![old, new],
            Finding::Copy { new, source, .. } => vec![new, source],
            Finding::Split { source, parts, .. } => std::iter::once(source)
                .chain(parts)
                .map(Vec::as_slice)
                .collect(),
            Finding::Merge {
                destination,
                sources,
                ..
            } => std::iter::once(destination)
                .chain(sources)
                .map(Vec::as_slice)
                .collect(),
        };
        !paths.iter().any(|p| ignored(&settings.ignore, p))
    });
    Ok(findings)
}

/// The copies (source, new file, git's score) that still reach
/// `min_score` once the index's boilerplate is taken out of both files:
/// the chunks in more than a tenth of up to
/// [`common::SAMPLE`](crate::groups::common::SAMPLE) files of the index
/// ([`crate::groups::common`]), the statistics `groups` and `similar` use.
/// A new file that shares only a license header with a tracked one is no
/// copy. The sample is read only when some copy was found (most commits
/// add none), through `content`, so its histograms are cached with the
/// others; the score kept is git's.
fn without_boilerplate(
    found: Vec<(Entry, Entry, u32)>,
    index: &(impl Listing + ?Sized),
    min_score: u32,
    content: &mut impl Content,
) -> Result<Vec<(Entry, Entry, u32)>, CheckError> {
    use crate::groups::common::{self, Common};
    use crate::similarity::score::Binary;
    let mut ids: Vec<gix::ObjectId> = (0..index.len())
        .filter(|&i| matches!(index.kind(i), EntryKind::Regular | EntryKind::Executable))
        .map(|i| index.id(i))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let keys: Vec<renames::SpanKey> = Common::sample_positions(ids.len())
        .into_iter()
        .map(|p| (ids[p], Binary::Auto))
        .collect();
    let sample = content.spans(&keys)?;
    let boilerplate = Common::from_histograms(sample.iter().map(|s| &**s), common::DEFAULT_SHARE);
    if boilerplate.buckets.is_empty() {
        return Ok(found);
    }
    let entries: Vec<&Entry> = found.iter().flat_map(|(o, n, _)| [o, n]).collect();
    let binary = content.binary(&entries)?;
    let pair_keys: Vec<renames::SpanKey> = entries
        .iter()
        .zip(&binary)
        .map(|(e, &b)| (e.id, b))
        .collect();
    let spans = content.spans(&pair_keys)?;
    Ok(found
        .into_iter()
        .zip(spans.chunks(2))
        .filter(|((old, new, _), s)| {
            // An exact copy is one whatever it holds, as git pairs it.
            if old.id == new.id {
                return true;
            }
            let (old, new) = (
                s[0].without(&boilerplate.buckets),
                s[1].without(&boilerplate.buckets),
            );
            let plain = score::score(&old, &new, min_score);
            plain >= min_score && plain > 0
        })
        .map(|(f, _)| f)
        .collect())
}

/// The changes to look for copies in: `changes` plus, as sources, the
/// files unchanged from HEAD (the entries of `index` at the positions
/// `unchanged`, in order) that can make a difference to
/// git's `--find-copies-harder` answer for the added files. In a large
/// tree nearly every file is unchanged, and building detection's
/// structures for all of them cost more than the search itself.
///
/// An unchanged file matters when, for some added file, it
/// - has the same id (an exact copy; any kind of file),
/// - passes git's size filter at `min_score` (it can be a copy),
/// - has the same basename (git's tie-break between equal scores), or
/// - is among the first four sources: git fills a destination's four
///   candidate slots with the first sources it meets, whatever their
///   score, and the slot order breaks ties ([`renames`] replays it).
///
/// Any other source scores 0 without a basename bonus, so it never enters
/// a slot once the first four are taken, and the answer is unchanged.
/// In a partial clone, one fetch instead of two when the copy pass is
/// sure to run: with more files added than deleted, some addition is left
/// after rename detection (which pairs one deletion with one addition),
/// and the copy pass reads every unchanged file of HEAD. The rename pass's
/// blobs and the copy pass's are then fetched together. Otherwise each
/// pass fetches what it reads (the copy pass may not run at all).
fn prefetch_when_copies_are_sure(
    changes: &[changes::Change],
    index: &(impl Listing + ?Sized),
    unchanged: &[usize],
    content: &mut impl Content,
) -> Result<(), ContentError> {
    use changes::ChangeKind;
    let count = |kind: ChangeKind| changes.iter().filter(|c| c.kind == kind).count();
    if count(ChangeKind::Added) <= count(ChangeKind::Deleted) {
        return Ok(());
    }
    let regular = |kind: EntryKind| matches!(kind, EntryKind::Regular | EntryKind::Executable);
    let ids: Vec<gix::ObjectId> = changes
        .iter()
        .flat_map(|c| c.old.iter().chain(c.new.iter()))
        .filter(|e| regular(e.kind))
        .map(|e| e.id)
        .chain(
            unchanged
                .iter()
                .filter(|&&i| regular(index.kind(i)))
                .map(|&i| index.id(i)),
        )
        .collect();
    content.prefetch(&ids)
}

fn copy_changes(
    index: &(impl Listing + ?Sized),
    unchanged: &[usize],
    changes: &[changes::Change],
    min_score: u32,
    content: &mut impl Content,
    feedback: &Feedback,
) -> Result<Vec<changes::Change>, ContentError> {
    let added: Vec<&Entry> = changes
        .iter()
        .filter(|c| c.kind == changes::ChangeKind::Added)
        .filter_map(|c| c.new.as_ref())
        .collect();
    let regular = |kind: EntryKind| matches!(kind, EntryKind::Regular | EntryKind::Executable);
    let regular_added: Vec<gix::ObjectId> = added
        .iter()
        .filter(|e| regular(e.kind))
        .map(|e| e.id)
        .collect();
    let added_sizes: Vec<u64> = content
        .sizes(&regular_added)?
        .into_iter()
        .filter(|&s| s > 0)
        .collect();
    // Few files are added at a time: sorted lists searched by halves cost
    // less than hashing the id and the name of each of 100,000 unchanged
    // files.
    let mut added_ids: Vec<gix::ObjectId> = added.iter().map(|e| e.id).collect();
    added_ids.sort_unstable();
    let mut added_names: Vec<&[u8]> = added.iter().map(|e| basename(&e.path)).collect();
    added_names.sort_unstable();

    let ids: Vec<gix::ObjectId> = unchanged
        .iter()
        .filter(|&&i| regular(index.kind(i)))
        .map(|&i| index.id(i))
        .collect();
    let mut sizes = content.sizes(&ids)?.into_iter();
    feedback.trace("check: sizes of unchanged files");
    let mut leading = 4;
    let mut kept: Vec<usize> = Vec::new();
    for &i in unchanged {
        let id = index.id(i);
        let size = if regular(index.kind(i)) {
            sizes.next().unwrap_or(0)
        } else {
            0
        };
        // Empty files are not sources (the check does not ask to pair
        // them), so they fill no slot.
        let source = !renames::is_empty_blob(&id);
        let keep = (source && leading > 0)
            || (size > 0
                && added_sizes
                    .iter()
                    .any(|&a| score::sizes_compatible(size, a, min_score)))
            || added_ids.binary_search(&id).is_ok()
            || added_names.binary_search(&basename(index.path(i))).is_ok();
        if source && leading > 0 {
            leading -= 1;
        }
        if keep {
            kept.push(i);
        }
    }
    Ok(changes::merge(
        changes.iter().cloned(),
        kept.into_iter().map(|i| unchanged_change(index.entry(i))),
    ))
}

fn unchanged_change(e: Entry) -> changes::Change {
    changes::Change {
        kind: changes::ChangeKind::Unchanged,
        old: Some(e.clone()),
        new: Some(e),
        stat_dirty: false,
    }
}

fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// Whether `path` matches the `simm.ignore` patterns, which mean what they
/// mean in `.gitignore` (git's wildmatch, through [`gix::glob`]):
///
/// - a pattern without a slash (other than a trailing one) matches a file
///   or directory name at any depth: `*.lock`, `vendor`;
/// - a slash at the start or in the middle anchors it to the top of the
///   repository: `/build`, `docs/*.md` (which does not match
///   `docs/a/b.md`); `*`, `?` and `[...]` do not match `/`;
/// - `**/` at the start matches in any directory, `/**` at the end
///   everything inside, `/**/` zero or more directories;
/// - a trailing slash matches only directories: `vendor/`;
/// - a path inside an ignored directory is ignored, and a later `!pattern`
///   re-includes what an earlier pattern excluded, except inside an
///   excluded directory (as in git);
/// - a pattern starting with `#` is a comment (`\#` for a literal `#`).
///
/// Matching is case-sensitive.
pub fn ignored(patterns: &[String], path: &[u8]) -> bool {
    let patterns: Vec<gix::glob::Pattern> = patterns
        .iter()
        .filter(|p| !p.starts_with('#'))
        .filter_map(|p| gix::glob::parse(p.as_bytes()))
        .collect();
    if patterns.is_empty() {
        return false;
    }
    // git does not descend into an excluded directory: its leading
    // directories are decided first, each on its own.
    let dirs = path
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'/')
        .map(|(i, _)| &path[..i]);
    for dir in dirs {
        if excluded(&patterns, dir, true) {
            return true;
        }
    }
    excluded(&patterns, path, false)
}

/// gitignore's rule for one path: the last pattern that matches decides,
/// and a `!` pattern includes.
fn excluded(patterns: &[gix::glob::Pattern], path: &[u8], is_dir: bool) -> bool {
    use gix::bstr::ByteSlice;
    use gix::glob::{pattern::Case, wildmatch::Mode};
    if path.is_empty() || path.starts_with(b"/") {
        return false;
    }
    let basename = path.iter().rposition(|&b| b == b'/').map(|i| i + 1);
    patterns
        .iter()
        .rev()
        .find(|p| {
            p.matches_repo_relative_path(
                path.as_bstr(),
                basename,
                Some(is_dir),
                Case::Sensitive,
                Mode::NO_MATCH_SLASH_LITERAL,
            )
        })
        .is_some_and(|p| !p.is_negative())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ig(p: &[&str], path: &str) -> bool {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        ignored(&p, path.as_bytes())
    }

    #[test]
    fn ignore_patterns() {
        assert!(ig(&["vendor"], "vendor/a.c"));
        assert!(ig(&["vendor/"], "vendor/x/a.c"));
        assert!(ig(&["vendor"], "vendor"));
        assert!(!ig(&["vendor"], "vendored/a.c"));
        assert!(ig(&["*.lock"], "deep/dir/Cargo.lock"));
        assert!(!ig(&["*.lock"], "deep/dir/Cargo.toml"));
        assert!(ig(&["docs/*.md"], "docs/b.md"));
        assert!(!ig(&["docs/*.md"], "src/b.md"));
        assert!(ig(&["file[0-9].txt"], "file7.txt"));
        assert!(!ig(&["file[!0-9].txt"], "file7.txt"));
        assert!(ig(&["a?c"], "x/abc"));
        assert!(!ig(&[], "a"));
    }

    /// The rules of `.gitignore`, where the hand-written matcher this
    /// replaced differed: `*` stopped at nothing, a name without a slash
    /// was a prefix of the whole path, and there was no anchoring, `**`,
    /// directory-only pattern or negation.
    #[test]
    fn ignore_patterns_mean_what_they_mean_in_gitignore() {
        // `*` does not cross `/`; `**` does.
        assert!(!ig(&["docs/*.md"], "docs/a/b.md"));
        assert!(ig(&["docs/**/*.md"], "docs/a/b.md"));
        assert!(ig(&["docs/**/*.md"], "docs/b.md"));
        assert!(ig(&["**/gen"], "a/b/gen/x.c"));
        assert!(ig(&["docs/**"], "docs/a/b.md"));
        // A name without a slash matches at any depth, a file or a
        // directory; a leading slash anchors it to the top.
        assert!(ig(&["vendor"], "lib/vendor/a.c"));
        assert!(ig(&["/vendor"], "vendor/a.c"));
        assert!(!ig(&["/vendor"], "lib/vendor/a.c"));
        // A slash in the middle anchors too.
        assert!(!ig(&["lib/vendor"], "x/lib/vendor/a.c"));
        // A trailing slash matches directories only.
        assert!(ig(&["build/"], "a/build/out.o"));
        assert!(!ig(&["build/"], "a/build"));
        // Negation: the last matching pattern wins, but nothing inside an
        // excluded directory comes back.
        assert!(!ig(&["*.md", "!README.md"], "docs/README.md"));
        assert!(ig(&["*.md", "!README.md", "README.md"], "README.md"));
        assert!(ig(&["docs/", "!docs/README.md"], "docs/README.md"));
        // Comments, escapes and empty values.
        assert!(!ig(&["#a.c"], "#a.c"));
        assert!(ig(&["\\#a.c"], "#a.c"));
        assert!(!ig(&[""], "a"));
    }

    /// Regression: the hand-written glob tried every split of the path at
    /// every `*`, so a few stars and a long path took hours (exponential in
    /// the number of stars). git's wildmatch gives up on a suffix that
    /// cannot match. The match runs on a thread so the test fails in
    /// seconds rather than hang.
    #[test]
    fn many_stars_against_a_long_path_finish_at_once() {
        let path = format!("{}/{}", "a".repeat(60), "a".repeat(200));
        let patterns = [
            "*a*a*a*a*a*a*a*a*b",
            "**/*a*a*a*a*a*a*a*a*b",
            "a*a*a*a*a*a*a*a*/b",
        ];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let hits: Vec<bool> = patterns.iter().map(|p| ig(&[p], &path)).collect();
            let _ = tx.send(hits);
        });
        let hits = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("ignore matching took over 5 s");
        assert_eq!(hits, [false, false, false]);
    }
}
