//! A loose object file as git-simm reads it (`objects/xx/...`): any bytes
//! give an error or an object exactly as long as its header says; and a
//! well-formed loose object of any content reads back as written.
#![no_main]

use git_simm::pack::write::deflate_into;
use git_simm::repo::{LooseInflater, inflate_loose};
use gix::zlib::stream::deflate::Compress;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut zlib = LooseInflater::new();
    let mut out = Vec::new();
    let _ = inflate_loose(data, &mut zlib, &mut out);

    // Round trip: `blob <size>\0<data>`, deflated as git writes it.
    let mut raw = format!("blob {}\0", data.len()).into_bytes();
    raw.extend_from_slice(data);
    let mut file = Vec::new();
    deflate_into(
        &mut Compress::new(gix::zlib::Compression::BEST_SPEED),
        &raw,
        &mut file,
    )
    .expect("deflate");
    let kind = inflate_loose(&file, &mut zlib, &mut out).expect("a well-formed object reads");
    assert_eq!(kind, gix::object::Kind::Blob);
    assert_eq!(out, data);
    // Cut short, or with a byte after the stream: refused.
    assert!(inflate_loose(&file[..file.len() - 1], &mut zlib, &mut out).is_err());
    file.push(0);
    assert!(inflate_loose(&file, &mut zlib, &mut out).is_err());
});
