#!/usr/bin/env bash
# Two git-simm binaries side by side on the same command, in one run:
# alternating runs (so load drifts hit both alike), median wall times, the
# ratio new/old, and whether their outputs are byte-identical.
#
# Usage:
#   benches/ab.sh [--runs N] [--cold] OLD_BIN NEW_BIN REPO -- ARGS...
#
#   --runs N   runs of each binary (default 5)
#   --cold     pass --no-cache (nothing read from or written to the store)
#
# Example (before/after a refactor, renames on a kept scale fixture):
#   benches/renames-scale.sh --sizes 10000 --keep --workdir /tmp/scale
#   benches/ab.sh /tmp/old/git-simm target/release/git-simm \
#     /tmp/scale/n10000/repo -- renames HEAD~1 HEAD
set -euo pipefail

runs=5 cold=()
while (($#)); do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --cold) cold=(--no-cache); shift ;;
    *) break ;;
  esac
done
(($# >= 4)) || { sed -n '2,16p' "$0" >&2; exit 129; }
old=$1 new=$2 repo=$3
shift 3
[[ $1 == -- ]] && shift
for b in "$old" "$new"; do [[ -x $b ]] || { echo "ab.sh: not an executable: $b" >&2; exit 128; }; done
git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || { echo "ab.sh: not a git repository: $repo" >&2; exit 128; }

# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One timed run of BIN: wall seconds appended to TIMES, output to OUT.
run() {
  local bin=$1 out=$2 times=$3 t0
  t0=$(now)
  "$bin" -C "$repo" "${cold[@]}" "${args[@]}" >"$out" 2>"$out.err" || {
    echo "ab.sh: $bin failed: $(head -c 500 "$out.err")" >&2
    exit 1
  }
  secs_since "$t0" >>"$times"
  echo >>"$times"
}

args=("$@")
# One warm-up run each (page cache; the store filled unless --cold).
run "$old" "$tmp/old.out" /dev/null
run "$new" "$tmp/new.out" /dev/null
for ((i = 0; i < runs; i++)); do
  run "$old" "$tmp/old.out" "$tmp/old.times"
  run "$new" "$tmp/new.out" "$tmp/new.times"
done
median() { grep . "$1" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mo=$(median "$tmp/old.times")
mn=$(median "$tmp/new.times")
same=no
cmp -s "$tmp/old.out" "$tmp/new.out" && same=yes
printf '%-50s old %7.3f s  new %7.3f s  new/old %.3f  same output: %s (%s lines)  load %s\n' \
  "${cold[*]} ${args[*]}" "$mo" "$mn" "$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')" \
  "$same" "$(wc -l <"$tmp/new.out")" "$(loadavg)"
[[ $same == yes ]]
