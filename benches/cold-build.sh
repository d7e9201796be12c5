#!/usr/bin/env bash
# What a user pays before anything works: a cold release build of this
# crate with and without the default `export` feature (arrow, parquet),
# one after the other or side by side, each with an empty target directory
# and its own CARGO_HOME holding a copy of this machine's registry (so
# nothing is downloaded: the time is compiling). Prints wall and CPU time
# (user + system, all rustc processes) of each; CPU is what the machine's
# load changes least.
#
#   benches/cold-build.sh [--parallel] [--workdir DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
parallel=0
work=$(mktemp -d /tmp/cold-build.XXXXXX)
while (($#)); do
  case $1 in
    --parallel) parallel=1; shift ;;
    --workdir) work=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--parallel] [--workdir DIR]" >&2; exit 2 ;;
  esac
done
registry=${CARGO_HOME:-$HOME/.cargo}/registry
(cd "$here" && cargo fetch --locked >/dev/null)

one() {
  local name=$1; shift
  mkdir -p "$work/home-$name"
  cp -r "$registry" "$work/home-$name/"
  CARGO_HOME=$work/home-$name CARGO_TARGET_DIR=$work/target-$name \
    /usr/bin/time -f "$name: wall %e s, cpu %U s user + %S s sys, max rss %M KB" \
    cargo build --release --locked --offline --manifest-path "$here/Cargo.toml" "$@" \
    > "$work/$name.log" 2>&1
  tail -1 "$work/$name.log"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((parallel)); then
  one default & one no-export --no-default-features & wait
else
  one default
  one no-export --no-default-features
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
