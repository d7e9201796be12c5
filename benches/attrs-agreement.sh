#!/usr/bin/env bash
# Agreement with git where .gitattributes decide text versus binary: for
# many release-tag pairs of a repository, `git simm renames` against
# `git diff -l0 --no-rename-empty --name-status`, with -M, -C, -C -C and
# -M30%, under three attribute sources, byte for byte. Needs the network
# only to get the repository, so it is a script, not a CI test.
#
# Usage:
#   benches/attrs-agreement.sh [--bin DIR] [--out DIR] [--sources LIST] REPO [A B]...
#
#   REPO       a clone (bare or not) git-simm may write its store into
#   A B ...    tag pairs; default: consecutive release tags (the newest 14
#              pairs) and distant ones (every eighth tag), see `pairs`
#   --bin DIR  where git-simm is (default: target/release)
#   --out DIR  where differing outputs are kept (default: a temp dir)
#   --sources  comma-separated, of:
#                default   no option: the work tree's attributes (none in
#                          a bare repository: git 2.47 reads none there)
#                new       git --attr-source=B (GIT_ATTR_SOURCE reaches
#                          git-simm as git runs it)
#                tree      git -c attr.tree=B (read from config)
#              (default: default,new,tree)
#
# Prints one line per pair and option set, then the count of identical
# pairs; exits 1 if any output differed.
#
# Reproduce the agreement run:
#   git clone --bare -s /work/.mirror/libgit2+libgit2/repo /tmp/libgit2.git
#   benches/attrs-agreement.sh /tmp/libgit2.git
set -euo pipefail

bin=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release
out="" sources=default,new,tree
while (($#)); do
  case $1 in
    --bin) bin=$(cd "${2:?--bin needs a directory}" && pwd); shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --sources) sources=${2:?--sources needs a list}; shift 2 ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
(($# >= 1)) || { sed -n '2,30p' "$0" >&2; exit 129; }
repo=$1
shift
[[ -x $bin/git-simm ]] || { echo "attrs-agreement: no git-simm in $bin" >&2; exit 128; }
git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || { echo "attrs-agreement: not a git repository: $repo" >&2; exit 128; }
[[ -n $out ]] || out=$(mktemp -d)
mkdir -p "$out"
export PATH="$bin:$PATH"

pairs=("$@")
if ((${#pairs[@]} == 0)); then
  mapfile -t tags < <(git -C "$repo" tag | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | sort -V)
  n=${#tags[@]}
  for ((i = n - 15; i < n - 1; i++)); do pairs+=("${tags[i]}" "${tags[i + 1]}"); done
  for ((i = 0; i + 8 < n; i += 8)); do pairs+=("${tags[i]}" "${tags[i + 8]}"); done
fi
((${#pairs[@]} % 2 == 0)) || { echo "attrs-agreement: tags come in pairs" >&2; exit 129; }

same=0 differ=0
IFS=, read -ra srcs <<<"$sources"
for ((p = 0; p < ${#pairs[@]}; p += 2)); do
  a=${pairs[p]} b=${pairs[p + 1]}
  for src in "${srcs[@]}"; do
    case $src in
      default) pre=() ;;
      new) pre=(--attr-source="$b") ;;
      tree) pre=(-c attr.tree="$b") ;;
      *) echo "attrs-agreement: unknown source $src" >&2; exit 129 ;;
    esac
    for opt in -M -C "-C -C" -M30%; do
      read -ra o <<<"$opt"
      tag="$a..$b ${src} ${opt}"
      f="$out/${a}_${b}_${src}_${opt// /}"
      git -C "$repo" "${pre[@]}" diff -l0 --no-rename-empty --name-status "${o[@]}" "$a" "$b" >"$f.git"
      git -C "$repo" "${pre[@]}" simm renames "${o[@]}" "$a" "$b" >"$f.simm"
      if cmp -s "$f.git" "$f.simm"; then
        same=$((same + 1))
        echo "same    $tag ($(wc -l <"$f.git") lines)"
        rm -f "$f.git" "$f.simm"
      else
        differ=$((differ + 1))
        echo "DIFFER  $tag: diff $f.git $f.simm"
        { diff "$f.git" "$f.simm" || true; } | head -5 | sed 's/^/        /'
      fi
    done
  done
done
echo "identical: $same of $((same + differ)) (pairs x options x sources)"
((differ == 0))
