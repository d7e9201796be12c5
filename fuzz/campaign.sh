#!/usr/bin/env bash
# Run fuzz targets one after another for a fixed time each and print a
# table row per target: executions, seconds, crash files left in
# artifacts/. Usage (from the repository's top or fuzz/):
#
#   fuzz/campaign.sh <seconds> [target...]     (default: every target)
#
# Runs the binaries `cargo +nightly fuzz build -O` left (copied aside
# first, so that a rebuild during a campaign changes nothing under it)
# under `nice -n 10`, one core per target; corpora in fuzz/corpus/<target>
# (seed them with fuzz/seed.py first), logs in fuzz/logs/<target>.log.
# Extra libFuzzer flags: FUZZ_FLAGS.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:?usage: campaign.sh <seconds> [target...]}
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <(cd fuzz_targets && ls | sed 's/\.rs$//')
mkdir -p logs bin
built=target/x86_64-unknown-linux-gnu/release
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  before=$(find "artifacts/$t" -type f | wc -l)
  start=$(date +%s)
  cp "$built/$t" "bin/$t.$$"
  # libFuzzer exits non-zero on a finding; the row still gets printed.
  nice -n 10 "bin/$t.$$" "corpus/$t" -artifact_prefix="artifacts/$t/" \
    -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 \
    -timeout=20 ${FUZZ_FLAGS:-} >"logs/$t.log" 2>&1 || true
  rm -f "bin/$t.$$"
  took=$(($(date +%s) - start))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "logs/$t.log" | tail -n 1 | grep -o '[0-9]*$' || true)
  after=$(find "artifacts/$t" -type f | wc -l)
  corpus=$(find "corpus/$t" -type f | wc -l)
  printf '%s\t%s\t%ss\tcorpus %s\tnew artifacts %s\n' "$t" "${execs:-?}" "$took" "$corpus" "$((after - before))"
done
