#!/usr/bin/env bash
# Pack size and time: `git-simm repack` against git's own `git repack -adf`
# (and its stronger variants) on copies of real repositories, in one run,
# with the ratios and the targets.
#
#   benches/repack-compare.sh [--git-new PATH] [--window-250] [--reads] [--threads T]
#                             [--simm-args "ARGS"] [--workdir DIR] [--keep]
#                             REPO...
#
# Why: git sorts objects for its delta search by type, a hash of the last
# characters of the path, and size (see shared/REFERENCE.md section 3), so
# it only ever tries bases that happen to sit within `window` (10) objects.
# git-simm repack orders blobs by content similarity instead and hands that
# order to `git pack-objects`. Success is a smaller pack at about git's cost;
# this script says whether that holds on real histories.
#
# Each REPO (a bare or non-bare repository) is only read: it is copied once
# with `git clone --mirror --no-local` (all its refs, reachable objects only,
# no reflogs, no config) into a temporary directory, and every row below
# repacks its own fresh `cp -a` of that copy, one after the other:
#
#   a. git repack -adf                     (window 10, depth 50; the copies
#                                           have repack.writeBitmaps=false)
#   b. git repack -adf --window=250        (--window-250; slow: ~5-10x a.)
#   c. GIT_NEW repack -adf --path-walk     (--git-new PATH: a git >= 2.51)
#   d. git-simm repack -q [--threads T] [ARGS]   run inside the copy
#
# For each row: wall time (and CPU time, user + system, and max RSS where
# /usr/bin/time exists: on a busy machine CPU time is the steadier), pack
# bytes (sum of objects/pack/*.pack), then the checks: `git fsck --full`
# exits 0 and prints what it printed for the untouched copy, the set of
# object ids (`git cat-file --batch-all-objects`) equals the one before, and
# no loose object is left. A failed check prints FAIL and the script exits
# 1 at the end (after all repositories); missing the size targets does not.
#
# Per repository it prints a table with bytes and time, both also as ratios
# to row a, and the targets (issue): git-simm smaller than -adf at no more
# than 1.5x its time; goal: as small as --window=250; smaller than
# --path-walk.
#
# Options:
#   --git-new PATH   a newer git binary for row c (e.g. a build of v2.51+)
#   --window-250     also run row b (slow: most of an hour on git.git)
#   --threads T      pass --threads=T to every row (default: each tool's own;
#                    git uses pack.threads, unset = all cores). Pack sizes
#                    depend on it: threads split the delta search.
#   --simm-args "A"  extra arguments for git-simm repack (word-split)
#   --workdir DIR    where the copies go (default: a new directory under
#                    /tmp, removed at the end unless --keep); must not be
#                    inside a REPO
#   --keep           keep the work directory (and every repacked copy)
#   --reads          also time reading each row's pack: `git rev-list
#                    --objects --all`, `git log -p -1000` and a `git clone
#                    --no-local` from it (best of two runs each)
#
# Every row also gets its pack's bytes by object type (commits, trees,
# blobs, tags; a delta counts for the type of the object it makes), and
# git-simm's tree and blob bytes against --path-walk's and --window=250's:
# where a remaining gap comes from.
#
# Environment: GIT_SIMM, the git-simm binary (default target/release/git-simm
# of this crate; not built here: run `cargo build --release` first). If it
# has no `repack` subcommand (`$GIT_SIMM repack -h` fails), row d is skipped
# with a message and the git rows still run. `git` on PATH runs rows a, b
# and the checks.
set -euo pipefail

die() { echo "repack-compare.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit "${1:-0}"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
git_new=
window250=0
reads=0
threads=
simm_args=
workdir=
keep=0
repos=()

while (($#)); do
  case $1 in
    --git-new) git_new=${2:?--git-new needs a path}; shift 2 ;;
    --git-new=*) git_new=${1#*=}; shift ;;
    --window-250) window250=1; shift ;;
    --reads) reads=1; shift ;;
    --threads) threads=${2:?--threads needs a number}; shift 2 ;;
    --threads=*) threads=${1#*=}; shift ;;
    --simm-args) simm_args=${2?--simm-args needs a string}; shift 2 ;;
    --simm-args=*) simm_args=${1#*=}; shift ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    --workdir=*) workdir=${1#*=}; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage 0 ;;
    --) shift; repos+=("$@"); break ;;
    -*) echo "repack-compare.sh: unknown option: $1" >&2; usage 129 >&2 ;;
    *) repos+=("$1"); shift ;;
  esac
done
((${#repos[@]})) || { echo "repack-compare.sh: no REPO given" >&2; usage 129 >&2; }
[[ -z $threads || $threads =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive number, not '$threads'"
read -r -a simm_extra <<<"$simm_args"

command -v git >/dev/null || die "git is not on PATH"
if [[ -n $git_new ]]; then
  [[ $git_new == */* ]] || git_new=$(command -v "$git_new") || die "--git-new: no such command"
  [[ -x $git_new ]] || die "--git-new: $git_new is not executable"
  git_new=$(cd "$(dirname "$git_new")" && pwd)/$(basename "$git_new")
  new_help=$("$git_new" repack -h 2>&1 || true) # -h exits 129
  [[ $new_help == *--path-walk* ]] ||
    die "--git-new: $("$git_new" version) has no repack --path-walk (needs git >= 2.51)"
fi

# A clean, pinned git environment: nothing from the caller's config.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_CEILING_DIRECTORIES
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C

src_dirs=() src_roots=()
for r in "${repos[@]}"; do
  d=$(git -C "$r" rev-parse --absolute-git-dir 2>/dev/null) || die "not a git repository: $r"
  src_dirs+=("$d")
  top=$(git -C "$r" rev-parse --show-toplevel 2>/dev/null) || top=$d
  src_roots+=("$top")
done

# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_workdir repack-compare
for d in "${src_roots[@]}"; do
  case $workdir/ in "$d"/*) die "--workdir must not be inside $d" ;; esac
done

# The git-simm binary, copied so that a rebuild during the run cannot swap it.
simm_src=${GIT_SIMM:-$here/target/release/git-simm}
[[ $simm_src == /* ]] || simm_src=$PWD/$simm_src
simm=
simm_skip=
if [[ ! -x $simm_src ]]; then
  simm_skip="no git-simm binary at $simm_src (cargo build --release, or set GIT_SIMM)"
elif ! "$simm_src" repack -h >/dev/null 2>&1; then
  simm_skip="$simm_src has no 'repack' subcommand yet ('git-simm repack -h' fails)"
else
  cp "$simm_src" "$workdir/git-simm"
  simm=$workdir/git-simm
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b <= 0) print "-"; else printf "%.3f", a / b }'; }
mb() { awk -v a="$1" 'BEGIN { printf "%.2f", a / 1e6 }'; }
pack_bytes() { cat "$1"/objects/pack/*.pack 2>/dev/null | wc -c; }
object_set() { git --git-dir="$1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort; }
# Bytes in the pack by object type ("commit tree blob tag"), from the
# entries' sizes on disk (deltas count for the type of the object they make).
type_bytes() {
  git --git-dir="$1" cat-file --batch-all-objects --batch-check='%(objecttype) %(objectsize:disk)' |
    awk '{ b[$1] += $2 } END { printf "%d %d %d %d", b["commit"], b["tree"], b["blob"], b["tag"] }'
}
# The fastest of two runs of a command, in seconds.
best_of_two() {
  local t0 a b
  t0=$(now); "$@" >/dev/null 2>&1; a=$(secs_since "$t0")
  t0=$(now); "$@" >/dev/null 2>&1; b=$(secs_since "$t0")
  awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (a < b ? a : b) }'
}
# Reading the new pack: `git rev-list --objects --all`, `git log -p -1000`
# and `git clone --no-local` from it (each the best of two runs).
read_times() {
  local copy=$1 dest=$rw/clone
  local revs logp clone
  revs=$(best_of_two git --git-dir="$copy" rev-list --objects --all)
  logp=$(best_of_two git --git-dir="$copy" log -p -1000 HEAD)
  clone=$(best_of_two sh -c "rm -rf '$dest'; git clone -q --bare --no-local '$copy' '$dest'")
  rm -rf "$dest"
  echo "$revs $logp $clone"
}

thread_arg=()
[[ -z $threads ]] || thread_arg=(--threads="$threads")
pack_threads=$(git config --get pack.threads || echo "unset: git uses all $(nproc) cores")

echo "repack-compare: pack size and time, git repack -adf vs git-simm repack"
echo "  git:       $(git --version) ($(command -v git)); pack.threads $pack_threads"
[[ -z $git_new ]] || echo "  git-new:   $("$git_new" version) ($git_new)"
if [[ -n $simm ]]; then
  echo "  git-simm:  $simm_src ($("$simm" --version 2>/dev/null || echo '?'))"
  if [[ $simm_src == "$here/target/release/git-simm" ]] && git -C "$here" rev-parse -q --verify HEAD >/dev/null 2>&1; then
    echo "  crate:     $(git -C "$here" rev-parse --short HEAD)," \
      "$(git -C "$here" --no-optional-locks status --porcelain --untracked-files=no | wc -l) files with uncommitted changes"
  fi
else
  echo "  git-simm:  SKIPPED: $simm_skip"
fi
if [[ -n $threads ]]; then echo "  threads:   --threads=$threads for every row"; else echo "  threads:   each tool's default"; fi
echo "  machine:   $(nproc) cores, load $(loadavg)"
echo "  workdir:   $workdir"
echo

failed=0
summary=()
declare -A BYTES=() TIME=() CPU=() RSS=() CHECK=() TYPES=() READS=()
labels=()

# run_row KEY LABEL CMD...: repack a fresh copy of $rw/base with CMD (run
# inside it), time it, measure and check the result (against $rw/*.before
# and $fsck_st); fills BYTES, TIME, CPU, RSS, CHECK and labels, sets failed.
run_row() {
  local key=$1 label=$2 copy=$rw/$1 st=0 t0 tf=$rw/$1.time problems=()
  shift 2
  labels+=("$key:$label")
  rm -rf "$copy"
  cp -a "$rw/base" "$copy"
  t0=$(now)
  if [[ -x /usr/bin/time ]]; then
    (cd "$copy" && /usr/bin/time -f '%M %U %S' -o "$tf" "$@") >"$rw/$key.out" 2>"$rw/$key.err" || st=$?
  else
    (cd "$copy" && "$@") >"$rw/$key.out" 2>"$rw/$key.err" || st=$?
  fi
  TIME[$key]=$(secs_since "$t0")
  RSS[$key]=$(tail -n 1 "$tf" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { printf "%d", $1 / 1024 }')
  CPU[$key]=$(tail -n 1 "$tf" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF == 3 { printf "%.2f", $2 + $3 }')
  if ((st != 0)); then
    printf '  %-40s FAIL: exit %d after %s s\n' "$label" "$st" "${TIME[$key]}"
    head -n 20 "$rw/$key.err" | sed 's/^/    | /'
    CHECK[$key]=FAIL
    failed=1
    ((keep)) || rm -rf "$copy"
    return 0
  fi
  BYTES[$key]=$(pack_bytes "$copy")
  TYPES[$key]=$(type_bytes "$copy")
  ((!reads)) || READS[$key]=$(read_times "$copy")
  local fst=0 npacks nloose
  git --git-dir="$copy" fsck --full --no-progress --no-dangling >"$rw/$key.fsck.raw" 2>&1 || fst=$?
  sort "$rw/$key.fsck.raw" >"$rw/$key.fsck"
  ((fst == fsck_st)) || problems+=("git fsck --full exit $fst")
  if ! cmp -s "$rw/$key.fsck" "$rw/fsck.before"; then
    local n_now n_before
    n_now=$(wc -l <"$rw/$key.fsck")
    n_before=$(wc -l <"$rw/fsck.before")
    problems+=("git fsck --full prints $n_now lines, the untouched copy $n_before")
  fi
  object_set "$copy" >"$rw/$key.objects"
  if ! cmp -s "$rw/$key.objects" "$rw/objects.before"; then
    problems+=("object set differs: $(comm -23 "$rw/objects.before" "$rw/$key.objects" | wc -l) missing, $(comm -13 "$rw/objects.before" "$rw/$key.objects" | wc -l) extra")
  fi
  nloose=$(git --git-dir="$copy" count-objects -v | awk '$1 == "count:" { print $2 }')
  ((nloose == 0)) || problems+=("$nloose loose objects left")
  npacks=$(find "$copy/objects/pack" -name '*.pack' | wc -l)
  if ((${#problems[@]})); then
    CHECK[$key]=FAIL
    failed=1
    printf '  %-40s FAIL after %s s, %s bytes:\n' "$label" "${TIME[$key]}" "${BYTES[$key]}"
    printf '    FAIL: %s\n' "${problems[@]}"
    head -n 5 "$rw/$key.fsck" | sed 's/^/    | fsck: /'
  else
    CHECK[$key]="ok"
    ((npacks == 1)) || CHECK[$key]="ok ($npacks packs)"
    printf '  %-40s %8s s %12s bytes%s  %s\n' "$label" "${TIME[$key]}" "${BYTES[$key]}" \
      "${CPU[$key]:+  (cpu ${CPU[$key]} s, max RSS ${RSS[$key]} MB)}" "${CHECK[$key]}; load $(loadavg)"
  fi
  ((keep)) || rm -rf "$copy"
}

verdict() { if [[ $1 == 1 ]]; then echo "MET"; else echo "missed"; fi; }
# goal ROW TEXT OP HINT: git-simm's bytes against row ROW's (OP: < or <=),
# printed and appended to the summary line.
goal() {
  local row=$1 text=$2 op=$3 hint=$4 g
  if [[ -n ${BYTES[$row]:-} ]]; then
    g=$(awk -v b="${BYTES[simm]}" -v w="${BYTES[$row]}" -v op="$op" \
      'BEGIN { print ((op == "<" ? b < w : b <= w) ? 1 : 0) }')
    echo "  goal:   $text: $(verdict "$g") (${BYTES[simm]} vs ${BYTES[$row]} bytes," \
      "x$(ratio "${BYTES[simm]}" "${BYTES[$row]}"))"
    line+="; vs ${row} x$(ratio "${BYTES[simm]}" "${BYTES[$row]}") [$(verdict "$g")]"
  else
    echo "  goal:   $text: not measured ($hint)"
  fi
}
table_row() { printf '  %-34s %12s %8s %8s %8s %9s %9s %7s  %s\n' "$@"; }

for i in "${!repos[@]}"; do
  src=${src_dirs[$i]}
  name=$(basename "${src%/.git}")
  name=${name%.git}
  rw=$workdir/$i-$name
  mkdir -p "$rw"
  echo "== ${repos[$i]}   (load $(loadavg))"

  t0=$(now)
  git clone --quiet --mirror --no-local "$src" "$rw/base" || die "cloning $src failed"
  git --git-dir="$rw/base" config gc.auto 0
  # Both git and git-simm write a bitmap in a bare repository by default
  # (repack.writeBitmaps); it costs time and is not what is compared here.
  git --git-dir="$rw/base" config repack.writeBitmaps false
  object_set "$rw/base" >"$rw/objects.before"
  fsck_st=0
  git --git-dir="$rw/base" fsck --full --no-progress --no-dangling >"$rw/fsck.raw" 2>&1 || fsck_st=$?
  sort "$rw/fsck.raw" >"$rw/fsck.before"
  n_objects=$(wc -l <"$rw/objects.before")
  echo "  copy: $n_objects objects, $(git --git-dir="$rw/base" for-each-ref | wc -l) refs," \
    "pack $(mb "$(pack_bytes "$rw/base")") MB as cloned; copy + listing + fsck $(secs_since "$t0") s"
  ((fsck_st == 0)) || echo "  note: git fsck --full fails on the untouched copy (exit $fsck_st); rows are compared against that"
  [[ ! -s $rw/fsck.before ]] || echo "  note: git fsck prints $(wc -l <"$rw/fsck.before") lines on the untouched copy; rows must print the same"

  BYTES=() TIME=() CPU=() RSS=() CHECK=() TYPES=() READS=()
  labels=()

  run_row adf "git repack -adf" git repack -adfq "${thread_arg[@]}"
  ((!window250)) || run_row w250 "git repack -adf --window=250" \
    git repack -adfq --window=250 "${thread_arg[@]}"
  [[ -z $git_new ]] || run_row pathwalk "git-new repack -adf --path-walk" \
    "$git_new" repack -adfq --path-walk "${thread_arg[@]}"
  if [[ -n $simm ]]; then
    run_row simm "git-simm repack" "$simm" repack -q "${thread_arg[@]}" "${simm_extra[@]}"
  else
    printf '  %-40s skipped: %s\n' "git-simm repack" "$simm_skip"
  fi

  # The table.
  echo
  table_row row bytes MB time_s cpu_s bytes/adf time/adf rss_MB check
  for kl in "${labels[@]}"; do
    k=${kl%%:*} l=${kl#*:} m=-
    [[ -z ${BYTES[$k]:-} ]] || m=$(mb "${BYTES[$k]}")
    table_row "$l" "${BYTES[$k]:--}" "$m" "${TIME[$k]:--}" "${CPU[$k]:--}" "$(ratio "${BYTES[$k]:-}" "${BYTES[adf]:-}")" \
      "$(ratio "${TIME[$k]:-}" "${TIME[adf]:-}")" "${RSS[$k]:--}" "${CHECK[$k]:-}"
  done

  # Where the bytes are: per type, and against each row.
  echo
  printf '  %-34s %11s %11s %11s %9s\n' "bytes by type" commits trees blobs tags
  for kl in "${labels[@]}"; do
    k=${kl%%:*} l=${kl#*:}
    [[ -n ${TYPES[$k]:-} ]] || continue
    read -r c t b g <<<"${TYPES[$k]}"
    printf '  %-34s %11s %11s %11s %9s\n' "$l" "$c" "$t" "$b" "$g"
  done
  if [[ -n ${TYPES[simm]:-} ]]; then
    read -r _ st sb _ <<<"${TYPES[simm]}"
    for k in pathwalk w250; do
      [[ -n ${TYPES[$k]:-} ]] || continue
      read -r _ ot ob _ <<<"${TYPES[$k]}"
      echo "  git-simm vs $k: trees x$(ratio "$st" "$ot"), blobs x$(ratio "$sb" "$ob")"
    done
  fi
  if ((reads)); then
    echo
    printf '  %-34s %9s %9s %9s   %s\n' "reading the pack (s, best of 2)" rev-list "log -p" clone "vs -adf"
    for kl in "${labels[@]}"; do
      k=${kl%%:*} l=${kl#*:}
      [[ -n ${READS[$k]:-} ]] || continue
      read -r a b c <<<"${READS[$k]}"
      read -r a0 b0 c0 <<<"${READS[adf]:-- - -}"
      printf '  %-34s %9s %9s %9s   x%s x%s x%s\n' "$l" "$a" "$b" "$c" \
        "$(ratio "$a" "$a0")" "$(ratio "$b" "$b0")" "$(ratio "$c" "$c0")"
    done
  fi
  if [[ -n ${RSS[simm]:-} && -n ${RSS[adf]:-} ]]; then
    echo "  memory: git-simm max RSS ${RSS[simm]} MB, -adf ${RSS[adf]} MB: x$(ratio "${RSS[simm]}" "${RSS[adf]}") (target on git.git: <= 1.5)"
  fi

  # The targets (issue).
  if [[ -n ${BYTES[simm]:-} && ${CHECK[simm]} == ok* && -n ${BYTES[adf]:-} ]]; then
    br=$(ratio "${BYTES[simm]}" "${BYTES[adf]}")
    tr=$(ratio "${TIME[simm]}" "${TIME[adf]}")
    t1=$(awk -v b="${BYTES[simm]}" -v a="${BYTES[adf]}" -v s="${TIME[simm]}" -v t="${TIME[adf]}" \
      'BEGIN { print (b < a && s <= 1.5 * t) ? 1 : 0 }')
    echo "  target: smaller than -adf at <= 1.5x its time: $(verdict "$t1") (bytes x$br, time x$tr)"
    line="$name: simm bytes x$br time x$tr vs -adf [$(verdict "$t1")]"
    goal w250 "as small as --window=250" "<=" "give --window-250"
    goal pathwalk "smaller than --path-walk" "<" "give --git-new PATH, a git >= 2.51"
    summary+=("$line")
  elif [[ -z $simm ]]; then
    echo "  targets: not evaluated (git-simm repack skipped)"
    summary+=("$name: -adf ${BYTES[adf]:-?} bytes in ${TIME[adf]:-?} s; git-simm skipped")
  else
    echo "  targets: not evaluated (a row failed)"
    summary+=("$name: FAIL")
  fi
  echo
  ((keep)) || rm -rf "$rw/base"
done

echo "== Summary ($(nproc) cores, load now $(loadavg))"
printf '  %s\n' "${summary[@]}"
((keep)) && echo "  kept: $workdir"
if ((failed)); then
  echo "FAIL: at least one repack failed or changed the repository (see FAIL lines above)" >&2
  exit 1
fi
exit 0
