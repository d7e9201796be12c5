//! Which vector paths the similarity code may take beyond the processor's
//! own answer: `GIT_SIMM_NO_AVX512=1` keeps the fingerprints and
//! signatures on their AVX2 paths where the processor has AVX-512 (every
//! path gives the same bits; this is for timing one against the other, or
//! for a machine whose AVX-512 is best left alone).

use std::sync::OnceLock;

/// Whether AVX-512 paths may run, if the processor has what they need
/// (each caller checks that itself). Read from the environment once.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn avx512_allowed() -> bool {
    static ALLOWED: OnceLock<bool> = OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("GIT_SIMM_NO_AVX512").is_none_or(|v| v.is_empty()))
}
