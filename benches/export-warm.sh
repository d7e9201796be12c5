#!/usr/bin/env bash
# A warm `export --all` by two git-simm binaries in one run: the store is
# filled once (a cold `export --all` by each, NEW last), then both export
# again from it, alternating; prints each time (wall, and user+sys CPU),
# the load and the ratio.
#
#   benches/export-warm.sh OLD NEW REPO [WORKDIR] [ROUNDS]
#
# REPO (a bare repository; docs/performance.md used git.git, 262,343
# blobs) is copied to WORKDIR first (default a temporary directory).
# Both binaries read the same store: each uses the tables it knows.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "export-warm.sh: $*" >&2; exit 1; }
[[ $# -ge 3 ]] || die "usage: benches/export-warm.sh OLD NEW REPO [WORKDIR] [ROUNDS]"
old=$1 new=$2 src=$3 workdir=${4:-} rounds=${5:-3}
use_workdir export-warm
pinned_git_env
cp "$old" "$workdir/old" && cp "$new" "$workdir/new"
repo=$workdir/repo.git
rm -rf "$repo"
cp -a "$src" "$repo"
rm -rf "$repo/simm"
echo "repository: $src ($(nproc) cores, load $(loadavg))"
run() { # label, binary
  local t
  t=$(now)
  "$workdir/$2" -C "$repo" export --all -o "$workdir/$2.parquet" 2>"$workdir/msg"
  printf '%-26s %7s s  %s  (load %s)\n' "$1" "$(secs_since "$t")" "$(cat "$workdir/msg")" "$(loadavg)"
}
run "old, cold store" old
run "new, on old's store" new
declare -A total=([old]=0 [new]=0)
cpu() { # user+sys seconds of the last run, from /usr/bin/time's file
  awk '{ printf "%.2f", $1 + $2 }' "$workdir/cpu"
}
for ((i = 1; i <= rounds; i++)); do
  for bin in old new; do
    t=$(now)
    /usr/bin/time -f '%U %S' -o "$workdir/cpu" \
      "$workdir/$bin" -C "$repo" export --all -o "$workdir/$bin.parquet" 2>"$workdir/msg"
    s=$(secs_since "$t")
    total[$bin]=$(awk -v a="${total[$bin]}" -v b="$s" 'BEGIN { print a + b }')
    printf '%-4s warm %d: %7s s, %s s CPU  %s  (load %s)\n' "$bin" "$i" "$s" "$(cpu)" \
      "$(cat "$workdir/msg")" "$(loadavg)"
  done
done
ls -l "$workdir"/*.parquet | awk '{ printf "%s %.1f MB\n", $NF, $5 / 1e6 }'
awk -v o="${total[old]}" -v n="${total[new]}" -v r="$rounds" \
  'BEGIN { printf "warm mean: old %.2f s, new %.2f s, new/old %.3f\n", o / r, n / r, n / o }'
