//! git's delta decoder on any base and any delta: an error or the object,
//! never a panic, and the object is exactly as long as the header says.
#![no_main]

use git_simm::pack::delta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first two bytes say how much of the rest is the base.
    let Some((&[a, b], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let cut = usize::from(u16::from_le_bytes([a, b])).min(rest.len());
    let (base, delta_bytes) = rest.split_at(cut);
    let sizes = delta::sizes(delta_bytes);
    if let Ok(out) = delta::apply(base, delta_bytes) {
        let (base_size, result_size) = sizes
            .as_ref()
            .copied()
            .expect("an applied delta has a header");
        assert_eq!(base_size, base.len() as u64);
        assert_eq!(result_size, out.len() as u64);
    }
    // The same delta against the header's own base size, so that the
    // instructions are reached even when the base above is the wrong size.
    if let Ok((base_size, result_size)) = sizes
        && base_size <= 1 << 16
    {
        let filler: Vec<u8> = (0..base_size as usize).map(|i| i as u8).collect();
        if let Ok(out) = delta::apply(&filler, delta_bytes) {
            assert_eq!(result_size, out.len() as u64);
        }
    }
});
