//! A stored signature (a record of the signature store) as the readers
//! decode it: what is accepted re-encodes to itself, and what is read from
//! it (the text forms, the sketch at every level, an estimate against
//! itself) is read without a panic. Also: the stored signature of any
//! content round-trips, and is what the signature with positions keeps.
#![no_main]

use git_simm::similarity::signature::estimate::estimate_stored;
use git_simm::similarity::signature::{Signature, Stored};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(stored) = Stored::decode(data) {
        let mut again = Vec::new();
        stored.encode(&mut again);
        assert_eq!(
            Stored::decode(&again).as_ref(),
            Some(&stored),
            "re-encoding changed it"
        );
        let _ = stored.texts();
        for level in 0..16 {
            let _ = stored.sketch(level);
        }
        if let Some(s) = estimate_stored(&stored, &stored).similarity {
            assert!((s - 1.0).abs() < 1e-9, "a signature against itself: {s}");
        }
    }

    // Content: sign, encode, decode; the fast stored path and the
    // signature with positions agree.
    let stored = Stored::of(data);
    let mut bytes = Vec::new();
    stored.encode(&mut bytes);
    assert_eq!(Stored::decode(&bytes).as_ref(), Some(&stored));
    assert_eq!(Stored::from_signature(&Signature::new(data)), stored);
});
