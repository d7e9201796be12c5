//! The fixture scripts (`fixtures/`) run git as the tests do.

use crate::util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `fixtures/lib.sh` and `util::git_env` give git the same environment:
/// the same pinned `GIT_*` variables, and nothing inherited (a `GIT_DIR`
/// or `GIT_INDEX_FILE` from a hook would point git elsewhere).
#[test]
fn lib_sh_pins_what_git_env_pins() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/lib.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#". "$1" && env -0"#)
        .arg("bash")
        .arg(&lib)
        .env("GIT_DIR", "/nonexistent/outer/.git")
        .env("GIT_INDEX_FILE", "/nonexistent/outer/index")
        .env("GIT_SIMM_FROM_A_HOOK", "1")
        .output()
        .expect("run bash");
    assert!(out.status.success(), "{}", util::stderr(&out));
    let script: BTreeMap<String, String> = out
        .stdout
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let (k, v) = std::str::from_utf8(kv).ok()?.split_once('=')?;
            k.starts_with("GIT_").then(|| (k.to_owned(), v.to_owned()))
        })
        .collect();

    let mut cmd = Command::new("true");
    util::git_env(&mut cmd);
    let rust: BTreeMap<String, String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
        .filter(|(k, _)| k.starts_with("GIT_"))
        .collect();

    assert_eq!(script, rust);
    for key in ["GIT_CONFIG_KEY_0", "GIT_CONFIG_KEY_1", "GIT_CONFIG_KEY_2"] {
        assert!(script.contains_key(key), "{key} missing");
    }
}
