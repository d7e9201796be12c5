#!/usr/bin/env bash
# `git simm origin` on real vendored copies: does the upstream release the
# vendoring commit names rank first, and how long does it take, beside the
# way it is done by hand with git (every tag's `git ls-tree -r <tag>:<dir>`
# against the copy's blob ids; that needs the upstream directory already
# known, which origin finds itself, and sees tags only).
#
#   benches/origin.sh [--mirrors DIR] [--workdir DIR] [--runs N] [--no-build]
#
# Mirrors (bare clones) are looked up as DIR/<owner>+<name>/repo (default
# /work/.mirror, what the `fetch` tool makes); a case whose mirrors are
# absent is skipped. Upstreams are cloned `--bare --shared` into the
# workdir (default /work/bench/origin, kept), so their fingerprint stores
# live there: the first run fills the store (cold), the others use it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "origin.sh: $*" >&2; exit 2; }

mirrors=/work/.mirror; workdir=/work/bench/origin; runs=3; build=1; simm_bin=
while (($#)); do
  case $1 in
    --mirrors) mirrors=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --git-simm) simm_bin=$2; build=0; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
keep=1 use_workdir origin
use_simm_binary git-simm
pinned_git_env

# vendoring mirror | directory there | upstream mirror | expected release
# (from the vendoring commit's message) | upstream directory
cases=(
  "redis+redis|deps/hiredis|redis+hiredis|v1.2.0|"
  "redis+redis|deps/jemalloc|jemalloc+jemalloc|5.3.0|"
  "libgit2+libgit2|deps/zlib|madler+zlib|v1.3.1|"
  "libgit2+libgit2|deps/xdiff|git+git|v2.40.1|xdiff"
  "vim+vim|src/xdiff|git+git|v2.52.0|xdiff"
)

# The hand method: the tag whose <dir> shares most blob ids with the copy.
by_hand() { # upstream dir local-ids-file
  local t best=0 name=
  for t in $(git -C "$1" tag); do
    local n
    n=$(git -C "$1" ls-tree -r "$t:$2" 2>/dev/null | awk '{ print $3 }' | sort -u | comm -12 - "$3" | wc -l)
    if ((n > best)); then best=$n; name=$t; fi
  done
  echo "$name"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "git-simm origin, $runs runs each (first cold: empty store), $(nproc) cores, load $(loadavg)"
printf '%-34s %-10s %-14s %-7s %9s %9s %10s %6s\n' case expected "ranked first" right cold warm by-hand ratio
for c in "${cases[@]}"; do
  IFS='|' read -r vend dir up expected updir <<<"$c"
  src=$mirrors/$vend/repo; upm=$mirrors/$up/repo
  if [[ ! -d $src || ! -d $upm ]]; then
    echo "$vend $dir: skipped (no mirror of $vend or $up)"; continue
  fi
  clone=$workdir/${up}.git
  [[ -d $clone ]] || git clone -q --bare --shared "$upm" "$clone"
  rm -rf "$clone/simm"
  git -C "$src" ls-tree -r "HEAD:$dir" | awk '{ print $3 }' | sort -u >"$workdir/local-ids"
  times=(); hand=()
  for ((r = 0; r < runs; r++)); do
    s=$(now)
    "$simm" -C "$src" origin --json -n 1 "HEAD:$dir" --in "$clone" >"$workdir/out.json"
    times+=("$(secs_since "$s")")
    s=$(now)
    hand_tag=$(by_hand "$clone" "$updir" "$workdir/local-ids")
    hand+=("$(secs_since "$s")")
  done
  read -r first same < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["matches"][0]
name = (m["tag"] or m["commit"][:12]) + ":" + m["path"]
print(name, ",".join(m["tags"]) or "-")' "$workdir/out.json")
  right=no
  [[ ,$same, == *",$expected,"* || ${first%%:*} == "$expected" ]] && right=yes
  warm=$(printf '%s\n' "${times[@]:1}" | median)
  handm=$(printf '%s\n' "${hand[@]}" | median)
  printf '%-34s %-10s %-14s %-7s %8ss %8ss %9ss %5.1fx   (by hand: %s)\n' "$vend:$dir" "$expected" "$first" "$right" \
    "${times[0]}" "$warm" "$handm" "$(awk -v a="$handm" -v b="$warm" 'BEGIN { print a / b }')" "$hand_tag"
done
echo "load after: $(loadavg)"
