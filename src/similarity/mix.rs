//! splitmix64's finaliser (Steele, Lea and Flood 2014): a bijective,
//! non-linear mix of all 64 bits, which the fingerprints' byte table, the
//! signatures' chunk hash, the histograms' SimHash and the export's
//! band seeds all draw their bits from, on one word or on the eight
//! lanes of a vector.

/// The finaliser of one word.
#[inline(always)]
pub(crate) const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// [`mix`] on each of the eight 64-bit lanes of `z`. Only where the
/// processor has AVX-512 F and DQ (the 64-bit multiply).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
pub(crate) fn mix_lanes(z: std::arch::x86_64::__m512i) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::{
        _mm512_mullo_epi64, _mm512_set1_epi64, _mm512_srli_epi64, _mm512_xor_si512,
    };
    let z = _mm512_xor_si512(z, _mm512_srli_epi64::<30>(z));
    let z = _mm512_mullo_epi64(z, _mm512_set1_epi64(0xbf58_476d_1ce4_e5b9_u64 as i64));
    let z = _mm512_xor_si512(z, _mm512_srli_epi64::<27>(z));
    let z = _mm512_mullo_epi64(z, _mm512_set1_epi64(0x94d0_49bb_1331_11eb_u64 as i64));
    _mm512_xor_si512(z, _mm512_srli_epi64::<31>(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes mix as the word does.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn lanes_mix_as_words() {
        if !(std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq"))
        {
            return;
        }
        let words: [u64; 8] =
            std::array::from_fn(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef);
        let mut out = [0u64; 8];
        // SAFETY: checked just above; eight u64 are one unaligned-tolerant
        // vector load and store.
        unsafe {
            use std::arch::x86_64::{_mm512_loadu_si512, _mm512_storeu_si512};
            let z = mix_lanes(_mm512_loadu_si512(words.as_ptr().cast()));
            _mm512_storeu_si512(out.as_mut_ptr().cast(), z);
        }
        assert_eq!(out, words.map(mix));
    }
}
