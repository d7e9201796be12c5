//! The stored form against a reference written from the definition
//! alone, byte for byte.

use super::*;
use crate::similarity::score::for_each_chunk;
use crate::testing::{Rng, real_text};

/// The stored form straight from the definition and the format (the
/// module documentation of `stored.rs`), over git's own chunking, the
/// zero-padded chunk hash and the text CRLF rule: every byte of the
/// record, written without the signer's code.
fn reference_stored(data: &[u8]) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(low);
                return;
            }
            out.push(low | 0x80);
        }
    }
    let text = !data[..data.len().min(8000)].contains(&0);
    let has_crlf = data.windows(2).any(|w| w == b"\r\n");
    let body: Vec<u8> = if text && has_crlf {
        let mut b = Vec::new();
        for (i, &c) in data.iter().enumerate() {
            if !(c == b'\r' && data.get(i + 1) == Some(&b'\n')) {
                b.push(c);
            }
        }
        b
    } else {
        data.to_vec()
    };
    // (value, selection bits, coarse) of every fine symbol.
    let mut symbols: Vec<(u8, u8, bool)> = Vec::new();
    for_each_chunk(&body, |_, chunk| {
        let h = hash::chunk_hash(chunk);
        let phase = (h & 1023) as usize;
        let mut k = 0;
        for o in 0..chunk.len() {
            if (o + phase).is_multiple_of(16) {
                let value = ((h >> (10 + 6 * k)) & 63) as u8;
                let selection = ((h >> (34 + k)) & 63) as u8;
                symbols.push((value, selection, (o + phase).is_multiple_of(64)));
                k += 1;
            }
        }
    });
    let size = data.len() as u64;
    let lf = data.iter().filter(|&&c| c == b'\n').count() as u64;
    let lines = lf + u64::from(data.last().is_some_and(|&c| c != b'\n'));
    let mut out = Vec::new();
    varint(&mut out, size);
    varint(&mut out, lines);
    if size < 8192 {
        out.push(0);
        varint(&mut out, symbols.len() as u64);
        for &(value, selection, coarse) in &symbols {
            out.push(value | if coarse { 0x40 } else { 0 } | (selection & 1) << 7);
        }
        for &(_, selection, coarse) in &symbols {
            if coarse {
                out.push(selection);
            }
        }
    } else {
        let mut level = 0;
        while size > 2048 << level {
            level += 1;
        }
        let bits = (level - 2).min(12);
        let keys: Vec<u32> = symbols
            .iter()
            .filter(|&&(value, selection, coarse)| {
                let order = u32::from(selection) | u32::from(value) << 6;
                coarse && order % (1 << bits) == 0
            })
            .map(|&(value, selection, _)| u32::from(selection) << 6 | u32::from(value))
            .collect();
        out.push(1);
        out.push(level as u8);
        varint(&mut out, keys.len() as u64);
        for pair in keys.chunks(2) {
            match pair {
                [x, y] => out.extend_from_slice(&(x | y << 12).to_le_bytes()[..3]),
                [x] => out.extend_from_slice(&x.to_le_bytes()[..2]),
                _ => unreachable!(),
            }
        }
    }
    out
}

#[test]
fn stored_form_follows_the_definition_byte_for_byte() {
    let texts = real_text();
    let mut rng = Rng(2024);
    let crlf = crate::testing::with_crlf;
    let mut inputs: Vec<Vec<u8>> = texts.clone();
    // Large files at several sketch levels, with and without CRLF.
    for i in 0..12 {
        let big = texts[i * 7..i * 7 + 1 + (1 << (i % 6))].concat();
        inputs.push(crlf(&big));
        inputs.push(big);
    }
    inputs.push(texts[..300].concat());
    // Sizes around the fine limit.
    let joined = texts[..10].concat();
    for len in [8127, 8191, 8192, 8193, 8256] {
        inputs.push(joined[..len].to_vec());
    }
    // Binary, with CRLF pairs kept since it is binary.
    let mut binary = rng.bytes(30_000);
    binary[..4].copy_from_slice(b"\0\r\n\r");
    inputs.push(binary);
    inputs.push(vec![0; 9000]);
    // Runs without LF across the blocks of LF bits the signer walks in,
    // ending at every offset around a 64-byte word.
    for run in [
        63, 64, 65, 127, 128, 129, 255, 256, 257, 319, 320, 321, 511, 512, 513, 2047, 2048, 2049,
        2111, 2112, 2113, 9000,
    ] {
        for tail in [0, 1, 63] {
            let mut d = vec![b'y'; 5];
            d.push(b'\n');
            d.extend(std::iter::repeat_n(b'x', run));
            d.push(b'\n');
            d.extend(std::iter::repeat_n(b'z', tail));
            inputs.push(d.clone());
            inputs.push(d.repeat(9));
        }
    }
    // One CRLF at every offset around the first words (the CR scan's
    // last bit of a word, its first).
    for at in 0..140 {
        let mut d = texts[3][..300].to_vec();
        d.retain(|&b| b != b'\r');
        d.insert(at.min(d.len()), b'\r');
        d.insert(at.min(d.len() - 1) + 1, b'\n');
        inputs.push(d);
    }
    // More LFs in a word of LF bits than the signer reads off at once:
    // blank lines, alone and after every line of a large text.
    inputs.push(b"\n".repeat(20_000));
    let airy: Vec<u8> = texts[..40]
        .concat()
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|l| [l, &b"\n\n\n\n\n\n\n\n\n"[..]].concat())
        .collect();
    inputs.push(airy[..7000].to_vec());
    inputs.push(airy);
    for len in 0..140 {
        inputs.push(texts[2][..len].to_vec());
        inputs.push(b"\n".repeat(len));
    }
    // Lines of every length around git's cut, from every word offset.
    let mut lines = Vec::new();
    for len in 0..300 {
        lines.extend(std::iter::repeat_n(b'a' + (len % 26) as u8, len % 150));
        lines.push(b'\n');
    }
    for skip in 0..64 {
        inputs.push(lines[skip..].to_vec());
        inputs.push(lines[skip..5000 + skip].to_vec());
    }
    for data in &inputs {
        let expected = reference_stored(data);
        // The path the processor takes, then without AVX-512, then the
        // portable one.
        for (no_512, portable) in [(false, false), (true, false), (true, true)] {
            batch::NO_512.set(no_512);
            batch::PORTABLE.set(portable);
            let mut record = Vec::new();
            let has_cr = Stored::encode_of(data, &mut record);
            batch::NO_512.set(false);
            batch::PORTABLE.set(false);
            assert_eq!(
                record,
                expected,
                "{} bytes, without AVX-512 {no_512}, portable {portable}",
                data.len()
            );
            // What the fingerprint is told, so that it skips its CRLF
            // search: wrong only one way (a CR said absent) would change
            // fingerprints.
            assert_eq!(
                has_cr,
                data.contains(&b'\r'),
                "{} bytes, without AVX-512 {no_512}, portable {portable}",
                data.len()
            );
        }
    }
}
