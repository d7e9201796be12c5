#!/usr/bin/env bash
# What signatures add to a cold `fingerprint --all`: two git-simm binaries
# (one that does not sign, one that does) each fingerprint every blob of a
# copy of REPO from an empty store, alternating in one run (every other
# round the signing one first); prints each time, the load, and the ratio
# of the means.
#
#   benches/signature-cost.sh OLD NEW REPO [WORKDIR] [ROUNDS]
#
# OLD `--no-signatures` runs NEW itself with `fingerprint --no-signatures`:
# the same binary with and without signing.
#
# REPO (a bare repository; docs/performance.md used git.git) is copied to
# WORKDIR first (default a temporary directory), since the store is
# written into the copy's git directory. ROUNDS (default 2) runs of each.
# Each run prints the store's tables and bytes by kind; at the end, the
# ratio of the means and the median of the rounds' CPU ratios.
#
# ONE_CORE=1 runs both on one core (`taskset -c 1`, one rayon thread) and
# also compares their CPU time (user + sys): on two cores the wall times
# of a shared machine move by more than signing adds, and idle threads'
# spinning counts as CPU time.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "signature-cost.sh: $*" >&2; exit 1; }
[[ $# -ge 3 ]] || die "usage: benches/signature-cost.sh OLD NEW REPO [WORKDIR] [ROUNDS]"
old=$1 new=$2 src=$3 workdir=${4:-} rounds=${5:-2}
use_workdir signature-cost
# bash's `time` reports user and sys seconds of what it runs.
TIMEFORMAT='%U %S'
pinned_git_env
declare -A extra=([old]="" [new]="")
if [[ $old == --no-signatures ]]; then
  old=$new
  extra[old]=--no-signatures
fi
cp "$old" "$workdir/old" && cp "$new" "$workdir/new"
repo=$workdir/repo.git
rm -rf "$repo"
cp -a "$src" "$repo"
blobs=$(git -C "$repo" cat-file --batch-all-objects --batch-check='%(objecttype)' | grep -c '^blob$')
echo "repository: $src ($blobs blobs, $(nproc) cores, load $(loadavg))"
# Warm the page cache so neither side pays for the disk.
git -C "$repo" cat-file --batch-all-objects --unordered --batch >/dev/null

run=()
if [[ ${ONE_CORE:-} == 1 ]]; then
  command -v taskset >/dev/null || die "ONE_CORE=1 needs taskset (util-linux)"
  run=(env RAYON_NUM_THREADS=1 taskset -c 1)
fi
declare -A total=([old]=0 [new]=0) cpu=([old]=0 [new]=0) round_cpu=()
# CPU seconds of each round, old then new: the ratio within a round pairs
# runs a few seconds apart, which the host's drift moves less than it
# moves the means. Every other round runs new first, so that whatever
# the second run of a pair pays (or saves) falls on both sides alike.
rounds_cpu=()
for ((i = 1; i <= rounds; i++)); do
  order=(old new)
  ((i % 2 == 0)) && order=(new old)
  for bin in "${order[@]}"; do
    rm -rf "$repo/simm"
    t=$(now)
    # The run's own stderr stays on ours (3); `time` writes to the file.
    { time "${run[@]}" "$workdir/$bin" -C "$repo" fingerprint --all --quiet ${extra[$bin]:+"${extra[$bin]}"} 2>&3; } 3>&2 2>"$workdir/cpu"
    s=$(secs_since "$t")
    c=$(awk '{ printf "%.3f", $1 + $2 }' "$workdir/cpu")
    total[$bin]=$(awk -v a="${total[$bin]}" -v b="$s" 'BEGIN { print a + b }')
    cpu[$bin]=$(awk -v a="${cpu[$bin]}" -v b="$c" 'BEGIN { print a + b }')
    round_cpu[$bin]=$c
    # Tables and bytes by kind (fp, hist, sig, keys).
    tables=$(cd "$repo/simm" && for k in $(ls | sed -n 's/^\([a-z]*\)-.*\.table$/\1/p' | sort -u); do
      printf '%s %s tables %s bytes, ' "$k" "$(ls "$k"-*.table | wc -l)" "$(cat "$k"-*.table | wc -c)"
    done)
    printf '%-4s round %d: %7s s, CPU %6s s  (store: %s; load %s)\n' "$bin" "$i" "$s" "$c" "$tables" "$(loadavg)"
  done
  rounds_cpu+=("${round_cpu[old]}" "${round_cpu[new]}")
done
awk -v o="${total[old]}" -v n="${total[new]}" -v r="$rounds" \
  'BEGIN { printf "mean: old %.2f s, new %.2f s, new/old %.3f (+%.1f%%)\n", o / r, n / r, n / o, (n / o - 1) * 100 }'
awk -v o="${cpu[old]}" -v n="${cpu[new]}" -v r="$rounds" \
  'BEGIN { printf "CPU:  old %.2f s, new %.2f s, new/old %.3f (+%.1f%%)\n", o / r, n / r, n / o, (n / o - 1) * 100 }'
printf '%s\n' "${rounds_cpu[@]}" | paste - - |
  awk '{ printf "%.4f\n", ($2 / $1 - 1) * 100 }' | sort -g | awk '
  { r[NR] = $1 }
  END {
    m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "CPU, round by round: median %+.1f%% (%+.1f%% to %+.1f%%)\n", m, r[1], r[NR]
  }'
