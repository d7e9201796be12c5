//! git's delta encoder: whatever the base and target, the delta it makes
//! applies to the base and gives back the target exactly, and a delta cut
//! off at a size bound is either `None` or within the bound.
#![no_main]

use git_simm::pack::delta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b, m], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let cut = usize::from(u16::from_le_bytes([a, b])).min(rest.len());
    let (base, target) = rest.split_at(cut);
    let d = delta::delta(base, target);
    let back = delta::apply(base, &d).expect("the encoder's delta applies");
    assert_eq!(back, target, "the delta does not rebuild the target");

    // With a bound, as the packer asks: never over it, and right when made.
    let index = delta::Index::new(base);
    let bound = (d.len() * usize::from(m) / 128).max(1);
    if let Some(small) = index.delta(target, bound) {
        assert!(
            small.len() <= bound,
            "{} bytes over a bound of {bound}",
            small.len()
        );
        assert_eq!(delta::apply(base, &small).expect("applies"), target);
    }
    // The target against itself as base copies, so it is small.
    let same = delta::delta(target, target);
    assert_eq!(delta::apply(target, &same).expect("applies"), target);
});
