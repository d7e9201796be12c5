//! Configuration values git-simm reads itself: `GIT_CONFIG_PARAMETERS`
//! (what `git -c` passes down), `gc.pruneExpire`, `diff.ignoreSubmodules`
//! and `--diff-filter`. Errors, never panics; and `GIT_CONFIG_PARAMETERS`
//! that parses quotes back (as git 2.31+ writes it) to the same entries.
#![no_main]

use git_simm::output::DiffFilter;
use git_simm::pack::parse_expiry;
use git_simm::repo::{IgnoreSubmodules, parse_config_parameters};
use libfuzzer_sys::fuzz_target;

/// git's `sq_quote_buf`: `'` becomes `'\''` and `!` becomes `'\!'`.
fn sq_quote(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'\'');
    for &c in s {
        match c {
            b'\'' | b'!' => out.extend_from_slice(&[b'\'', b'\\', c, b'\'']),
            _ => out.push(c),
        }
    }
    out.push(b'\'');
}

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = parse_config_parameters(data) {
        let mut env = Vec::new();
        for (key, value) in &entries {
            if !env.is_empty() {
                env.push(b' ');
            }
            sq_quote(&mut env, key);
            env.push(b'=');
            if let Some(v) = value {
                sq_quote(&mut env, v);
            }
        }
        let again = parse_config_parameters(&env).expect("git's own quoting parses");
        assert_eq!(again, entries, "{:?}", String::from_utf8_lossy(&env));
    }
    let text = String::from_utf8_lossy(data);
    let _ = parse_expiry(&text);
    let _ = IgnoreSubmodules::parse(&text);
    let _ = DiffFilter::parse(&text);
});
