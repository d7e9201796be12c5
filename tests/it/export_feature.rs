//! `export` is a cargo feature (on by default). Built without it
//! (`--no-default-features`), the command still parses and says how to get
//! it; with it, `export.rs` tests the command itself.

#[cfg(not(feature = "export"))]
#[test]
fn export_without_the_feature_says_how_to_get_it() {
    use crate::util::{Repo, stderr};
    let repo = Repo::new();
    repo.write("a.txt", b"some text\n");
    repo.commit_all("one");
    let o = repo.simm(&["export", "-o", "out.parquet"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("fatal: "), "{err}");
    assert!(err.contains("without Parquet export"), "{err}");
    assert!(err.contains("cargo install git-simm"), "{err}");
    assert!(err.contains("cargo install --path ."), "{err}");
    assert!(!repo.path.join("out.parquet").exists());
}
