#!/usr/bin/env bash
# Times `git-simm fingerprint --all --no-cache` against git reading the same
# objects, in one run, and prints the ratio (at most 1.5x on 2 cores).
#
#   benches/fingerprint-all.sh [REPO]
#
# REPO defaults to this clone; use a repository with over 100,000 blobs for
# the figure in README (e.g. a clone of git.git). Nothing is written into
# REPO: the store is bypassed with --no-cache.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:-$here}
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
simm=$here/target/release/git-simm
ids=$(mktemp); trap 'rm -f "$ids"' EXIT

# Blob ids in pack order, so git reads them the way it reads best.
git -C "$repo" cat-file --batch-all-objects --unordered --batch-check='%(objectname) %(objecttype)' |
  awk '$2 == "blob" { print $1 }' >"$ids"
echo "repository: $repo ($(wc -l <"$ids") blobs, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk "BEGIN { print $e - $s }"; }
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }

# Warm the page cache so neither side pays for the disk.
git -C "$repo" cat-file --batch <"$ids" >/dev/null

t_all=$(secs git -C "$repo" cat-file --batch-all-objects --batch)
t_blobs=$(secs sh -c "git -C '$repo' cat-file --batch <'$ids'")
t_simm=$(secs "$simm" -C "$repo" --no-cache fingerprint --all --quiet)

printf '%-58s %8.2f s\n' "git cat-file --batch-all-objects --batch (all objects)" "$t_all"
printf '%-58s %8.2f s\n' "git cat-file --batch < blob ids (pack order)" "$t_blobs"
printf '%-58s %8.2f s\n' "git-simm fingerprint --all --no-cache" "$t_simm"
echo "ratio git-simm / cat-file all objects: $(ratio "$t_simm" "$t_all")x"
echo "ratio git-simm / cat-file blobs only:  $(ratio "$t_simm" "$t_blobs")x   (target: at most 1.5x)"
