#!/usr/bin/env bash
# `git simm origin` on real vendored copies, whole directories and subsets:
# does the upstream release the vendoring commit names rank first (and if
# not, where), and how long does it take, beside the
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

# vendoring mirror | revision there | directory | upstream mirror |
# expected release (from the vendoring commit's message) | upstream
# directory (for the hand method). The first five are whole directories
# copied and patched; the others are subsets (a library's sources without
# its tests, build files, other platforms), from repositories and commits
# named in their messages:
#   Kitware/CMake 3db63973b3 "zstd: Update script to get zstd 1.5.5"
#   Kitware/CMake b08cb30f2e "expat: Update script to get Expat 2.7.3"
#   raysan5/raylib 4f4b3aef4 "Use unmodified GLFW" (after "Update GLFW to 3.5.1")
#   libsdl-org/SDL 3b7b8f3c09 "Updated hidapi to 0.14.0 release"
#   ccache/ccache bd2147f3 "bump: Upgrade to BLAKE3 1.8.2" (the directory
#     and its parent), 48040ef0 "bump: Upgrade to fmt 12.0.0"
cases=(
  "redis+redis|HEAD|deps/hiredis|redis+hiredis|v1.2.0|"
  "redis+redis|HEAD|deps/jemalloc|jemalloc+jemalloc|5.3.0|"
  "libgit2+libgit2|HEAD|deps/zlib|madler+zlib|v1.3.1|"
  "libgit2+libgit2|HEAD|deps/xdiff|git+git|v2.40.1|xdiff"
  "vim+vim|HEAD|src/xdiff|git+git|v2.52.0|xdiff"
  "Kitware+CMake|3db63973b3|Utilities/cmzstd|facebook+zstd|v1.5.5|"
  "Kitware+CMake|b08cb30f2e|Utilities/cmexpat|libexpat+libexpat|R_2_7_3|expat"
  "raysan5+raylib|4f4b3aef4|src/external/glfw|glfw+glfw|3.5.1|"
  "libsdl-org+SDL|3b7b8f3c09|src/hidapi|libusb+hidapi|hidapi-0.14.0|"
  "ccache+ccache|bd2147f3|src/third_party/blake3/blake3|BLAKE3-team+BLAKE3|1.8.2|c"
  "ccache+ccache|bd2147f3|src/third_party/blake3|BLAKE3-team+BLAKE3|1.8.2|c"
  "ccache+ccache|48040ef0|src/third_party/fmt/fmt|fmtlib+fmt|12.0.0|include/fmt"
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
printf '%-48s %-14s %-22s %-5s %8s %8s %8s %9s %6s\n' case expected "ranked first" rank exact cold warm by-hand ratio
for c in "${cases[@]}"; do
  IFS='|' read -r vend rev dir up expected updir <<<"$c"
  src=$mirrors/$vend/repo; upm=$mirrors/$up/repo
  if [[ ! -d $src || ! -d $upm ]]; then
    echo "$vend $dir: skipped (no mirror of $vend or $up)"; continue
  fi
  clone=$workdir/${up}.git
  [[ -d $clone ]] || git clone -q --bare --shared "$upm" "$clone" </dev/null
  rm -rf "$clone/simm"
  git -C "$src" ls-tree -r "$rev:$dir" | awk '{ print $3 }' | sort -u >"$workdir/local-ids"
  times=(); hand=()
  for ((r = 0; r < runs; r++)); do
    s=$(now)
    # -n 16 costs what -n 1 does (16 states are compared either way) and
    # shows where the expected release ranks when it is not first.
    "$simm" -C "$src" origin --json -n 16 "$rev:$dir" --in "$clone" >"$workdir/out.json" </dev/null
    times+=("$(secs_since "$s")")
    s=$(now)
    hand_tag=$(by_hand "$clone" "$updir" "$workdir/local-ids")
    hand+=("$(secs_since "$s")")
  done
  read -r first rank exact < <(python3 -c '
import json, sys
ms = json.load(open(sys.argv[1]))["matches"]
m = ms[0]
name = (m["tag"] or m["commit"][:12]) + ":" + m["path"]
rank = next((i + 1 for i, x in enumerate(ms) if x["tag"] == sys.argv[2] or sys.argv[2] in x["tags"]), ">16")
print(name, rank, "yes" if m.get("exact") else "no")' "$workdir/out.json" "$expected")
  warm=$(printf '%s\n' "${times[@]:1}" | median)
  handm=$(printf '%s\n' "${hand[@]}" | median)
  printf '%-48s %-14s %-22s %-5s %-5s %7ss %7ss %8ss %5.1fx   (by hand: %s)\n' "$vend@$rev:$dir" "$expected" "$first" "$rank" "$exact" \
    "${times[0]}" "$warm" "$handm" "$(awk -v a="$handm" -v b="$warm" 'BEGIN { print a / b }')" "$hand_tag"
done
echo "load after: $(loadavg)"
