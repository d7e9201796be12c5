//! Writing packs without `git pack-objects`: git-simm chooses delta bases
//! itself (issue 13), so it needs git's delta encoding ([`delta`]) and a pack
//! writer ([`mod@write`]) whose output `git index-pack --strict` accepts.

pub mod delta;
pub mod write;
