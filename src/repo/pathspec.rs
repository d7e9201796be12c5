//! git's pathspecs as `git diff` reads them: paths and directories
//! relative to the current directory, wildcards, and the magic of
//! gitglossary(7) (`:(top)`/`:/`, `:(exclude)`/`:!`/`:^`, `:(glob)`,
//! `:(icase)`, `:(literal)`, `:(attr:...)`) with the `GIT_*_PATHSPECS`
//! variables.
//!
//! Matching is gix's (`gix::pathspec::Search`); what is checked here is
//! what gix accepts but git refuses, so that a pathspec git would die on
//! stops with git's own words instead of selecting something.

use std::path::Path;

use gix::bstr::ByteSlice;

use super::{DiffAttributes, Repo, RepoError};

/// Parsed pathspecs, ready to test repository paths against.
pub struct Pathspec {
    search: gix::pathspec::Search,
}

/// The magic git knows by name in `:(...)` (pathspec.c's table); `attr`
/// also takes a value.
const LONG_MAGIC: [&str; 6] = ["top", "literal", "glob", "icase", "exclude", "attr"];

fn fatal(message: String) -> RepoError {
    RepoError::Pathspec { message }
}

/// A `GIT_*_PATHSPECS` variable read as git reads it (`git_env_bool`).
fn env_bool(name: &str) -> Result<bool, RepoError> {
    match std::env::var_os(name) {
        None => Ok(false),
        Some(value) => gix::config::Boolean::try_from(value.clone())
            .map(|b| b.0)
            .map_err(|_| {
                fatal(format!(
                    "bad boolean environment value '{}' for '{name}'",
                    value.to_string_lossy()
                ))
            }),
    }
}

/// What the environment asks of every pathspec, refused where git refuses
/// the combination.
fn defaults() -> Result<gix::pathspec::Defaults, RepoError> {
    use gix::pathspec::{Defaults, MagicSignature, SearchMode};
    let literal = env_bool("GIT_LITERAL_PATHSPECS")?;
    let glob = env_bool("GIT_GLOB_PATHSPECS")?;
    let noglob = env_bool("GIT_NOGLOB_PATHSPECS")?;
    let icase = env_bool("GIT_ICASE_PATHSPECS")?;
    if glob && noglob {
        return Err(fatal(
            "global 'glob' and 'noglob' pathspec settings are incompatible".into(),
        ));
    }
    if literal && (glob || noglob || icase) {
        return Err(fatal(
            "global 'literal' pathspec setting is incompatible with all other global pathspec settings"
                .into(),
        ));
    }
    let search_mode = if literal || noglob {
        SearchMode::Literal
    } else if glob {
        SearchMode::PathAwareGlob
    } else {
        SearchMode::ShellGlob
    };
    Ok(Defaults {
        signature: if icase {
            MagicSignature::ICASE
        } else {
            MagicSignature::empty()
        },
        search_mode,
        literal,
    })
}

/// The names of the magic in `spec` (long or short form), or git's message
/// for magic it does not know or cannot combine.
fn magic_of(spec: &str) -> Result<Vec<String>, RepoError> {
    let Some(rest) = spec.strip_prefix(':') else {
        return Ok(Vec::new());
    };
    let mut names = Vec::new();
    if let Some(long) = rest.strip_prefix('(') {
        let Some(end) = long.find(')') else {
            return Err(fatal(format!(
                "Missing ')' at the end of pathspec magic in '{spec}'"
            )));
        };
        for word in long[..end].split(',').filter(|w| !w.is_empty()) {
            if word.starts_with("prefix:") {
                // Only git itself passes `prefix:` between its processes,
                // from the top of the work tree.
                continue;
            }
            let name = word.split_once(':').map_or(word, |(name, _)| name);
            if !LONG_MAGIC.contains(&name) || (name != "attr" && name != word) {
                return Err(fatal(format!(
                    "Invalid pathspec magic '{word}' in '{spec}'"
                )));
            }
            if name == "attr" && names.iter().any(|n| n == "attr") {
                return Err(fatal("Only one 'attr:' specification is allowed.".into()));
            }
            names.push(name.to_owned());
        }
    } else {
        for c in rest.chars() {
            // Short magic ends at ':' or at the first character git does
            // not reserve for it (ctype.c's GIT_PATHSPEC_MAGIC, and '^').
            if c == ':' || !"!\"#%&',-/;<=>@_`~^".contains(c) {
                break;
            }
            match c {
                '/' => names.push("top".into()),
                '!' | '^' => names.push("exclude".into()),
                _ => {
                    return Err(fatal(format!(
                        "Unimplemented pathspec magic '{c}' in '{spec}'"
                    )));
                }
            }
        }
    }
    if names.iter().any(|n| n == "literal") && names.iter().any(|n| n == "glob") {
        return Err(fatal(format!(
            "{spec}: 'literal' and 'glob' are incompatible"
        )));
    }
    Ok(names)
}

impl Repo {
    /// The pathspecs `given` on a command line run in `cwd`, or `None` when
    /// there are none (everything matches).
    ///
    /// # Errors
    ///
    /// A pathspec git would refuse: unknown or incompatible magic, an empty
    /// string, a path outside the repository, conflicting `GIT_*_PATHSPECS`
    /// settings.
    pub fn pathspec(
        &self,
        given: &[impl AsRef<[u8]>],
        cwd: &Path,
    ) -> Result<Option<Pathspec>, RepoError> {
        if given.is_empty() {
            return Ok(None);
        }
        // Any bytes, as git takes them; named in messages as text.
        let bytes: Vec<&[u8]> = given.iter().map(AsRef::as_ref).collect();
        let given: Vec<String> = bytes
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        let defaults = defaults()?;
        let root = match self.work_dir() {
            Some(top) => top.canonicalize().unwrap_or_else(|_| top.to_path_buf()),
            None => self.git_dir().to_path_buf(),
        };
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let prefix = match self.work_dir() {
            Some(_) => cwd.strip_prefix(&root).map(Path::to_path_buf).ok(),
            None => None,
        };
        let mut patterns = Vec::with_capacity(given.len());
        for (spec, spec_bytes) in given.iter().zip(&bytes) {
            if spec.is_empty() {
                return Err(fatal(
                    "empty string is not a valid pathspec. please use . instead if you meant to match all paths"
                        .into(),
                ));
            }
            if !defaults.literal {
                magic_of(spec)?;
            }
            let pattern = gix::pathspec::parse(spec_bytes, defaults)
                .map_err(|e| fatal(format!("{spec}: {e}")))?;
            patterns.push(pattern);
        }
        let outside = |spec: &str| {
            fatal(format!(
                "{spec}: '{spec}' is outside repository at '{}'",
                root.display()
            ))
        };
        // gix reports every spec's normalisation failure the same way; find
        // the one that leaves the repository to name it as git does.
        for (spec, pattern) in given.iter().zip(patterns.iter_mut()) {
            let mut one = pattern.clone();
            if one
                .normalize(prefix.as_deref().unwrap_or(Path::new("")), &root)
                .is_err()
            {
                return Err(outside(spec));
            }
            // A spec naming the top itself (`.` there, `..` one level down)
            // normalises to gix's "." pattern, which then matches nothing:
            // the same selection is spelled `:/`, which gix matches.
            if one.is_nil() {
                let top: &[u8] = if pattern.is_excluded() { b":/!" } else { b":/" };
                let mut replacement = gix::pathspec::parse(top, defaults)
                    .map_err(|e| fatal(format!("{spec}: {e}")))?;
                replacement.attributes = std::mem::take(&mut pattern.attributes);
                *pattern = replacement;
            }
        }
        let search = gix::pathspec::Search::from_specs(patterns, prefix.as_deref(), &root)
            .map_err(|_| outside(&given[0]))?;
        Ok(Some(Pathspec { search }))
    }
}

impl Pathspec {
    /// Whether the repository path `path` (from the top of the work tree)
    /// is selected: matched by an including pathspec (or there are only
    /// excluding ones) and by no excluding one. `is_dir` is true for a
    /// submodule, which a trailing-slash pathspec selects as a directory.
    ///
    /// `attributes` answers `:(attr:...)` pathspecs; without it they match
    /// nothing ([`Pathspec::needs_attributes`] says when it is needed).
    pub fn matches(
        &mut self,
        path: &[u8],
        is_dir: bool,
        mut attributes: Option<&mut DiffAttributes>,
    ) -> bool {
        self.search
            .pattern_matching_relative_path(
                path.as_bstr(),
                Some(is_dir),
                &mut |path, case, is_dir, out| {
                    attributes
                        .as_deref_mut()
                        .is_some_and(|a| a.pathspec_attributes(path, case, is_dir, out))
                },
            )
            .is_some_and(|m| !m.is_excluded())
    }

    /// Whether a pathspec has `:(attr:...)` magic, which needs attributes
    /// to match.
    pub fn needs_attributes(&self) -> bool {
        self.search.patterns().any(|p| !p.attributes.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::magic_of;

    #[test]
    fn magic_is_named_or_refused_in_gits_words() {
        assert_eq!(magic_of(":(top,icase)a").unwrap(), ["top", "icase"]);
        assert_eq!(magic_of(":/!a").unwrap(), ["top", "exclude"]);
        assert_eq!(magic_of(":^a").unwrap(), ["exclude"]);
        assert_eq!(magic_of(":!../a").unwrap(), ["exclude"]);
        assert!(magic_of("plain").unwrap().is_empty());
        let err = |s: &str| magic_of(s).unwrap_err().to_string();
        assert_eq!(err(":(foo)x"), "Invalid pathspec magic 'foo' in ':(foo)x'");
        assert_eq!(
            err(":(top"),
            "Missing ')' at the end of pathspec magic in ':(top'"
        );
        assert_eq!(err(":#x"), "Unimplemented pathspec magic '#' in ':#x'");
        assert_eq!(
            err(":(literal,glob)x"),
            ":(literal,glob)x: 'literal' and 'glob' are incompatible"
        );
        assert_eq!(
            err(":(attr:a,attr:b)x"),
            "Only one 'attr:' specification is allowed."
        );
    }
}
