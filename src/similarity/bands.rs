//! Band keys: locality-sensitive hashing of git's chunk histograms, so
//! that an engine that can only do equi-joins (SQL engines at any scale)
//! finds the pairs of files worth scoring.
//!
//! git scores a pair by the chunks (lines, cut at 64 bytes) the two files
//! share ([`Spans`]). So the keys are MinHash over the set of a file's
//! chunk buckets: [`HASHES`] hash functions, each giving the smallest hash
//! of any bucket of the file; two files agree on one of them with
//! probability equal to the Jaccard index `J` of their bucket sets. The
//! minima are cut into [`BANDS`] bands of [`ROWS`]; a band's key is the
//! hash of its minima, so two files share it with probability `J^ROWS`,
//! and share at least one key with probability `1 - (1 - J^ROWS)^BANDS`.
//!
//! Buckets of lines that carry nothing of their own are left out first
//! ([`FILLER`] at up to [`MAX_SPACES`] spaces or [`MAX_TABS`] tabs of
//! indentation): a blank line, `}`, `*/`, `#endif`, `return 0;`, at any
//! indentation. Every C file has them, so with them a small file's minima
//! are often one of them and unrelated files share keys by the million at
//! scale; without them the chance that two unrelated files share a key
//! halves (docs/performance.md, "Finding similar files across repositories"). The list
//! is fixed, not counted from a corpus, so every export leaves out the
//! same buckets whoever made it and however many repositories are joined.
//!
//! The fingerprint's bits were the keys before (export layout 1): a file
//! at git score 80% can sit 75 bits from its copy, where no band of bits
//! narrow enough to keep a join at millions of rows survives; the bucket
//! sets of such pairs still have `J >= 0.54` (measured), where four-row
//! bands find a pair with probability 93% and above.
//!
//! ### Why these numbers
//! Measured on 422 pairs at git score 80% or more between ten real
//! repositories sharing files (`J` of the sets without filler: minimum
//! 0.545, 1st percentile 0.585): 32 bands of 4 give an expected recall of
//! 99.90% (3 rows: 99.96%, with 3.4 times the unrelated pairs; 5 rows and
//! 48 bands: 99.83%). A size class in the key (two kinds of class, so
//! that pairs within git's 80% size window always share one) cut the
//! unrelated pairs only 1.6 times for twice the key rows: sizes are
//! compared after the join instead.

use std::sync::OnceLock;

use crate::similarity::score::{Buckets, Spans, for_each_chunk};

/// How many bands a file has, so how many keys a row carries.
pub const BANDS: usize = 32;

/// Minima per band.
pub const ROWS: usize = 4;

/// Hash functions, one minimum each.
pub const HASHES: usize = BANDS * ROWS;

/// The key of a file name (the path's last component): FNV-1a over its
/// bytes with the sign bit set, so it never equals a band key (those are
/// not negative).
pub fn name_key(path: &[u8]) -> i64 {
    let name = match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h | 1 << 63) as i64
}

/// The [`HASHES`] minima of a histogram's buckets, filler left out;
/// `None` when nothing is left. Hash `k` of bucket `b` is
/// [`bucket_hash`]`(k, b)`.
pub fn minima(spans: &Spans) -> Option<[u32; HASHES]> {
    let mut m = Minima::new();
    spans.bucket_ids().for_each(|b| m.add(b));
    m.finish()
}

/// [`minima`] gathered one bucket at a time, so that a stored histogram
/// can be read straight into it ([`band_keys_of_record`]).
struct Minima {
    min: [u32; HASHES],
    any: bool,
    filler: &'static Buckets,
}

impl Minima {
    fn new() -> Minima {
        Minima {
            min: [u32::MAX; HASHES],
            any: false,
            filler: filler(),
        }
    }

    fn add(&mut self, b: u32) {
        if self.filler.contains(b) {
            return;
        }
        self.any = true;
        let y = mix32(b);
        // One pass over the minima per bucket: the compiler keeps this
        // loop in vector registers.
        for (k, m) in self.min.iter_mut().enumerate() {
            *m = (*m).min(hash_of(y, SEEDS[k]));
        }
    }

    fn finish(self) -> Option<[u32; HASHES]> {
        self.any.then_some(self.min)
    }
}

/// The keys of a histogram: band `i`'s key at index `i`, `None` when the
/// file has nothing but filler ([`minima`]).
pub fn band_keys(spans: &Spans) -> Option<[i64; BANDS]> {
    minima(spans).map(keys_of)
}

/// [`band_keys`] of a histogram as the histogram store keeps it
/// ([`Spans::encode`]), read without building it; the outer `None` when
/// the record does not decode.
pub fn band_keys_of_record(record: &[u8]) -> Option<Option<[i64; BANDS]>> {
    let mut m = Minima::new();
    Spans::decode_bucket_ids(record, |b| m.add(b))?;
    Some(m.finish().map(keys_of))
}

fn keys_of(min: [u32; HASHES]) -> [i64; BANDS] {
    let mut keys = [0i64; BANDS];
    for (i, key) in keys.iter_mut().enumerate() {
        *key = band_key(i, &min[i * ROWS..(i + 1) * ROWS]);
    }
    keys
}

/// Hash function `k` of bucket `b` (what [`minima`] takes the minimum of):
/// murmur3's 32-bit finaliser of `b`, XORed with seed `k`, mixed again.
/// Written out so that a test or a script can recompute the keys.
pub fn bucket_hash(k: usize, b: u32) -> u32 {
    hash_of(mix32(b), SEEDS[k % HASHES])
}

/// The key of band `i` from its [`ROWS`] minima: each folded into a
/// 64-bit state started at `i` (`h = mix64(h ^ m)`), the sign bit
/// cleared. Bands differ in their start, so keys of different bands do
/// not meet in a join on the key alone.
pub fn band_key(i: usize, minima: &[u32]) -> i64 {
    let mut h = i as u64;
    for &m in minima {
        h = mix64(h ^ u64::from(m));
    }
    (h & (u64::MAX >> 1)) as i64
}

/// Lines that carry no content of their own in the languages found in
/// repositories: punctuation alone and in common pairs, preprocessor and
/// block ends, bare keywords and returns, comment frames.
pub const FILLER: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "*",
    "/",
    "#",
    "'",
    "\"",
    ".",
    ":",
    "-",
    "=",
    "<",
    ">",
    "!",
    "&",
    "|",
    "\\",
    "`",
    "+",
    "%",
    "?",
    "@",
    "$",
    "^",
    "~",
    "_",
    "};",
    "});",
    ");",
    "*/",
    "/*",
    "],",
    "},",
    "),",
    "{}",
    "()",
    "[]",
    "--",
    "//",
    "##",
    "\"\"",
    "''",
    "=>",
    "->",
    "*)",
    "(*",
    "]]",
    "[[",
    "<!--",
    "-->",
    "%>",
    "<%",
    "?>",
    "<?php",
    "\"\"\"",
    "'''",
    "```",
    "---",
    "...",
    ";;",
    "else",
    "endif",
    "#endif",
    "#else",
    "fi",
    "done",
    "end",
    "esac",
    "then",
    "do",
    "return",
    "return;",
    "return 0;",
    "return -1;",
    "return NULL;",
    "return ret;",
    "break;",
    "continue;",
    "} else {",
    "}else{",
    "else {",
    "default:",
    "try:",
    "pass",
    "EOF",
    " *",
    "<br>",
    "</div>",
    "</p>",
    "<p>",
    "end)",
    "end,",
    "@end",
    "public:",
    "private:",
    "protected:",
    "}}",
    "{{",
    "{%",
    "%}",
    "#endregion",
    "#region",
    "endfunction",
    "endfor",
    "endwhile",
];

/// Deepest indentation of a filler line, in spaces.
pub const MAX_SPACES: usize = 32;

/// Deepest indentation of a filler line, in tabs.
pub const MAX_TABS: usize = 8;

/// The buckets of every filler line, with and without its line end.
fn filler() -> &'static Buckets {
    static FILLER_BUCKETS: OnceLock<Buckets> = OnceLock::new();
    FILLER_BUCKETS.get_or_init(|| {
        let indents = std::iter::once(String::new())
            .chain((1..=MAX_SPACES).map(|n| " ".repeat(n)))
            .chain((1..=MAX_TABS).map(|n| "\t".repeat(n)));
        let mut buckets = Vec::new();
        let mut line = Vec::new();
        for indent in indents {
            for core in std::iter::once("").chain(FILLER.iter().copied()) {
                for end in ["\n", ""] {
                    line.clear();
                    line.extend_from_slice(indent.as_bytes());
                    line.extend_from_slice(core.as_bytes());
                    line.extend_from_slice(end.as_bytes());
                    // Filler lines are shorter than a chunk: one bucket each.
                    for_each_chunk(&line, |b, _| buckets.push(b));
                }
            }
        }
        Buckets::new(&buckets)
    })
}

/// The seeds of the [`HASHES`] hash functions: splitmix64's sequence from
/// 0, low halves.
const SEEDS: [u32; HASHES] = seeds();

const fn seeds() -> [u32; HASHES] {
    let mut out = [0u32; HASHES];
    let mut state: u64 = 0;
    let mut k = 0;
    while k < HASHES {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        out[k] = crate::similarity::mix::mix(state) as u32;
        k += 1;
    }
    out
}

/// murmur3's 32-bit finaliser.
#[inline]
fn mix32(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Hash function `seed` of a bucket already through [`mix32`]: two
/// multiply-xorshift rounds, cheap enough for 128 per bucket.
#[inline]
fn hash_of(y: u32, seed: u32) -> u32 {
    let mut h = (y ^ seed).wrapping_mul(0x9e37_79b1);
    h ^= h >> 15;
    h = h.wrapping_mul(0x85eb_ca77);
    h ^ (h >> 13)
}

/// splitmix64 one step on from `x`: its increment, then its finaliser.
#[inline]
fn mix64(x: u64) -> u64 {
    crate::similarity::mix::mix(x.wrapping_add(0x9e37_79b9_7f4a_7c15))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys read straight from a stored record are those of the decoded
    /// histogram; a damaged record is not taken for an all-filler file.
    #[test]
    fn keys_of_a_stored_record_are_those_of_its_histogram() {
        for text in [
            &include_bytes!("fingerprint.rs")[..],
            include_bytes!("bands.rs"),
            b"}\n\n}\n",
        ] {
            let spans = Spans::new(text);
            let mut record = Vec::new();
            spans.encode(&mut record);
            assert_eq!(band_keys_of_record(&record), Some(band_keys(&spans)));
            record.push(0);
            assert_eq!(band_keys_of_record(&record), None);
        }
        assert_eq!(band_keys(&Spans::new(b"}\n\n}\n")), None);
    }

    #[test]
    fn name_keys_depend_on_the_last_component_only() {
        assert_eq!(name_key(b"deps/jemalloc/src/sz.c"), name_key(b"src/sz.c"));
        assert_eq!(name_key(b"sz.c"), name_key(b"src/sz.c"));
        assert_ne!(name_key(b"src/sz.c"), name_key(b"src/sz.h"));
        assert!(name_key(b"") < 0 && name_key(b"a") < 0);
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c, whose sign bit is set.
        assert_eq!(name_key(b"a") as u64, 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn filler_buckets_are_those_of_lines_without_content() {
        let set = filler();
        let bucket = |line: &str| {
            let mut out = Vec::new();
            for_each_chunk(line.as_bytes(), |b, _| out.push(b));
            assert_eq!(out.len(), 1, "{line:?}");
            out[0]
        };
        for line in [
            "\n",
            "}\n",
            "\t\t}\n",
            "        return 0;\n",
            " */\n",
            "#endif",
        ] {
            assert!(set.contains(bucket(line)), "{line:?}");
        }
        // Lines with content stay (their buckets are not filler ones by
        // chance: checked, as any line's could be).
        for line in ["int main(void) {\n", "return compute(1, 2);\n", "x\n"] {
            assert!(!set.contains(bucket(line)), "{line:?}");
        }
        // About 8% of the buckets: a random sample of content is lost,
        // which leaves the Jaccard index of two files as it was on average.
        let count = (0..107_927).filter(|&b| set.contains(b)).count();
        assert!((7_000..10_000).contains(&count), "{count}");
    }

    #[test]
    fn keys_are_equal_for_equal_sets_and_filler_does_not_count() {
        let a = Spans::new(b"int main(void) {\n\treturn compute(1, 2);\n}\n");
        let b = Spans::new(b"\nint main(void) {\n\n\treturn compute(1, 2);\n}\n}\n\n");
        assert_eq!(band_keys(&a), band_keys(&b));
        let c = Spans::new(b"int main(void) {\n\treturn compute(1, 3);\n}\n");
        let (ka, kc) = (band_keys(&a).unwrap(), band_keys(&c).unwrap());
        assert_ne!(ka, kc);
        assert!(ka.iter().all(|&k| k >= 0));
        assert_eq!(band_keys(&Spans::new(b"}\n\n\t}\n")), None);
    }

    #[test]
    fn minima_agree_about_as_often_as_the_sets_overlap() {
        // Two sets of 400 lines sharing 300: J = 300 / 500.
        let line = |i: usize| format!("line number {i} of the text\n");
        let a: String = (0..400).map(line).collect();
        let b: String = (100..500).map(line).collect();
        let (ma, mb) = (
            minima(&Spans::new(a.as_bytes())).unwrap(),
            minima(&Spans::new(b.as_bytes())).unwrap(),
        );
        let agree = ma.iter().zip(&mb).filter(|(x, y)| x == y).count();
        // 128 draws at p = 0.6: mean 76.8, standard deviation 5.5.
        assert!((60..=94).contains(&agree), "{agree}");
    }
}
