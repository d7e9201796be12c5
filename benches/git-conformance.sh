#!/usr/bin/env bash
# git's own test material as a conformance suite for `git simm renames`.
#
# Runs git's rename, copy, break and merge-rename test scripts from a built
# git source tree with -d (their trash repositories stay), then in every
# repository they leave compares
#
#   git-simm renames --no-cache <flags> <args>
#   git diff --name-status -l0 --no-rename-empty <flags> <args>
#
# byte for byte (stdout and exit status): every ordered pair of commits
# reachable from any ref, --cached, and the work tree against HEAD with a
# stale and a fresh index, with -M, -C, "-C -C", -M30%, "-B -M" and
# "-B -C -C". Both tools run on a copy of each trash directory, so neither
# changes what the tests left. Not a CI test: it needs git's source, built.
#
# Usage:
#   benches/git-conformance.sh GIT_SRC [GIT_SIMM] [options]
#
#   GIT_SRC     a git source tree already built with `make` (the version to
#               compare with: git's output is the oracle, and its
#               bin-wrappers/git runs both the tests and the comparisons)
#   GIT_SIMM    the binary under test (default: target/release/git-simm of
#               this checkout; copied before the run, so a rebuild during
#               the run does not swap it)
#   --work DIR     trash directories, their copies, the binary's copy
#                  (default: /tmp/git-conformance)
#   --report DIR   where the summary and every difference go
#                  (default: WORK/report)
#   --scripts "t4001 t4003 ..."   test scripts to run (default: the list in
#                  git-conformance.py; numbers or full names)
#   --flags "-M,-C -C"            comma-separated flag sets
#   --jobs N       test scripts and repositories run N at a time (default 2)
#   --max-pairs N  ordered commit pairs per repository before sampling
#                  (default 1000: every parent-child pair both ways, then a
#                  seeded sample of the rest; the summary lists capped ones)
#   --reuse        keep trash directories a previous run left (only the
#                  comparisons run again: use it for a new binary)
#
# Exits 0 when every case is identical, 1 otherwise.
#
# Build git outside the project, for example:
#   git clone /path/to/git.git /work/build/git-src
#   git -C /work/build/git-src checkout v2.47.3
#   make -C /work/build/git-src -j2 NO_GETTEXT=1 NO_TCLTK=1 NO_CURL=1 NO_PYTHON=1
# then:
#   benches/git-conformance.sh /work/build/git-src
#   benches/git-conformance.sh /work/build/git-src target/release/git-simm --reuse
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "git-conformance: $*" >&2; exit 128; }
usage() { sed -n '2,48p' "$0"; }

[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
(($# >= 1)) || { usage >&2; exit 129; }
git_src=$1
shift
simm=$here/../target/release/git-simm
if (($#)) && [[ $1 != --* ]]; then
  simm=$1
  shift
fi
work=/tmp/git-conformance report=""
extra=()
while (($#)); do
  case $1 in
    --work) work=${2:?--work needs a directory}; shift 2 ;;
    --report) report=${2:?--report needs a directory}; shift 2 ;;
    --scripts | --flags | --jobs | --max-pairs) extra+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --reuse) extra+=(--reuse); shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 129 ;;
  esac
done

[[ -x $git_src/bin-wrappers/git ]] || die "$git_src is not a built git source tree (no bin-wrappers/git; run make there)"
[[ -x $simm ]] || die "no git-simm binary at $simm (run cargo build --release)"
command -v python3 >/dev/null || die "python3 is not on PATH"
mkdir -p "$work"
work=$(cd "$work" && pwd)
[[ -n $report ]] || report=$work/report
simm=$(cd "$(dirname "$simm")" && pwd)/$(basename "$simm")

exec python3 "$here/git-conformance.py" --git-src "$git_src" --simm "$simm" \
  --work "$work" --report "$report" "${extra[@]}"
