#!/usr/bin/env bash
# How precise are the regions `git simm compare` reports? On PAIRS real
# pairs of REPO's history (a file modified by a commit, or renamed with
# edits, against its first parent), the regions of `compare --json` beside
# the hunks of `git diff -U0` of the same two blobs: the share of git's
# changed lines (deleted lines of the old file, added lines of the new
# one) inside a region, and the share of the regions' lines git changed.
# Means, medians and sums over the pairs, for all pairs and split by size
# (both files under 8 KiB compare at the fine level, one per 16 bytes;
# else one per 64). Also the times of the two commands, run one after the
# other on each pair.
#
#   benches/compare-regions.sh SIMM REPO [PAIRS] [REV] [SEED] [WORKDIR]
#
# SIMM: the git-simm binary (copied first). REPO: a repository (bare or
# not); nothing is written there (`compare --no-cache`). PAIRS (default
# 200) pairs are drawn from the first-parent history of REV (default
# HEAD): commits in a shuffled order (random.Random(SEED), default 24),
# one pair per commit, the file chosen with the same generator among the
# commit's modified or renamed-and-edited text files (no NUL in the first
# 8000 bytes, as git decides) of 1 KiB to 64 KiB on both sides. The same
# REV and SEED give the same pairs. Per-pair figures go to
# WORKDIR/pairs.tsv (WORKDIR default: a temporary directory, removed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "compare-regions.sh: $*" >&2; exit 1; }
[[ $# -ge 2 ]] || die "usage: benches/compare-regions.sh SIMM REPO [PAIRS] [REV] [SEED] [WORKDIR]"
simm_bin=$1 repo=$2 pairs=${3:-200} rev=${4:-HEAD} seed=${5:-24} workdir=${6:-}
keep=0
[[ -n $workdir ]] && keep=1
build=0
use_workdir compare-regions
use_simm_binary git-simm
pinned_git_env
git -C "$repo" rev-parse --verify --quiet "$rev^{commit}" >/dev/null || die "$rev is not a commit of $repo"
echo "repository: $repo at $(git -C "$repo" rev-parse "$rev"), $pairs pairs, seed $seed"
echo "git-simm: $simm_bin; $(git --version); $(nproc) cores, load $(loadavg)"
python3 - "$simm" "$repo" "$rev" "$pairs" "$seed" "$workdir/pairs.tsv" <<'PY'
import json, random, re, statistics, subprocess, sys, time

simm, repo, rev, want, seed, tsv = sys.argv[1:7]
want, seed = int(want), int(seed)
LOW, HIGH, FINE = 1024, 65536, 8192


def git(*args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, check=True).stdout


class Cat:
    """One `git cat-file --batch` for sizes and contents."""

    def __init__(self):
        self.p = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def blob(self, oid):
        self.p.stdin.write(oid.encode() + b"\n")
        self.p.stdin.flush()
        head = self.p.stdout.readline().split()
        size = int(head[2])
        data = self.p.stdout.read(size)
        self.p.stdout.read(1)
        return data


def candidates(commit, cat):
    """(old blob, new blob, path, sizes) of the commit's eligible files."""
    raw = git("diff-tree", "-r", "-M", "--raw", "-z", commit + "^1", commit).split(b"\0")
    out, i = [], 0
    while i < len(raw) - 1:
        meta = raw[i].decode().split()
        status = meta[4]
        if status[0] in "RC":
            path, i = raw[i + 2].decode(errors="replace"), i + 3
        else:
            path, i = raw[i + 1].decode(errors="replace"), i + 2
        modes_ok = meta[0][1:] in ("100644", "100755") and meta[1] in ("100644", "100755")
        if not modes_ok or not (status == "M" or (status[0] == "R" and status != "R100")):
            continue
        old, new = cat.blob(meta[2]), cat.blob(meta[3])
        if not all(LOW <= len(d) <= HIGH and b"\0" not in d[:8000] for d in (old, new)):
            continue
        out.append((meta[2], meta[3], path, len(old), len(new)))
    return out


def git_hunks(a, b):
    """Changed lines of each side (from 1) of `git diff -U0 a b`."""
    diff = git("diff", "-U0", "--no-color", "--no-ext-diff", a, b).decode(errors="replace")
    old, new, hunks = set(), set(), []
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        s1, c1 = int(m[1]), int(m[2] or 1)
        s2, c2 = int(m[3]), int(m[4] or 1)
        old.update(range(s1, s1 + c1))
        new.update(range(s2, s2 + c2))
        hunks.append((s1, c1, s2, c2))
    return old, new, hunks


def compare(a, b):
    out = subprocess.run([simm, "-C", repo, "compare", "--no-cache", "--json", a, b],
                         capture_output=True, check=True).stdout
    return json.loads(out)


def region_lines(doc, side):
    lines = set()
    for r in doc["regions"]:
        s = r[side]
        if s["lines"]:
            lines.update(range(s["first_line"], s["last_line"] + 1))
    return lines


commits = git("rev-list", "--first-parent", rev).decode().split()
rng = random.Random(seed)
rng.shuffle(commits)
cat = Cat()
rows, t_git, t_simm, looked = [], 0.0, 0.0, 0
for commit in commits:
    if len(rows) == want:
        break
    looked += 1
    try:
        found = candidates(commit, cat)
    except subprocess.CalledProcessError:  # the root commit
        continue
    if not found:
        continue
    a, b, path, size_a, size_b = rng.choice(found)
    t = time.perf_counter()
    g_old, g_new, hunks = git_hunks(a, b)
    t_git += time.perf_counter() - t
    t = time.perf_counter()
    doc = compare(a, b)
    t_simm += time.perf_counter() - t
    r_old, r_new = region_lines(doc, "a"), region_lines(doc, "b")
    # Pure insertions and deletions: whether compare's empty side sits
    # where git's does (git: after line s; compare's JSON: before line s + 1).
    anchors = {("a", s1 + 1) for s1, c1, _, _ in hunks if c1 == 0}
    anchors |= {("b", s2 + 1) for _, _, s2, c2 in hunks if c2 == 0}
    empty = [(side, r[side]["first_line"]) for r in doc["regions"] for side in "ab" if not r[side]["lines"]]
    rows.append({
        "commit": commit, "path": path, "a": a, "b": b, "size_a": size_a, "size_b": size_b,
        "fine": size_a < FINE and size_b < FINE, "git_score": doc["git_score"],
        "git_lines": len(g_old) + len(g_new), "region_lines": len(r_old) + len(r_new),
        "covered": len(g_old & r_old) + len(g_new & r_new),
        "hunks": len(hunks), "regions": len(doc["regions"]),
        "hunks_missed": sum(1 for s1, c1, s2, c2 in hunks
                            if not (set(range(s1, s1 + c1)) & r_old or set(range(s2, s2 + c2)) & r_new)),
        "empty": len(empty), "empty_at_git": sum(1 for e in empty if e in anchors),
        # Regions with no line git changed on either side (an empty side
        # at git's insertion point counts as one).
        "regions_idle": sum(1 for r in doc["regions"]
                            if not (region_lines({"regions": [r]}, "a") & g_old
                                    or region_lines({"regions": [r]}, "b") & g_new
                                    or any(("ab"[k], r["ab"[k]]["first_line"]) in anchors
                                           for k in (0, 1) if not r["ab"[k]]["lines"]))),
    })
cat.p.stdin.close()

with open(tsv, "w") as f:
    keys = list(rows[0]) if rows else []
    f.write("\t".join(keys) + "\n")
    for r in rows:
        f.write("\t".join(str(r[k]) for k in keys) + "\n")

print(f"pairs: {len(rows)} from {looked} commits looked at; "
      f"git diff -U0 {t_git:.2f} s, compare {t_simm:.2f} s in all, compare/git {t_simm / max(t_git, 1e-9):.2f}")


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def table(label, rs):
    if not rs:
        print(f"{label}: no pair")
        return
    recall = [r["covered"] / r["git_lines"] for r in rs if r["git_lines"]]
    precision = [r["covered"] / r["region_lines"] for r in rs if r["region_lines"]]
    git_lines = sum(r["git_lines"] for r in rs)
    region_lines = sum(r["region_lines"] for r in rs)
    covered = sum(r["covered"] for r in rs)
    full = sum(1 for r in rs if r["covered"] == r["git_lines"])
    print(f"{label}: {len(rs)} pairs, {sum(r['hunks'] for r in rs)} git hunks, "
          f"{sum(r['regions'] for r in rs)} regions; git changed {git_lines} lines, regions hold {region_lines}")
    print(f"  git's changed lines inside a region:  mean {pct(statistics.mean(recall))}, "
          f"median {pct(statistics.median(recall))}, sum {pct(covered / git_lines if git_lines else None)}; "
          f"all of them in {full} pairs; hunks with no line in a region: {sum(r['hunks_missed'] for r in rs)}")
    if precision:
        print(f"  region lines git changed:             mean {pct(statistics.mean(precision))}, "
              f"median {pct(statistics.median(precision))}, sum {pct(covered / region_lines if region_lines else None)}; "
              f"regions with no changed line: {sum(r['regions_idle'] for r in rs)}")
    empty = sum(r["empty"] for r in rs)
    print(f"  empty region sides (pure insertion or deletion): {empty}, "
          f"at git's place {sum(r['empty_at_git'] for r in rs)}")


table("all", rows)
table("both under 8 KiB", [r for r in rows if r["fine"]])
table("8 KiB or more", [r for r in rows if not r["fine"]])
PY
echo "load after: $(loadavg)"
