//! git's clean conversions of a work-tree file: what `git add` and git's
//! diff turn the file into before hashing or comparing it
//! (`convert_to_git()` in convert.c): a `filter=<driver>` attribute's
//! `clean` command or `process` filter, `working-tree-encoding`, CRLF to
//! LF (`text`, `eol`, `core.autocrlf`, `core.eol`) and `ident`.
//!
//! gix's pipeline does the work (`gix-filter`), with its attribute stack
//! over the work tree's `.gitattributes`, the index's where the work tree
//! has none. Two choices follow git's diff rather than `git add`:
//! `core.safecrlf` never stops the comparison (git's diff only warns,
//! `diff_populate_filespec()`), and no warning is printed; and a failing
//! filter that is not `required` leaves the file as it is, as in git.
//!
//! Deviations (gix's pipeline decides them):
//! - `$GIT_DIR/info/attributes` ranks below deeper `.gitattributes` files
//!   (gix's order), where git ranks it above all of them; it matters only
//!   where both set a conversion attribute for one path.
//! - A `process` filter that answers `status=abort` is asked again for
//!   the next file, where git stops using it for the rest of the run.
//! - A `working-tree-encoding=UTF-16` file without a byte order mark is
//!   decoded, where git refuses it ("BOM is required") and takes its
//!   bytes as they are; a file that cannot be re-encoded at all is taken
//!   as it is, as in git, but without the CRLF and `ident` conversions
//!   git still applies to it.
//!
//! Running a driver is running a program the repository configures: the
//! repository has passed the ownership check by the time a [`Cleaner`]
//! exists ([`super::ownership`]), as git checks it before reading any of
//! its configuration.

use std::io::Read;
use std::sync::{Mutex, OnceLock, PoisonError};

use gix::ObjectId;
use gix::filter::plumbing as filter;

use super::{Repo, RepoError};

/// Clean conversions of work-tree files ([`Repo::cleaner`]), shared by
/// the threads reading them: one pipeline per thread, made on the first
/// file a thread converts.
pub struct Cleaner<'a> {
    repo: &'a Repo,
    /// The index: the `.gitattributes` files the work tree lacks, and the
    /// blobs `text=auto` looks at.
    index: gix::index::State,
    /// The tree attributes come from instead (`--attr-source`,
    /// `GIT_ATTR_SOURCE`, `attr.tree`), as git reads them for conversions.
    attr_tree: Option<ObjectId>,
    /// The pipeline and attribute stack the threads' own are cloned from,
    /// made once, for the first file read (a work-tree diff whose index
    /// vouches for every file reads none).
    proto: OnceLock<Result<Proto, String>>,
    slots: Vec<Mutex<Option<Worker>>>,
}

#[derive(Clone)]
struct Proto {
    pipeline: filter::Pipeline,
    /// The same conversions without the drivers, for a file whose driver
    /// failed and is not `required`: git then converts the file as it is.
    plain: filter::Pipeline,
    drivers: Vec<filter::Driver>,
    /// The `filter` and `working-tree-encoding` attributes: whether a
    /// file without CR can change at all, and the driver that failed.
    driver_attrs: gix::attrs::search::Outcome,
    stack: gix::worktree::Stack,
}

struct Worker {
    proto: Proto,
    objects: gix::OdbHandle,
}

impl Repo {
    /// The conversions `git add` applies to the files of this repository's
    /// work tree ([`Cleaner::clean_file`]), their attributes from
    /// `attr_tree` when one is given ([`Repo::attr_source_tree`]), else
    /// from the work tree and the index.
    ///
    /// # Errors
    ///
    /// The index cannot be read.
    pub fn cleaner(&self, attr_tree: Option<ObjectId>) -> Result<Cleaner<'_>, RepoError> {
        let index = match super::open_index(&self.local())? {
            Some(file) => file.into_parts().0,
            None => gix::index::State::new(self.object_hash()),
        };
        Ok(Cleaner::new(self, index, attr_tree))
    }
}

impl<'a> Cleaner<'a> {
    /// Conversions for the work tree of `repo`, whose index is `index`.
    pub(super) fn new(
        repo: &'a Repo,
        index: gix::index::State,
        attr_tree: Option<ObjectId>,
    ) -> Self {
        let n = rayon::current_num_threads().max(1);
        Cleaner {
            repo,
            index,
            attr_tree,
            proto: OnceLock::new(),
            slots: std::iter::repeat_with(|| Mutex::new(None))
                .take(n)
                .collect(),
        }
    }

    /// `data`, the file at `path` (from the top of the work tree), as `git
    /// add` would store it: what `git hash-object --path` hashes.
    ///
    /// # Errors
    ///
    /// The attributes cannot be read, or a `required` filter failed.
    pub fn clean_file(&self, path: &[u8], data: Vec<u8>) -> Result<Vec<u8>, RepoError> {
        use gix::bstr::ByteSlice;
        use gix::index::entry::Stage;
        // In conflict, "ours" (has_crlf_in_index()).
        let index_id = [Stage::Unconflicted, Stage::Ours]
            .into_iter()
            .find_map(|stage| self.index.entry_by_path_and_stage(path.as_bstr(), stage))
            .map(|e| e.id);
        self.clean(path, index_id, data)
    }

    /// [`Cleaner::clean_file`] with the path's blob in the index given:
    /// `index_id`, at stage 0, or 2 in a conflict. With `text=auto` (or
    /// `core.autocrlf`) git leaves CRLF alone in a file whose index
    /// version has CRs already (`has_crlf_in_index()`).
    pub(super) fn clean(
        &self,
        path: &[u8],
        index_id: Option<ObjectId>,
        data: Vec<u8>,
    ) -> Result<Vec<u8>, RepoError> {
        let fail = |reason: String| RepoError::Filter {
            path: path.into(),
            reason,
        };
        let proto = self
            .proto
            .get_or_init(|| self.make_proto())
            .as_ref()
            .map_err(|reason| RepoError::ConversionSetup {
                reason: reason.clone(),
            })?;
        let slot = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let mut guard = self.slots[slot]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let worker = guard.get_or_insert_with(|| Worker {
            proto: proto.clone(),
            objects: self.repo.local().objects.clone(),
        });
        let rela = gix::path::from_byte_slice(path)
            .map_err(|_| RepoError::BadPath { path: path.into() })?;
        let Worker { proto, objects } = worker;
        let Proto {
            pipeline,
            plain,
            drivers,
            driver_attrs,
            stack,
        } = proto;
        let platform = stack
            .at_path(rela, None, &*objects)
            .map_err(|e| fail(e.to_string()))?;
        // Most files convert to themselves, and gix's pipeline copies every
        // file it may convert (all of them under `text=auto`) and counts
        // its bytes one at a time. Without a CR, end-of-line conversion
        // changes nothing, and without `$Id` neither does `ident`: only a
        // driver or an encoding could, which the attributes name.
        driver_attrs.reset();
        platform.matching_attributes(driver_attrs);
        let driver = driver_attrs.iter_selected().find_map(|m| {
            match (m.assignment.name.as_str(), m.assignment.state) {
                ("filter", gix::attrs::StateRef::Value(v)) => {
                    drivers.iter().find(|d| d.name == v.as_bstr())
                }
                _ => None,
            }
        });
        let encoded = driver_attrs.iter_selected().any(|m| {
            m.assignment.name.as_str() == "working-tree-encoding"
                && matches!(m.assignment.state, gix::attrs::StateRef::Value(_))
        });
        if driver.is_none()
            && !encoded
            && memchr::memchr(b'\r', &data).is_none()
            && memchr::memmem::find(&data, b"$Id").is_none()
        {
            return Ok(data);
        }
        let mut index_blob = |buf: &mut Vec<u8>| {
            // An index blob that cannot be read has no CR, as for git.
            Ok(index_id.and_then(
                |id| match gix::odb::pack::Find::try_find(&**objects, &id, buf) {
                    Ok(Some((object, _))) if object.kind == gix::object::Kind::Blob => Some(()),
                    _ => None,
                },
            ))
        };
        let mut attributes = |_: &gix::bstr::BStr, out: &mut gix::attrs::search::Outcome| {
            platform.matching_attributes(out);
        };
        let failed = |driver: &filter::Driver, reason: String| RepoError::FilterFailed {
            path: path.into(),
            driver: driver.name.clone(),
            reason,
        };
        // git dies for a `required` driver it has no clean command for.
        if let Some(d) = driver
            && d.required
            && d.clean.is_none()
            && d.process.is_none()
        {
            return Err(failed(d, "no clean command".into()));
        }
        let reason = match convert(pipeline, &data, rela, &mut attributes, &mut index_blob) {
            Ok(converted) => return Ok(converted.unwrap_or(data)),
            Err(reason) => reason,
        };
        // A driver that failed to start or to finish: git goes on with
        // the file as it is unless the driver is `required` (convert.c,
        // `apply_filter()`).
        let reason = match driver {
            Some(d) if d.required => return Err(failed(d, reason)),
            Some(_) => match convert(plain, &data, rela, &mut attributes, &mut index_blob) {
                Ok(converted) => return Ok(converted.unwrap_or(data)),
                Err(reason) => reason,
            },
            None => reason,
        };
        // A file git cannot re-encode from its `working-tree-encoding` (an
        // unknown encoding, bytes that do not decode): git says so and
        // goes on with the bytes as they are (`encode_to_git()`); so does
        // this, without the end-of-line and `ident` conversions git
        // still applies to them.
        if encoded {
            return Ok(data);
        }
        Err(fail(reason))
    }

    fn make_proto(&self) -> Result<Proto, String> {
        use gix::worktree::stack::state::attributes::Source;
        let repo = self.repo.local();
        let options = filter::pipeline::Options {
            drivers: drivers(&repo),
            eol_config: self.eol_config()?,
            // git's diff checks no round trip, of line ends or encodings:
            // it warns at most, and goes on (`diff_populate_filespec()`).
            encodings_with_roundtrip_check: Vec::new(),
            crlf_roundtrip_check: filter::pipeline::CrlfRoundTripCheck::Skip,
        };
        let context = repo.command_context().map_err(|e| e.to_string())?;
        let drivers = options.drivers.clone();
        let mut plain_options = options.clone();
        plain_options.drivers.clear();
        let plain = filter::Pipeline::new(context.clone(), repo.object_hash(), plain_options);
        let pipeline = filter::Pipeline::new(context, repo.object_hash(), options);
        let stack = match self.attr_tree {
            Some(tree) => {
                let entries = self.repo.tree_entries(tree).map_err(|e| e.to_string())?;
                let index = super::attributes::attribute_index(repo.object_hash(), &entries);
                repo.attributes_only(&index, Source::IdMapping)
            }
            None => repo.attributes_only(&self.index, Source::WorktreeThenIdMapping),
        }
        .map_err(|e| e.to_string())?;
        let driver_attrs = stack.selected_attribute_matches(["filter", "working-tree-encoding"]);
        Ok(Proto {
            pipeline,
            plain,
            drivers,
            driver_attrs,
            stack: stack.detach(),
        })
    }
}

impl Cleaner<'_> {
    /// `core.autocrlf` and `core.eol` as git reads them
    /// (`git_default_core_config()`): `input` in any case, else a boolean
    /// (anything else stops git, and this); `lf`, `crlf` or `native` in
    /// any case, anything else unset. gix's own reading is stricter.
    fn eol_config(&self) -> Result<filter::eol::Configuration, String> {
        use filter::eol::{AutoCrlf, Mode};
        let auto_crlf = match self.repo.config_string("core.autocrlf") {
            Some(v) if v.eq_ignore_ascii_case("input") => AutoCrlf::Input,
            _ => match self
                .repo
                .config_bool_strict("core.autocrlf")
                .map_err(|e| e.to_string())?
            {
                Some(true) => AutoCrlf::Enabled,
                _ => AutoCrlf::Disabled,
            },
        };
        let eol = match self.repo.config_string("core.eol") {
            Some(v) if v.eq_ignore_ascii_case("lf") => Some(Mode::Lf),
            Some(v) if v.eq_ignore_ascii_case("crlf") => Some(Mode::CrLf),
            _ => None,
        };
        Ok(filter::eol::Configuration { auto_crlf, eol })
    }
}

/// The filter drivers `filter.<name>.*` configures (`clean`, `smudge`,
/// `process`, `required`), as git reads them: the last value of each
/// key, `required` a boolean (one git cannot read counts as unset here).
fn drivers(repo: &gix::Repository) -> Vec<filter::Driver> {
    use gix::bstr::ByteSlice;
    let config = repo.config_snapshot();
    let plumbing = config.plumbing();
    let Some(sections) = plumbing.sections_by_name("filter") else {
        return Vec::new();
    };
    let names: Vec<Vec<u8>> = sections
        .filter_map(|s| s.header().subsection_name().map(|n| n.to_vec()))
        .collect();
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .map(|name| {
            let sub = Some(name.as_bstr());
            let value = |key: &str| plumbing.string_by("filter", sub, key);
            filter::Driver {
                clean: value("clean"),
                smudge: value("smudge"),
                process: value("process"),
                required: matches!(
                    plumbing.boolean_by("filter", sub, "required"),
                    Ok(Some(true))
                ),
                name: name.into(),
            }
        })
        .collect()
}

/// `data` through `pipeline`: `None` when nothing changed it.
fn convert(
    pipeline: &mut filter::Pipeline,
    data: &[u8],
    rela: &std::path::Path,
    attributes: &mut dyn FnMut(&gix::bstr::BStr, &mut gix::attrs::search::Outcome),
    index_blob: &mut filter::pipeline::convert::to_git::IndexObjectFn<'_>,
) -> Result<Option<Vec<u8>>, String> {
    use filter::pipeline::convert::ToGitOutcome;
    let outcome = pipeline
        .convert_to_git(data, rela, attributes, index_blob)
        .map_err(|e| e.to_string())?;
    Ok(match outcome {
        ToGitOutcome::Unchanged(_) => None,
        ToGitOutcome::Buffer(buf) => Some(buf.to_vec()),
        ToGitOutcome::Process(mut read) => {
            let mut out = Vec::new();
            read.read_to_end(&mut out).map_err(|e| e.to_string())?;
            Some(out)
        }
    })
}
