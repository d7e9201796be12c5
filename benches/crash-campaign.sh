#!/usr/bin/env bash
# Crash campaign: kill git-simm with SIGKILL at every rename and unlink it
# makes (strace's fault injection, every thread) and at random moments
# (the whole process group, git's children included, as a power cut
# would), in `fingerprint --all`, `repack` (both --bases), `gc` and
# `export --all -o`, on a copy of a real repository; after every kill:
#
#   - git fsck --full finds nothing wrong and every object is still there
#     (the set of object ids is the one before);
#   - the same command run again ("a later run") succeeds, and after it
#     no temporary of git-simm's (or of the git it ran) is left: store
#     tmp-simm-*, pack directory .simm-tmp-*, tmp_pack_*/tmp_idx_* (the
#     copy sets gc.pruneExpire=now, the age git gc waits for), the repack
#     lock and journals, export .*.simm-tmp-*; an empty temporary, which
#     runs leave for a minute, is aged past that and must go with the
#     run after;
#   - the fingerprint store answers what a run without it computes.
#
# Usage: benches/crash-campaign.sh <repository> [random kills per command]
# Needs strace. GIT_SIMM (default target/release/git-simm) is the binary;
# CRASH_COMMANDS (commands separated by `;`, default every one above)
# narrows the campaign.
# Prints one line per command and method, then OK or the failures.
# Not run by CI (minutes, and strace is not everywhere).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
simm=${GIT_SIMM:-$here/target/release/git-simm}
src=${1:?usage: $0 <repository> [random kills per command]}
random_runs=${2:-8}
command -v strace >/dev/null || { echo "strace is needed" >&2; exit 2; }
[ -x "$simm" ] || { echo "no git-simm at $simm (build with cargo build --release)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/crash-campaign.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=c GIT_AUTHOR_EMAIL=c@example.com
export GIT_COMMITTER_NAME=c GIT_COMMITTER_EMAIL=c@example.com

# The pristine copy: a bare clone (copied objects, no hard links), a few
# loose objects on a branch so repack has loose copies to delete, and a
# store of several tables so gc has work.
pristine=$work/pristine.git
git clone -q --bare --no-local "$src" "$pristine"
git -C "$pristine" config gc.auto 0
git -C "$pristine" config gc.pruneExpire now
tree=$(git -C "$pristine" rev-parse 'HEAD^{tree}')
parent=$(git -C "$pristine" rev-parse HEAD)
for i in $(seq 1 20); do
    blob=$(seq "$i" $((i + 400)) | git -C "$pristine" hash-object -w --stdin)
    tree=$(printf '100644 blob %s\tcrash-%02d.txt\n' "$blob" "$i" |
        git -C "$pristine" mktree)
    parent=$(git -C "$pristine" commit-tree -p "$parent" -m "crash $i" "$tree")
done
git -C "$pristine" update-ref refs/heads/crash-extra "$parent"
(cd "$pristine" && "$simm" fingerprint -q HEAD~20 >/dev/null 2>&1 || true)
(cd "$pristine" && "$simm" fingerprint -q HEAD >/dev/null)
objects() { git -C "$1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort; }
objects "$pristine" >"$work/objects.before"
echo "repository: $src ($(wc -l <"$work/objects.before") objects), git-simm: $simm"

r=$work/r
fresh() { rm -rf "$r"; cp -a "$pristine" "$r"; }
run() { (cd "$r" && "$simm" "$@"); }

leftovers() {
    find "$r" \( -name 'tmp-simm-*' -o -name '.simm-tmp-*' -o -name 'tmp_pack_*' \
        -o -name 'tmp_idx_*' -o -name 'tmp_rev_*' -o -name 'simm-repack.*' \
        -o -name '.*.simm-tmp-*' -o -name '*.damaged' \) -print
}

failures=0
fail() { echo "  FAIL ($1): $2" >&2; failures=$((failures + 1)); }

# After a kill: the repository intact, a later run succeeds and leaves
# nothing, the store true.
verify() {
    local label=$1
    shift
    git -C "$r" fsck --full --no-dangling >/dev/null 2>"$work/fsck" ||
        fail "$label" "git fsck after the kill: $(head -3 "$work/fsck")"
    objects "$r" | cmp -s - "$work/objects.before" ||
        fail "$label" "objects lost or added after the kill"
    run "$@" >/dev/null 2>"$work/later" ||
        fail "$label" "the later run failed: $(head -3 "$work/later")"
    local left
    left=$(leftovers)
    # A temporary killed between its create and its lock is empty; runs
    # leave such a file for a minute (it may be a live writer's). Aged
    # past that, the next run must remove it.
    if [ -n "$left" ] && [ -z "$(find $left -prune -size +0c)" ]; then
        touch -d '-2 minutes' $left
        run "$@" >/dev/null 2>"$work/later" ||
            fail "$label" "the run after aging failed: $(head -3 "$work/later")"
        left=$(leftovers)
    fi
    [ -z "$left" ] || fail "$label" "left after the later run: $left"
    git -C "$r" fsck --full --no-dangling >/dev/null 2>&1 || fail "$label" "fsck after the later run"
    objects "$r" | cmp -s - "$work/objects.before" || fail "$label" "objects changed by the later run"
    if ! cmp -s <(run fingerprint HEAD) <(run --no-cache fingerprint HEAD); then
        fail "$label" "the store answers otherwise than a run without it"
    fi
}

printf '%-26s %-22s %5s %7s\n' command method kills failed
IFS=';' read -r -a commands <<<"${CRASH_COMMANDS:-fingerprint -q --all;repack -q --bases=simm;repack -q --bases=git;gc -q;export -q --all -o out.parquet}"
for cmd in "${commands[@]}"; do
    # shellcheck disable=SC2086
    set -- $cmd
    # Every rename and every unlink of git-simm's threads (the signature
    # table is written on a thread of its own): count them in a traced
    # run, then kill at each. strace counts `when=` per thread, so a k
    # past one thread's count kills at another's k-th, or not at all
    # (the kills column says how many runs died).
    fresh
    (cd "$r" && strace -f -qq -o "$work/trace" \
        -e trace=rename,renameat,renameat2,unlink,unlinkat "$simm" "$@" >/dev/null)
    for family in rename unlink; do
        n=$(grep -cE "^([0-9]+ +)?${family}(at|at2)?\(" "$work/trace" || true)
        before=$failures
        kills=0
        for k in $(seq 1 "$n"); do
            fresh
            set +e
            # No `-e trace=none`: strace injects only into syscalls it
            # traces.
            (cd "$r" && strace -f -qq -o /dev/null \
                -e "inject=${family},${family}at$([ $family = rename ] && echo ,renameat2):signal=SIGKILL:when=$k" \
                "$simm" "$@" >/dev/null 2>&1)
            status=$?
            set -e
            [ "$status" -ne 0 ] && kills=$((kills + 1))
            verify "$cmd, $family #$k" "$@"
        done
        printf '%-26s %-22s %5s %7s\n' "${cmd%% -o*}" "every $family ($n)" "$kills" $((failures - before))
    done
    # Random moments: time a run, then kill the whole group at a random
    # point of it.
    fresh
    start=$(date +%s%N)
    run "$@" >/dev/null
    took=$((($(date +%s%N) - start) / 1000000))
    before=$failures
    for i in $(seq 1 "$random_runs"); do
        fresh
        delay=$((RANDOM % (took + 1)))
        (cd "$r" && exec setsid "$simm" "$@" >/dev/null 2>&1) &
        pid=$!
        sleep "$(printf '0.%03d' $((delay % 1000)))"
        sleep $((delay / 1000))
        kill -9 -- "-$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        verify "$cmd, random kill after ${delay} ms" "$@"
    done
    printf '%-26s %-22s %5s %7s\n' "${cmd%% -o*}" "random (<${took} ms)" "$random_runs" $((failures - before))
done
if [ "$failures" -eq 0 ]; then echo OK; else echo "$failures failures"; exit 1; fi
