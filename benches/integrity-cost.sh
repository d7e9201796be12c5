#!/usr/bin/env bash
# What checking objects as git checks them costs: the same commands run by
# two git-simm binaries, turn about, in one run, on one repository:
#
#   - `fingerprint --all` cold (`--no-cache`: every blob read, loose ones
#     through the checked reader, whole packs decoded with every blob read
#     hashed against its id);
#   - `repack` with `--bases=simm` and `--bases=git` on fresh copies (the
#     new pack's objects rebuilt and hashed before it is installed).
#
# Usage: benches/integrity-cost.sh <repository> <git-simm before> [<git-simm after>] [runs]
# "after" defaults to target/release/git-simm. Prints the median wall time
# of each and the ratio after/before. Timings taken while other work runs
# on the machine are noisy; the ratio of one run is what counts.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: $0 <repository> <git-simm before> [<git-simm after>] [runs]}
before=${2:?usage: $0 <repository> <git-simm before> [<git-simm after>] [runs]}
after=${3:-$here/target/release/git-simm}
runs=${4:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/integrity-cost.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

repo=$work/repo.git
git clone -q --bare --no-local "$src" "$repo"
git -C "$repo" config gc.auto 0
echo "repository: $src ($(git -C "$repo" count-objects -v | sed -n 's/^in-pack: //p') objects packed)"
echo "before: $before"
echo "after:  $after"

# Seconds one command takes.
timed() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    echo "scale=3; ($end - $start) / 1000000000" | bc
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

measure() {
    local label=$1
    shift
    : >"$work/b"
    : >"$work/a"
    for _ in $(seq 1 "$runs"); do
        for which in b a; do
            local bin=$before
            [ "$which" = a ] && bin=$after
            if [ "$1" = repack ]; then
                rm -rf "$work/copy" && cp -a "$repo" "$work/copy"
                (cd "$work/copy" && timed "$bin" "$@") >>"$work/$which"
            else
                (cd "$repo" && timed "$bin" "$@") >>"$work/$which"
            fi
        done
    done
    local b a
    b=$(median <"$work/b")
    a=$(median <"$work/a")
    printf '%-34s %9s %9s %7s\n' "$label" "$b" "$a" "$(echo "scale=3; $a / $b" | bc)"
}

printf '%-34s %9s %9s %7s\n' command "before s" "after s" ratio
measure "fingerprint --all --no-cache" --no-cache fingerprint -q --all
measure "repack --bases=simm --no-cache" repack -q --no-cache --bases=simm
measure "repack --bases=git --no-cache" repack -q --no-cache --bases=git
