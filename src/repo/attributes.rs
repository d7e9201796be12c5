//! Which paths git scores as binary: the `diff` attribute and the diff
//! drivers it names, read from where git reads them.
//!
//! git decides text versus binary per path (`diff_filespec_is_binary()` in
//! diff.c, `userdiff_find_by_path()` in userdiff.c, at v2.47): `diff` set
//! forces text, `-diff` (and the builtin macro `binary`, which is `-diff
//! -merge -text`) forces binary, `diff=<name>` asks the driver
//! `diff.<name>.binary` (`true`, `false` or `auto`); a name that is neither
//! configured nor builtin, and an unspecified attribute, fall back to the
//! driver `default` (which `diff.default.binary` can set too). Only where
//! all of that leaves it open does the content decide (the NUL rule).
//!
//! Where attributes come from (attr.c, `read_attr()` and
//! `compute_default_attr_source()`):
//! - a tree, when one is given: `--attr-source` / `GIT_ATTR_SOURCE` (a bad
//!   one is fatal), else `attr.tree` (a bad one is ignored);
//! - otherwise, in a repository with a work tree, each directory's
//!   `.gitattributes` in the work tree, and the index's where the work tree
//!   has none, but the index only when git has loaded it: `git diff A B`
//!   of two trees does not, `--cached` and work-tree diffs do
//!   ([`AttrSource`]);
//! - in a bare repository, no in-tree file at all (git 2.47 no longer
//!   falls back to HEAD there);
//! - always the global files beneath them (the system file,
//!   `core.attributesFile` or `$XDG_CONFIG_HOME/git/attributes`) and
//!   `$GIT_DIR/info/attributes` above them.
//!
//! Matching, precedence and macros are gix's (`gix-attributes`), checked
//! against git by the integration tests; `info/attributes` is asked first
//! on its own, as gix ranks it below deeper `.gitattributes` files.
//!
//! ### Deviations from git
//! - Macros defined in `info/attributes` are not known to `.gitattributes`
//!   files, nor those of `.gitattributes` files to `info/attributes` (git
//!   shares them); builtin `binary` works everywhere.
//! - `GIT_ATTR_NOSYSTEM` is not honoured (gix reads the system file
//!   regardless); with no system attributes file, as on most systems, this
//!   changes nothing.

use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

use super::{Entry, Repo, RepoError};
use crate::similarity::score::Binary;

/// Which in-tree `.gitattributes` files a comparison reads when no tree is
/// given as the attribute source: what git's diff reads for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrSource {
    /// The work tree's files only: `git diff A B` (two trees) does not load
    /// the index, so a `.gitattributes` that is only staged does not count.
    Worktree,
    /// The work tree's files, the index's where a directory has none:
    /// `--cached`, the work tree, `check --staged`.
    WorktreeThenIndex,
    /// The `.gitattributes` files of this tree (`--attr-source`,
    /// `GIT_ATTR_SOURCE`, `attr.tree`).
    Tree(ObjectId),
}

/// An index of just the `.gitattributes` files among `entries`: what an
/// attribute stack reads in-tree files from (gix's id mapping), without
/// loading every entry.
pub(super) fn attribute_index(hash: gix::hash::Kind, entries: &[Entry]) -> gix::index::State {
    let mut index = gix::index::State::new(hash);
    for e in entries
        .iter()
        .filter(|e| e.path.rsplit(|&b| b == b'/').next() == Some(b".gitattributes"))
    {
        index.dangerously_push_entry(
            Default::default(),
            e.id,
            gix::index::entry::Flags::empty(),
            gix::index::entry::Mode::FILE,
            e.path.as_bstr(),
        );
    }
    index.sort_entries();
    index
}

/// Builtin diff drivers of git 2.47 (`builtin_drivers[]` in userdiff.c):
/// naming one in `diff=<name>` selects it even unconfigured, and its
/// `binary` is "decide by content" unless `diff.<name>.binary` says
/// otherwise.
const BUILTIN_DRIVERS: &[&str] = &[
    "ada", "bash", "bibtex", "cpp", "csharp", "css", "dts", "elixir", "fortran", "fountain",
    "golang", "html", "java", "kotlin", "markdown", "matlab", "objc", "pascal", "perl", "php",
    "python", "ruby", "rust", "scheme", "tex", "default",
];

/// The `binary` setting of every diff driver git would know.
#[derive(Clone)]
struct Drivers {
    /// Configured drivers (any `diff.<name>.*` key defines one) and their
    /// last `binary` value.
    configured: std::collections::HashMap<Vec<u8>, Binary>,
}

impl Drivers {
    fn from_config(repo: &gix::Repository) -> Result<Drivers, RepoError> {
        let config = repo.config_snapshot();
        let plumbing = config.plumbing();
        let mut configured = std::collections::HashMap::new();
        let Some(sections) = plumbing.sections_by_name("diff") else {
            return Ok(Drivers { configured });
        };
        let names: Vec<Vec<u8>> = sections
            .filter_map(|s| s.header().subsection_name().map(|n| n.to_vec()))
            .collect();
        for name in names {
            if configured.contains_key(&name) {
                continue;
            }
            let sub = Some(name.as_bstr());
            let value = plumbing.string_by("diff", sub, "binary");
            // git's parse_tristate(): "auto" is -1, anything else a boolean.
            let binary = if value
                .as_ref()
                .is_some_and(|v| v.eq_ignore_ascii_case(b"auto"))
            {
                Binary::Auto
            } else {
                match plumbing.boolean_by("diff", sub, "binary") {
                    Ok(None) => Binary::Auto,
                    Ok(Some(true)) => Binary::Yes,
                    Ok(Some(false)) => Binary::No,
                    Err(_) => {
                        return Err(RepoError::BadBoolean {
                            key: format!("diff.{}.binary", name.as_bstr()),
                            value: value.map(|v| v.to_string()).unwrap_or_default(),
                        });
                    }
                }
            };
            configured.insert(name, binary);
        }
        Ok(Drivers { configured })
    }

    /// The driver's `binary`, `None` when git knows no driver of that name.
    fn find(&self, name: &[u8]) -> Option<Binary> {
        self.configured.get(name).copied().or_else(|| {
            BUILTIN_DRIVERS
                .iter()
                .any(|b| b.as_bytes() == name)
                .then_some(Binary::Auto)
        })
    }

    /// git's `userdiff_find_by_path()` and the driver's `binary`, for the
    /// state of a path's `diff` attribute.
    fn decide(&self, state: Option<gix::attrs::StateRef<'_>>) -> Binary {
        use gix::attrs::StateRef;
        match state {
            Some(StateRef::Set) => Binary::No,
            Some(StateRef::Unset) => Binary::Yes,
            Some(StateRef::Value(v)) => {
                let name: &BStr = v.as_bstr();
                self.find(name).unwrap_or_else(|| self.default_binary())
            }
            Some(StateRef::Unspecified) | None => self.default_binary(),
        }
    }

    /// What a path with no driver (or an unknown one) gets: the `default`
    /// driver's setting.
    fn default_binary(&self) -> Binary {
        self.find(b"default").unwrap_or(Binary::Auto)
    }
}

/// git's text-or-binary decision for paths, as the `diff` attribute and
/// the diff drivers make it ([`DiffAttributes::binary`]). A clone looks
/// up paths on its own (another thread's share of them).
#[derive(Clone)]
pub struct DiffAttributes {
    repo: gix::Repository,
    stack: gix::worktree::Stack,
    outcome: gix::attrs::search::Outcome,
    /// `$GIT_DIR/info/attributes` once more, on its own: gix's stack puts
    /// it above the top-level `.gitattributes` but below deeper ones,
    /// where git keeps it above every file. A match here is git's answer.
    info: Option<InfoAttributes>,
    case: gix::glob::pattern::Case,
    drivers: Drivers,
}

#[derive(Clone)]
struct InfoAttributes {
    search: gix::attrs::Search,
    outcome: gix::attrs::search::Outcome,
}

impl Repo {
    /// The tree `--attr-source`, `GIT_ATTR_SOURCE` or `attr.tree` names, as
    /// git resolves it: `explicit` (the option or the variable, which the
    /// caller reads) must name a tree-ish, `attr.tree` is ignored when it
    /// does not.
    ///
    /// # Errors
    ///
    /// [`RepoError::BadAttrSource`] when `explicit` names no tree-ish.
    pub fn attr_source_tree(&self, explicit: Option<&str>) -> Result<Option<ObjectId>, RepoError> {
        if let Some(spec) = explicit {
            return match self.resolve_tree(spec) {
                Ok(tree) => Ok(Some(tree)),
                Err(e @ RepoError::Interrupted(_)) => Err(e),
                Err(_) => Err(RepoError::BadAttrSource {
                    spec: spec.to_owned(),
                }),
            };
        }
        Ok(self
            .config_string("attr.tree")
            .and_then(|spec| self.resolve_tree(&spec).ok()))
    }

    /// The attribute lookups of a comparison whose in-tree attribute files
    /// come from `source`.
    ///
    /// # Errors
    ///
    /// The index or an attribute file cannot be read, or a
    /// `diff.<driver>.binary` value is not a boolean (or `auto`).
    pub fn diff_attributes(&self, source: AttrSource) -> Result<DiffAttributes, RepoError> {
        use gix::worktree::stack::state::attributes::Source;
        let repo = self.local();
        let drivers = Drivers::from_config(&repo)?;
        // Only the `.gitattributes` entries matter to the lookups: an index
        // of just those is built rather than loading every entry.
        let attribute_files: Vec<Entry> = match source {
            AttrSource::Worktree => Vec::new(),
            AttrSource::WorktreeThenIndex if self.work_dir.is_none() => Vec::new(),
            AttrSource::WorktreeThenIndex => self.index_entries_with_conflicts()?.0,
            AttrSource::Tree(tree) => self.tree_entries(tree)?,
        };
        let index = attribute_index(self.object_hash(), &attribute_files);
        let gix_source = match (source, self.work_dir.is_some()) {
            (AttrSource::Tree(_), _) | (_, false) => Source::IdMapping,
            (AttrSource::Worktree | AttrSource::WorktreeThenIndex, true) => {
                Source::WorktreeThenIdMapping
            }
        };
        let stack = repo
            .attributes_only(&index, gix_source)
            .map_err(|e| RepoError::Attributes {
                reason: e.to_string(),
            })?
            .detach();
        let outcome = stack.selected_attribute_matches(["diff"]);
        let info_path = self.common_dir.join("info").join("attributes");
        let info = if info_path.is_file() {
            let mut collection = gix::attrs::search::MetadataCollection::default();
            let search =
                gix::attrs::Search::new_globals([&info_path], &mut Vec::new(), &mut collection)
                    .map_err(|e| RepoError::Attributes {
                        reason: format!("{}: {e}", info_path.display()),
                    })?;
            let mut outcome = gix::attrs::search::Outcome::default();
            outcome.initialize_with_selection(&collection, ["diff"]);
            Some(InfoAttributes { search, outcome })
        } else {
            None
        };
        let case = if self.config_bool("core.ignorecase").unwrap_or(false) {
            gix::glob::pattern::Case::Fold
        } else {
            gix::glob::pattern::Case::Sensitive
        };
        Ok(DiffAttributes {
            repo,
            stack,
            outcome,
            info,
            case,
            drivers,
        })
    }
}

impl DiffAttributes {
    /// The attributes `out` asks about at `path`, for `:(attr:...)`
    /// pathspecs, from the same files the `diff` attribute comes from
    /// (`info/attributes` at gix's rank, below deeper `.gitattributes`).
    /// `false` only when an attribute file cannot be read: gix's search
    /// takes `false` for "no match" and then drops the path, where git
    /// still matches `:(attr:!name)` (unspecified) against it.
    pub(super) fn pathspec_attributes(
        &mut self,
        path: &BStr,
        case: gix::glob::pattern::Case,
        is_dir: bool,
        out: &mut gix::attrs::search::Outcome,
    ) -> bool {
        let mode = if is_dir {
            gix::index::entry::Mode::DIR
        } else {
            gix::index::entry::Mode::FILE
        };
        self.stack
            .set_case(case)
            .at_entry(path, Some(mode), &self.repo.objects)
            .is_ok_and(|platform| {
                platform.matching_attributes(out);
                true
            })
    }

    /// What git's diff decides about text versus binary at `path` (a
    /// regular file's path from the top of the repository), before looking
    /// at its content.
    ///
    /// # Errors
    ///
    /// An attribute file on the way cannot be read.
    pub fn binary(&mut self, path: &[u8]) -> Result<Binary, RepoError> {
        if let Some(info) = &mut self.info {
            info.outcome.reset();
            info.search.pattern_matching_relative_path(
                path.as_bstr(),
                self.case,
                Some(false),
                &mut info.outcome,
            );
            // Any match, `!diff` (unspecified) included, ends git's search.
            let state = info
                .outcome
                .iter()
                .find(|m| m.assignment.name.as_str() == "diff")
                .map(|m| m.assignment.state);
            if let Some(state) = state {
                return Ok(self.drivers.decide(Some(state)));
            }
        }
        let platform = self
            .stack
            .at_entry(path.as_bstr(), None, &self.repo.objects)
            .map_err(|e| RepoError::Attributes {
                reason: format!("{}: {e}", path.as_bstr()),
            })?;
        self.outcome.reset();
        platform.matching_attributes(&mut self.outcome);
        let state = self
            .outcome
            .iter_selected()
            .next()
            .map(|m| m.assignment.state);
        Ok(self.drivers.decide(state))
    }
}
