#!/usr/bin/env bash
# Latency of `git-simm similar` against a large tree with a warm store
# (well under a second for tens of thousands of files), and whether
# the edited original comes back first.
#
#   benches/similar.sh REPO [QUERIES]
#
# REPO should have tens of thousands of files at HEAD (for example the
# N=100000 repository that benches/renames-scale.sh builds, at HEAD~1).
# The store is filled in REPO's git directory (.git/simm); nothing else is
# written there. Queries are edited copies written to a temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:?usage: benches/similar.sh REPO [QUERIES]}
queries=${2:-20}
tree=${TREE:-HEAD}
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
simm=$here/target/release/git-simm
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

files=$(git -C "$repo" ls-tree -r "$tree" | wc -l)
echo "repository: $repo, $tree has $files files; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$simm" -C "$repo" fingerprint --quiet "$tree"
echo "filling the store (fingerprint $tree): $(awk "BEGIN { print $(date +%s.%N) - $start }") s"

# Files of 8 KiB and more, chosen deterministically.
# (No `head` here: it would close the pipe early and pipefail would stop us.)
git -C "$repo" ls-tree -r -l "$tree" |
  awk -F '\t' -v n="$queries" '{ split($1, m, " ") }
    m[2] == "blob" && m[4] >= 8192 && ++seen % 97 == 1 && picked < n { print m[3] "\t" $2; picked++ }' >"$tmp/picked"

python3 - "$tmp/picked" "$tmp" "$repo" <<'PY'
import random, subprocess, sys
picked, tmp, repo = sys.argv[1:4]
rng = random.Random(42)
for n, line in enumerate(open(picked)):
    oid, path = line.rstrip("\n").split("\t", 1)
    data = bytearray(subprocess.run(["git", "-C", repo, "cat-file", "blob", oid], capture_output=True, check=True).stdout)
    other = subprocess.run(["git", "-C", repo, "cat-file", "blob", "HEAD:" + path], capture_output=True).stdout or bytes(data)
    for _ in range(30):  # 30 random 50-byte substitutions of real text
        at = rng.randrange(0, len(data) - 50)
        src = rng.randrange(0, max(1, len(other) - 50))
        data[at:at + 50] = bytes(reversed(other[src:src + 50])).ljust(50, b" ")
    open(f"{tmp}/q{n}", "wb").write(data)
    open(f"{tmp}/q{n}.path", "w").write(path)
PY

hits=0; total=0; times=()
for q in "$tmp"/q*[0-9]; do
  want=$(cat "$q.path")
  s=$(date +%s.%N)
  got=$("$simm" -C "$repo" similar --limit 1 "$q" "$tree" | cut -f2- || true)
  times+=("$(awk "BEGIN { print $(date +%s.%N) - $s }")")
  total=$((total + 1))
  [ "$got" = "$want" ] && hits=$((hits + 1))
done
printf '%s\n' "${times[@]}" | sort -n | awk -v hits="$hits" -v total="$total" '
  { t[NR] = $1 } END {
    printf "queries: %d, original first: %d\n", total, hits
    printf "latency, warm store: median %.3f s, max %.3f s\n", t[int((NR + 1) / 2)], t[NR]
  }'
