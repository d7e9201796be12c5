//! `git simm groups --format=sarif`: SARIF 2.1.0, the format code-scanning
//! services (GitHub's among them) read, so near-duplicate files show up in
//! review. One result per group member that is not its group's
//! representative, located at the member and pointing at the
//! representative through a related location.
//!
//! Only what SARIF 2.1.0 defines is used (`runs[].tool.driver.rules`,
//! `results[].locations`, `relatedLocations`, message links `[text](id)`,
//! `partialFingerprints`), so a consumer needs nothing of git-simm's.

use serde::Serialize;

use crate::groups::{Group, Member};
use crate::similarity::score;

/// The rule of a member whose blob is the representative's.
pub const RULE_COPY: &str = "duplicate-file";
/// The rule of a member that differs from the representative.
pub const RULE_NEAR: &str = "near-duplicate-file";

/// The whole log: one run of git-simm.
#[derive(Clone, Debug, Serialize)]
pub struct Log {
    /// The schema the log follows.
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    /// Always `2.1.0`.
    pub version: &'static str,
    /// One run.
    pub runs: Vec<Run>,
}

/// A run: the tool and its results.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// git-simm and its two rules.
    pub tool: Tool,
    /// One per non-representative member.
    pub results: Vec<SarifResult>,
}

/// The tool.
#[derive(Clone, Debug, Serialize)]
pub struct Tool {
    /// The driver: git-simm.
    pub driver: Driver,
}

/// git-simm, as SARIF describes a tool.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    /// `git-simm`.
    pub name: &'static str,
    /// The crate's version.
    pub version: &'static str,
    /// The rules results refer to.
    pub rules: Vec<Rule>,
}

/// A rule.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// [`RULE_COPY`] or [`RULE_NEAR`].
    pub id: &'static str,
    /// One line.
    pub short_description: Text,
    /// The whole story.
    pub full_description: Text,
    /// Its level unless a result says otherwise.
    pub default_configuration: Configuration,
}

/// A rule's default level.
#[derive(Clone, Debug, Serialize)]
pub struct Configuration {
    /// `warning` or `note`.
    pub level: &'static str,
}

/// A message.
#[derive(Clone, Debug, Serialize)]
pub struct Text {
    /// The text; in a result, `[path](0)` links the related location.
    pub text: String,
}

/// One finding: a member of a group that is not its representative.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SarifResult {
    /// [`RULE_COPY`] or [`RULE_NEAR`].
    pub rule_id: &'static str,
    /// `warning` for an exact copy, `note` for a near copy.
    pub level: &'static str,
    /// What and against which file.
    pub message: Text,
    /// The member.
    pub locations: Vec<Location>,
    /// The representative (id 0).
    pub related_locations: Vec<Location>,
    /// Stable across runs while the pair of blobs is the same, so a
    /// service can tell a finding seen before.
    pub partial_fingerprints: Fingerprints,
    /// The score, sizes and group number, for tools that want them.
    pub properties: Properties,
}

/// A result's fingerprint.
#[derive(Clone, Debug, Serialize)]
pub struct Fingerprints {
    /// `<representative blob>:<member blob>:<member path>`.
    #[serde(rename = "similarPair/v1")]
    pub similar_pair: String,
}

/// Extra facts of a result.
#[derive(Clone, Debug, Serialize)]
pub struct Properties {
    /// git's score against the representative, in percent.
    pub score: u32,
    /// The member's size in bytes.
    pub size: u64,
    /// The group's number (1 is the group with most waste).
    pub group: usize,
    /// How many files the group has.
    pub group_files: usize,
}

/// A place in the repository.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// Set on related locations, for message links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// The file.
    pub physical_location: PhysicalLocation,
    /// What the place is, on related locations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Text>,
}

/// A file.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalLocation {
    /// The file's path.
    pub artifact_location: ArtifactLocation,
}

/// A path, as a relative URI.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    /// The path, percent-encoded where a URI needs it (any byte but
    /// letters, digits, `-._~/`), so every name (not UTF-8 included) is
    /// exact.
    pub uri: String,
    /// Relative to the repository's top (SARIF's `%SRCROOT%`).
    pub uri_base_id: &'static str,
}

impl Log {
    /// The log for `groups`.
    pub fn new(groups: &[Group]) -> Log {
        let mut results = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            let Some(rep) = group.members.first() else {
                continue;
            };
            for m in &group.members[1..] {
                results.push(result(g + 1, group.members.len(), rep, m));
            }
        }
        Log {
            schema: "https://json.schemastore.org/sarif-2.1.0.json",
            version: "2.1.0",
            runs: vec![Run {
                tool: Tool {
                    driver: Driver {
                        name: "git-simm",
                        version: env!("CARGO_PKG_VERSION"),
                        rules: rules(),
                    },
                },
                results,
            }],
        }
    }
}

fn rules() -> Vec<Rule> {
    vec![
        Rule {
            id: RULE_COPY,
            short_description: Text {
                text: "File identical to another file".into(),
            },
            full_description: Text {
                text: "The file's content is the same blob as another file's; keeping one \
                       copy would save its bytes."
                    .into(),
            },
            default_configuration: Configuration { level: "warning" },
        },
        Rule {
            id: RULE_NEAR,
            short_description: Text {
                text: "File nearly identical to another file".into(),
            },
            full_description: Text {
                text: "The file is in a group of files linked by git's rename similarity \
                       score at or above the threshold (boilerplate chunks excluded unless \
                       --no-ignore-common); the score shown is against the group's \
                       representative."
                    .into(),
            },
            default_configuration: Configuration { level: "note" },
        },
    ]
}

fn result(group: usize, group_files: usize, rep: &Member, m: &Member) -> SarifResult {
    let exact = m.id == rep.id;
    let pct = score::percent(m.score);
    let rep_name = String::from_utf8_lossy(&rep.path);
    let text = if exact {
        format!("Exact copy of [{rep_name}](0) ({} bytes).", m.size)
    } else {
        format!(
            "{pct}% similar to [{rep_name}](0) (git's rename score; group {group} of \
             {group_files} files)."
        )
    };
    SarifResult {
        rule_id: if exact { RULE_COPY } else { RULE_NEAR },
        level: if exact { "warning" } else { "note" },
        message: Text { text },
        locations: vec![location(None, &m.path, None)],
        related_locations: vec![location(
            Some(0),
            &rep.path,
            Some("the group's representative".into()),
        )],
        partial_fingerprints: Fingerprints {
            similar_pair: format!("{}:{}:{}", rep.id, m.id, uri(&m.path)),
        },
        properties: Properties {
            score: pct,
            size: m.size,
            group,
            group_files,
        },
    }
}

fn location(id: Option<u32>, path: &[u8], message: Option<String>) -> Location {
    Location {
        id,
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: uri(path),
                uri_base_id: "%SRCROOT%",
            },
        },
        message: message.map(|text| Text { text }),
    }
}

/// `path` as a relative URI reference: bytes other than unreserved
/// characters and `/` percent-encoded (RFC 3986).
pub fn uri(path: &[u8]) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_exact_relative_uris() {
        assert_eq!(uri(b"src/a b.c"), "src/a%20b.c");
        assert_eq!(uri(b"caf\xe9/x#1"), "caf%E9/x%231");
        assert_eq!(uri(b"plain/path-1_~.rs"), "plain/path-1_~.rs");
    }
}
