#!/usr/bin/env python3
"""Where one run's time goes, interval by interval: how many threads were
busy and on what, from a `perf record` of the run.

    perf record -F 20000 -o run.data -- target/release/git-simm renames HEAD~1 HEAD
    benches/timeline.py run.data [--ms 1] [--top 2] [--below N]

Prints, for each interval of --ms milliseconds from the first sample, the
samples taken in it, how many threads they came from, and the symbols
most sampled. With perf sampling every thread at F Hz, an interval on
which two threads worked through holds about 2 * F * ms / 1000 samples;
a phase where one thread works alone shows as rows at half that. --below
N prints only the rows with fewer than N samples (the serial stretches).

Works on recordings with or without call graphs (`-g`): only each
sample's own symbol counts. Needs `perf` on PATH.
"""

import argparse
import collections
import re
import signal
import subprocess
import sys

SAMPLE = re.compile(r"^\s*(\d+)\s+([0-9.]+):\s+([0-9a-f]+)\s+(.*?)\s*$")


def samples(path):
    """(time in seconds, thread id, symbol) of every sample of `path`."""
    try:
        out = subprocess.run(
            ["perf", "script", "-i", path, "-F", "tid,time,ip,sym", "--hide-call-graph"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except FileNotFoundError:
        sys.exit("timeline.py: perf is not on PATH")
    except subprocess.CalledProcessError as e:
        sys.exit(f"timeline.py: perf script failed: {e.stderr.strip()}")
    for line in out.splitlines():
        m = SAMPLE.match(line)
        if m:
            tid, time, _, sym = m.groups()
            # "name+0x1f (dso)": the name is what identifies the code.
            name = re.sub(r"\+0x[0-9a-f]+.*$", "", sym) or "[unknown]"
            yield float(time), int(tid), name


def main():
    # Piped into `head`, stop quietly as other command-line tools do.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a perf.data file")
    ap.add_argument("--ms", type=float, default=1.0, help="interval length (default 1)")
    ap.add_argument("--top", type=int, default=2, help="symbols shown a row (default 2)")
    ap.add_argument("--below", type=int, help="only rows with fewer samples than this")
    args = ap.parse_args()
    rows = list(samples(args.data))
    if not rows:
        sys.exit(f"timeline.py: no samples in {args.data}")
    start = min(t for t, _, _ in rows)
    threads = collections.defaultdict(set)
    count = collections.Counter()
    symbols = collections.defaultdict(collections.Counter)
    for t, tid, sym in rows:
        k = int((t - start) * 1000 / args.ms)
        threads[k].add(tid)
        count[k] += 1
        symbols[k][sym[:60]] += 1
    for k in sorted(count):
        if args.below is not None and count[k] >= args.below:
            continue
        top = ", ".join(f"{s} {n}" for s, n in symbols[k].most_common(args.top))
        print(f"{k * args.ms:8.1f} ms  {count[k]:4d} samples  {len(threads[k])} threads  {top}")


if __name__ == "__main__":
    main()
