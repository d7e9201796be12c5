//! Whether the similarity code may take its AVX-512 paths: the processor
//! has every feature they are compiled with (F, BW, DQ, VL, VBMI2 and
//! LZCNT), and `GIT_SIMM_NO_AVX512=1` does not keep the fingerprints and
//! signatures on their AVX2 paths and git's chunks on their byte-at-a-time
//! hash (every path gives the same bits; the
//! variable is for timing one against the other, or for a machine whose
//! AVX-512 is best left alone). Asked once per process.

/// Whether AVX-512 paths may run (AVX2 is each caller's own check).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512() -> bool {
    static AVX512: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX512.get_or_init(|| {
        std::env::var_os("GIT_SIMM_NO_AVX512").is_none_or(|v| v.is_empty())
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512vbmi2")
            && std::is_x86_feature_detected!("lzcnt")
    })
}
