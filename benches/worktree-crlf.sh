#!/usr/bin/env bash
# A work tree checked out with CRLF against git: `git simm renames <flags>
# HEAD` beside `git diff --name-status -l0 --no-rename-empty <flags> HEAD`,
# stdout and exit status, with the index fresh and stale. The clone is made
# with core.autocrlf=true, so every text file has CRLF on disk and LF in
# its blob: git compares the files through its clean conversions, and so
# must git-simm. Needs a clone, so it is a script, not a CI test.
#
# Usage:
#   benches/worktree-crlf.sh [--bin BIN] [--pattern GLOB] [--files N] REPO WORKDIR
#
#   REPO        a repository to clone (only read)
#   WORKDIR     where the clone goes (replaced)
#   --bin       git-simm binary (default: target/release/git-simm)
#   --pattern   which tracked files to work on (default '*.c')
#   --files     how many of them, every seventh (default 60): a third moved
#               with `git mv` and edited, a third copied and added with
#               `git add -N`, a third edited; every edit ends with CRLF
#
# Prints one line per state and flag set (git's lines, of them renames and
# copies), any difference, and the count of identical runs. Exits 1 if any
# run differed.
set -uo pipefail

bin=target/release/git-simm pattern='*.c' files=60
while (($#)); do
  case $1 in
    --bin) bin=${2:?--bin needs a path}; shift 2 ;;
    --pattern) pattern=${2:?--pattern needs a glob}; shift 2 ;;
    --files) files=${2:?--files needs a number}; shift 2 ;;
    *) break ;;
  esac
done
(($# == 2)) || { sed -n '2,22p' "$0" >&2; exit 129; }
src=$1 wd=$2
bin=$(realpath "$bin") || exit 128
[[ -x $bin ]] || { echo "worktree-crlf.sh: not an executable: $bin" >&2; exit 128; }
rm -rf "$wd"
git clone -q -c core.autocrlf=true "$src" "$wd" || exit 128
cd "$wd" || exit 128
git config core.autocrlf true

mapfile -t picked < <(git ls-files -- "$pattern" | awk 'NR % 7 == 3' | head -n "$files")
((${#picked[@]})) || { echo "worktree-crlf.sh: no file matches $pattern" >&2; exit 128; }
mkdir -p moved copies
i=0
for f in "${picked[@]}"; do
  i=$((i + 1))
  base=$(basename "$f")
  case $((i % 3)) in
    0) git mv "$f" "moved/$i-$base"; printf '// edited %d\r\n' $i >> "moved/$i-$base" ;;
    1) cp "$f" "copies/$i-$base"; printf '// copy %d\r\n' $i >> "copies/$i-$base"
       git add -N "copies/$i-$base" ;;
    2) printf '// changed %d\r\n' $i >> "$f" ;;
  esac
done

total=0 same=0
for state in fresh stale; do
  for flags in "-M" "-C" "-C -C" "-M30%" "-B -M" "-B -C -C"; do
    # git's diff refreshes a stale index as it goes: each tool is given
    # the state under test.
    prepare() {
      if [[ $state == fresh ]]; then git update-index -q --refresh
      else git ls-files -z | xargs -0 touch; fi
    }
    prepare
    # shellcheck disable=SC2086 # flags are words
    ours=$("$bin" renames --no-cache $flags HEAD 2>&1); oc=$?
    prepare
    # shellcheck disable=SC2086
    theirs=$(git diff --name-status -l0 --no-rename-empty $flags HEAD 2>/dev/null); tc=$?
    total=$((total + 1))
    if [[ $ours == "$theirs" && $oc == "$tc" ]]; then
      same=$((same + 1))
    else
      echo "DIFFERS: $state $flags (exit $oc, git $tc)"
      diff <(echo "$theirs") <(echo "$ours") | head -8
    fi
    printf '%-6s %-9s %4d lines, %3d renames and copies\n' "$state" "$flags" \
      "$(grep -c . <<<"$theirs")" "$(grep -c '^[RC]' <<<"$theirs")"
  done
done
echo "identical: $same of $total"
((same == total))
