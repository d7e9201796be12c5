//! git-simm: content similarity for git.
//!
//! The library is one pipeline, a folder per stage:
//!
//! - [`repo`]: repository access, the one place that knows gix: discovery
//!   and config, revisions, trees, the index and its cache-tree, the work
//!   tree, bulk object reading, and the diff of two listings
//!   ([`repo::changes`]).
//! - [`similarity`]: 256-bit gsimm fingerprints
//!   ([`similarity::fingerprint`]) cached by blob id
//!   ([`similarity::store`], filled through [`similarity::compute`]); the
//!   few pairs worth comparing ([`similarity::candidates`]); git's exact
//!   rename score ([`similarity::score`]).
//! - [`renames`]: git's rename and copy detection, step for step, scoring
//!   only the candidates fingerprints choose.
//! - [`similar`]: one file against a tree.
//! - [`origin`]: which commit of another repository a directory was
//!   copied from.
//! - [`check`]: the pre-commit check of what is staged.
//! - [`pack`]: the object order for `git pack-objects` and the safe
//!   replacement of a repository's packs.
//! - `export` (cargo feature `export`, on by default): fingerprints as
//!   Apache Parquet, for SQL engines that find similar files across
//!   repositories.
//! - [`output`]: git's path quoting and `--name-status` lines.
//! - [`progress`]: what long work takes besides its input: a
//!   [`progress::Feedback`], through which it reports counted stages and
//!   trace events and learns that it should stop (returning
//!   [`progress::Interrupted`]).
//!
//! The `git-simm` binary (`src/main.rs`, `src/cli`, `src/commands`) turns
//! flags, git config and the environment into options for these, draws
//! progress, catches Ctrl-C, and is the only part that prints.
//!
//! ```no_run
//! use git_simm::similarity::fingerprint::fingerprint;
//! let a = fingerprint(&std::fs::read("a.c").unwrap()).unwrap();
//! let b = fingerprint(&std::fs::read("b.c").unwrap()).unwrap();
//! println!("{} of 256 bits differ", a.distance(&b));
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod compare;
#[cfg(feature = "export")]
pub mod export;
pub mod fsutil;
pub mod groups;
pub mod origin;
pub mod output;
pub mod pack;
pub mod progress;
pub mod renames;
pub mod repo;
pub mod similar;
pub mod similarity;
#[cfg(test)]
mod testing;
