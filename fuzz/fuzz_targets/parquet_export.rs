//! The Parquet writer (`git simm export`) on any rows: paths of any bytes,
//! any names for the repository and revisions, any sizes and keys. It
//! writes a file that reads back with every row, and the `path` column
//! names each path unambiguously (the value is the path, or git's quoted
//! form of it when it starts with `"`; two different paths never give the
//! same value), since queries join and group on it.
#![no_main]

use std::collections::HashMap;

use arrow_array::{Array, StringArray};
use git_simm::export::{Export, Row, Texts, TreeSource, write_parquet};
use git_simm::progress::Feedback;
use git_simm::similarity::bands::BANDS;
use git_simm::similarity::fingerprint::{Fingerprint, Sketch};
use gix::ObjectId;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn id(u: &mut Unstructured) -> Result<ObjectId> {
    let bytes: [u8; 20] = u.arbitrary()?;
    Ok(ObjectId::from_bytes_or_panic(&bytes))
}

fn export(u: &mut Unstructured) -> Result<Export> {
    let mut sources = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        sources.push(TreeSource {
            revision: u.arbitrary()?,
            commit: if u.arbitrary()? { Some(id(u)?) } else { None },
            tree: id(u)?,
        });
    }
    let mut rows = Vec::new();
    for _ in 0..u.int_in_range(0..=24)? {
        let source = if sources.is_empty() || u.arbitrary()? {
            None
        } else {
            Some(u.choose_index(sources.len())?)
        };
        let fingerprint = if u.arbitrary()? {
            let b: [u8; 32] = u.arbitrary()?;
            Some(Fingerprint::from_bytes(&b))
        } else {
            None
        };
        let keys = if u.arbitrary()? {
            let mut k = [0i64; BANDS];
            for v in &mut k {
                *v = u.arbitrary()?;
            }
            Some(k)
        } else {
            None
        };
        rows.push(Row {
            source,
            path: if u.arbitrary()? {
                Some(u.arbitrary()?)
            } else {
                None
            },
            blob: id(u)?,
            sketch: Sketch {
                size: u.arbitrary()?,
                fingerprint,
            },
            keys,
            signature: if u.arbitrary()? {
                Some(Texts {
                    fine: u.arbitrary()?,
                    level: u.arbitrary()?,
                    sketch: u.arbitrary()?,
                    sketch_next: u.arbitrary()?,
                })
            } else {
                None
            },
        });
    }
    Ok(Export {
        repo: u.arbitrary()?,
        sources,
        rows,
        ..Export::default()
    })
}

/// The path a `path` value names: the value itself, or, when it starts
/// with `"`, the bytes git's C-style quoting (`"\303\251\t"`) stands for;
/// `None` if it is not a quoted form git writes.
fn unquote(value: &str) -> Option<Vec<u8>> {
    let Some(inner) = value.strip_prefix('"') else {
        return Some(value.as_bytes().to_vec());
    };
    let inner = inner.strip_suffix('"')?.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let e = *inner.get(i)?;
        i += 1;
        out.push(match e {
            b'a' => 7,
            b'b' => 8,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 11,
            b'f' => 12,
            b'r' => b'\r',
            b'"' | b'\\' => e,
            b'0'..=b'3' => {
                let digits = inner.get(i..i + 2)?;
                i += 2;
                digits.iter().try_fold(u32::from(e - b'0'), |v, &d| {
                    d.is_ascii_digit().then(|| v * 8 + u32::from(d - b'0'))
                })? as u8
            }
            _ => return None,
        });
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Ok(export) = export(&mut Unstructured::new(data)) else {
        return;
    };
    let mut file = tempfile::tempfile().expect("temporary file");
    let written = write_parquet(&export, &mut file, &Feedback::none()).expect("writes");
    assert_eq!(written.rows, export.rows.len());
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("reads back")
        .build()
        .expect("reader");
    let mut paths: Vec<Option<String>> = Vec::new();
    for batch in reader {
        let batch = batch.expect("a batch");
        let col = batch
            .column_by_name("path")
            .expect("a path column")
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("strings")
            .clone();
        paths.extend((0..col.len()).map(|i| col.is_valid(i).then(|| col.value(i).to_owned())));
    }
    assert_eq!(paths.len(), export.rows.len());
    let mut named: HashMap<String, &[u8]> = HashMap::new();
    for (row, value) in export.rows.iter().zip(&paths) {
        assert_eq!(row.path.is_some(), value.is_some());
        if let (Some(p), Some(v)) = (&row.path, value) {
            assert_eq!(
                unquote(v).as_deref(),
                Some(p.as_slice()),
                "{v:?} does not name the path it was written for"
            );
            if let Some(other) = named.insert(v.clone(), p) {
                assert_eq!(other, p.as_slice(), "two paths exported as {v:?}");
            }
        }
    }
});
