#!/usr/bin/env bash
# git-simm beside git in a blob-less partial clone of a real repository:
# time and number of `git fetch` processes, in one run.
#
#   benches/partial-clone.sh [--rounds N] [--workdir DIR] [--keep] REPO FROM TO
#
# REPO (bare or not) is only read: it is copied once with
# `git clone --bare --no-local` into a work directory and served from there
# over file:// with uploadpack.allowFilter and uploadpack.allowAnySHA1InWant.
# Every measurement runs in its own fresh `git clone --filter=blob:none`
# of that copy, so each side starts with every blob missing:
#
#   renames    git diff -M -l0 --name-status FROM TO     (clone without checkout)
#              git-simm renames FROM TO
#              checks: the same output, the same objects fetched (but for
#              HEAD:.gitmodules and the empty blob, which git's diff reads
#              for other reasons)
#   repack     git repack -a -d                           (clone with checkout,
#              git-simm repack -q                          one local commit)
#              checks: no fetch, git fsck clean, a blob of FROM still fetched
#              lazily afterwards
#   pack-order git rev-list --objects --all --reflog --indexed-objects
#              --exclude-promisor-objects (what git repack -a walks there)
#              git-simm pack-order
#   before     what pack-order ran before this fix (`git rev-list --objects
#              --all ...` without promisor options, lazily fetching blob
#              after blob), stopped after 20 s: fetches in that time
#
# git and git-simm alternate which goes first, round after round. Fetch
# processes are counted from GIT_TRACE2_EVENT (`cmd_name` events named
# fetch: git's lazy fetches, or git-simm's). Prints the median time of each
# row, the ratio to git, the fetch counts and the load average.
#
# Environment: GIT_SIMM, the git-simm binary (default target/release/git-simm
# of this crate; run `cargo build --release` first).
set -euo pipefail

die() { echo "partial-clone.sh: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

rounds=3 workdir="" keep=0
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
(($# == 3)) || die "usage: partial-clone.sh [--rounds N] [--workdir DIR] [--keep] REPO FROM TO"
repo=$1 from=$2 to=$3
simm=${GIT_SIMM:-$here/../target/release/git-simm}
[[ -x $simm ]] || die "no git-simm at $simm (cargo build --release)"
use_workdir partial-clone

# The repositories' own git: no system or global configuration, no
# automatic gc (a detached `git maintenance` would race the timings).
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_NO_LAZY_FETCH

srv=$workdir/srv.git
git clone -q --bare --no-local "$repo" "$srv"
git -C "$srv" config uploadpack.allowFilter true
git -C "$srv" config uploadpack.allowAnySHA1InWant true
n=0
fresh() { # fresh [--no-checkout]: a new blob-less clone, in $d
  n=$((n + 1))
  d=$workdir/c$n
  git clone -q --filter=blob:none "$@" "file://$srv" "$d" 2>/dev/null
}
fetches() { grep '"event":"cmd_name"' "$1" 2>/dev/null | grep -c '"name":"fetch"' || true; }
objects() { GIT_NO_LAZY_FETCH=1 git -C "$1" cat-file --batch-all-objects \
  --batch-check='%(objectname)' 2>/dev/null | sort; }
fail=0
check() { [[ $1 == ok ]] || { echo "FAIL: $2" >&2; fail=1; }; }

# run NAME DIR CMD...: time CMD in DIR with a trace2 log; appends
# "<secs> <fetches>" to $workdir/NAME.
run() {
  local name=$1 dir=$2; shift 2
  local log=$workdir/trace.$n.$name t0
  t0=$(now)
  (cd "$dir" && GIT_TRACE2_EVENT=$log "$@" >"$workdir/out.$name")
  echo "$(secs_since "$t0") $(fetches "$log")" >>"$workdir/$name"
  rm -f "$log"
}

prepare_local() { # a local commit on top of the checkout, as users have
  local d=$1 f
  f=$(git -C "$d" ls-files | awk 'NR == 1 { f = $0 } END { print f }')
  printf '\nlocal edit\n' >>"$d/$f"
  git -C "$d" -c user.name=b -c user.email=b@example.com commit -qam local
}
# awk reads to the end: git killed by SIGPIPE would fail the pipeline.
lazy_blob=$(git -C "$srv" ls-tree -r "$from" | awk '$2 == "blob" && b == "" { b = $3 } END { print b }')
[[ -n $lazy_blob ]] || die "no blob in $from"

gitmodules=$(git -C "$srv" rev-parse -q --verify HEAD:.gitmodules || echo none)
empty_blob=$(git -C "$srv" hash-object -t blob /dev/null)
fresh --no-checkout
base_objects=$(objects "$d" | wc -l)
rm -rf "$d"

for ((r = 1; r <= rounds; r++)); do
  order=(git simm); ((r % 2)) || order=(simm git)
  for who in "${order[@]}"; do
    # renames
    fresh --no-checkout
    if [[ $who == git ]]; then
      run renames.git "$d" git diff -M -l0 --name-status "$from" "$to"
      cp "$workdir/out.renames.git" "$workdir/expect"
      objects "$d" >"$workdir/objects.git"
    else
      run renames.simm "$d" "$simm" renames "$from" "$to"
      cp "$workdir/out.renames.simm" "$workdir/got"
      objects "$d" >"$workdir/objects.simm"
    fi
    rm -rf "$d"
    # repack
    fresh
    prepare_local "$d"
    if [[ $who == git ]]; then
      run repack.git "$d" git repack -a -d -q
    else
      run repack.simm "$d" "$simm" repack -q
    fi
    git -C "$d" fsck --no-progress >/dev/null 2>&1 && s=ok || s=bad
    check "$s" "$who: git fsck after repack"
    git -C "$d" cat-file -e "$lazy_blob" 2>/dev/null && s=ok || s=bad
    check "$s" "$who: lazy fetch of $lazy_blob after repack"
    # pack-order
    if [[ $who == git ]]; then
      run order.git "$d" git rev-list --objects --all --reflog --indexed-objects \
        --exclude-promisor-objects
    else
      run order.simm "$d" "$simm" pack-order
    fi
    rm -rf "$d"
  done
  cmp -s "$workdir/expect" "$workdir/got" && s=ok || s=bad
  check "$s" "round $r: renames output differs from git's"
  # git diff also reads HEAD's .gitmodules (submodule configuration), a
  # fetch of its own that is not rename detection's, and fetches the empty
  # blob when it pairs empty files (git-simm, by default, does not pair
  # them, and never needs the empty blob stored).
  grep -vx -e "$gitmodules" -e "$empty_blob" "$workdir/objects.git" \
    >"$workdir/objects.git.renames" || true
  cmp -s "$workdir/objects.git.renames" "$workdir/objects.simm" && s=ok || s=bad
  check "$s" "round $r: git-simm fetched other objects than git's rename detection"
done

# Before the fix: the walk pack-order ran, fetching lazily; 20 s at most.
fresh
t0=$(now)
(cd "$d" && GIT_TRACE2_EVENT=$workdir/trace.before timeout 20 \
  git rev-list --objects --all --reflog --indexed-objects >/dev/null 2>&1) || true
before_secs=$(secs_since "$t0") before_fetches=$(fetches "$workdir/trace.before")
rm -rf "$d"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
col() { awk -v c="$2" '{ print $c }' "$workdir/$1" | median; }
fetched=$(($(wc -l <"$workdir/objects.simm") - base_objects))
git_fetched=$(($(wc -l <"$workdir/objects.git") - base_objects))
echo "partial clone (--filter=blob:none) of $repo: $from..$to," \
  "$rounds rounds, load $(loadavg)"
printf '%-11s %9s %9s %7s %13s %13s\n' row git_s simm_s ratio git_fetches simm_fetches
for row in renames repack order; do
  g=$(col "$row.git" 1) s=$(col "$row.simm" 1)
  printf '%-11s %9s %9s %7s %13s %13s\n' "$row" "$g" "$s" \
    "$(awk -v g="$g" -v s="$s" 'BEGIN { printf "%.2fx", (s > 0 ? g / s : 0) }')" \
    "$(col "$row.git" 2)" "$(col "$row.simm" 2)"
done
echo "renames: git fetched $git_fetched objects (HEAD:.gitmodules and the empty blob among them if any), git-simm $fetched"
echo "ratio: git's time / git-simm's"
echo "before the fix (rev-list fetching lazily): ${before_secs} s, $before_fetches fetch processes, stopped at 20 s"
exit $fail
