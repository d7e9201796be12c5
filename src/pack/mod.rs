//! Writing packs without `git pack-objects`: git-simm chooses delta bases
//! itself (issue 13), so it needs git's delta encoding ([`delta`]).

pub mod delta;
