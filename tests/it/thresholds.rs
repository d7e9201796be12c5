//! git-simm's own thresholds are percentages: `100` is 100% and `101` a
//! usage error, for every option and setting that takes one. git's `-M`
//! digits rule (the digits are a fraction: `-M100` is 10%) stays with
//! `-M` and `-C`, where git users expect it and git is the oracle.

use crate::util::{self, Repo, stderr, stdout};
use git_simm::similarity::score::{self, Spans};

/// Real text: `lib/a.txt`, its exact copy `vendor/a.txt`, a lightly
/// edited copy `old/a edited.txt` (about 90%), an unrelated file.
fn fixture() -> (Repo, Vec<u8>) {
    let texts = util::texts(13, 4);
    let a = texts[0].clone();
    let r = Repo::new();
    r.write("lib/a.txt", &a);
    r.write("vendor/a.txt", &a);
    r.write("old/a edited.txt", &util::edit(&a, 10, 1));
    r.write("other.txt", &texts[1]);
    r.commit_all("base");
    (r, a)
}

fn paths(o: &std::process::Output) -> Vec<String> {
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(o));
    stdout(o)
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().to_owned())
        .collect()
}

#[test]
fn similar_and_groups_take_100_as_100_percent() {
    let (r, _) = fixture();
    let exact = ["lib/a.txt", "vendor/a.txt"];
    // The edited copy is far above git's 10%, and below 100%.
    let low = paths(&r.simm(&["similar", "--threshold", "10%", "lib/a.txt"]));
    assert!(low.contains(&"old/a edited.txt".to_owned()), "{low:?}");
    for t in ["100", "100%", "1.0"] {
        let o = r.simm(&["similar", "--threshold", t, "lib/a.txt"]);
        assert_eq!(paths(&o), exact, "--threshold {t}");
        let o = r.simm(&["groups", "--no-ignore-common", "--threshold", t]);
        let members: Vec<String> = stdout(&o)
            .lines()
            .skip(1)
            .map(|l| l.rsplit('\t').next().unwrap().to_owned())
            .collect();
        assert_eq!(members, exact, "groups --threshold {t}: {}", stdout(&o));
    }
    for t in ["101", "101%", "100.5%", "1.5"] {
        for args in [
            &["similar", "--threshold", t, "lib/a.txt"][..],
            &["groups", "--threshold", t][..],
        ] {
            let o = r.simm(args);
            assert_eq!(o.status.code(), Some(129), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("out of range"), "{}", stderr(&o));
        }
    }
    // simm.groupThreshold means the same; a bad one is fatal, named.
    r.git(&["config", "simm.groupThreshold", "100"]);
    let o = r.simm(&["groups", "--no-ignore-common"]);
    assert_eq!(stdout(&o).lines().count(), 3, "{}", stdout(&o));
    r.git(&["config", "simm.groupThreshold", "101"]);
    let o = r.simm(&["groups"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(stderr(&o).contains("simm.groupThreshold"), "{}", stderr(&o));
}

#[test]
fn check_thresholds_take_100_as_100_percent() {
    let (r, a) = fixture();
    let copy = util::edit(&a, 50, 2);
    let s = score::percent(score::score(&Spans::new(&a), &Spans::new(&copy), 0));
    assert!((90..100).contains(&s), "{s}");
    r.write("new/copy.txt", &copy);
    r.write("new/exact.txt", &a);
    r.git(&["add", "-A"]);
    let copies = |o: &std::process::Output| -> Vec<String> {
        assert!(o.status.success(), "{}", stderr(o));
        let mut v: Vec<String> = stderr(o)
            .lines()
            .filter_map(|l| l.strip_prefix("warning: '"))
            .map(|l| l.split('\'').next().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let both = copies(&r.simm(&["check", "--staged", "--copy-threshold", "90"]));
    assert_eq!(both, ["new/copy.txt", "new/exact.txt"]);
    let o = r.simm(&["check", "--staged", "--copy-threshold", "100"]);
    assert_eq!(copies(&o), ["new/exact.txt"], "{}", stderr(&o));
    r.git(&["config", "simm.copyThreshold", "100"]);
    assert_eq!(copies(&r.simm(&["check", "--staged"])), ["new/exact.txt"]);
    for args in [
        &["check", "--staged", "--copy-threshold", "101"][..],
        &["check", "--staged", "--rename-threshold", "101"][..],
    ] {
        let o = r.simm(args);
        assert_eq!(o.status.code(), Some(129), "{args:?}: {}", stderr(&o));
    }
    r.git(&["config", "simm.renameThreshold", "101"]);
    let o = r.simm(&["check", "--staged"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("simm.renameThreshold"),
        "{}",
        stderr(&o)
    );
}

/// `-M<n>` keeps git's rule: `-M100` is 10%, as `git diff -M100` says;
/// `--find-splits=<n>`, git-simm's own, takes 100 as 100%.
#[test]
fn renames_keep_git_s_digits_rule_for_m() {
    let (r, a) = fixture();
    r.remove("lib/a.txt");
    // About 40% similar: a rename at 10%, not at git's default 50%.
    let mut rewritten = Vec::new();
    for (i, line) in a.split_inclusive(|&b| b == b'\n').enumerate() {
        if i % 5 < 3 {
            rewritten.extend_from_slice(format!("replaced line {i}\n").as_bytes());
        } else {
            rewritten.extend_from_slice(line);
        }
    }
    r.write("lib/b.txt", &rewritten);
    r.git(&["add", "-A"]);
    for m in ["-M100", "-M"] {
        let git = r.git_str(&["diff", "--cached", "--name-status", m]);
        let ours = r.simm(&["renames", "--cached", m]);
        assert_eq!(stdout(&ours), git, "{m}");
    }
    let ten = r.git_str(&["diff", "--cached", "--name-status", "-M100"]);
    assert!(ten.contains("\tlib/a.txt\tlib/b.txt"), "{ten}");
    let o = r.simm(&["renames", "--cached", "--find-splits=101"]);
    assert_eq!(o.status.code(), Some(129), "{}", stderr(&o));
    let o = r.simm(&["renames", "--cached", "--find-splits=100"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The help says what the thresholds mean, and its configuration table
/// lines up.
#[test]
fn help_says_what_thresholds_and_trace_mean() {
    let o = util::simm_command().arg("--help").output().unwrap();
    let help = stdout(&o);
    let columns: Vec<usize> = help
        .lines()
        .filter(|l| l.trim_start().starts_with("simm."))
        .map(|l| {
            let key_end = l.find("simm.").unwrap() + l.trim_start().find(' ').unwrap();
            key_end + l[key_end..].find(|c: char| c != ' ').unwrap()
        })
        .collect();
    assert!(columns.len() >= 6, "{help}");
    assert!(
        columns.iter().all(|&c| c == columns[0]),
        "configuration descriptions start at columns {columns:?}:\n{help}"
    );
    assert!(help.contains("100 is 100%"), "{help}");
    assert!(
        help.contains("GIT_SIMM_TRACE=1 prints every command's"),
        "{help}"
    );
    for cmd in ["similar", "groups", "check"] {
        let o = util::simm_command().args([cmd, "--help"]).output().unwrap();
        // Words as a reader sees them, wherever the help wraps.
        let words = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("100 is 100%"), "{cmd}: {}", stdout(&o));
    }
}
