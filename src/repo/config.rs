//! Configuration as git reads it, and the paths it decides (hooks).
//!
//! gix reads what git reads (system, global and repository files, includes
//! and conditional includes, `config.worktree` under
//! `extensions.worktreeConfig`, `GIT_CONFIG_COUNT`), except the values of
//! `git -c key=value`, which git hands to the commands it runs in
//! `GIT_CONFIG_PARAMETERS`: [`command_line_config`] reads those as git's
//! `config.c` does (their includes too), and [`Repo::discover`] puts them
//! last, where git puts them.
//!
//! Two conditional includes gix evaluates otherwise than git, and where
//! one of them is present, [`git_decides`] says so and the configuration
//! is taken whole from `git config --list` instead (one process):
//! `includeIf "onbranch:..."` in a reftable repository, whose branch gix
//! cannot read, and `includeIf "gitdir:..."` in a linked worktree, where
//! gix matches the pattern against other directories than git (git
//! matches the worktree's own git dir, `.git/worktrees/<name>`).

use std::path::PathBuf;

use gix::bstr::{BStr, BString, ByteSlice};

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

    /// A boolean configuration key as git reads it; `None` when unset.
    ///
    /// # Errors
    ///
    /// [`RepoError::BadBoolean`] when it is set to something git does not
    /// take for a boolean (git stops there too).
    pub fn config_bool_strict(&self, key: &str) -> Result<Option<bool>, RepoError> {
        let repo = self.local();
        let config = repo.config_snapshot();
        match config.plumbing().boolean(key) {
            Ok(b) => Ok(b),
            Err(_) => Err(RepoError::BadBoolean {
                key: key.to_owned(),
                value: config
                    .string(key)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            }),
        }
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

/// The environment variable git passes `-c` values (and `--config-env`
/// ones) to the commands it runs in.
pub(super) const PARAMETERS_VAR: &str = "GIT_CONFIG_PARAMETERS";

/// The `-c` values of `GIT_CONFIG_PARAMETERS` as a configuration file of
/// command-line scope; `None` when it is unset or empty.
pub(super) fn command_line_config(
    env: Option<&[u8]>,
) -> Result<Option<gix::config::File>, RepoError> {
    let Some(env) = env.filter(|e| !e.is_empty()) else {
        return Ok(None);
    };
    let bad = |reason: String| RepoError::ConfigParameters { reason };
    let entries = parse_parameters(env).map_err(|e| bad(e.to_owned()))?;
    config_file(entries, gix::config::Source::Cli)
        .map(Some)
        .map_err(bad)
}

/// Follow the includes of the `-c` values (`-c include.path=...` and
/// `-c includeIf.<condition>.path=...`, which git follows, absolute paths
/// only), with `gitdir:` matched against `git_dir` and `onbranch:`
/// against `branch`.
pub(super) fn resolve_command_line_includes(
    file: &mut gix::config::File,
    git_dir: &std::path::Path,
    branch: Option<&gix::refs::FullNameRef>,
) -> Result<(), RepoError> {
    let home = gix::path::env::home_dir();
    let options = gix::config::file::init::Options {
        includes: gix::config::file::includes::Options::follow(
            gix::config::path::interpolate::Context {
                git_install_dir: None,
                home_dir: home.as_deref(),
                home_for_user: Some(gix::config::path::interpolate::home_for_user),
            },
            gix::config::file::includes::conditional::Context {
                git_dir: Some(git_dir),
                branch_name: branch,
            },
        ),
        ..Default::default()
    };
    file.resolve_includes(options)
        .map_err(|e| RepoError::ConfigParameters {
            reason: format!("{e:#}"),
        })
}

/// Why the configuration gix read cannot be trusted and git must be asked
/// for it (see the module documentation), `None` when it can: `config` is
/// what gix read, `command_line` the `-c` values.
pub(super) fn git_decides(
    config: &gix::config::File,
    command_line: Option<&gix::config::File>,
    reftable: bool,
    linked_worktree: bool,
) -> Option<&'static str> {
    let has = |prefixes: &[&str]| {
        [Some(config), command_line]
            .into_iter()
            .flatten()
            .any(|file| {
                file.sections_by_name("includeIf")
                    .into_iter()
                    .flatten()
                    .any(|s| {
                        s.header()
                            .subsection_name()
                            .is_some_and(|n| prefixes.iter().any(|p| n.starts_with(p.as_bytes())))
                    })
            })
    };
    if reftable && has(&["onbranch:"]) {
        Some("includeIf \"onbranch:\" in a reftable repository, whose branch gix cannot read")
    } else if linked_worktree && has(&["gitdir:", "gitdir/i:"]) {
        Some("includeIf \"gitdir:\" in a linked worktree, which gix matches otherwise than git")
    } else {
        None
    }
}

impl Repo {
    /// The configuration as `git config --list -z` prints it: every value
    /// git sees, includes (conditional ones too) and `-c` values resolved
    /// by git, in git's order, as one file of command-line scope. `why`
    /// says in errors why git was asked.
    pub(super) fn config_from_git(
        &self,
        why: &'static str,
    ) -> Result<gix::config::File, RepoError> {
        let mut cmd = self.git_command();
        cmd.args(["config", "--list", "-z"]);
        let failed = |reason: String| RepoError::ConfigFromGit { why, reason };
        let out = cmd
            .output()
            .map_err(|e| failed(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(failed(super::refs::git_stderr(&out.stderr, out.status)));
        }
        let entries = out
            .stdout
            .split(|&b| b == 0)
            .filter(|e| !e.is_empty())
            .map(|entry| match entry.find_byte(b'\n') {
                Some(nl) => (
                    BString::from(&entry[..nl]),
                    Some(BString::from(&entry[nl + 1..])),
                ),
                None => (BString::from(entry), None),
            });
        config_file(entries, gix::config::Source::Cli)
            .map_err(|e| failed(format!("git config --list printed {e}")))
    }
}

/// Entries as one configuration file of `source`, in order: `key` is
/// `section[.subsection].name` (split at the first and last dot, as git
/// splits it), a `None` value is a key without `=` (boolean true).
pub(super) fn config_file(
    entries: impl IntoIterator<Item = (BString, Option<BString>)>,
    source: gix::config::Source,
) -> Result<gix::config::File, String> {
    let mut file = gix::config::File::new(gix::config::file::Metadata::from(source));
    for (key, value) in entries {
        let parsed = gix::config::KeyRef::parse_unvalidated(key.as_bstr())
            .filter(|k| !k.section_name.is_empty() && !k.value_name.is_empty())
            .ok_or_else(|| format!("an invalid key '{key}'"))?;
        let mut section = file
            .section_mut_or_create_new(parsed.section_name, parsed.subsection_name)
            .map_err(|e| format!("an invalid key '{key}': {e}"))?;
        section
            .push(parsed.value_name, value.as_ref().map(|v| v.as_bstr()))
            .map_err(|e| format!("an invalid key '{key}': {e}"))?;
    }
    Ok(file)
}

/// The entries of `GIT_CONFIG_PARAMETERS`, as git's
/// `parse_config_env_list` reads them: whitespace-separated, each either
/// `'key'='value'` (what git 2.31 and later write; `'key'=` for a key
/// without a value) or the older `'key=value'` (split at the first `=`;
/// no `=` for a key without a value), each part single-quoted as git's
/// `sq_quote_buf` quotes (`'\''` for a quote, `'\!'` for `!`).
pub fn parse_parameters(env: &[u8]) -> Result<Vec<(BString, Option<BString>)>, &'static str> {
    const BOGUS: &str = "bogus format in GIT_CONFIG_PARAMETERS";
    let mut out = Vec::new();
    let mut rest = env;
    while !rest.is_empty() {
        let (key, next) = sq_dequote_step(rest).ok_or(BOGUS)?;
        match next {
            None => {
                out.push(old_style(key.as_bstr())?);
                break;
            }
            Some(next) if next.first().is_some_and(u8::is_ascii_whitespace) => {
                out.push(old_style(key.as_bstr())?);
                rest = next;
            }
            Some([b'=', after @ ..]) => match after.first() {
                Some(b'\'') => {
                    let (value, next) = sq_dequote_step(after).ok_or(BOGUS)?;
                    if next.is_some_and(|n| !n.first().is_some_and(u8::is_ascii_whitespace)) {
                        return Err(BOGUS);
                    }
                    out.push((key, Some(value)));
                    rest = next.unwrap_or_default();
                }
                None => {
                    out.push((key, None));
                    rest = after;
                }
                Some(c) if c.is_ascii_whitespace() => {
                    out.push((key, None));
                    rest = after;
                }
                Some(_) => return Err(BOGUS),
            },
            Some(_) => return Err(BOGUS),
        }
        rest = rest.trim_start_with(|c| c.is_ascii_whitespace());
    }
    Ok(out)
}

/// An old-style entry, `key=value` in one quoted string, as git's
/// `git_config_parse_parameter` splits it: at the first `=`, the key
/// trimmed, the value kept as it is.
fn old_style(text: &BStr) -> Result<(BString, Option<BString>), &'static str> {
    let (key, value) = match text.find_byte(b'=') {
        Some(eq) => (&text[..eq], Some(BString::from(&text[eq + 1..]))),
        None => (text, None),
    };
    let key = key.trim();
    if key.is_empty() {
        return Err("bogus config parameter in GIT_CONFIG_PARAMETERS");
    }
    Ok((BString::from(key), value))
}

/// One single-quoted string at the start of `s`, as git's
/// `sq_dequote_step`: `'...'` with `'\''` and `'\!'` standing for `'` and
/// `!` (and only those). Returns it and what follows the closing quote
/// (`None` at the end of input); `None` if `s` does not start with one.
fn sq_dequote_step(s: &[u8]) -> Option<(BString, Option<&[u8]>)> {
    let mut rest = s.strip_prefix(b"'")?;
    let mut out = Vec::new();
    loop {
        let close = rest.find_byte(b'\'')?;
        out.extend_from_slice(&rest[..close]);
        rest = &rest[close + 1..];
        match rest {
            [] => return Some((out.into(), None)),
            [b'\\', c @ (b'\'' | b'!'), b'\'', tail @ ..] => {
                out.push(*c);
                rest = tail;
            }
            _ => return Some((out.into(), Some(rest))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(env: &str) -> Vec<(String, Option<String>)> {
        parse_parameters(env.as_bytes())
            .expect("parses")
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(|v| v.to_string())))
            .collect()
    }

    fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.to_owned(), v.map(str::to_owned))
    }

    /// What git 2.47 wrote for `git -c a.b=c -c x.y -c "q.r=it's \"q\" !x"
    /// -c url.a=b.c.insteadof=zz` (seen from an alias).
    #[test]
    fn new_style_entries_as_git_writes_them() {
        let env = r#"'a.b'='c' 'x.y'= 'q.r'='it'\''s "q" '\!'x' 'url.a'='b.c.insteadof=zz'"#;
        assert_eq!(
            parse(env),
            [
                kv("a.b", Some("c")),
                kv("x.y", None),
                kv("q.r", Some(r#"it's "q" !x"#)),
                kv("url.a", Some("b.c.insteadof=zz")),
            ]
        );
        assert_eq!(parse("'a.b'="), [kv("a.b", None)]);
        assert_eq!(parse("'a.b'=''"), [kv("a.b", Some(""))]);
        assert_eq!(parse("'a.b'='  c  '  "), [kv("a.b", Some("  c  "))]);
        // git's own parser does not skip leading whitespace either.
        assert!(parse_parameters(b" 'a.b'='c'").is_err());
    }

    /// Before git 2.31 an entry was one quoted `key=value`.
    #[test]
    fn old_style_entries() {
        assert_eq!(
            parse("'a.b=c' 'x.y' ' s.k =v=w '"),
            [
                kv("a.b", Some("c")),
                kv("x.y", None),
                kv("s.k", Some("v=w ")),
            ]
        );
        assert_eq!(
            parse("'a.b=c'\t'd.e='"),
            [kv("a.b", Some("c")), kv("d.e", Some(""))]
        );
    }

    #[test]
    fn malformed_entries_are_refused() {
        for bad in [
            "a.b=c",
            "'a.b",
            "'a.b'x",
            "'a.b'='c'x",
            "'a.b'=c",
            "'=c'",
            "' '",
        ] {
            assert!(parse_parameters(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse(""), []);
    }

    /// The file built from them reads back the same values, in order.
    #[test]
    fn entries_make_a_file_that_reads_them_back() {
        let file = config_file(
            [
                ("simm.strict".into(), None),
                ("Simm.StoreDir".into(), Some(r#"a "b" \c"#.into())),
                ("simm.ignore".into(), Some("x".into())),
                ("simm.ignore".into(), Some("y".into())),
                ("includeIf.gitdir:/a.b/.path".into(), Some("p".into())),
            ],
            gix::config::Source::Cli,
        )
        .expect("valid");
        assert_eq!(file.boolean("simm.strict").ok(), Some(Some(true)));
        assert_eq!(
            file.string("simm.storedir").map(|v| v.to_string()),
            Some(r#"a "b" \c"#.to_owned())
        );
        let all: Vec<String> = file
            .strings("simm.ignore")
            .unwrap_or_default()
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(all, ["x", "y"]);
        assert_eq!(
            file.string("includeIf.gitdir:/a.b/.path")
                .map(|v| v.to_string()),
            Some("p".to_owned())
        );
        assert!(config_file([("nodot".into(), None)], gix::config::Source::Cli).is_err());
        assert!(config_file([("a.b c".into(), None)], gix::config::Source::Cli).is_err());
    }
}
