//! How `groups` names its members: each member's score against the
//! representative, a mark on those that joined through others (a chain of
//! links at the threshold), and `path@<blob id>` where one path holds two
//! blobs of a group.

use crate::util::{self, Repo, stderr, stdout};
use git_simm::similarity::score::{self, Spans};

/// `text` with the lines starting between `from`% and `to`% of its bytes
/// replaced by short new ones.
fn replaced(text: &[u8], from: usize, to: usize, tag: &str) -> Vec<u8> {
    let (lo, hi) = (text.len() * from / 100, text.len() * to / 100);
    let mut out = Vec::new();
    let mut at = 0;
    for (i, l) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        if (lo..hi).contains(&at) {
            out.extend_from_slice(format!("{tag} {i}\n").as_bytes());
        } else {
            out.extend_from_slice(l);
        }
        at += l.len();
    }
    out
}

fn git_score(a: &[u8], b: &[u8]) -> u32 {
    score::percent(score::score(&Spans::new(a), &Spans::new(b), 0))
}

/// A chain: b (twice, so it is the representative), a and c each about
/// 85% like b, d about 85% like c and under 80% like b.
#[test]
fn members_joined_through_a_chain_are_marked() {
    let base = util::texts(17, 1).remove(0);
    let b = base.clone();
    let a = replaced(&base, 0, 15, "a");
    let c = replaced(&base, 85, 100, "c");
    let d = replaced(&c, 70, 85, "d");
    assert!(git_score(&a, &b) >= 80 && git_score(&c, &b) >= 80);
    assert!(git_score(&d, &c) >= 80);
    let d_to_b = git_score(&d, &b);
    assert!(d_to_b < 80, "{d_to_b}");
    let r = Repo::new();
    for (p, data) in [
        ("a.txt", &a),
        ("b.txt", &b),
        ("b copy.txt", &b),
        ("c.txt", &c),
        ("d.txt", &d),
    ] {
        r.write(p, data);
    }
    r.commit_all("chain");
    let o = r.simm(&["groups", "--no-ignore-common"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("rep\t") && lines[1].ends_with("\tb copy.txt"),
        "{text}"
    );
    let member = |path: &str| -> &str {
        lines
            .iter()
            .find(|l| l.ends_with(&format!("\t{path}")))
            .unwrap_or_else(|| panic!("{path}: {text}"))
            .split('\t')
            .next()
            .unwrap()
    };
    assert_eq!(member("d.txt"), format!("{d_to_b}%*"), "{text}");
    for (p, data) in [("a.txt", &a), ("c.txt", &c)] {
        assert_eq!(member(p), format!("{}%", git_score(data, &b)), "{text}");
    }
    assert_eq!(member("b.txt"), "100%");
    assert_eq!(
        lines.last().copied(),
        Some(
            "* under 80% against the representative: linked to it through other members, \
             each link at least 80%"
        ),
        "{text}"
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&r.simm(&["groups", "--json", "--no-ignore-common"]).stdout)
            .unwrap();
    for m in doc["groups"][0]["members"].as_array().unwrap() {
        assert_eq!(m["chained"], m["path"] == "d.txt", "{m}");
    }
}

/// `--all`: two versions of one file in one group are both named by that
/// path; each is shown as `path@<blob id>`.
#[test]
fn one_path_with_two_blobs_is_shown_with_the_ids() {
    let base = util::texts(19, 1).remove(0);
    let r = Repo::new();
    r.write("lib/a.txt", &base);
    r.write("other.txt", b"an unrelated small file\n");
    r.commit_all("first");
    r.write("lib/a.txt", &util::edit(&base, 20, 3));
    r.commit_all("second");
    let old = r.rev("HEAD~1:lib/a.txt");
    let new = r.rev("HEAD:lib/a.txt");
    let o = r.simm(&["groups", "--all", "--no-ignore-common"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.rsplit('\t').next().unwrap().to_owned())
        .collect();
    names.sort();
    let mut want = vec![
        format!("lib/a.txt@{}", &old[..12]),
        format!("lib/a.txt@{}", &new[..12]),
    ];
    want.sort();
    assert_eq!(names, want, "{}", stdout(&o));
    // One blob per path in a tree: no ids.
    let o = r.simm(&["groups", "--no-ignore-common"]);
    assert!(!stdout(&o).contains('@'), "{}", stdout(&o));
}
