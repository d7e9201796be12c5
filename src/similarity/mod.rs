//! Similarity: 256-bit gsimm fingerprints of blobs ([`fingerprint`]), kept
//! by blob id ([`store`], filled through [`compute`]), turned into the few
//! pairs worth comparing ([`candidates`]) and scored exactly as git scores
//! renames ([`score`]); how much of one file another holds, Broder's
//! containment, exactly and by a sample ([`containment`]); band keys that
//! let an SQL engine find candidate pairs with an equi-join ([`bands`]).

pub mod bands;
pub mod candidates;
pub mod compute;
pub mod containment;
pub mod fingerprint;
pub(crate) mod lf_bits;
pub(crate) mod mix;
pub mod prefix;
pub(crate) mod radix;
pub mod score;
pub mod seen;
pub mod signature;
pub(crate) mod simd;
pub mod store;
