//! Configuration as git reads it, and the paths it decides (hooks).

use std::path::PathBuf;

use super::{Repo, RepoError};

impl Repo {
    /// The names of the configured remotes.
    pub fn remote_names(&self) -> Vec<String> {
        self.local()
            .remote_names()
            .iter()
            .map(|n| n.to_string())
            .collect()
    }

    /// The last value of a configuration key (`section.key`), as
    /// `git config --get` would print it; `None` when unset.
    pub fn config_string(&self, key: &str) -> Option<String> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.string(key).map(|v| v.to_string())
    }

    /// Every value of a multi-valued configuration key, in order (as
    /// `git config --get-all`).
    pub fn config_strings(&self, key: &str) -> Vec<String> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// A boolean configuration key as git reads it (`true`, `yes`, `on`,
    /// `1`, ...); `None` when unset or not a boolean.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.boolean(key)
    }

    /// An integer configuration key (with git's k/m/g suffixes); `None`
    /// when unset or not an integer.
    pub fn config_int(&self, key: &str) -> Option<i64> {
        let repo = self.local();
        let config = repo.config_snapshot();
        config.integer(key)
    }

    /// A path-valued configuration key as git reads one (`~/` and `~user/`
    /// expanded), not made absolute; `None` when unset or empty.
    pub fn config_path(&self, key: &str) -> Result<Option<PathBuf>, RepoError> {
        let repo = self.local();
        let config = repo.config_snapshot();
        match config.trusted_path(key) {
            Ok(p) => Ok(p.filter(|p| !p.as_os_str().is_empty())),
            Err(e) => Err(RepoError::BadConfig {
                key: key.to_owned(),
                source: gix::Error::from_error(e),
            }),
        }
    }

    /// The directory git runs hooks from: `core.hooksPath` when set (`~`
    /// expanded; relative to the work tree, or to the git dir of a bare
    /// repository, as git resolves it), else `hooks` in the common git dir.
    pub fn hooks_dir(&self) -> PathBuf {
        let repo = self.local();
        let config = repo.config_snapshot();
        match config.trusted_path("core.hooksPath") {
            Ok(Some(p)) if !p.as_os_str().is_empty() => {
                if p.is_absolute() {
                    p
                } else {
                    let base = self
                        .work_dir
                        .clone()
                        .unwrap_or_else(|| repo.git_dir().to_owned());
                    base.join(p)
                }
            }
            _ => self.common_dir.join("hooks"),
        }
    }
}
