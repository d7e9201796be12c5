//! Real text for the unit tests: whole files of source code and prose, in
//! a fixed order. Tests here compare two implementations of one thing
//! (SIMD and portable, merge and dense), so they need varied real text
//! rather than particular files.

use std::path::{Path, PathBuf};

/// Every file below `src/`, sorted by path.
pub(crate) fn real_text() -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut paths,
    );
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).expect("read a test text"))
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("list a test text directory") {
        let path = e.expect("list a test text directory").path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}
