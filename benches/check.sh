#!/usr/bin/env bash
# Latency of `git-simm check --staged` (what the pre-commit hook runs) on an
# ordinary commit in a large repository with a warm store. Goal:
# under 100 ms for 100,000 files.
#
#   benches/check.sh [--git-simm BIN] REPO [RUNS]
#
# REPO is only read: it is cloned with `git clone --shared --no-checkout`
# into a temporary directory, its fingerprint store (.git/simm) is copied
# there (the "warm store"), the index is built from HEAD with read-tree (no
# checkout needed), and a small change is staged with plumbing: two files
# edited and one file renamed with light edits. The check is run once to
# warm the OS cache and fingerprint the few new blobs, then timed RUNS times
# (default 10); the median and the fastest are printed. A second scenario
# adds a new file (which triggers the copy search against all of HEAD).
# --git-simm BIN times that binary instead of building this worktree's, to
# compare two versions on the same repository. The last line repeats the
# second scenario with stderr on a terminal (script(1)), as a hook run from
# one has it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
simm=
if [ "${1:-}" = --git-simm ]; then
  simm=$(realpath "${2:?--git-simm needs a binary}")
  shift 2
fi
repo=${1:?usage: benches/check.sh [--git-simm BIN] REPO [RUNS]}
runs=${2:-10}
if [ -z "$simm" ]; then
  cargo build --release --quiet --manifest-path "$here/Cargo.toml"
  simm=$here/target/release/git-simm
fi
tmp=$(mktemp -d /tmp/simm-check.XXXXXX); trap 'rm -rf "$tmp"' EXIT

git clone --quiet --shared --no-checkout "$repo" "$tmp/repo"
cd "$tmp/repo"
src_git=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir)
[ -d "$src_git/simm" ] && cp -r "$src_git/simm" .git/simm
git read-tree HEAD
files=$(git ls-files | wc -l)
echo "repository: $repo, $files files at HEAD; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# Pick three files of 1-64 KiB deterministically: two to edit, one to move.
git ls-tree -r -l HEAD |
  awk -F '\t' '{ split($1, m, " ") } m[2] == "blob" && m[4] >= 1024 && m[4] <= 65536 && ++seen % 997 == 1 { print $2 }' |
  sed -n '1,3p' >"$tmp/picked"
mapfile -t picked <"$tmp/picked"
edit() { # blob path -> new blob id with a line appended and one changed
  git cat-file blob "HEAD:$1" | sed '3s/$/ edited/' | { cat; echo "added line $RANDOM"; } |
    git hash-object -w --stdin
}
for f in "${picked[0]}" "${picked[1]}"; do
  git update-index --cacheinfo "100644,$(edit "$f"),$f"
done
moved="moved-by-bench/$(basename "${picked[2]}")"
git update-index --add --cacheinfo "100644,$(edit "${picked[2]}"),$moved"
git update-index --force-remove "${picked[2]}"
echo "staged:"; git diff --cached -M --name-status | sed 's/^/  /'

check() { "$simm" check --staged >/dev/null 2>&1 || true; }
# A hook run from a terminal has stderr on it, which turns progress
# reporting on: script(1) gives the check a terminal.
check_tty() { script -qec "$(printf '%q' "$simm") check --staged" /dev/null >/dev/null 2>&1 || true; }
time_runs() { # [check_tty]
  local run=${1:-check}
  $run # warm-up
  for _ in $(seq "$runs"); do
    s=$(date +%s%N); $run; e=$(date +%s%N)
    echo $(( (e - s) / 1000 ))
  done | sort -n | awk '{ t[NR] = $1 } END { printf "median %.1f ms, fastest %.1f ms over %d runs\n", t[int((NR + 1) / 2)] / 1000, t[1] / 1000, NR }'
}
echo "check --staged (edits + rename): $(time_runs)"
"$simm" check --staged || true

# An ordinary commit that also adds a file: the copy search runs.
new=$(printf 'brand new file %s\n' $(seq 1 300) | git hash-object -w --stdin)
git update-index --add --cacheinfo "100644,$new,new-by-bench.txt"
echo "check --staged (plus a new file): $(time_runs)"
if command -v script >/dev/null; then
  echo "check --staged (plus a new file, on a terminal): $(time_runs check_tty)"
fi
