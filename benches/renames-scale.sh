#!/usr/bin/env bash
# Rename detection at scale: git against git-simm on the same commit, in one
# run, with the ratio and the growth curve.
#
#   benches/renames-scale.sh [--source-repo PATH] [--sizes "1000 10000 100000"]
#                            [--git-max N] [--workdir DIR] [--per-path K]
#                            [--file-sizes MIN-MAX]
#                            [--timeout SECS] [--git-simm BIN | --no-build] [--keep]
#
# For each N it builds a fresh repository whose second commit moves N real
# files to new directories under new basenames (git's basename shortcut does
# not apply) and edits a third of them, then times:
#
#   1. git diff -M -l0 --no-rename-empty --name-status HEAD~1 HEAD
#      (only if N <= --git-max, default 10000: its cost grows as N^2);
#   2. git-simm renames --no-cache HEAD~1 HEAD (cold: nothing stored);
#   3. git-simm fingerprint --all -q (filling the store), then
#      git-simm renames HEAD~1 HEAD (warm), timed separately;
#
# checks git-simm's output against git's byte for byte (or, where git was
# skipped, that every moved file is found as R from its old to its new path),
# and prints a table: times, ratios and the exponent of growth between
# successive N.
#
# Content: real text blobs (no NUL byte) of 1 to 64 KiB (--file-sizes) from
# the source repository, read with `git cat-file` (nothing is written there), at most K
# versions a path (--per-path, default 20), spread out over its history, so
# the corpus is not a pile of near-duplicates. The default source is the
# clone this script lives in, far too small beyond a few hundred files: give
# a large repository, e.g. a clone of git.git (`--source-repo ~/src/git`;
# at K = 20 it has about 50,000 such blobs, so N = 100,000 needs
# --per-path 100, which the script says when it stops for that N).
#
# Options:
#   --source-repo PATH  repository to take blobs from (default: this clone)
#   --sizes "N ..."     numbers of moved files (default "1000 10000 100000")
#   --git-max N         largest N git itself is run for (default 10000)
#   --workdir DIR       where the test repositories go (default: a new
#                       directory under /tmp, removed at the end unless --keep)
#   --per-path K        at most K versions of one path in the corpus (20)
#   --file-sizes MIN-MAX  only blobs of MIN to MAX bytes (default 1024-65536).
#                       git's cost depends on it: its size filter skips a
#                       pair whose sizes differ more than twice, so a narrow
#                       band (say 8192-32768) leaves it more pairs to score
#                       and larger files to score them on; git-simm's cost
#                       barely changes.
#   --timeout SECS      stop any one timed command after SECS seconds and
#                       report ">SECS" (default 0: no limit)
#   --git-simm BIN      binary to time (default: cargo build --release, then
#                       target/release/git-simm); --no-build: use that binary
#                       as it is
#   --keep              keep the temporary work directory
#
# Setup for N = 100,000 (reading the blobs, git fast-import, git repack -adq)
# takes a couple of minutes; git's own diff is skipped there and its time
# estimated from the largest N it ran for, as t * (N/N0)^2.
set -euo pipefail

die() { echo "renames-scale.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit "${1:-0}"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helper=$here/benches/make-moves.py
source_repo=$here
sizes="1000 10000 100000"
git_max=10000
workdir=
per_path=20
file_sizes=1024-65536
simm_bin=
build=1
keep=0
timeout_s=0

while (($#)); do
  case $1 in
    --source-repo) source_repo=${2:?--source-repo needs a path}; shift 2 ;;
    --source-repo=*) source_repo=${1#*=}; shift ;;
    --sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
    --sizes=*) sizes=${1#*=}; shift ;;
    --git-max) git_max=${2:?--git-max needs a number}; shift 2 ;;
    --git-max=*) git_max=${1#*=}; shift ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    --workdir=*) workdir=${1#*=}; shift ;;
    --per-path) per_path=${2:?--per-path needs a number}; shift 2 ;;
    --per-path=*) per_path=${1#*=}; shift ;;
    --file-sizes) file_sizes=${2:?--file-sizes needs MIN-MAX}; shift 2 ;;
    --file-sizes=*) file_sizes=${1#*=}; shift ;;
    --git-simm) simm_bin=${2:?--git-simm needs a path}; build=0; shift 2 ;;
    --git-simm=*) simm_bin=${1#*=}; build=0; shift ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --no-build) build=0; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "renames-scale.sh: unknown argument: $1" >&2; usage 129 >&2 ;;
  esac
done

is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
is_num "$git_max" || die "--git-max must be a number, not '$git_max'"
is_num "$per_path" && ((per_path > 0)) || die "--per-path must be a positive number"
[[ $file_sizes =~ ^([0-9]+)-([0-9]+)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) ||
  die "--file-sizes must be MIN-MAX in bytes, not '$file_sizes'"
min_size=${BASH_REMATCH[1]} max_size=${BASH_REMATCH[2]}
is_num "$timeout_s" || die "--timeout must be a number of seconds, not '$timeout_s'"
((timeout_s == 0)) || command -v timeout >/dev/null || die "--timeout needs timeout(1) (coreutils)"
read -r -a size_list <<<"$sizes"
((${#size_list[@]})) || die "--sizes is empty"
for n in "${size_list[@]}"; do
  is_num "$n" && ((n >= 3)) || die "--sizes: '$n' is not a number of files (at least 3)"
done
mapfile -t size_list < <(printf '%s\n' "${size_list[@]}" | sort -n -u)

command -v git >/dev/null || die "git is not on PATH"
command -v python3 >/dev/null || die "python3 is not on PATH (needed by $helper)"
[[ -f $helper ]] || die "missing $helper"


# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pinned_git_env

src_git=$(git -C "$source_repo" rev-parse --absolute-git-dir 2>/dev/null) ||
  die "not a git repository: $source_repo"

use_workdir renames-scale
case $workdir/ in
  "$src_git"/*) die "--workdir must not be inside the source repository" ;;
esac

use_simm_binary git-simm

div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) { print "-"; exit } r = a / b; printf (r >= 100 ? "%.0f" : r >= 1 ? "%.1f" : "%.2f"), r }'; }

# timed LABEL OUT ERR CMD...: runs CMD once, stdout to OUT, stderr to ERR;
# sets $elapsed (seconds) and $rss (max resident MB, if /usr/bin/time is
# there), and $timed_out to 1 if --timeout stopped it (then $elapsed is
# the limit, a lower bound). A failure prints the command's stderr and
# stops the script.
timed() {
  local label=$1 out=$2 err=$3 t0 st=0 tf
  shift 3
  tf=$out.time
  timed_out=0
  ((timeout_s == 0)) || set -- timeout --kill-after=10 "$timeout_s" "$@"
  t0=$(now)
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%M' -o "$tf" "$@" >"$out" 2>"$err" || st=$?
  else
    "$@" >"$out" 2>"$err" || st=$?
  fi
  elapsed=$(secs_since "$t0")
  rss=$(tail -n 1 "$tf" 2>/dev/null | awk '/^[0-9]+$/ { printf "%d MB", $1 / 1024 }')
  if ((timeout_s > 0 && (st == 124 || st == 137))); then
    timed_out=1
    elapsed=$timeout_s
    printf '  %-52s TIMEOUT (stopped after %s s)\n' "$label" "$timeout_s"
    return 0
  fi
  if ((st != 0)); then
    printf '  %-52s FAILED (exit %d after %s s)\n' "$label" "$st" "$elapsed"
    head -n 20 "$err" | sed 's/^/    | /'
    die "$label failed: $*"
  fi
  printf '  %-52s %9s s%s\n' "$label" "$elapsed" "${rss:+   (max RSS $rss)}"
}

echo "git-simm renames at scale"
echo "  source:   $src_git"
echo "  binary:   $simm_bin ($("$simm" --version 2>/dev/null || echo '?'))"
if [[ $simm_bin == "$here/target/release/git-simm" ]] && git -C "$here" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  echo "  crate:    $(git -C "$here" rev-parse --short HEAD)," \
    "$(git -C "$here" --no-optional-locks status --porcelain --untracked-files=no | wc -l) files with uncommitted changes"
fi
echo "  git:      $(git --version)"
echo "  machine:  $(nproc) cores, load $(loadavg)"
echo "  workdir:  $workdir"
echo "  sizes:    ${size_list[*]} (git run for N <= $git_max)"
echo "  files:    $min_size-$max_size bytes, at most $per_path versions a path"
echo

# 1. The corpus: candidate blobs of the source repository, in the order
#    make-moves.py uses them. Listed once; every N takes a prefix.
t0=$(now)
pool=$workdir/pool.txt
{
  git --git-dir="$src_git" rev-list --objects --all --missing=allow-any |
    git --git-dir="$src_git" cat-file --batch-check='%(objectname) %(objecttype) %(objectsize) %(rest)' |
    python3 "$helper" pool --per-path "$per_path" --min-size "$min_size" --max-size "$max_size" --need "${size_list[@]}" >"$pool"
} 2>"$workdir/pool.err" || {
  cat "$workdir/pool.err" >&2
  die "listing the blobs of $src_git failed"
}
pool_size=$(wc -l <"$pool")
sed -n 's/^pool: /corpus: /p' "$workdir/pool.err"
echo "corpus listed in $(secs_since "$t0") s"
echo

# R pairs: "old<TAB>new" of every R line of a name-status output.
rpairs() { awk -F'\t' '$1 ~ /^R/ { print $2 "\t" $3 }' "$1" | sort; }

declare -A T_SETUP=() T_GIT=() T_COLD=() T_FP=() T_WARM=() CHECK=() GIT_EST=() TO=()
ran=()
last_git_n=
last_git_t=

for n in "${size_list[@]}"; do
  echo "== N = $n   (load $(loadavg))"
  if ((pool_size < n)); then
    need=$(sed -n "s/^need: N=$n per-path=//p" "$workdir/pool.err")
    echo "  corpus too small: $pool_size suitable blobs ($min_size-$max_size bytes, at most $per_path versions a path) for N = $n."
    if [[ -n $need && $need != none* ]]; then
      echo "  Give a larger --source-repo, or --per-path $need (more versions of one path, closer to each other)."
    else
      echo "  Give a larger --source-repo (e.g. a clone of git.git: --source-repo ~/src/git)."
    fi
    echo "  Stopping for N = $n."
    CHECK[$n]="corpus too small"
    echo
    continue
  fi

  wd=$workdir/n$n
  repo=$wd/repo
  rm -rf "$wd"
  mkdir -p "$wd"

  # 2. The repository: commit 1 with the files under old/, commit 2 with
  #    all of them moved (and a third edited), via git fast-import.
  t0=$(now)
  git init -q "$repo"
  git -C "$repo" config gc.auto 0
  git -C "$repo" symbolic-ref HEAD refs/heads/main
  set +e
  python3 "$helper" build --source "$src_git" --pool "$pool" --n "$n" --pairs "$wd/pairs.txt" \
    2>"$wd/build.err" | git -C "$repo" fast-import --quiet --done 2>"$wd/fast-import.err"
  st=("${PIPESTATUS[@]}")
  set -e
  if ((st[0] == 3)); then
    sed 's/^make-moves.py: /  /' "$wd/build.err"
    echo "  corpus too small for N = $n (see above); give a larger --source-repo. Stopping for N = $n."
    CHECK[$n]="corpus too small"
    echo
    continue
  elif ((st[0] != 0 || st[1] != 0)); then
    cat "$wd/build.err" "$wd/fast-import.err" >&2
    die "building the test repository for N = $n failed"
  fi
  t_import=$(secs_since "$t0")
  t1=$(now)
  git -C "$repo" repack -adq || die "git repack -adq failed in $repo"
  t_repack=$(secs_since "$t1")
  T_SETUP[$n]=$(secs_since "$t0")
  sed -n 's/^corpus: /  corpus: /p' "$wd/build.err"
  echo "  setup: ${T_SETUP[$n]} s (blobs + fast-import $t_import s, repack -adq $t_repack s;" \
    "pack $(du -sh "$repo/.git/objects/pack" | cut -f1))"

  # 3. Timings, each run once.
  if ((n <= git_max)); then
    timed "git diff -M -l0 --no-rename-empty --name-status" "$wd/git.out" "$wd/git.err" \
      git -C "$repo" diff -M -l0 --no-rename-empty --name-status HEAD~1 HEAD
    T_GIT[$n]=$elapsed
    TO[git$n]=$timed_out
    if ((!timed_out)); then
      last_git_n=$n
      last_git_t=$elapsed
    fi
  elif [[ -n $last_git_n ]]; then
    GIT_EST[$n]=$(awk -v t="$last_git_t" -v a="$last_git_n" -v b="$n" 'BEGIN { printf "%.0f", t * (b / a) ^ 2 }')
    printf '  %-52s skipped (est. %ss from N^2 scaling of N=%s)\n' \
      "git diff -M -l0 --no-rename-empty --name-status" "${GIT_EST[$n]}" "$last_git_n"
  else
    printf '  %-52s skipped (N > --git-max %s; no smaller N timed to estimate from)\n' \
      "git diff -M -l0 --no-rename-empty --name-status" "$git_max"
  fi
  timed "git-simm renames --no-cache (cold)" "$wd/cold.out" "$wd/cold.err" \
    "$simm" -C "$repo" renames --no-cache HEAD~1 HEAD
  T_COLD[$n]=$elapsed
  TO[cold$n]=$timed_out
  timed "git-simm fingerprint --all -q (fill the store)" "$wd/fp.out" "$wd/fp.err" \
    "$simm" -C "$repo" fingerprint --all -q
  T_FP[$n]=$elapsed
  TO[fp$n]=$timed_out
  timed "git-simm renames (warm store)" "$wd/warm.out" "$wd/warm.err" \
    "$simm" -C "$repo" renames HEAD~1 HEAD
  T_WARM[$n]=$elapsed
  TO[warm$n]=$timed_out
  ran+=("$n")

  # 4. Checks (of complete outputs only).
  if ((TO[cold$n])); then
    echo "  no check: git-simm renames --no-cache timed out"
    CHECK[$n]="timed out"
    echo "  load after: $(loadavg)"
    echo
    continue
  fi
  if ((TO[warm$n])); then
    echo "  warm output equals cold output: ? (warm run timed out)"
  elif cmp -s "$wd/cold.out" "$wd/warm.out"; then
    echo "  warm output equals cold output: yes"
  else
    echo "  warm output equals cold output: NO ($(diff "$wd/cold.out" "$wd/warm.out" | grep -c '^[<>]') lines differ)"
  fi
  if [[ -n ${T_GIT[$n]:-} ]] && ((!TO[git$n])); then
    if cmp -s "$wd/git.out" "$wd/cold.out"; then
      echo "  same output as git: yes ($(wc -l <"$wd/git.out") lines)"
      CHECK[$n]="same as git"
    else
      ndiff=$(diff "$wd/git.out" "$wd/cold.out" | grep -c '^[<>]' || true)
      rpairs "$wd/git.out" >"$wd/git.pairs"
      rpairs "$wd/cold.out" >"$wd/cold.pairs"
      common=$(comm -12 "$wd/git.pairs" "$wd/cold.pairs" | wc -l)
      ng=$(wc -l <"$wd/git.pairs")
      ns=$(wc -l <"$wd/cold.pairs")
      prec=$(awk -v c="$common" -v d="$ns" 'BEGIN { printf "%.4f", d ? c / d : 0 }')
      rec=$(awk -v c="$common" -v d="$ng" 'BEGIN { printf "%.4f", d ? c / d : 0 }')
      echo "  same output as git: NO: $ndiff lines differ (git $(wc -l <"$wd/git.out") lines, git-simm $(wc -l <"$wd/cold.out"))"
      echo "  R pairs: git $ng, git-simm $ns, common $common; precision $prec, recall $rec"
      echo "  first differences (diff git git-simm):"
      diff "$wd/git.out" "$wd/cold.out" | grep '^[<>]' | head -n 12 | sed 's/^/    /' || true
      CHECK[$n]="DIFFERS ($ndiff lines, P $prec R $rec)"
    fi
  else
    cut -f1,2 "$wd/pairs.txt" | sort >"$wd/expected.pairs"
    rpairs "$wd/cold.out" >"$wd/cold.pairs"
    found=$(comm -12 "$wd/expected.pairs" "$wd/cold.pairs" | wc -l)
    found_edited=$(awk -F'\t' '$3 == 1 { print $1 "\t" $2 }' "$wd/pairs.txt" | sort |
      comm -12 - "$wd/cold.pairs" | wc -l)
    n_edited=$(awk -F'\t' '$3 == 1' "$wd/pairs.txt" | wc -l)
    ns=$(wc -l <"$wd/cold.pairs")
    rec=$(awk -v c="$found" -v d="$n" 'BEGIN { printf "%.4f", c / d }')
    prec=$(awk -v c="$found" -v d="$ns" 'BEGIN { printf "%.4f", d ? c / d : 0 }')
    echo "  expected pairs found: $found of $n (recall $rec; edited $found_edited of $n_edited," \
      "pure moves $((found - found_edited)) of $((n - n_edited))); R lines $ns, precision $prec"
    other=$(awk -F'\t' '$1 !~ /^R/' "$wd/cold.out" | cut -c1 | sort | uniq -c | awk '{ printf "%s %s  ", $2, $1 }')
    echo "  other lines: ${other:-none}"
    if ((found < n)); then
      comm -23 "$wd/expected.pairs" "$wd/cold.pairs" >"$wd/missed.pairs"
      # A missed destination either went to another source (a near-identical
      # version of the same file, say) or stayed unpaired (A).
      awk -F'\t' 'NR == FNR { if ($1 ~ /^R/) src[$3] = $2; next }
        { if ($2 in src) other++; else alone++ }
        END { printf "  missed pairs: %d; their destination paired with another source: %d, left unpaired: %d\n", other + alone, other, alone }' \
        "$wd/cold.out" "$wd/missed.pairs"
      echo "  first expected pairs not found (old -> new: what git-simm printed for them):"
      head -n 5 "$wd/missed.pairs" | while IFS=$'\t' read -r o w; do
        echo "    $o -> $w:  $(awk -F'\t' -v o="$o" -v w="$w" '$2 == o || $3 == w || $2 == w { printf "[%s] ", $0 }' "$wd/cold.out")"
      done
    fi
    CHECK[$n]="recall $rec"
  fi
  # Scores of the edited pairs, as printed (R100 = untouched move).
  awk -F'\t' '$1 ~ /^R/ && $1 != "R100" { print substr($1, 2) + 0 }' "$wd/cold.out" | sort -n |
    awk '{ s[NR] = $1 } END { if (NR) printf "  edited pairs: %d with score < 100: min %d, median %d, under 60: %d\n", NR, s[1], s[int((NR + 1) / 2)], lo } $1 < 60 { lo++ }'
  echo "  load after: $(loadavg)"
  echo
done

# 5. The table and the curve.
exp_col() {
  awk -v n1="$1" -v t1="$2" -v n2="$3" -v t2="$4" \
    'BEGIN { if (t1 > 0 && t2 > 0 && n2 != n1) printf "%.2f", log(t2 / t1) / log(n2 / n1); else print "-" }'
}
# bound NUMERATOR_TIMED_OUT DENOMINATOR_TIMED_OUT: the prefix of a ratio of
# a lower bound (a timed-out time) and a measured one.
bound() {
  if (($1 && $2)); then echo "?"; elif (($1)); then echo ">"; elif (($2)); then echo "<"; fi
}
gt() { ((${TO[$1]:-0})) && echo ">"; true; }
echo "== Results ($(nproc) cores, load now $(loadavg))"
fmt='%8s %8s %10s %9s %9s %9s %9s %9s %7s %7s %7s  %s\n'
printf "$fmt" N setup_s git_s cold_s fp_all_s warm_s git/cold git/warm exp_git exp_cld exp_wrm check
prev=
for n in "${size_list[@]}"; do
  if [[ -z ${T_COLD[$n]:-} ]]; then
    printf "$fmt" "$n" - - - - - - - - - - "${CHECK[$n]:-}"
    continue
  fi
  g=${T_GIT[$n]:-}
  gto=${TO[git$n]:-0} cto=${TO[cold$n]:-0} wto=${TO[warm$n]:-0}
  if [[ -n $g ]]; then
    gcol=$(gt "git$n")$g
    rc=$(bound "$gto" "$cto")$(div "$g" "${T_COLD[$n]}")
    rw=$(bound "$gto" "$wto")$(div "$g" "${T_WARM[$n]}")
  elif [[ -n ${GIT_EST[$n]:-} ]]; then
    gcol="~${GIT_EST[$n]}*"
    rc="~$(bound 0 "$cto")$(div "${GIT_EST[$n]}" "${T_COLD[$n]}")*"
    rw="~$(bound 0 "$wto")$(div "${GIT_EST[$n]}" "${T_WARM[$n]}")*"
  else
    gcol=- rc=- rw=-
  fi
  eg=- ec=- ew=-
  if [[ -n $prev ]]; then
    [[ -n $g && -n ${T_GIT[$prev]:-} ]] &&
      eg=$(bound "$gto" "${TO[git$prev]:-0}")$(exp_col "$prev" "${T_GIT[$prev]}" "$n" "$g")
    ec=$(bound "$cto" "${TO[cold$prev]:-0}")$(exp_col "$prev" "${T_COLD[$prev]}" "$n" "${T_COLD[$n]}")
    ew=$(bound "$wto" "${TO[warm$prev]:-0}")$(exp_col "$prev" "${T_WARM[$prev]}" "$n" "${T_WARM[$n]}")
  fi
  printf "$fmt" "$n" "${T_SETUP[$n]}" "$gcol" "$(gt "cold$n")${T_COLD[$n]}" "$(gt "fp$n")${T_FP[$n]}" \
    "$(gt "warm$n")${T_WARM[$n]}" "$rc" "$rw" "$eg" "$ec" "$ew" "${CHECK[$n]}"
  prev=$n
done
((${#GIT_EST[@]} == 0)) || echo "  * git not run (N > --git-max): estimated as t_git(N0) * (N/N0)^2."
[[ " ${TO[*]} " != *" 1 "* ]] ||
  echo "  >T: stopped by --timeout $timeout_s; ratios and exponents with > or < are bounds."
echo "  exp_*: growth exponent log(t2/t1)/log(N2/N1) from the previous N (2 = quadratic)."
echo "  Targets (issue): git/cold >= 50 at N = 10000; cold < 10 s at N = 100000 on 2 cores; exponent clearly < 2."
((keep)) && echo "  kept: $workdir"
exit 0
