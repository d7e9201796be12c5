#!/usr/bin/env bash
# `git simm groups` at scale, and beside `ssdeep -r -g`, in one run.
#
#   benches/groups.sh [--source-repo PATH] [--sizes "10000 30000 100000"]
#                     [--truth-files N] [--no-all] [--workdir DIR] [--keep]
#                     [--git-simm BIN | --no-build] [--peer BIN]
#
# The source repository (default: the git.git mirror) is cloned bare with
# --shared (its objects are borrowed, nothing is written there). Trees are
# built in the clone from its own blobs: every text-sized blob (192 bytes
# to 64 KiB) that `git rev-list --objects --all` reaches, in object-id
# order (random with respect to content), the first N at
# d<i/100>/<i>-<basename> (so a tree holds many versions of the same
# files, the near-duplicates groups must find). Then:
#
#   1. for each N: `groups <tree>` cold (an empty store: fingerprints and
#      chunk histograms computed and stored) and warm (the store filled),
#      with wall and CPU time, max RSS, load, the store's size, the growth
#      exponent between sizes, and the search's counts; with --peer,
#      another git-simm binary (an older build) warm on the same store
#      right after, its groups compared and the ratio of times printed;
#   2. `groups --all` on the whole clone (every blob of the source), after
#      `fingerprint --all -q` filled the fingerprint store: first run
#      (histograms computed) and warm (unless --no-all);
#   3. on the first --truth-files files (default 5000): the exact ground
#      truth (GIT_SIMM_GROUPS_EXHAUSTIVE=1: every size-compatible pair
#      scored, every pair at 80% reported), git-simm's groups at 80%
#      (plain git score, --no-ignore-common, as the truth is), and
#      `ssdeep -r -d -g` on the same files checked out (ssdeep 2.14 prints
#      only hashes for `-r -g`; `-d` makes it compare and cluster); for
#      each tool the
#      pairs it puts in one group, against the truth: recall and
#      precision, and the time (git-simm cold, with --no-cache, as ssdeep
#      hashes from scratch).
#
# Options:
#   --source-repo PATH  repository to take blobs from (default
#                       /work/.mirror/git+git/repo)
#   --sizes "N ..."     tree sizes (default "10000 30000 100000")
#   --truth-files N     files in the ground-truth comparison (default 5000)
#   --no-all            skip `groups --all`
#   --workdir DIR       where the clone and trees go (default: a new
#                       directory under /tmp, removed at the end unless --keep)
#   --git-simm BIN      binary to time (default: cargo build --release)
#   --no-build          use target/release/git-simm as it is
#   --peer BIN          another git-simm binary to time beside (warm runs,
#                       same store, alternating: peer, this, peer, this)
set -euo pipefail

die() { echo "groups.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit "${1:-0}"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source_repo=/work/.mirror/git+git/repo
sizes="10000 30000 100000"
truth_files=5000
run_all=1
workdir=
keep=0
build=1
simm_bin=
peer_bin=
while (($#)); do
  case $1 in
    --source-repo) source_repo=${2:?}; shift 2 ;;
    --sizes) sizes=${2?}; shift 2 ;;
    --truth-files) truth_files=${2:?}; shift 2 ;;
    --no-all) run_all=0; shift ;;
    --workdir) workdir=${2:?}; shift 2 ;;
    --keep) keep=1; shift ;;
    --git-simm) simm_bin=${2:?}; build=0; shift 2 ;;
    --no-build) build=0; shift ;;
    --peer) peer_bin=${2:?}; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "groups.sh: unknown argument: $1" >&2; usage 129 >&2 ;;
  esac
done
[[ $truth_files =~ ^[0-9]+$ ]] || die "--truth-files must be a number"
command -v python3 >/dev/null || die "python3 is not on PATH"
have_ssdeep=1
command -v ssdeep >/dev/null || { have_ssdeep=0; echo "ssdeep not installed (apt-get install ssdeep): skipping it" >&2; }

unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
  GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_NAMESPACE GIT_CEILING_DIRECTORIES
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
export GIT_AUTHOR_NAME=Bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=Bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_AUTHOR_DATE="1700000000 +0000" GIT_COMMITTER_DATE="1700000000 +0000"

# shellcheck source=benches/lib.sh
source "$here/benches/lib.sh"
use_workdir groups-bench

if ((build)); then
  cargo build --release --quiet --manifest-path "$here/Cargo.toml" || die "cargo build --release failed"
fi
[[ -n $simm_bin ]] || simm_bin=$here/target/release/git-simm
[[ -x $simm_bin ]] || die "no git-simm binary at $simm_bin"
cp "$simm_bin" "$workdir/git-simm"
simm=$workdir/git-simm
peer=
if [[ -n $peer_bin ]]; then
  [[ -x $peer_bin ]] || die "no git-simm binary at $peer_bin"
  cp "$peer_bin" "$workdir/git-simm-peer"
  peer=$workdir/git-simm-peer
fi

# timed LABEL OUT CMD...: run once, stdout to OUT; sets $elapsed, $cpu
# (user + sys) and $rss.
timed() {
  local label=$1 out=$2 t0 st=0
  shift 2
  t0=$(now)
  /usr/bin/time -f '%M %U %S' -o "$out.time" "$@" >"$out" 2>"$out.err" || st=$?
  elapsed=$(secs_since "$t0")
  rss=$(tail -n 1 "$out.time" | awk 'NF == 3 { printf "%d MB", $1 / 1024 }')
  cpu=$(tail -n 1 "$out.time" | awk 'NF == 3 { printf "%.2f", $2 + $3 }')
  ((st == 0)) || { sed 's/^/    | /' "$out.err" | head; die "$label failed (exit $st)"; }
  printf '  %-46s %8s s   (CPU %s s, max RSS %s, load %s)\n' "$label" "$elapsed" "$cpu" "$rss" "$(loadavg)"
}
store_size() { du -sh "$clone/simm" 2>/dev/null | cut -f1; }
stats() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["stats"]; print("    groups %d, files %d, blobs %d, candidate pairs %d (%s ruled out by the bound), scored %d, skipped as connected %d, linked %d, blobs read %d" % (len(d["groups"]), s["files"], s["blobs"], s["candidate_pairs"], s.get("filtered_pairs", "-"), s["scored_pairs"], s["connected_pairs"], s["linked_pairs"], s["blobs_read"]))' "$1"; }
# same_groups A B: whether two --json documents hold the same groups (as
# sets of paths).
same_groups() { python3 -c 'import json,sys; g=lambda f: sorted(sorted(m["path"] for m in x["members"]) for x in json.load(open(f))["groups"]); a,b=g(sys.argv[1]),g(sys.argv[2]); print("same groups" if a==b else "DIFFERENT groups: %d against %d" % (len(a), len(b)))' "$1" "$2"; }

echo "git-simm groups at scale"
echo "  source:  $source_repo"
echo "  binary:  $simm_bin ($("$simm" --version))"
echo "  crate:   $(git -C "$here" rev-parse --short HEAD)"
echo "  machine: $(nproc) cores, load $(loadavg)"
echo

clone=$workdir/src.git
git clone -q --bare --shared "$source_repo" "$clone"
git -C "$clone" rev-list --objects --all |
  git -C "$clone" cat-file --batch-check='%(objectname) %(objecttype) %(objectsize) %(rest)' |
  awk '$2 == "blob" && $3 >= 192 && $3 <= 65536 && NF >= 4 { n = split($4, p, "/"); print $1 " " p[n] }' |
  sort -u -k1,1 >"$workdir/pool"
pool=$(wc -l <"$workdir/pool")
echo "  pool: $pool blobs of 192 B - 64 KiB"

# make_tree N: refs/bench/groups<N>, the first N blobs of the pool.
make_tree() {
  local n=$1 idx=$workdir/index.$1 tree commit
  head -n "$n" "$workdir/pool" |
    awk '{ printf "100644 blob %s\td%d/%d-%s\n", $1, int((NR - 1) / 100), NR - 1, $2 }' |
    GIT_INDEX_FILE=$idx git -C "$clone" update-index --index-info
  tree=$(GIT_INDEX_FILE=$idx git -C "$clone" write-tree)
  commit=$(git -C "$clone" commit-tree -m "groups bench $n" "$tree")
  git -C "$clone" update-ref "refs/bench/groups$n" "$commit"
}

declare -A warm_t
prev_n=
for n in $sizes; do
  ((n <= pool)) || { echo "  N=$n: the pool has only $pool blobs, skipped"; continue; }
  make_tree "$n"
  echo "N=$n files:"
  # Cold: an empty store (the trees nest, so an earlier size's run would
  # have stored part of this one's).
  rm -rf "$clone/simm"
  timed "groups (cold: fingerprints, histograms computed)" "$workdir/cold.$n.json" \
    "$simm" -C "$clone" groups --json "refs/bench/groups$n"
  timed "groups (warm store)" "$workdir/warm.$n.json" \
    "$simm" -C "$clone" groups --json "refs/bench/groups$n"
  echo "    store: $(store_size)"
  warm_t[$n]=$elapsed
  stats "$workdir/warm.$n.json"
  if [[ -n $peer ]]; then
    for round in 1 2; do
      timed "peer groups (warm store), round $round" "$workdir/peer.$n.json" \
        "$peer" -C "$clone" groups --json "refs/bench/groups$n"
      peer_t=$elapsed peer_cpu=$cpu
      timed "groups (warm store), round $round" "$workdir/warm.$n.json" \
        "$simm" -C "$clone" groups --json "refs/bench/groups$n"
      awk -v a="$peer_t" -v b="$elapsed" -v c="$peer_cpu" -v d="$cpu" \
        'BEGIN { printf "    peer / this: wall x%.2f, CPU x%.2f\n", a / b, c / d }'
    done
    echo "    peer: $(stats "$workdir/peer.$n.json" | sed 's/^ *//'); $(same_groups "$workdir/peer.$n.json" "$workdir/warm.$n.json")"
  fi
  if [[ -n $prev_n ]]; then
    awk -v a="${warm_t[$prev_n]}" -v b="$elapsed" -v m="$prev_n" -v n="$n" \
      'BEGIN { printf "    growth from %d: time x%.2f for files x%.1f (exponent %.2f)\n", m, b / a, n / m, log(b / a) / log(n / m) }'
  fi
  prev_n=$n
done

if ((run_all)); then
  echo "--all (every blob of the source):"
  rm -rf "$clone/simm"
  timed "fingerprint --all -q (filling the store)" "$workdir/fp-all.out" \
    "$simm" -C "$clone" fingerprint --all -q
  timed "groups --all (first: histograms computed)" "$workdir/all-first.json" \
    "$simm" -C "$clone" groups --all --json
  timed "groups --all (warm store)" "$workdir/all.json" \
    "$simm" -C "$clone" groups --all --json
  stats "$workdir/all.json"
  echo "    blobs: $(git -C "$clone" cat-file --batch-all-objects --batch-check='%(objecttype)' | grep -c '^blob$'), store: $(store_size)"
fi

n=$truth_files
echo "ground truth on $n files (80%, plain git score):"
make_tree "$n"
timed "exhaustive exact scoring (ground truth)" "$workdir/truth.json" \
  env GIT_SIMM_GROUPS_EXHAUSTIVE=1 "$simm" -C "$clone" groups --json --no-ignore-common "refs/bench/groups$n"
timed "git-simm groups --no-cache" "$workdir/simm-cold.json" \
  "$simm" -C "$clone" groups --json --no-ignore-common --no-cache "refs/bench/groups$n"
timed "git-simm groups (warm store)" "$workdir/simm.json" \
  "$simm" -C "$clone" groups --json --no-ignore-common "refs/bench/groups$n"
files=$workdir/files
mkdir -p "$files"
git -C "$clone" archive "refs/bench/groups$n" | tar -x -C "$files"
if ((have_ssdeep)); then
  timed "ssdeep -r -d -g" "$workdir/ssdeep.out" ssdeep -r -d -g "$files"
fi
echo "ground truth on $n files (80%, boilerplate out, the default score):"
timed "exhaustive exact scoring, boilerplate out" "$workdir/truth-bp.json" \
  env GIT_SIMM_GROUPS_EXHAUSTIVE=1 "$simm" -C "$clone" groups --json "refs/bench/groups$n"
timed "git-simm groups (warm store)" "$workdir/simm-bp.json" \
  "$simm" -C "$clone" groups --json "refs/bench/groups$n"
python3 - "$workdir" "$files" "$have_ssdeep" <<'EOF'
import itertools, json, os, sys
work, files, have_ssdeep = sys.argv[1], sys.argv[2], sys.argv[3] == "1"

def paths_of(doc):
    return [[m["path"] for m in g["members"]] for g in doc["groups"]]

def truth_pairs(name):
    truth = json.load(open(os.path.join(work, name)))
    pairs = set()
    for g in truth["groups"]:
        members = [m["path"] for m in g["members"]]
        for l in g["links"]:
            pairs.add(frozenset((members[l["a"]], members[l["b"]])))
    return pairs

def measure(name, groups, true_pairs):
    pairs = set()
    for g in groups:
        for a, b in itertools.combinations(sorted(set(g)), 2):
            pairs.add(frozenset((a, b)))
    hit = len(pairs & true_pairs)
    recall = hit / len(true_pairs) if true_pairs else 1.0
    precision = hit / len(pairs) if pairs else 1.0
    print(f"  {name:<40} groups {len(groups):5d}  pairs {len(pairs):7d}  recall {recall:.4f}  precision {precision:.4f}  missed {len(true_pairs) - hit}")

def simm(name):
    doc = json.load(open(os.path.join(work, name)))
    return paths_of(doc), doc["stats"]

plain = truth_pairs("truth.json")
print(f"  plain git score: true pairs (>= 80%): {len(plain)}")
measure("git-simm groups --no-ignore-common", simm("simm.json")[0], plain)
if have_ssdeep:
    groups, cur = [], None
    prefix = files.rstrip("/") + "/"
    for line in open(os.path.join(work, "ssdeep.out"), errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("** Cluster size"):
            cur = []
            groups.append(cur)
        elif line.strip() and cur is not None:
            cur.append(line.strip().removeprefix(prefix))
    measure("ssdeep -r -d -g", groups, plain)
bp = truth_pairs("truth-bp.json")
print(f"  boilerplate out: true pairs (>= 80%): {len(bp)}")
g, s = simm("simm-bp.json")
measure("git-simm groups", g, bp)
print(f"    {s['common_chunks']} common chunks")
EOF
echo "  load after: $(loadavg)"
