#!/usr/bin/env bash
# Times `git simm export`: --all on a copy of a repository, cold (empty
# store: every blob fingerprinted) and warm (the store answers), then the
# incremental case: one new commit, exported again (--all and HEAD).
#
#   benches/export.sh REPO [WORKDIR]
#
# REPO (a bare repository) is copied to WORKDIR (default a temporary
# directory) first, since the store is written into the copy's git
# directory, and any store it had is removed; the README's figure is
# git.git (262,343 blobs). Prints seconds, rows and the load average.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/benches/lib.sh"
die() { echo "export.sh: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: benches/export.sh REPO [WORKDIR]"
src=$1 workdir=${2:-} build=1 simm_bin=
use_workdir export-bench
use_simm_binary git-simm
pinned_git_env
repo=$workdir/repo.git
rm -rf "$repo"
cp -a "$src" "$repo"
rm -rf "$repo/simm"
out=$workdir/out.parquet

run() { # label, args...
  local label=$1 t; shift
  t=$(now)
  "$simm" -C "$repo" export "$@" -o "$out" 2>"$workdir/msg"
  printf '%-34s %7s s  %s  (load %s)\n' "$label" "$(secs_since "$t")" "$(cat "$workdir/msg")" "$(loadavg)"
}

echo "repository: $src ($(nproc) cores, load $(loadavg))"
run "export --all, cold store" --all
for i in 1 2 3; do run "export --all, warm ($i)" --all; done
run "export HEAD, warm" HEAD

# One new commit: one file of HEAD edited (a line appended), committed
# without a work tree.
path=$(git -C "$repo" ls-tree -r --name-only HEAD | awk 'NR == 100')
blob=$( (git -C "$repo" cat-file blob "HEAD:$path"; echo "one more line") |
  git -C "$repo" hash-object -w --stdin)
export GIT_INDEX_FILE=$workdir/index
git -C "$repo" read-tree HEAD
git -C "$repo" update-index --cacheinfo "100644,$blob,$path"
tree=$(git -C "$repo" write-tree)
commit=$(git -C "$repo" commit-tree -p HEAD -m "one more" "$tree")
git -C "$repo" update-ref HEAD "$commit"
unset GIT_INDEX_FILE
echo "new commit $commit edits $path"
run "export HEAD after one commit" HEAD
run "export --all after one commit" --all
