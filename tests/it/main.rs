//! The integration tests, as one test binary (one link, one process, one
//! build of the shared fixtures), with one module per subject.
//!
//! Every module builds real repositories with the real `git` and checks
//! git-simm against git itself or against the properties it promises;
//! `util` holds what they share (the pinned git environment, repositories,
//! the fixture corpus, a deterministic PRNG). Run one module with
//! `cargo test --test it renames_vs_git::`.

mod util;

mod attributes;
mod breaks;
mod check;
mod clean_conversions;
mod cli;
mod compare;
mod config_sources;
mod containment;
mod docs_examples;
#[cfg(feature = "export")]
mod export;
mod export_feature;
mod fixtures;
mod gc;
mod groups;
mod groups_members;
mod hangs;
mod index_states;
mod integrity;
mod non_utf8;
mod only_ours;
mod origin;
mod ownership;
mod partial_clone;
mod pathspecs;
mod quality;
mod renames_adversarial;
mod renames_conformance;
mod renames_vs_git;
mod repack;
mod repo_access;
mod repo_formats;
mod score_vs_git;
mod submodule_ignore;
mod thresholds;
