//! git-simm: content similarity for git.
//!
//! The crate is one pipeline: blobs are read from a repository ([`repo`]),
//! turned into 256-bit gsimm fingerprints ([`fingerprint`]) that are cached by
//! blob id ([`store`], filled through [`compute`]); fingerprints prune the
//! candidate pairs cheaply and survivors are scored exactly the way git
//! scores renames ([`score`]). Commands built on that pipeline live in their
//! own modules ([`similar`]), are wired to the command line in [`commands`]
//! and [`cli`] (whose definitions also yield completions and man pages,
//! [`generate`]), and write through [`output`].
//!
//! ```no_run
//! use git_simm::fingerprint::fingerprint;
//! let a = fingerprint(&std::fs::read("a.c").unwrap()).unwrap();
//! let b = fingerprint(&std::fs::read("b.c").unwrap()).unwrap();
//! println!("{} of 256 bits differ", a.distance(&b));
//! ```
#![deny(missing_docs)]

pub mod candidates;
pub mod changes;
pub mod check;
pub mod cli;
pub mod commands;
pub mod compute;
pub mod fingerprint;
pub mod generate;
pub mod output;
pub mod pack;
pub mod pack_objects;
pub mod pack_order;
pub mod progress;
pub mod renames;
pub mod repack;
pub mod repo;
pub mod score;
pub mod similar;
pub mod store;
