#!/usr/bin/env bash
# Renames right after a large move is committed: the moved files' new blobs
# are still loose objects. git against git-simm on the same commit, cold and
# warm, alternating, in one run, with the ratios.
#
#   benches/renames-loose.sh --source-repo PATH [--source-repo PATH ...]
#                            [--sizes "1000 10000"]
#                            [--runs R] [--per-path K] [--file-sizes MIN-MAX]
#                            [--even-sizes]
#                            [--workdir DIR] [--git-simm BIN | --no-build]
#                            [--no-git] [--keep]
#
# For each N it builds (deterministically, from the source repositories'
# blobs; benches/make-moves.py picks and edits them) a repository whose
# first commit holds N real text files, packed (`git repack -adq`, as after
# a clone or `git gc`), and whose second commit moves all N to new
# directories under new basenames with a third of them edited. The second
# commit's new objects (the edited blobs and every new tree) are loose, as
# `git add` and `git commit` leave them: they are written with
# `git unpack-objects`, which writes loose objects as `git add` does.
#
# Then, R rounds, alternating within each round:
#
#   1. git diff -M -l0 --no-rename-empty --name-status HEAD~1 HEAD
#      (skipped with --no-git);
#   2. git-simm renames HEAD~1 HEAD, cold: the store (.git/simm) removed
#      before the run, so every blob is read and fingerprinted and the
#      store written, as on a repository's first run;
#   3. git-simm renames HEAD~1 HEAD again, warm: the store that run left;
#   4. git cat-file --batch of the blobs that any exact detection has to
#      read: the sources and destinations not paired by blob id (git's
#      score needs their content), single-threaded, output discarded. A
#      floor for the cold run: reading is all of it that no store saves.
#
# Every output is checked byte for byte against git's (or, with --no-git,
# cold against warm). Prints the median of each, the ratios git/cold and
# git/warm, and the machine load before and after.
#
# Options:
#   --source-repo PATH  repository to take blobs from (required; repeat it
#                       to mix several: their objects are joined in
#                       WORKDIR/sources.git through alternates, every ref
#                       of each under refs/sources/<i>/, so the corpus
#                       draws from all of them, paths in one random order)
#   --sizes "N ..."     numbers of moved files (default "1000 10000")
#   --runs R            rounds of the three timings (default 3)
#   --per-path K        at most K versions of one path in the corpus (20)
#   --file-sizes MIN-MAX  only blobs of MIN to MAX bytes (default 8192-32768)
#   --even-sizes        spread the files' sizes evenly over MIN-MAX (64 bins
#                       of equal width, as far as each lasts) instead of
#                       taking them as the sources hold them, mostly small
#   --workdir DIR       where the test repositories go (default: a new
#                       directory under /tmp, removed unless --keep); an
#                       existing repository there for the same N, source
#                       and options is reused
#   --git-simm BIN      binary to time (default: cargo build --release, then
#                       target/release/git-simm); --no-build: that binary as is
#   --no-git            do not run git (faster; checks cold against warm)
#   --keep              keep the work directory
set -euo pipefail

die() { echo "renames-loose.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit "${1:-0}"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helper=$here/benches/make-moves.py
source_repos=()
sizes="1000 10000"
runs=3
per_path=20
file_sizes=8192-32768
even_sizes=0
workdir=
simm_bin=
build=1
run_git=1
keep=0

while (($#)); do
  case $1 in
    --source-repo) source_repos+=("${2:?--source-repo needs a path}"); shift 2 ;;
    --source-repo=*) source_repos+=("${1#*=}"); shift ;;
    --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
    --sizes=*) sizes=${1#*=}; shift ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --runs=*) runs=${1#*=}; shift ;;
    --per-path) per_path=${2:?--per-path needs a number}; shift 2 ;;
    --per-path=*) per_path=${1#*=}; shift ;;
    --file-sizes) file_sizes=${2:?--file-sizes needs MIN-MAX}; shift 2 ;;
    --file-sizes=*) file_sizes=${1#*=}; shift ;;
    --even-sizes) even_sizes=64; shift ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    --workdir=*) workdir=${1#*=}; shift ;;
    --git-simm) simm_bin=${2:?--git-simm needs a path}; build=0; shift 2 ;;
    --git-simm=*) simm_bin=${1#*=}; build=0; shift ;;
    --no-build) build=0; shift ;;
    --no-git) run_git=0; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "renames-loose.sh: unknown argument: $1" >&2; usage 129 >&2 ;;
  esac
done

is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
((${#source_repos[@]})) || die "--source-repo is required (a repository with many real text files)"
is_num "$runs" && ((runs > 0)) || die "--runs must be a positive number"
is_num "$per_path" && ((per_path > 0)) || die "--per-path must be a positive number"
[[ $file_sizes =~ ^([0-9]+)-([0-9]+)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) ||
  die "--file-sizes must be MIN-MAX in bytes, not '$file_sizes'"
min_size=${BASH_REMATCH[1]} max_size=${BASH_REMATCH[2]}
read -r -a size_list <<<"$sizes"
((${#size_list[@]})) || die "--sizes is empty"
for n in "${size_list[@]}"; do
  is_num "$n" && ((n >= 3)) || die "--sizes: '$n' is not a number of files (at least 3)"
done
mapfile -t size_list < <(printf '%s\n' "${size_list[@]}" | sort -n -u)
command -v git >/dev/null || die "git is not on PATH"
command -v python3 >/dev/null || die "python3 is not on PATH (needed by $helper)"
[[ -x /usr/bin/time ]] || die "needs /usr/bin/time (GNU time) for CPU times"

# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pinned_git_env

src_gits=()
for s in "${source_repos[@]}"; do
  g=$(git -C "$s" rev-parse --absolute-git-dir 2>/dev/null) || die "not a git repository: $s"
  src_gits+=("$g")
done

use_workdir renames-loose
for g in "${src_gits[@]}"; do
  case $workdir/ in
    "$g"/*) die "--workdir must not be inside a source repository" ;;
  esac
done

# Several sources: one repository that sees all their objects (alternates,
# nothing copied) and all their refs, rebuilt when the sources change.
if ((${#src_gits[@]} == 1)); then
  src_git=${src_gits[0]}
  src_heads="$src_git $(git --git-dir="$src_git" rev-parse -q --verify HEAD || echo none)"
else
  src_git=$workdir/sources.git
  src_heads=
  for g in "${src_gits[@]}"; do
    src_heads+="$g $(git --git-dir="$g" rev-parse -q --verify HEAD || echo none) "
  done
  if [[ $(cat "$src_git/sources.key" 2>/dev/null) != "$src_heads" ]]; then
    # Only a directory this script made (it has the key) is replaced.
    if [[ -e $src_git ]]; then
      [[ -f $src_git/sources.key ]] || die "$src_git exists and is not this script's: move it away"
      rm -rf "$src_git"
    fi
    git init -q --bare "$src_git"
    # Marked as this script's at once (a run killed before the end
    # leaves one it may replace), made current by the real key below.
    echo unfinished >"$src_git/sources.key"
    i=0
    for g in "${src_gits[@]}"; do
      git --git-dir="$g" rev-parse --path-format=absolute --git-path objects \
        >>"$src_git/objects/info/alternates"
      git --git-dir="$g" for-each-ref --format="update %(refname) %(objectname)" |
        sed "s|^update refs/|update refs/sources/$i/|" |
        git --git-dir="$src_git" update-ref --stdin
      i=$((i + 1))
    done
    echo "$src_heads" >"$src_git/sources.key"
  fi
fi

use_simm_binary git-simm.bin

echo "git-simm renames over loose objects"
echo "  source:   ${src_gits[*]}"
echo "  binary:   $simm_bin ($("$simm" --version 2>/dev/null || echo '?'))"
echo "  git:      $(git --version)"
echo "  machine:  $(nproc) cores, load $(loadavg)"
echo "  workdir:  $workdir"
echo "  sizes:    ${size_list[*]}; $runs rounds; files $min_size-$max_size bytes$( ((even_sizes)) && echo ", spread evenly"), at most $per_path versions a path"
echo

# The corpus, listed once; every N takes a prefix.
pool=$workdir/pool.txt
pool_key="$src_heads $per_path $min_size $max_size"
((even_sizes)) && pool_key+=" even $even_sizes"
if [[ ! -s $pool || $(cat "$pool.key" 2>/dev/null) != "$pool_key" ]]; then
  {
    git --git-dir="$src_git" rev-list --objects --all --missing=allow-any |
      git --git-dir="$src_git" cat-file --batch-check='%(objectname) %(objecttype) %(objectsize) %(rest)' |
      python3 "$helper" pool --per-path "$per_path" --min-size "$min_size" --max-size "$max_size" \
        --even-sizes "$even_sizes" --need "${size_list[@]}" >"$pool"
  } 2>"$workdir/pool.err" || {
    cat "$workdir/pool.err" >&2
    die "listing the blobs of $src_git failed"
  }
  echo "$pool_key" >"$pool.key"
  sed -n 's/^pool: /corpus: /p' "$workdir/pool.err"
fi

# build N DIR: the repository, base packed, the move's new objects loose.
build_repo() {
  local n=$1 wd=$2 repo=$2/repo st
  rm -rf "$repo"
  git init -q "$repo"
  git -C "$repo" config gc.auto 0
  git -C "$repo" symbolic-ref HEAD refs/heads/main
  set +e
  python3 "$helper" build --source "$src_git" --pool "$pool" --n "$n" --pairs "$wd/pairs.txt" \
    2>"$wd/build.err" | git -C "$repo" fast-import --quiet --done 2>"$wd/fast-import.err"
  st=("${PIPESTATUS[@]}")
  set -e
  if ((st[0] == 3)); then
    sed 's/^make-moves.py: /  /' "$wd/build.err" >&2
    die "corpus too small for N = $n: give a larger --source-repo or --per-path"
  elif ((st[0] != 0 || st[1] != 0)); then
    cat "$wd/build.err" "$wd/fast-import.err" >&2
    die "building the test repository for N = $n failed"
  fi
  local tip base
  tip=$(git -C "$repo" rev-parse HEAD)
  base=$(git -C "$repo" rev-parse HEAD~1)
  # The second commit's own objects, kept aside; then only the first
  # commit's objects are packed, and the second's are written back loose.
  git -C "$repo" rev-list --objects "$tip" "^$base" |
    git -C "$repo" pack-objects -q --stdout >"$wd/move.pack"
  git -C "$repo" update-ref refs/heads/main "$base"
  git -C "$repo" reflog expire --expire=now --all
  git -C "$repo" repack -adq
  git -C "$repo" prune --expire=now
  git -C "$repo" unpack-objects -q <"$wd/move.pack"
  rm -f "$wd/move.pack"
  git -C "$repo" update-ref refs/heads/main "$tip"
  echo "$n $pool_key" >"$wd/key"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { r = a / b; printf (r >= 100 ? "%.0f" : "%.1f"), r }'; }

# timed OUT CMD...: runs CMD, stdout to OUT; appends its wall seconds to
# OUT.times and its CPU seconds (user + system, all threads) to OUT.cpu.
timed() {
  local out=$1 t0
  shift
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$out.rusage" "$@" >"$out" 2>"$out.err" || {
    head -n 20 "$out.err" >&2
    die "failed: $*"
  }
  secs_since "$t0" >>"$out.times"
  echo >>"$out.times"
  awk '{ printf "%.2f\n", $1 + $2 }' "$out.rusage" >>"$out.cpu"
}

# read_ids N DIR: the blobs of DIR/repo's move that no exact detection
# pairs by id (deleted blobs not added again, added blobs not deleted), one
# id a line, into DIR/read.ids; prints their number and bytes.
read_ids() {
  local wd=$2 repo=$2/repo
  git -C "$repo" diff --raw --no-renames --abbrev=40 HEAD~1 HEAD >"$wd/raw.txt"
  awk '$5 == "D" { print $3 }' "$wd/raw.txt" | sort -u >"$wd/old.ids"
  awk '$5 == "A" { print $4 }' "$wd/raw.txt" | sort -u >"$wd/new.ids"
  comm -3 "$wd/old.ids" "$wd/new.ids" | tr -d '\t' >"$wd/read.ids"
  git -C "$repo" cat-file --batch-check='%(objectsize)' <"$wd/read.ids" |
    awk '{ t += $1 } END { printf "%d blobs, %.1f MB", NR, t / 1e6 }'
}

declare -A R_GIT=() R_COLD=() R_WARM=() R_READ=() C_GIT=() C_COLD=() C_WARM=() C_READ=() CHECK=() OBJ=() READ=()
for n in "${size_list[@]}"; do
  wd=$workdir/n$n
  repo=$wd/repo
  mkdir -p "$wd"
  echo "== N = $n   (load $(loadavg))"
  if [[ -d $repo && $(cat "$wd/key" 2>/dev/null) == "$n $pool_key" ]]; then
    echo "  reusing $repo"
  else
    t0=$(now)
    build_repo "$n" "$wd"
    echo "  setup: $(secs_since "$t0") s"
  fi
  loose=$(git -C "$repo" count-objects -v | awk '$1 == "count:" { print $2 }')
  packed=$(git -C "$repo" count-objects -v | awk '$1 == "in-pack:" { print $2 }')
  OBJ[$n]="$loose loose, $packed packed"
  echo "  objects: ${OBJ[$n]}"
  READ[$n]=$(read_ids "$n" "$wd")
  echo "  to read: ${READ[$n]} (not paired by id)"
  rm -f "$wd"/*.times "$wd"/*.cpu
  for ((r = 1; r <= runs; r++)); do
    if ((run_git)); then
      timed "$wd/git.out" git -C "$repo" diff -M -l0 --no-rename-empty --name-status HEAD~1 HEAD
    fi
    rm -rf "$repo/.git/simm"
    timed "$wd/cold.out" "$simm" -C "$repo" renames HEAD~1 HEAD
    timed "$wd/warm.out" "$simm" -C "$repo" renames HEAD~1 HEAD
    timed "$wd/read.out" sh -c 'git -C "$1" cat-file --batch <"$2" >/dev/null' sh "$repo" "$wd/read.ids"
    last() { printf '%s s (cpu %s s)' "$(grep . "$wd/$1.out.times" | tail -n 1)" "$(tail -n 1 "$wd/$1.out.cpu")"; }
    printf '  round %d:%s cold %s, warm %s, read %s   (load %s)\n' "$r" \
      "$( ((run_git)) && printf ' git %s,' "$(last git)")" "$(last cold)" "$(last warm)" "$(last read)" "$(loadavg)"
    # Each round's outputs are checked, not only the last.
    ref=$wd/cold.out
    ((run_git)) && ref=$wd/git.out
    for o in cold warm; do
      cmp -s "$ref" "$wd/$o.out" || {
        diff "$ref" "$wd/$o.out" | head -n 10 >&2
        die "N = $n round $r: $o output differs from $(basename "$ref" .out)"
      }
    done
  done
  CHECK[$n]="identical ($(wc -l <"$wd/cold.out") lines, $(grep -c '^R' "$wd/cold.out") R)"
  if ((run_git)); then
    R_GIT[$n]=$(grep . "$wd/git.out.times" | median)
    C_GIT[$n]=$(median <"$wd/git.out.cpu")
  fi
  R_COLD[$n]=$(grep . "$wd/cold.out.times" | median)
  R_WARM[$n]=$(grep . "$wd/warm.out.times" | median)
  C_COLD[$n]=$(median <"$wd/cold.out.cpu")
  C_WARM[$n]=$(median <"$wd/warm.out.cpu")
  R_READ[$n]=$(grep . "$wd/read.out.times" | median)
  C_READ[$n]=$(median <"$wd/read.out.cpu")
  echo
done

echo "== Results (medians of $runs rounds; $(nproc) cores, load now $(loadavg))"
fmt='%7s %6s %9s %8s %8s %8s %9s %9s %9s  %s\n'
printf "$fmt" N time git_s cold_s warm_s read_s git/cold git/warm git/read "output; objects"
for n in "${size_list[@]}"; do
  g=${R_GIT[$n]:-} cg=${C_GIT[$n]:-}
  printf "$fmt" "$n" wall "${g:--}" "${R_COLD[$n]}" "${R_WARM[$n]}" "${R_READ[$n]}" \
    "$([[ -n $g ]] && div "$g" "${R_COLD[$n]}" || echo -)" \
    "$([[ -n $g ]] && div "$g" "${R_WARM[$n]}" || echo -)" \
    "$([[ -n $g ]] && div "$g" "${R_READ[$n]}" || echo -)" "${CHECK[$n]}; ${OBJ[$n]}"
  printf "$fmt" "" cpu "${cg:--}" "${C_COLD[$n]}" "${C_WARM[$n]}" "${C_READ[$n]}" \
    "$([[ -n $cg ]] && div "$cg" "${C_COLD[$n]}" || echo -)" \
    "$([[ -n $cg ]] && div "$cg" "${C_WARM[$n]}" || echo -)" \
    "$([[ -n $cg ]] && div "$cg" "${C_READ[$n]}" || echo -)" "to read: ${READ[$n]}"
done
echo "  wall: elapsed seconds; cpu: user + system seconds of all threads. On a loaded"
echo "  machine every thread gets a share of a core, so wall ratios there approach the"
echo "  cpu ratios; on an idle one git-simm's second thread counts too."
echo "  read: git cat-file --batch of the blobs not paired by id, on one thread: what a"
echo "  cold run reads before it can score anything (git/read bounds git/cold from above"
echo "  unless a run reads faster than git, or on more than one core)."
echo "  Target: git/cold >= 50 (wall) at N = 10000."
((keep)) && echo "  kept: $workdir"
exit 0
