#!/usr/bin/env bash
# What a user pays before anything works: a cold release build of this
# crate with and without the default `export` feature (arrow, parquet),
# one after the other or side by side, each with an empty target directory
# and its own CARGO_HOME holding a copy of this machine's registry index
# and downloaded .crate files (so nothing is downloaded: the time is
# unpacking and compiling). Prints wall and CPU time (user + system, all
# rustc processes) of each; CPU is what the machine's load changes least.
#
#   benches/cold-build.sh [--parallel] [--install] [--workdir DIR]
#
# --install runs `cargo install --path . --locked` (into DIR/root-NAME)
# instead of `cargo build --release --locked`: the same release profile.
# A DIR given is reused: the script removes only what it made there
# (home-*, target-*, root-*, *.log of the two builds) before each build.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
parallel=0
install=0
work=
while (($#)); do
  case $1 in
    --parallel) parallel=1; shift ;;
    --install) install=1; shift ;;
    --workdir) work=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--parallel] [--install] [--workdir DIR]" >&2; exit 2 ;;
  esac
done
if [[ -z $work ]]; then work=$(mktemp -d /tmp/cold-build.XXXXXX); fi
mkdir -p "$work"
registry=${CARGO_HOME:-$HOME/.cargo}/registry
(cd "$here" && cargo fetch --locked >/dev/null)

one() {
  local name=$1; shift
  local home=$work/home-$name target=$work/target-$name root=$work/root-$name
  rm -rf "$home" "$target" "$root" "$work/$name.log"
  mkdir -p "$home/registry"
  # The index and the .crate files, not the unpacked sources: unpacking
  # is part of what a user pays.
  cp -r "$registry/index" "$registry/cache" "$home/registry/"
  local cmd=(cargo build --release --locked --offline --manifest-path "$here/Cargo.toml")
  if ((install)); then
    cmd=(cargo install --locked --offline --path "$here" --root "$root")
  fi
  if ! CARGO_HOME=$home CARGO_TARGET_DIR=$target \
    /usr/bin/time -f "$name: wall %e s, cpu %U s user + %S s sys, max rss %M KB" \
    "${cmd[@]}" "$@" > "$work/$name.log" 2>&1; then
    echo "$name: failed ($work/$name.log):" >&2
    tail -20 "$work/$name.log" >&2
    return 1
  fi
  echo "$(tail -1 "$work/$name.log"), $(grep -c '^ *Compiling ' "$work/$name.log") crates compiled"
}
echo "machine: $(nproc) cores, $(rustc --version), $( ((install)) && echo 'cargo install --path .' || echo 'cargo build --release')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((parallel)); then
  one default & a=$!
  one no-export --no-default-features & b=$!
  wait "$a"; wait "$b"
else
  one default
  one no-export --no-default-features
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
