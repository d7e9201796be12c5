//! `simm.ignore` patterns (gitignore syntax, git's wildmatch) against
//! paths: no panic whatever the patterns, and the rules that hold for any
//! pattern set hold (without `!`, a path under an ignored one is ignored; no
//! patterns ignore nothing, a comment is no pattern).
#![no_main]

use git_simm::check::ignored;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Lines: patterns, then after an empty line the paths to try.
    let text = String::from_utf8_lossy(data);
    let (patterns, paths) = text.split_once("\n\n").unwrap_or((&text, "a/b/c"));
    let patterns: Vec<String> = patterns.lines().map(str::to_owned).collect();
    for path in paths.lines() {
        let p = path.as_bytes();
        let hit = ignored(&patterns, p);
        assert!(!ignored(&[], p));
        let mut commented = vec!["#".to_owned() + path];
        commented.extend(patterns.iter().cloned());
        assert_eq!(ignored(&commented, p), hit);
        // (Without `!`: `b` then `!b/` ignores the file `b` but not the
        // directory, as in git.)
        let negated = patterns.iter().any(|p| p.starts_with('!'));
        if hit && !negated && !p.is_empty() && !p.starts_with(b"/") && !p.ends_with(b"/") {
            // Anything inside an ignored path is ignored too.
            let mut inside = p.to_vec();
            inside.extend_from_slice(b"/x");
            assert!(ignored(&patterns, &inside), "{path:?}/x not ignored");
        }
    }
});
