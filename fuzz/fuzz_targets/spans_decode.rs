//! A stored chunk histogram (a record of the histogram store) as every
//! reader decodes it: the readers agree on what they accept, and what
//! they accept encodes back to the same histogram. Also: the histogram of any
//! content encodes and decodes to itself.
#![no_main]

use git_simm::similarity::score::{Buckets, Spans};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = Spans::decode(data);
    let common = Buckets::new(&[0, 1, 2, 3, 100, 4096, 65_535, 107_926]);
    let sizes = Spans::decode_sizes(data, &common);
    let without = Spans::decode_without(data, &common);
    let mut ids = Vec::new();
    let listed = Spans::decode_bucket_ids(data, |b| ids.push(b));
    assert_eq!(decoded.is_some(), sizes.is_some());
    assert_eq!(decoded.is_some(), without.is_some());
    assert_eq!(decoded.is_some(), listed.is_some());
    if let Some(spans) = decoded {
        // (A varint may be written long; the value is what must survive.)
        let mut again = Vec::new();
        spans.encode(&mut again);
        assert_eq!(
            Spans::decode(&again).as_ref(),
            Some(&spans),
            "re-encoding changed it"
        );
        assert!(again.len() <= data.len());
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "buckets out of order");
    }

    // Content: build, encode, decode.
    let spans = Spans::new(data);
    let mut bytes = Vec::new();
    spans.encode(&mut bytes);
    assert_eq!(Spans::decode(&bytes), Some(spans));
});
