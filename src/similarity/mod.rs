//! Similarity: 256-bit gsimm fingerprints of blobs ([`fingerprint`]), kept
//! by blob id ([`store`], filled through [`compute`]), turned into the few
//! pairs worth comparing ([`candidates`]) and scored exactly as git scores
//! renames ([`score`]).

pub mod candidates;
pub mod compute;
pub mod fingerprint;
pub mod score;
pub mod store;
