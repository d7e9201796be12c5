//! git's `-M<n>`/`-C<n>`/`-B<n>` numbers (and `groups --threshold`,
//! `simm.groupThreshold`), against a transcription of git's own
//! `parse_rename_score` (diff.c) kept here as the oracle.
#![no_main]

use git_simm::similarity::score::{MAX_SCORE, parse_rename_score};
use libfuzzer_sys::fuzz_target;

/// diff.c, `parse_rename_score`, and the check `diff_opt_parse` makes
/// after it (`*arg` must be at the end): `None` where git refuses.
fn git(arg: &[u8]) -> Option<u32> {
    let (mut num, mut scale, mut dot) = (0u64, 1u64, false);
    let mut i = 0;
    while let Some(&ch) = arg.get(i) {
        if !dot && ch == b'.' {
            scale = 1;
            dot = true;
        } else if ch == b'%' {
            scale = if dot { scale * 100 } else { 100 };
            i += 1;
            break;
        } else if ch.is_ascii_digit() {
            if scale < 100_000 {
                scale *= 10;
                num = num * 10 + u64::from(ch - b'0');
            }
        } else {
            break;
        }
        i += 1;
    }
    if i != arg.len() {
        return None;
    }
    Some(if num >= scale {
        MAX_SCORE
    } else {
        (u64::from(MAX_SCORE) * num / scale) as u32
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let ours = parse_rename_score(s).ok();
    assert_eq!(ours, git(data), "{s:?}");
    if let Some(v) = ours {
        assert!(v <= MAX_SCORE);
    }
});
