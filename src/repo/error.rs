//! The one error type of repository access: every message names the
//! object, path or revision involved, the way git's `fatal:` messages do.

use std::path::PathBuf;

use gix::ObjectId;
use gix::bstr::BString;

/// Everything that can go wrong while reading a repository.
///
/// Messages name the object, path or revision involved and read like git's
/// fatal messages; the underlying gix or I/O error is kept as the source.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The path given as a repository is not one ([`super::Repo::open`]).
    #[error("not a git repository: '{}'", path.display())]
    NotARepositoryAt {
        /// The path given.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// No repository was found in the directory or any of its parents.
    #[error("not a git repository (or any of the parent directories): {}", path.display())]
    NotARepository {
        /// The directory the search started from.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The repository belongs to another user and `safe.directory` does
    /// not allow it: git's refusal (`setup.c`), in git's words.
    #[error(
        "detected dubious ownership in repository at '{}'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory {quoted}",
        path.display()
    )]
    DubiousOwnership {
        /// The work tree (or the bare repository) refused.
        path: PathBuf,
        /// The path as git quotes it for a shell.
        quoted: String,
        /// What git warns about while it reads `safe.directory` (values
        /// that are not absolute paths), printed before the refusal.
        warnings: Vec<String>,
    },
    /// `safe.bareRepository=explicit` and a bare repository was found by
    /// searching, not named with `GIT_DIR`.
    #[error("cannot use bare repository '{}' (safe.bareRepository is '{value}')", path.display())]
    BareNotAllowed {
        /// The bare repository.
        path: PathBuf,
        /// The setting.
        value: String,
    },
    /// The system, global and command-line configuration, where
    /// `safe.directory` is read, could not be read.
    #[error("{reason}")]
    ProtectedConfig {
        /// git's message.
        reason: String,
    },
    /// The directory to start from cannot be accessed.
    #[error("cannot change to '{}'", path.display())]
    BadDirectory {
        /// The directory given.
        path: PathBuf,
        /// What the file system reported.
        #[source]
        source: std::io::Error,
    },
    /// `GIT_DIR` is set but does not point at a usable repository.
    #[error("not a git repository: '{}'", path.display())]
    BadGitDir {
        /// The value of `GIT_DIR`.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A repository was found but could not be opened (bad config, permissions, ...).
    #[error("cannot open the repository at {}", path.display())]
    Open {
        /// The directory the search started from.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A revision did not resolve to an object.
    #[error("unknown revision or path not in the working tree: '{spec}'")]
    UnknownRevision {
        /// The revision as given.
        spec: String,
        /// What gix reported, e.g. an ambiguous prefix.
        #[source]
        source: gix::Error,
    },
    /// A revision resolved to something that cannot be peeled to a tree.
    #[error("'{spec}' is a {kind}, not a tree-ish")]
    NotATreeish {
        /// The revision as given.
        spec: String,
        /// What it resolved to.
        kind: gix::object::Kind,
    },
    /// git's diff of the work tree would read the null object: a tree
    /// entry naming it beside a stale index entry, under
    /// `--find-copies-harder` (git fails there with these words).
    #[error("unable to read {id}")]
    NullObject {
        /// The null id of the repository's hash.
        id: ObjectId,
    },
    /// An object that should exist is not in the object database.
    #[error("object {id} is missing from the object database")]
    MissingObject {
        /// The object looked for.
        id: ObjectId,
    },
    /// A partial clone lacks objects a command needs, and they could not
    /// be fetched from its promisor remote (lazy fetching disabled, or
    /// every remote failed).
    #[error(
        "could not fetch {id} from promisor remote ({count} object(s) missing from this partial clone, filter {filter}): {reason}"
    )]
    PromisorFetch {
        /// The first object still missing.
        id: ObjectId,
        /// How many are missing.
        count: usize,
        /// The filter the clone was made with.
        filter: String,
        /// Why they were not fetched.
        reason: String,
    },
    /// An object exists but is of another kind than needed.
    #[error("object {id} is a {actual}, not a {expected}")]
    WrongKind {
        /// The object read.
        id: ObjectId,
        /// The kind the caller needed.
        expected: gix::object::Kind,
        /// The kind it has.
        actual: gix::object::Kind,
    },
    /// A loose object fails a check git makes when it reads one (its zlib
    /// stream, its checksum, its size), or its file cannot be read: git's
    /// words.
    #[error("loose object {id} (stored in {}) is corrupt: {reason}", path.display())]
    CorruptLoose {
        /// The object.
        id: ObjectId,
        /// Its file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A packed object's content does not hash to its id (read along a
    /// pack's delta tree, where the content is checked against the id).
    #[error("packed object {id} (stored in {}) is corrupt: {reason}", path.display())]
    CorruptPacked {
        /// The object.
        id: ObjectId,
        /// Its pack.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An object could not be read: corrupt loose object, broken pack, I/O error.
    #[error("object {id} is corrupt or unreadable")]
    ReadObject {
        /// The object read.
        id: ObjectId,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A tree, commit or tag could be read but not parsed.
    #[error("{kind} {id} is corrupt")]
    CorruptObject {
        /// The object parsed.
        id: ObjectId,
        /// Its kind.
        kind: gix::object::Kind,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The object database could not be listed.
    #[error("cannot list the objects in {}", path.display())]
    ListObjects {
        /// The objects directory.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// A freshly written pack does not hold what it should.
    #[error("new pack {} failed verification: {reason}", path.display())]
    PackVerification {
        /// The pack's index file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A pack file is corrupt or could not be read.
    #[error("pack {} is corrupt or unreadable", path.display())]
    Pack {
        /// The pack data file.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The index file could not be read.
    #[error("index file {} is corrupt or unreadable", path.display())]
    Index {
        /// The index file.
        path: PathBuf,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The index has conflicts (stages 1-3).
    #[error("path '{path}' is unmerged; you need to resolve your current index first")]
    Unmerged {
        /// The first conflicted path.
        path: BString,
    },
    /// A work tree was needed but the repository is bare.
    #[error("this operation must be run in a work tree")]
    NoWorkTree,
    /// A work tree file exists but could not be read.
    #[error("cannot read '{path}' from the work tree")]
    WorkTreeFile {
        /// The path relative to the work tree.
        path: BString,
        /// What the file system reported.
        #[source]
        source: std::io::Error,
    },
    /// A path from the index cannot be represented on this platform.
    #[error("path '{path}' cannot be used on this platform")]
    BadPath {
        /// The path as stored by git.
        path: BString,
    },
    /// A configuration value cannot be used, e.g. a path naming an unknown
    /// user's home (`~nobody/x`).
    #[error("bad config value for '{key}'")]
    BadConfig {
        /// The key read.
        key: String,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// The two ends of `A...B` have no common ancestor.
    #[error("{spec}: no merge base")]
    NoMergeBase {
        /// The range as given.
        spec: String,
    },
    /// The work was interrupted (its [`Feedback`](crate::progress::Feedback)
    /// flag was set).
    #[error("interrupted")]
    Interrupted(#[from] crate::progress::Interrupted),
    /// `GIT_CONFIG_PARAMETERS` (the values of `git -c`) cannot be read.
    #[error("unable to parse command-line config: {reason}")]
    ConfigParameters {
        /// What was wrong with it.
        reason: String,
    },
    /// `extensions.refStorage` cannot be honoured: an unknown format, or
    /// the extension in a version 0 repository; git refuses both.
    #[error("cannot use the repository at {}: {reason}", path.display())]
    BadRefStorage {
        /// The repository's git dir.
        path: PathBuf,
        /// What is wrong, in git's words where git has them.
        reason: String,
    },
    /// An `--ignore-submodules` value (or `diff.ignoreSubmodules`,
    /// `submodule.<name>.ignore`) git does not know.
    #[error("bad --ignore-submodules argument: {value}")]
    BadIgnoreSubmodules {
        /// The value given.
        value: String,
    },
    /// `.gitmodules` is not a valid configuration file.
    #[error("bad config file '.gitmodules': {reason}")]
    Gitmodules {
        /// What the parser reported.
        reason: String,
    },
    /// A pathspec git would refuse (or magic git-simm does not support),
    /// in git's words.
    #[error("{message}")]
    Pathspec {
        /// git's message.
        message: String,
    },
    /// `git rev-list` or `git for-each-ref` refused what it was asked to
    /// list (an unknown revision in a range): git's own message.
    #[error("{message}")]
    Listing {
        /// git's message, without its `fatal: `.
        message: String,
    },
    /// In a reftable repository, git could not be asked to resolve a
    /// revision.
    #[error(
        "cannot resolve '{spec}' in this reftable repository (gix cannot read reftable, so git-simm asks git): {reason}"
    )]
    Reftable {
        /// The revision as given.
        spec: String,
        /// What went wrong running git.
        reason: String,
    },
    /// The configuration had to be read by git (a conditional include gix
    /// evaluates otherwise), and git could not be asked.
    #[error("cannot read the configuration through git, needed for {why}: {reason}")]
    ConfigFromGit {
        /// Why git was asked.
        why: &'static str,
        /// What went wrong running git.
        reason: String,
    },
    /// Hashing failed (SHA-1 collision attack detected).
    #[error("cannot hash '{path}'")]
    Hash {
        /// The path hashed.
        path: BString,
        /// What gix reported.
        #[source]
        source: gix::Error,
    },
    /// `--attr-source` or `GIT_ATTR_SOURCE` names no tree-ish (git's
    /// wording; git exits 128 too).
    #[error("bad --attr-source or GIT_ATTR_SOURCE: '{spec}'")]
    BadAttrSource {
        /// The tree-ish as given.
        spec: String,
    },
    /// The attributes of a path cannot be looked up (an attribute file
    /// cannot be read).
    #[error("cannot read the attributes of {reason}")]
    Attributes {
        /// The path and what went wrong.
        reason: String,
    },
    /// A work-tree file cannot be converted as git would store it: its
    /// attributes cannot be read, or a `required` filter driver failed.
    #[error("{path}: clean filter failed: {reason}")]
    Filter {
        /// The path relative to the work tree.
        path: BString,
        /// What went wrong.
        reason: String,
    },
    /// git's clean conversions cannot be set up: the configuration they
    /// read (`core.autocrlf`) or the attribute files cannot be read.
    #[error("cannot set up git's clean conversions of the work tree: {reason}")]
    ConversionSetup {
        /// What went wrong.
        reason: String,
    },
    /// A `required` filter driver failed on a work-tree file (git: "clean
    /// filter '...' failed").
    #[error("{path}: clean filter '{driver}' failed")]
    FilterFailed {
        /// The path relative to the work tree.
        path: BString,
        /// The driver's name (`filter.<name>`).
        driver: BString,
        /// What went wrong (not in the message, which is git's).
        reason: String,
    },
    /// A boolean configuration value is not one (git: "bad boolean config
    /// value").
    #[error("bad boolean config value '{value}' for '{key}'")]
    BadBoolean {
        /// The key read.
        key: String,
        /// Its value.
        value: String,
    },
}
