//! Sorting `key << 32 | value` words by a key below 2^17, as git's chunk
//! buckets are (and ranks of them): two counting passes, the low 9 bits
//! of the key then the high 8, without comparisons. A file's hundreds of
//! chunks or buckets are sorted this way on the hot paths of rename
//! detection, where a comparison sort cost a fifth of a warm run.

/// Keys must be below this: 17 bits.
pub const KEY_LIMIT: u64 = 1 << 17;

/// Lists shorter than this are sorted by comparison: cheaper than
/// clearing the counters.
pub const COMPARISON_BELOW: usize = 64;

/// Order `words` by their high half (below [`KEY_LIMIT`]); words with the
/// same key keep no particular order among themselves. `scratch` is
/// reused space.
#[inline]
pub fn sort(words: &mut [u64], scratch: &mut Vec<u64>) {
    if words.len() < COMPARISON_BELOW {
        words.sort_unstable();
        return;
    }
    let low = |w: u64| ((w >> 32) & 0x1ff) as usize;
    let high = |w: u64| ((w >> 41) & 0xff) as usize;
    let mut lows = [0u32; 512];
    let mut highs = [0u32; 256];
    for &w in words.iter() {
        debug_assert!(w >> 32 < KEY_LIMIT);
        lows[low(w)] += 1;
        highs[high(w)] += 1;
    }
    let starts = |counts: &mut [u32]| {
        let mut at = 0;
        for c in counts {
            let n = *c;
            *c = at;
            at += n;
        }
    };
    starts(&mut lows);
    starts(&mut highs);
    scratch.clear();
    scratch.resize(words.len(), 0);
    for &w in words.iter() {
        let at = &mut lows[low(w)];
        scratch[*at as usize] = w;
        *at += 1;
    }
    for &w in scratch.iter() {
        let at = &mut highs[high(w)];
        words[*at as usize] = w;
        *at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the range, repeated keys and values: ordered by key
    /// exactly as a comparison sort orders the keys.
    #[test]
    fn orders_by_key_as_a_comparison_sort() {
        let mut rng = crate::testing::Rng(5);
        let mut scratch = Vec::new();
        for n in [0, 1, 2, 61, 62, 100, 1000, 20_000] {
            let mut words: Vec<u64> = (0..n)
                .map(|_| ((rng.next() % KEY_LIMIT) << 32) | (rng.next() % 64))
                .collect();
            words.push((KEY_LIMIT - 1) << 32);
            words.push(7);
            let mut keys: Vec<u64> = words.iter().map(|w| w >> 32).collect();
            keys.sort_unstable();
            let mut sorted_values: Vec<u64> = words.clone();
            sorted_values.sort_unstable();
            sort(&mut words, &mut scratch);
            assert_eq!(words.iter().map(|w| w >> 32).collect::<Vec<_>>(), keys);
            // The same words, only reordered.
            let mut again = words.clone();
            again.sort_unstable();
            assert_eq!(again, sorted_values);
        }
    }
}
