//! Repository access: the one place in git-simm that knows gix.
//!
//! Everything else in the crate works on [`Entry`] lists and blob bytes.
//! Keeping gix behind this module means the rest of the code does not chase
//! gix API changes, and the choices that make bulk reading fast are made
//! once, here, instead of at every call site: [`Repo::map_blobs`] decodes a
//! pack along its delta trees when much of it is wanted (every object
//! inflated once) and otherwise reads in pack order with one reader and
//! delta-base cache per thread; [`Repo::all_blobs`] tells blobs from other
//! objects by walking pack headers instead of resolving delta chains.
//!
//! Discovery follows git's environment, as every git tool does:
//! `GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, `GIT_CEILING_DIRECTORIES`
//! and the like are honoured by gix ([`Repo::discover`]), so git-simm finds
//! the repository git would, in hooks too; so is `GIT_NO_LAZY_FETCH`,
//! read with the rest of what makes a partial clone (`promisor.rs`). That
//! is the one place the library looks at the environment; everything
//! git-simm's own variables decide comes in as options.
//!
//! In a partial clone, the blobs a bulk read ([`Repo::map_blobs`]) wants
//! and the clone lacks are fetched first, all in one `git fetch`
//! ([`Repo::fetch_missing`]), never one at a time.
//!
//! Error messages deliberately read like git's `fatal:` messages and always
//! name the object, path or revision involved, because they end up in front
//! of people who know git, not gix.
//!
//! Known deviations from git:
//! * Submodule contents are never read.
//! * Objects git synthesises (the empty tree and the empty blob) are
//!   readable even when they are not stored, as they are in git.

mod attributes;
mod bulk;
pub mod changes;
mod clean;
mod config;
mod entry;
mod error;
mod history;
mod index;
mod loose;
mod odb;
mod ownership;
mod pathspec;
mod promisor;
mod refs;
mod revision;
mod staged;
mod submodules;
mod tree;
mod worktree;

use std::path::{Path, PathBuf};

pub use attributes::{AttrSource, DiffAttributes};
pub use clean::Cleaner;
/// `GIT_CONFIG_PARAMETERS` as git reads it; public for the fuzz targets
/// (`fuzz/`), not part of the library's interface.
#[doc(hidden)]
pub use config::parse_parameters as parse_config_parameters;
pub use entry::{Entry, EntryKind};
pub use error::RepoError;
pub use history::TreeItem;
pub use index::IndexEntries;
pub use loose::{LooseInflater, inflate_loose};
pub use odb::Reader;
pub use pathspec::Pathspec;
pub use promisor::Fetched;
pub use staged::Staged;
pub use submodules::{IgnoreSubmodules, SubmoduleIgnores};
pub use worktree::WorktreeRead;

use index::{IndexRepr, open_index, visit_index_entries};
use odb::{Pack, ReaderPool, chunk_len, find, header};
use refs::RefStorage;
use staged::Shortcut;
use tree::{walk_tree, walk_tree_with};

/// An opened repository, shareable between threads.
pub struct Repo {
    repo: gix::ThreadSafeRepository,
    common_dir: PathBuf,
    git_dir: PathBuf,
    work_dir: Option<PathBuf>,
    refs: RefStorage,
    promisor: promisor::Promisor,
}

impl Repo {
    /// Discover the repository from `dir` upward like git does.
    ///
    /// `GIT_DIR` (and with it `GIT_WORK_TREE`, `GIT_INDEX_FILE`), as well as
    /// `GIT_CEILING_DIRECTORIES` and `GIT_DISCOVERY_ACROSS_FILESYSTEM`, are
    /// honoured the way git honours them, so git-simm behaves inside hooks.
    /// Configuration is read as git reads it, `git -c` values
    /// (`GIT_CONFIG_PARAMETERS`) last.
    ///
    /// Repositories of either hash (SHA-1, SHA-256) open; so do reftable
    /// repositories, whose revisions are then resolved by `git rev-parse`
    /// (see `refs.rs`: gix cannot read reftable).
    pub fn discover(dir: &Path) -> Result<Repo, RepoError> {
        if let Err(source) = std::fs::metadata(dir) {
            return Err(RepoError::BadDirectory {
                path: dir.to_owned(),
                source,
            });
        }
        // git's ownership rule, before anything reads the repository's
        // configuration (see `ownership.rs`).
        let found = ownership::check_discovered(dir)?;
        let git_dir_env = std::env::var_os("GIT_DIR");
        let repo = gix::ThreadSafeRepository::discover_with_environment_overrides_opts(
            dir,
            Default::default(),
            trusted(),
        )
        .map_err(|source| {
            if let Some(git_dir) = &git_dir_env {
                return RepoError::BadGitDir {
                    path: PathBuf::from(git_dir),
                    source,
                };
            }
            use gix::discover::upwards::Error as Upwards;
            if matches!(
                source.downcast_any_ref::<Upwards>(),
                Some(
                    Upwards::NoGitRepository { .. }
                        | Upwards::NoGitRepositoryWithinCeiling { .. }
                        | Upwards::NoGitRepositoryWithinFs { .. }
                )
            ) {
                RepoError::NotARepository {
                    path: dir.to_owned(),
                    source,
                }
            } else {
                RepoError::Open {
                    path: dir.to_owned(),
                    source,
                }
            }
        })?;
        let mut repo = repo;
        if git_dir_env.is_some() && std::env::var_os("GIT_WORK_TREE").is_none() {
            // git: with GIT_DIR set and neither GIT_WORK_TREE nor
            // core.worktree, the current directory is the top of the work
            // tree (unless core.bare says there is none); gix takes the
            // directory above the git dir.
            let local = repo.to_thread_local();
            let config = local.config_snapshot();
            let bare = config.boolean("core.bare") == Some(true);
            if !bare && config.string("core.worktree").is_none() {
                repo.work_tree = Some(dir.to_owned());
            }
        }
        if found == ownership::Found::Nothing {
            // gix found what git's search did not: its owners are checked
            // all the same.
            ownership::check_paths(repo.work_dir(), repo.git_dir())?;
        }
        Repo::finish(repo)
    }

    /// Open the repository at `path` (its work tree's top or its git dir)
    /// without searching upward and without git's environment: for
    /// another repository than the one a command runs in (`origin --in`),
    /// which `GIT_DIR` set by a hook must not redirect.
    pub fn open(path: &Path) -> Result<Repo, RepoError> {
        if let Err(source) = std::fs::metadata(path) {
            return Err(RepoError::NotARepositoryAt {
                path: path.to_owned(),
                source: gix::Error::from_error(source),
            });
        }
        ownership::check_named(path)?;
        let repo = trusted()
            .full
            .open(path)
            .map_err(|source| RepoError::NotARepositoryAt {
                path: path.to_owned(),
                source: gix::Error::from_error(source),
            })?;
        Repo::finish(repo)
    }

    fn finish(repo: gix::ThreadSafeRepository) -> Result<Repo, RepoError> {
        // Relative paths would silently change meaning if the process changes
        // its current directory later; anchor them now.
        let absolute = |p: &Path| -> PathBuf {
            if p.is_absolute() {
                p.to_owned()
            } else {
                std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
            }
        };
        let common_dir = absolute(repo.common_dir.as_deref().unwrap_or_else(|| repo.git_dir()));
        let work_dir = repo.work_dir().map(absolute);
        let git_dir = absolute(repo.git_dir());
        let mut local = repo.to_thread_local();
        let refs = refs::ref_storage(&local)?;
        let mut opened = Repo {
            repo,
            common_dir,
            git_dir,
            work_dir,
            refs,
            promisor: Default::default(),
        };
        let env = std::env::var_os(config::PARAMETERS_VAR);
        let command_line =
            config::command_line_config(env.as_deref().map(|e| e.as_encoded_bytes()))?;
        let why = config::git_decides(
            local.config_snapshot().plumbing(),
            command_line.as_ref(),
            refs == RefStorage::Reftable,
            opened.git_dir != opened.common_dir,
        );
        let extra = match (why, command_line) {
            (Some(why), _) => Some(opened.config_from_git(why)?),
            (None, Some(mut file)) => {
                let branch = local.head_name().ok().flatten();
                config::resolve_command_line_includes(
                    &mut file,
                    &opened.git_dir,
                    branch.as_ref().map(|b| b.as_ref()),
                )?;
                Some(file)
            }
            (None, None) => None,
        };
        if let Some(file) = extra {
            let bad = |e: &dyn std::fmt::Display| match why {
                Some(why) => RepoError::ConfigFromGit {
                    why,
                    reason: e.to_string(),
                },
                None => RepoError::ConfigParameters {
                    reason: e.to_string(),
                },
            };
            let mut config = local.config_snapshot_mut();
            if why.is_some() {
                // git's reading has everything, `-c` values included.
                *config = file;
            } else {
                config.append(file).map_err(|e| bad(&e))?;
            }
            config.commit().map_err(|e| bad(&e))?;
            opened.repo = local.into_sync();
        }
        // After the configuration is final: `git -c remote.<name>.promisor`
        // counts, as it does for git.
        opened.promisor = promisor::promisor(&opened.local(), &opened.objects_dir());
        Ok(opened)
    }

    /// The common git dir, shared by all linked worktrees; git-simm keeps its
    /// store there so every worktree benefits from the same fingerprints.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// This repository's own git dir (a linked worktree's, not the common
    /// one): where git processes started for it should point `--git-dir`.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The root of the work tree, or `None` for a bare repository.
    pub fn work_dir(&self) -> Option<&Path> {
        self.work_dir.as_deref()
    }

    /// The hash function of the repository (SHA-1 unless it is a SHA-256 repository).
    pub fn object_hash(&self) -> gix::hash::Kind {
        self.repo.objects.object_hash()
    }

    fn local(&self) -> gix::Repository {
        self.repo.to_thread_local()
    }
}

/// gix's options for a repository [`ownership`] let through, whatever
/// gix's own view of its owner: full permissions and configuration, and
/// no size limit on objects (gix's default for repositories it does not
/// trust is 16 MiB).
fn trusted() -> gix::sec::trust::Mapping<gix::open::Options> {
    use gix::sec::trust::DefaultForLevel;
    let full = gix::open::Options::default_for_level(gix::sec::Trust::Full)
        .filter_config_section(|_| true)
        .config_overrides(["gitoxide.objects.allocLimitIfReducedTrust=0"]);
    gix::sec::trust::Mapping {
        full: full.clone(),
        reduced: full,
    }
}
