#!/usr/bin/env bash
# Release-tag pairs of a repository: `git simm renames <flags> A B` against
# `git diff --name-status -l0 --no-rename-empty <flags> A B`, stdout byte for
# byte and exit status, with git's and git-simm's wall time per pair and
# their ratio. Needs a clone, so it is a script, not a CI test.
#
# Usage:
#   benches/tag-pairs.sh [options] REPO [FLAGS]...
#
#   REPO     a clone (bare or not); it is only read: git-simm keeps its
#            fingerprints in a throw-away store under --workdir
#   FLAGS    flag sets, each one argument (default: "-C -C" "-B -M")
#   --bin BIN          git-simm binary (default: target/release/git-simm of
#                      this checkout; copied first, so a rebuild during the
#                      run cannot swap it)
#   --workdir DIR      store and differing outputs (default: a new
#                      directory under /tmp, kept)
#   --tag-regex ERE    which tags are releases (default:
#                      ^v?[0-9]+(\.[0-9]+)+[a-z]?$), in `sort -V` order of
#                      the name without its leading v, one tag per commit
#   --until TAG        only tags up to TAG in that order (e.g. when a clone
#                      lacks blobs of later releases)
#   --consecutive N    the newest N pairs of consecutive tags (default 20)
#   --far N            N pairs far apart, a third of the tags between the
#                      two ends, spread over history (default 15)
#   --cold             run git-simm with --no-cache (every fingerprint
#                      computed from the blob) instead of the store, which
#                      starts empty and fills as the pairs run
#
# Prints one line per pair and flag set (outcome, git's and git-simm's wall
# time, git / git-simm), then per flag set: pairs, identical, differing
# (same exit status), errors (exit statuses differ), and pairs git itself
# could not diff (exit status not 0; e.g. a clone that lacks blobs), which
# are left out of the counts; the summed times and their ratio cover the
# pairs both ran to the end (not git-simm's refusals). Exits 1 if any pair
# differed or errored.
#
# Timings are wall clock of single runs: take them on a quiet machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "tag-pairs: $*" >&2; exit 128; }
usage() { sed -n '2,37p' "$0"; }

simm_bin=$here/target/release/git-simm workdir="" regex='^v?[0-9]+(\.[0-9]+)+[a-z]?$'
until="" consecutive=20 far=15 cold=0
while (($#)); do
  case $1 in
    --bin) simm_bin=${2:?--bin needs a path}; shift 2 ;;
    --workdir) workdir=${2:?--workdir needs a directory}; shift 2 ;;
    --tag-regex) regex=${2:?--tag-regex needs a pattern}; shift 2 ;;
    --until) until=${2:?--until needs a tag}; shift 2 ;;
    --consecutive) consecutive=${2:?}; shift 2 ;;
    --far) far=${2:?}; shift 2 ;;
    --cold) cold=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; exit 129 ;;
    *) break ;;
  esac
done
(($# >= 1)) || { usage >&2; exit 129; }
repo=$(cd "$1" && pwd) || die "no repository at $1"
shift
flagsets=("$@")
((${#flagsets[@]})) || flagsets=("-C -C" "-B -M")
[[ -x $simm_bin ]] || die "no git-simm binary at $simm_bin (run cargo build --release)"
git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || die "not a git repository: $repo"
[[ -n $workdir ]] || workdir=$(mktemp -d "/tmp/tag-pairs.XXXXXX")
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
cp "$simm_bin" "$workdir/git-simm"
simm=$workdir/git-simm
rm -rf "$workdir/store" "$workdir/differences"
mkdir -p "$workdir/differences"

pinned_git_env
# git-simm's store goes to the work directory: the repository is not
# written to.
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=simm.storeDir GIT_CONFIG_VALUE_0=$workdir/store
cache=()
((cold)) && cache=(--no-cache)

# Release tags in version order, one per commit (a repository may tag one
# commit twice, e.g. 2.0.8 and v2.0.8).
mapfile -t tags < <(
  git -C "$repo" for-each-ref --format='%(refname:short) %(objectname) %(*objectname)' refs/tags |
    awk -v re="$regex" '$1 ~ re { v = $1; sub(/^v/, "", v); print v, $1, ($3 != "" ? $3 : $2) }' |
    sort -V -k1,1 | awk '!seen[$3]++ { print $2 }'
)
if [[ -n $until ]]; then
  cut=-1
  for i in "${!tags[@]}"; do [[ ${tags[i]} == "$until" ]] && cut=$i; done
  ((cut >= 0)) || die "--until $until is not among the release tags"
  tags=("${tags[@]:0:cut+1}")
fi
n=${#tags[@]}
((n >= 3)) || die "only $n release tags match $regex"

pairs=()
start=$((n - 1 - consecutive))
((start < 0)) && start=0
for ((i = start; i + 1 < n; i++)); do pairs+=("${tags[i]} ${tags[i + 1]}"); done
gap=$((n / 3))
((gap < 2)) && gap=2
span=$((n - gap))
if ((span > 0 && far > 0)); then
  for ((k = 0; k < far; k++)); do
    i=$((k * span / far))
    ((i + gap < n)) && pairs+=("${tags[i]} ${tags[i + gap]}")
  done
fi
mapfile -t pairs < <(printf '%s\n' "${pairs[@]}" | awk '!seen[$0]++')

echo "tag-pairs: $(basename "$repo"): ${#pairs[@]} pairs of $n release tags (${tags[0]} .. ${tags[n - 1]}), flag sets:$(printf ' "%s"' "${flagsets[@]}")"
echo "git $(git version | cut -d' ' -f3), $("$simm" --version), store: $( ((cold)) && echo 'none (--no-cache)' || echo "$workdir/store (starts empty)"), load $(loadavg)"
printf '%-10s %-24s %-10s %9s %9s %8s\n' flags pair outcome git git-simm ratio

declare -A run same differ errors gitfail tgit tsimm
status=0
for flags in "${flagsets[@]}"; do
  read -r -a fl <<<"$flags"
  run[$flags]=0 same[$flags]=0 differ[$flags]=0 errors[$flags]=0 gitfail[$flags]=0 tgit[$flags]=0 tsimm[$flags]=0
  for pair in "${pairs[@]}"; do
    read -r a b <<<"$pair"
    t0=$(now)
    grc=0
    git -C "$repo" diff --name-status -l0 --no-rename-empty "${fl[@]}" "$a" "$b" >"$workdir/git.out" 2>"$workdir/git.err" || grc=$?
    t1=$(now)
    src=0
    (cd "$repo" && "$simm" renames "${cache[@]}" "${fl[@]}" "$a" "$b") >"$workdir/simm.out" 2>"$workdir/simm.err" || src=$?
    t2=$(now)
    g=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    s=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    ratio=$(awk -v g="$g" -v s="$s" 'BEGIN { printf "%.1fx", (s > 0 ? g / s : 0) }')
    # Times count only where both ran to the end (not a refusal).
    ((src == grc)) || ratio=-
    if ((grc != 0)); then
      outcome="git-failed"
      gitfail[$flags]=$((gitfail[$flags] + 1))
    else
      run[$flags]=$((run[$flags] + 1))
      if ((src == grc)); then
        tgit[$flags]=$(awk -v x="${tgit[$flags]}" -v y="$g" 'BEGIN { print x + y }')
        tsimm[$flags]=$(awk -v x="${tsimm[$flags]}" -v y="$s" 'BEGIN { print x + y }')
      fi
      if ((src == grc)) && cmp -s "$workdir/git.out" "$workdir/simm.out"; then
        outcome=identical
        same[$flags]=$((same[$flags] + 1))
      else
        if ((src == grc)); then
          outcome=DIFFERS
          differ[$flags]=$((differ[$flags] + 1))
        else
          outcome="ERROR($src)"
          errors[$flags]=$((errors[$flags] + 1))
        fi
        status=1
        f="$workdir/differences/${flags// /_}_${a}_${b}.txt"
        {
          echo "repository: $repo"
          echo "git diff --name-status -l0 --no-rename-empty $flags $a $b  (exit $grc)"
          echo "git-simm renames ${cache[*]} $flags $a $b  (exit $src)"
          echo "--- lines only in git"
          diff <(sort "$workdir/git.out") <(sort "$workdir/simm.out") | sed -n 's/^< //p' || true
          echo "--- lines only in git-simm"
          diff <(sort "$workdir/git.out") <(sort "$workdir/simm.out") | sed -n 's/^> //p' || true
          echo "--- git-simm stderr"
          cat "$workdir/simm.err"
        } >"$f"
      fi
    fi
    printf '%-10s %-24s %-10s %8ss %8ss %8s\n' "$flags" "$a..$b" "$outcome" "$g" "$s" "$ratio"
  done
done

echo
echo "summary: $(basename "$repo"), ${#pairs[@]} pairs per flag set, load $(loadavg)"
printf '%-10s %6s %10s %10s %7s %11s %9s %9s %8s\n' flags pairs identical differing errors git-failed "git s" "simm s" ratio
for flags in "${flagsets[@]}"; do
  ratio=$(awk -v g="${tgit[$flags]}" -v s="${tsimm[$flags]}" 'BEGIN { if (s > 0) printf "%.1fx", g / s; else printf "-" }')
  printf '%-10s %6s %10s %10s %7s %11s %9.2f %9.2f %8s\n' "$flags" "${run[$flags]}" "${same[$flags]}" \
    "${differ[$flags]}" "${errors[$flags]}" "${gitfail[$flags]}" "${tgit[$flags]}" "${tsimm[$flags]}" "$ratio"
done
echo "differences: $workdir/differences"
exit $status
