#!/usr/bin/env bash
# Two git-simm binaries side by side on the same command, in one run:
# alternating runs (so load drifts hit both alike; every other round the
# new binary goes first), median wall and CPU times, the ratio new/old,
# and whether their outputs are byte-identical.
#
# Usage:
#   benches/ab.sh [--runs N] [--cold | --empty-store] [--gap SECS]
#                 OLD_BIN NEW_BIN REPO -- ARGS...
#
#   --runs N       runs of each binary (default 5)
#   --cold         pass --no-cache (nothing read from or written to the store)
#   --empty-store  remove the repository's store (GIT_DIR/simm) before each
#                  run: a first run, which reads every blob it needs and
#                  writes the store
#   --gap SECS     sleep this long before each timed run (default 0). A
#                  run right after another finds the memory that one freed
#                  still at hand; a user's run, seconds after other work,
#                  does not (on a virtual machine whose host takes freed
#                  memory back, a first touch then costs several times
#                  more). A few seconds measure the user's case.
#
# Example (before/after a refactor, renames on a kept scale fixture):
#   benches/renames-scale.sh --sizes 10000 --keep --workdir /tmp/scale
#   benches/ab.sh /tmp/old/git-simm target/release/git-simm \
#     /tmp/scale/n10000/repo -- renames HEAD~1 HEAD
set -euo pipefail

runs=5 cold=() empty=0 gap=0
while (($#)); do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --cold) cold=(--no-cache); shift ;;
    --empty-store) empty=1; shift ;;
    --gap) gap=${2:?--gap needs seconds}; shift 2 ;;
    *) break ;;
  esac
done
(($# >= 4)) || { sed -n '2,26p' "$0" >&2; exit 129; }
old=$1 new=$2 repo=$3
shift 3
[[ $1 == -- ]] && shift
for b in "$old" "$new"; do [[ -x $b ]] || { echo "ab.sh: not an executable: $b" >&2; exit 128; }; done
git_dir=$(git -C "$repo" rev-parse --absolute-git-dir 2>/dev/null) ||
  { echo "ab.sh: not a git repository: $repo" >&2; exit 128; }
[[ $gap =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "ab.sh: --gap takes seconds, not '$gap'" >&2; exit 129; }
[[ -x /usr/bin/time ]] || { echo "ab.sh: needs /usr/bin/time (GNU time) for CPU times" >&2; exit 128; }

# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One timed run of BIN: wall seconds appended to TIMES, user and system
# seconds to TIMES.cpu, output to OUT.
run() {
  local bin=$1 out=$2 times=$3 t0
  if ((empty)); then
    # The store is git-simm's own directory, which it recreates.
    rm -rf "$git_dir/simm"
  fi
  sleep "$gap"
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$out.cpu" "$bin" -C "$repo" "${cold[@]}" "${args[@]}" >"$out" 2>"$out.err" || {
    echo "ab.sh: $bin failed: $(head -c 500 "$out.err")" >&2
    exit 1
  }
  secs_since "$t0" >>"$times"
  echo >>"$times"
  cat "$out.cpu" >>"$times.cpu"
}

args=("$@")
# One warm-up run each (page cache; the store filled unless --cold).
run "$old" "$tmp/old.out" /dev/null
run "$new" "$tmp/new.out" /dev/null
for ((i = 0; i < runs; i++)); do
  if ((i % 2 == 0)); then
    run "$old" "$tmp/old.out" "$tmp/old.times"
    run "$new" "$tmp/new.out" "$tmp/new.times"
  else
    run "$new" "$tmp/new.out" "$tmp/new.times"
    run "$old" "$tmp/old.out" "$tmp/old.times"
  fi
done
median() { grep . "$1" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# Median user and system seconds, "USER SYS".
cpu() {
  local u s
  u=$(awk '{print $1}' "$1.cpu" >"$tmp/u" && median "$tmp/u")
  s=$(awk '{print $2}' "$1.cpu" >"$tmp/s" && median "$tmp/s")
  echo "$u $s"
}
mo=$(median "$tmp/old.times")
mn=$(median "$tmp/new.times")
read -r ou os <<<"$(cpu "$tmp/old.times")"
read -r nu ns <<<"$(cpu "$tmp/new.times")"
same=no
cmp -s "$tmp/old.out" "$tmp/new.out" && same=yes
label="${cold[*]}${cold[*]:+ }${args[*]}"
((empty)) && label="(store emptied) $label"
printf '%-50s old %7.3f s  new %7.3f s  new/old %.3f  same output: %s (%s lines)  load %s\n' \
  "$label" "$mo" "$mn" "$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')" \
  "$same" "$(wc -l <"$tmp/new.out")" "$(loadavg)"
printf '%-50s old user %.2f s sys %.2f s  new user %.2f s sys %.2f s  (medians of %d; %s s apart)\n' \
  "" "$ou" "$os" "$nu" "$ns" "$runs" "$gap"
[[ $same == yes ]]
