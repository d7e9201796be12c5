//! The longest common subsequence of two symbol strings, bit-parallel
//! (Allison and Dix 1986, in Hyyrö's form, 2004): each symbol of the
//! second string updates a bit vector over the first with one add, one
//! and, one or per 64 symbols.
//!
//! Similarity is read from the common subsequence rather than from the
//! Levenshtein distance because a sketch keeps each symbol by a hash
//! (about one in `2^k`): two files' common symbols are kept together and
//! their common subsequence shrinks with the sketch, but a substituted
//! symbol and its replacement are kept independently, so in a sketch a
//! substitution mostly becomes a deletion and an insertion, and the
//! Levenshtein distance of two sketches counts every substitution of the
//! full strings about twice. The share of the longer string in the common
//! subsequence is the same in a sketch as in the full signature.

/// The length of the longest common subsequence of `a` and `b`, symbols
/// compared on their values (the low six bits).
pub fn lcs(a: &[u8], b: &[u8]) -> usize {
    // The shorter string is the bit vector: fewer words per step.
    let (a, b) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if a.is_empty() {
        return 0;
    }
    if a.len() <= 64 {
        return lcs_one_word(a, b);
    }
    let words = a.len().div_ceil(64);
    // For each value, the positions of `a` holding it.
    let mut peq = vec![0u64; 64 * words];
    for (i, &s) in a.iter().enumerate() {
        peq[usize::from(s & 63) * words + i / 64] |= 1 << (i % 64);
    }
    // A zero bit at position i: a[i] is in the common subsequence found
    // so far.
    let mut v = vec![u64::MAX; words];
    for &s in b {
        let m = &peq[usize::from(s & 63) * words..][..words];
        let mut carry = false;
        for (vw, &mw) in v.iter_mut().zip(m) {
            let u = *vw & mw;
            let (sum, c1) = vw.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            carry = c1 || c2;
            *vw = sum | (*vw & !mw);
        }
    }
    // Bits past the end of `a` start as ones and are never matched, but
    // a carry can run into them: count within `a` only.
    let tail = a.len() % 64;
    let ones: u32 = v
        .iter()
        .enumerate()
        .map(|(w, &x)| {
            if w + 1 == words && tail != 0 {
                (x & ((1u64 << tail) - 1)).count_ones()
            } else {
                x.count_ones()
            }
        })
        .sum();
    a.len() - ones as usize
}

/// [`lcs`] when the shorter string fits one word.
fn lcs_one_word(a: &[u8], b: &[u8]) -> usize {
    let mut peq = [0u64; 64];
    for (i, &s) in a.iter().enumerate() {
        peq[usize::from(s & 63)] |= 1 << i;
    }
    let mut v = u64::MAX;
    for &s in b {
        let m = peq[usize::from(s & 63)];
        let u = v & m;
        v = v.wrapping_add(u) | (v & !m);
    }
    let keep = if a.len() == 64 {
        u64::MAX
    } else {
        (1u64 << a.len()) - 1
    };
    a.len() - (v & keep).count_ones() as usize
}

#[cfg(test)]
mod tests {
    use super::lcs;
    use crate::similarity::signature::tests::lcs_len as reference;
    use crate::testing::Rng;

    #[test]
    fn matches_dynamic_programming_at_every_length() {
        let mut rng = Rng(7);
        for len in 0..300 {
            // Few values, so that long common subsequences exist, and the
            // full alphabet with flag bits set.
            let alphabet = if len % 2 == 0 { 4 } else { 64 };
            let a: Vec<u8> = rng
                .bytes(len)
                .iter()
                .map(|b| (b % alphabet) | (b & 0xc0))
                .collect();
            let mut b: Vec<u8> = a.clone();
            for _ in 0..len / 8 {
                let at = rng.below(b.len().max(1));
                match rng.below(3) {
                    0 if !b.is_empty() => {
                        b.remove(at);
                    }
                    1 => b.insert(at.min(b.len()), rng.below(alphabet.into()) as u8),
                    _ if !b.is_empty() => b[at] = rng.below(alphabet.into()) as u8,
                    _ => {}
                }
            }
            let other: Vec<u8> = rng
                .bytes(len * 3 / 2)
                .iter()
                .map(|b| b % alphabet)
                .collect();
            assert_eq!(lcs(&a, &b), reference(&a, &b), "length {len}");
            assert_eq!(lcs(&b, &a), reference(&a, &b), "length {len}");
            assert_eq!(lcs(&a, &other), reference(&a, &other), "length {len}");
        }
    }
}
