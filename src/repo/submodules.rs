//! Which submodule changes git's diff shows: `--ignore-submodules`,
//! `submodule.<name>.ignore` (the repository's configuration first, then
//! `.gitmodules`) and `diff.ignoreSubmodules`, in git's precedence (the
//! command line over the submodule's own setting over the diff default),
//! and git's default for `git diff`, which leaves out untracked files in a
//! submodule.

use std::collections::HashMap;

use gix::bstr::ByteSlice;

use super::{Repo, RepoError};

/// How much of a submodule's state a diff looks at (git's
/// `--ignore-submodules=<when>` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IgnoreSubmodules {
    /// A new commit, modified tracked files and untracked files all make
    /// the submodule modified.
    None,
    /// Untracked files in the submodule do not count.
    Untracked,
    /// Only a different commit counts, not a dirty work tree.
    Dirty,
    /// Submodule changes are not shown at all (additions and removals
    /// included).
    All,
}

impl IgnoreSubmodules {
    /// A value as git reads it (`handle_ignore_submodules_arg`), or git's
    /// error for any other.
    ///
    /// # Errors
    ///
    /// The value is not `none`, `untracked`, `dirty` or `all`.
    pub fn parse(value: &str) -> Result<IgnoreSubmodules, RepoError> {
        Ok(match value {
            "none" => IgnoreSubmodules::None,
            "untracked" => IgnoreSubmodules::Untracked,
            "dirty" => IgnoreSubmodules::Dirty,
            "all" => IgnoreSubmodules::All,
            _ => {
                return Err(RepoError::BadIgnoreSubmodules {
                    value: value.to_owned(),
                });
            }
        })
    }
}

/// The ignore setting of every submodule path, resolved lazily as git does
/// (a bad `submodule.<name>.ignore` is an error only where it is read).
pub struct SubmoduleIgnores {
    /// `--ignore-submodules` given on the command line: nothing else counts.
    forced: Option<IgnoreSubmodules>,
    /// `diff.ignoreSubmodules`, or git's default for `git diff`.
    default: IgnoreSubmodules,
    /// Each submodule's `ignore` value by path, already in precedence
    /// order (configuration over `.gitmodules`), not yet parsed.
    by_path: HashMap<Vec<u8>, String>,
}

impl SubmoduleIgnores {
    /// The setting that applies to the submodule at `path`.
    ///
    /// # Errors
    ///
    /// The submodule's `ignore` value is not one git knows.
    pub fn for_path(&self, path: &[u8]) -> Result<IgnoreSubmodules, RepoError> {
        if let Some(forced) = self.forced {
            return Ok(forced);
        }
        match self.by_path.get(path) {
            Some(value) => IgnoreSubmodules::parse(value),
            None => Ok(self.default),
        }
    }
}

/// One `[submodule "<name>"]` section of `.gitmodules`.
struct Gitmodule {
    name: String,
    path: Vec<u8>,
    ignore: Option<String>,
}

impl Repo {
    /// The ignore settings of the submodules for a diff, `forced` being
    /// the command line's `--ignore-submodules`.
    ///
    /// `.gitmodules` is read as git reads it for a diff: from the work
    /// tree, else the index, else `HEAD`.
    ///
    /// # Errors
    ///
    /// `diff.ignoreSubmodules` has a value git does not know, or
    /// `.gitmodules` cannot be read or parsed.
    pub fn submodule_ignores(
        &self,
        forced: Option<IgnoreSubmodules>,
    ) -> Result<SubmoduleIgnores, RepoError> {
        let default = match self.config_string("diff.ignoreSubmodules") {
            Some(value) => IgnoreSubmodules::parse(&value)?,
            None => IgnoreSubmodules::Untracked,
        };
        let mut by_path = HashMap::new();
        if forced.is_none() {
            for Gitmodule { name, path, ignore } in self.gitmodules()? {
                let configured = self.config_string(&format!("submodule.{name}.ignore"));
                if let Some(value) = configured.or(ignore) {
                    by_path.insert(path, value);
                }
            }
        }
        Ok(SubmoduleIgnores {
            forced,
            default,
            by_path,
        })
    }

    /// Every submodule `.gitmodules` lists.
    fn gitmodules(&self) -> Result<Vec<Gitmodule>, RepoError> {
        let bytes = match self.work_dir().map(|w| w.join(".gitmodules")) {
            Some(file) if file.is_file() => {
                std::fs::read(&file).map_err(|source| RepoError::WorkTreeFile {
                    path: ".gitmodules".into(),
                    source,
                })?
            }
            _ => {
                let found = [":.gitmodules", "HEAD:.gitmodules"]
                    .iter()
                    .find_map(|spec| self.resolve_object(spec).ok());
                match found {
                    Some((id, gix::object::Kind::Blob)) => self.reader().blob(&id)?,
                    _ => return Ok(Vec::new()),
                }
            }
        };
        let file = gix::config::File::from_bytes_no_includes(
            &bytes,
            gix::config::file::Metadata::from(gix::config::Source::Local),
            Default::default(),
        )
        .map_err(|e| RepoError::Gitmodules {
            reason: e.to_string(),
        })?;
        let Some(sections) = file.sections_by_name("submodule") else {
            return Ok(Vec::new());
        };
        Ok(sections
            .filter_map(|section| {
                let name = section
                    .header()
                    .subsection_name()?
                    .to_str_lossy()
                    .into_owned();
                let path = section.value("path")?.to_vec();
                let ignore = section
                    .value("ignore")
                    .map(|v| v.to_str_lossy().into_owned());
                Some(Gitmodule { name, path, ignore })
            })
            .collect())
    }
}
