//! The two sides of the inexact step and what the candidate search
//! learns of each destination's row: shared by the search
//! ([`super::matrix`]) and git's slot replay ([`super::ties`]).

use std::sync::Arc;

use gix::ObjectId;

use super::DetectError;
use super::{Content, Dst, SpanKey, Src, basename_same, is_regular};
use crate::progress::Feedback;
use crate::repo::Entry;
use crate::similarity::candidates;
use crate::similarity::fingerprint::Sketch;
use crate::similarity::score::{self, Spans};

/// What the search knows of one destination's row of git's matrix.
#[derive(Clone, Debug, Default)]
pub(super) struct Found {
    /// Every source whose exact score is known: (position in `active`,
    /// score), ascending by position.
    pub(super) scored: Vec<(u32, u32)>,
    /// Every source not in `scored` scores below this; 0 when every
    /// source was scored.
    pub(super) bound: u32,
    /// Pairs the fingerprints proposed and scoring looked at.
    pub(super) by_fingerprint: usize,
    /// Pairs proposed in all (some only scored far enough to see they
    /// score below what they needed).
    pub(super) tried: usize,
    /// Pairs of `tried` that the bins' ceiling ([`score::Coarse`]) ruled
    /// out without scoring.
    pub(super) ruled_out: usize,
    /// Only the head of the row is known: the search looked for the
    /// destination's best source alone, so `bound` is that best score,
    /// fewer than git's 4 entries reach it, and entries below it may be
    /// missing. Such a row serves as long as the assignment never reaches
    /// past its head; else it is searched again for 4.
    pub(super) partial: bool,
}

/// The sources and destinations of the inexact step, with what the search
/// knows of them (indices into `active` and `remaining`).
pub(super) struct Sides<'a> {
    pub(super) srcs: &'a [Src<'a>],
    pub(super) dsts: &'a [Dst<'a>],
    /// The sources still available, indices into `srcs`.
    pub(super) active: &'a [usize],
    /// The destinations still unpaired, indices into `dsts`.
    pub(super) remaining: &'a [usize],
    /// Size and fingerprint of each of `active`.
    pub(super) src_items: Vec<Sketch>,
    /// Size and fingerprint of each of `remaining`.
    pub(super) dst_items: Vec<Sketch>,
    /// The fingerprint search over `src_items`.
    pub(super) search: candidates::Search,
    /// A hash of each of `active`'s basenames ([`name_key`]): rows and
    /// tie replays ask for every candidate whether its basename is the
    /// destination's, and a dense array answers most without following
    /// each source's path.
    src_names: Vec<i64>,
}

/// The key of a path's basename, equal for equal basenames: the export's
/// file-name key, whose equality is confirmed on the bytes here.
pub(super) use crate::similarity::bands::name_key;

/// The chunk histograms of the inexact step: `None` for a file that
/// cannot score (not a regular file, empty, or, for a source, outside
/// every destination's size window).
pub(super) struct SideSpans {
    pub(super) src: Vec<Option<Arc<Spans>>>,
    pub(super) dst: Vec<Option<Arc<Spans>>>,
}

impl<'a> Sides<'a> {
    /// The sides of the inexact step: sizes and fingerprints of
    /// `active` sources and `remaining` destinations, and the candidate
    /// search over the sources.
    pub(super) fn new(
        srcs: &'a [Src<'a>],
        dsts: &'a [Dst<'a>],
        active: &'a [usize],
        remaining: &'a [usize],
        min_score: u32,
        content: &mut impl Content,
        feedback: &Feedback,
    ) -> Result<Sides<'a>, DetectError> {
        // Only regular files are scored inexactly, and only their blobs may
        // be read: a submodule's commit is usually not in this repository
        // at all. Others get a zero size, which keeps them out of every
        // size window.
        let (src_items, dst_items) = if active.iter().any(|&s| srcs[s].unchanged) {
            unchanged_sources_by_size(srcs, dsts, active, remaining, min_score, content)?
        } else {
            // Both sides in one read: one batch of histograms for the
            // store, not one per side.
            let mut items = regular_items(
                active
                    .iter()
                    .map(|&s| srcs[s].entry)
                    .chain(remaining.iter().map(|&d| dsts[d].entry)),
                content,
            )?;
            let dst_items = items.split_off(active.len());
            (items, dst_items)
        };
        feedback.trace("fingerprints of sources and destinations");
        feedback.check()?;
        Ok(Sides::with_items(
            srcs, dsts, active, remaining, src_items, dst_items,
        ))
    }

    /// The sides of `active` sources and `remaining` destinations whose
    /// sizes and fingerprints are known: the candidate search over the
    /// sources, and their basenames' keys.
    pub(super) fn with_items(
        srcs: &'a [Src<'a>],
        dsts: &'a [Dst<'a>],
        active: &'a [usize],
        remaining: &'a [usize],
        src_items: Vec<Sketch>,
        dst_items: Vec<Sketch>,
    ) -> Sides<'a> {
        let search = candidates::Search::new(&src_items);
        let src_names = active
            .iter()
            .map(|&s| name_key(&srcs[s].entry.path))
            .collect();
        Sides {
            srcs,
            dsts,
            active,
            remaining,
            src_items,
            dst_items,
            search,
            src_names,
        }
    }

    /// git's `basename_same()` of the active source `a` and a destination
    /// path whose [`name_key`] is `dst_key`.
    pub(super) fn same_name(&self, a: usize, dst_path: &[u8], dst_key: i64) -> bool {
        self.src_names[a] == dst_key
            && basename_same(&self.srcs[self.active[a]].entry.path, dst_path)
    }

    /// The histograms of every destination that can score and of every
    /// source that can score against one of them: the blobs git would
    /// read (it reads a source only once a destination's size passes).
    pub(super) fn spans(
        &self,
        min_score: u32,
        content: &mut impl Content,
    ) -> Result<SideSpans, DetectError> {
        let sizes: Vec<u64> = self.dst_items.iter().map(|i| i.size).collect();
        let partners = Partners::new(&sizes, min_score);
        let want_src: Vec<bool> = self
            .src_items
            .iter()
            .map(|i| partners.any(i.size))
            .collect();
        let mut keys: Vec<SpanKey> = Vec::new();
        for (a, &s) in self.active.iter().enumerate() {
            if want_src[a] {
                keys.push(self.srcs[s].key());
            }
        }
        for (k, &d) in self.remaining.iter().enumerate() {
            if self.dst_items[k].size > 0 {
                keys.push(self.dsts[d].key());
            }
        }
        let mut got = content.spans(&keys)?.into_iter();
        let src = want_src
            .iter()
            .map(|&w| if w { got.next() } else { None })
            .collect();
        let dst = self
            .dst_items
            .iter()
            .map(|i| if i.size > 0 { got.next() } else { None })
            .collect();
        Ok(SideSpans { src, dst })
    }
}

/// Which source sizes can score against some destination at the minimum
/// score (git's size filter, [`score::sizes_compatible`]).
struct Partners {
    /// The sizes of the destinations that can score, sorted.
    dst_sizes: Vec<u64>,
    min_score: u32,
}

impl Partners {
    /// `dst_sizes`: the sizes of the destinations, any order, 0 for one
    /// that cannot score.
    fn new(dst_sizes: &[u64], min_score: u32) -> Partners {
        let mut dst_sizes: Vec<u64> = dst_sizes.iter().copied().filter(|&s| s > 0).collect();
        dst_sizes.sort_unstable();
        Partners {
            dst_sizes,
            min_score,
        }
    }

    fn any(&self, size: u64) -> bool {
        // The destinations a source is size-compatible with form one run
        // of the sorted sizes; it is enough to look at the nearest on
        // either side of its own size.
        let at = self.dst_sizes.partition_point(|&d| d < size);
        let near = [at.checked_sub(1), Some(at)];
        size > 0
            && near
                .iter()
                .flatten()
                .filter_map(|&i| self.dst_sizes.get(i))
                .any(|&d| score::sizes_compatible(size, d, self.min_score))
    }
}

/// Sizes and fingerprints of the sides when `--find-copies-harder` made
/// unchanged files sources: an unchanged one is read only when its size
/// can score against some destination's, both sizes taken from the store
/// or else from the object's header. git reads a source only once a
/// destination's size lets it (`estimate_similarity()`), so a blob it
/// never needs, even a damaged one, stops nothing; and the unchanged
/// files of a large tree are mostly such blobs. A source left unread
/// keeps its size and no fingerprint: no destination's size window holds
/// it, so no search proposes it and it is never scored. What is read is
/// read in one go, as in [`Sides::new`].
fn unchanged_sources_by_size(
    srcs: &[Src<'_>],
    dsts: &[Dst<'_>],
    active: &[usize],
    remaining: &[usize],
    min_score: u32,
    content: &mut impl Content,
) -> Result<(Vec<Sketch>, Vec<Sketch>), DetectError> {
    let sized_src = |s: usize| srcs[s].unchanged && is_regular(srcs[s].entry.kind);
    let mut ids: Vec<ObjectId> = remaining
        .iter()
        .map(|&d| dsts[d].entry)
        .filter(|e| is_regular(e.kind))
        .map(|e| e.id)
        .collect();
    let n_dst = ids.len();
    ids.extend(
        active
            .iter()
            .filter(|&&s| sized_src(s))
            .map(|&s| srcs[s].entry.id),
    );
    // With no destination to score against, git reads no source at all.
    if n_dst == 0 {
        ids.clear();
    }
    let mut dst_sizes = content.header_sizes(&ids)?;
    let src_sizes = dst_sizes.split_off(n_dst);
    let partners = Partners::new(&dst_sizes, min_score);
    let mut src_sizes = src_sizes.into_iter();
    let unread: Vec<Option<u64>> = active
        .iter()
        .map(|&s| {
            if !sized_src(s) {
                None
            } else if n_dst == 0 {
                Some(0)
            } else {
                src_sizes.next().filter(|&size| !partners.any(size))
            }
        })
        .collect();
    let wanted = active
        .iter()
        .zip(&unread)
        .filter(|(_, u)| u.is_none())
        .map(|(&s, _)| srcs[s].entry);
    let mut items = regular_items(
        wanted.chain(remaining.iter().map(|&d| dsts[d].entry)),
        content,
    )?;
    let dst_items = items.split_off(unread.iter().filter(|u| u.is_none()).count());
    let mut read = items.into_iter();
    let src_items = unread
        .iter()
        .map(|u| match *u {
            Some(size) => Sketch {
                size,
                fingerprint: None,
            },
            None => read.next().unwrap_or(Sketch {
                size: 0,
                fingerprint: None,
            }),
        })
        .collect();
    Ok((src_items, dst_items))
}

/// Sizes and fingerprints of regular files; a zero-sized placeholder for
/// anything else.
fn regular_items<'e>(
    entries: impl Iterator<Item = &'e Entry>,
    content: &mut impl Content,
) -> Result<Vec<Sketch>, DetectError> {
    let entries: Vec<&Entry> = entries.collect();
    let ids: Vec<ObjectId> = entries
        .iter()
        .filter(|e| is_regular(e.kind))
        .map(|e| e.id)
        .collect();
    let mut found = content.search_items(&ids)?.into_iter();
    Ok(entries
        .iter()
        .map(|e| {
            let none = Sketch {
                size: 0,
                fingerprint: None,
            };
            if is_regular(e.kind) {
                found.next().unwrap_or(none)
            } else {
                none
            }
        })
        .collect())
}
