#!/usr/bin/env python3
"""Helper of benches/renames-scale.sh (python3, standard library only).

  make-moves.py pool --per-path K [--min-size B] [--max-size B] [--seed S]
      [--need N...] <checked >pool
  make-moves.py build --source GIT_DIR --pool POOL --n N --pairs FILE
      [--seed S] >fast-import-stream

`pool` reads `git cat-file --batch-check='%(objectname) %(objecttype)
%(objectsize) %(rest)'` lines fed with `git rev-list --objects --all` (so
%(rest) is the path a blob was first seen at, newest commits first) and
prints candidates, `<blob id> <extension>` (from the path's name, else
txt), one a line, in the order `build` uses them:

- only blobs of min-size to max-size bytes;
- at most K versions per path, spread evenly over that path's history;
- round-robin over paths (in a seeded random order): first one version of
  every path, then a second one, as far as possible in history from the
  first, and so on. Any prefix of the list is as free of near-duplicate
  versions as the corpus allows;
- with --even-sizes B, round-robin over B size bins of equal width instead
  (each in the order above): any prefix then spreads its sizes evenly over
  min-size..max-size, as far as each bin lasts, where real repositories
  hold mostly small files.

For each --need N larger than the pool, it prints `need: N=<n>
per-path=<k>` to stderr: the smallest K that would give N candidates.

`build` reads candidates from the pool in order, fetches them from the
source repository with `git cat-file --batch` (read only), skips any with a
NUL byte (binary) until it has N, and writes a `git fast-import` stream of
two commits on refs/heads/main:

1. the N blobs at old/d<i/50>/f<i>.<ext> (50 files a directory, the
   extension the blob's original path had);
2. every file moved to new/e<j/50>/g<j>_<tag>.<ext> (a new directory and a
   new basename: j is a seeded permutation of i, tag 6 random hex digits),
   and a third of them edited: a few lines deleted, inserted or replaced
   and/or a few 50-byte substitutions with text from other corpus files,
   about 10% of the file at most, so git's score stays well above 50%.

It writes the expected pairs, `<old path>TAB<new path>TAB<edited 0|1>`, to
--pairs, and exits with status 3 if the pool has fewer than N text blobs.
Everything is deterministic for a given pool, N and seed.
"""

import argparse
import random
import re
import subprocess
import sys
from collections import OrderedDict

AUTHOR = b"Bench <bench@example.com>"
DATE1 = b"1700000000 +0000"
DATE2 = b"1700086400 +0000"
PER_DIR = 50
SUB_LEN = 50
EXT_RE = re.compile(rb"\.([A-Za-z0-9]{1,6})$")


def spread_order(k):
    """Positions 0..k-1 ordered so that every prefix is spread out:
    0, k-1, then midpoints of the gaps, breadth first."""
    if k <= 0:
        return []
    if k == 1:
        return [0]
    order = [0, k - 1]
    seen = {0, k - 1}
    gaps = [(0, k - 1)]
    while gaps:
        nxt = []
        for lo, hi in gaps:
            if hi - lo < 2:
                continue
            mid = (lo + hi) // 2
            if mid not in seen:
                seen.add(mid)
                order.append(mid)
            nxt.append((lo, mid))
            nxt.append((mid, hi))
        gaps = nxt
    return order


def cmd_pool(args):
    by_path = OrderedDict()
    ext_of = {}  # the extension files of a path get, from its name
    size_of = {}
    seen = set()
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\n")
        parts = line.split(b" ", 3)
        if len(parts) < 3 or parts[1] != b"blob":
            continue  # trees, commits, tags, "<id> missing"
        oid, size = parts[0], int(parts[2])
        if not (args.min_size <= size <= args.max_size) or oid in seen:
            continue
        seen.add(oid)
        size_of[oid] = size
        path = parts[3] if len(parts) > 3 else b""
        by_path.setdefault(path, []).append(oid)
        if path not in ext_of:
            m = EXT_RE.search(path)
            ext_of[path] = m.group(1).lower() if m else b"txt"

    ranked = []  # per path: the chosen versions, in spread order
    for path, oids in by_path.items():
        m = len(oids)
        if m > args.per_path:
            k = args.per_path
            if k == 1:
                picks = [oids[m // 2]]
            else:
                picks = [oids[round(j * (m - 1) / (k - 1))] for j in range(k)]
        else:
            picks = oids
        ranked.append([(picks[j], ext_of[path]) for j in spread_order(len(picks))])
    random.Random(args.seed).shuffle(ranked)

    order = []
    depth = max((len(r) for r in ranked), default=0)
    for rnd in range(depth):
        for r in ranked:
            if rnd < len(r):
                order.append(r[rnd])
    if args.even_sizes:
        width = (args.max_size - args.min_size + 1) / args.even_sizes
        bins = [[] for _ in range(args.even_sizes)]
        for oid, ext in order:
            b = min(int((size_of[oid] - args.min_size) / width), args.even_sizes - 1)
            bins[b].append((oid, ext))
        order = []
        for rnd in range(max((len(b) for b in bins), default=0)):
            order.extend(b[rnd] for b in bins if rnd < len(b))
    out = sys.stdout.buffer
    for oid, ext in order:
        out.write(oid + b" " + ext + b"\n")
    counts = [len(o) for o in by_path.values()]
    for n in args.need:
        if sum(min(c, args.per_path) for c in counts) >= n:
            continue
        if len(seen) < n:
            print(f"need: N={n} per-path=none (only {len(seen)} blobs of that size "
                  f"in all)", file=sys.stderr)
            continue
        lo, hi = args.per_path, max(counts)  # smallest cap that gives n
        while lo < hi:
            mid = (lo + hi) // 2
            if sum(min(c, mid) for c in counts) >= n:
                hi = mid
            else:
                lo = mid + 1
        print(f"need: N={n} per-path={lo}", file=sys.stderr)
    print(
        f"pool: {len(seen)} blobs of {args.min_size}..{args.max_size} bytes at "
        f"{len(by_path)} paths; {sum(len(r) for r in ranked)} kept with at most "
        f"{args.per_path} versions a path",
        file=sys.stderr,
    )


class Source:
    """Blobs from `git cat-file --batch`, one request at a time."""

    def __init__(self, git_dir):
        self.proc = subprocess.Popen(
            ["git", "--git-dir=" + git_dir, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def get(self, oid):
        self.proc.stdin.write(oid + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)  # LF
        if len(data) != size:
            raise SystemExit("make-moves.py: short read from git cat-file --batch")
        return data

    def close(self):
        self.proc.stdin.close()
        self.proc.stdout.close()
        if self.proc.wait() != 0:
            raise SystemExit("make-moves.py: git cat-file --batch failed")


def edit(data, donors, rng):
    """A realistic edit of `data`: line edits, 50-byte substitutions, or both,
    changing roughly 3..10% of the file."""
    kind = rng.random()
    out = data
    if kind < 0.6:  # line edits
        lines = out.splitlines(keepends=True)
        budget = max(1, len(lines) // 12)  # lines touched in all
        ops = rng.randint(1, 3)
        for _ in range(ops):
            if budget <= 0 or not lines:
                break
            run = rng.randint(1, min(5, budget))
            budget -= run
            at = rng.randrange(len(lines) + 1)
            op = rng.random()
            if op < 0.34:  # delete
                del lines[at:at + run]
            else:  # insert (or replace) lines from another file
                donor = rng.choice(donors).splitlines(keepends=True) or [b"\n"]
                s = rng.randrange(len(donor))
                new = donor[s:s + run]
                if new and not new[-1].endswith(b"\n"):
                    new[-1] += b"\n"
                if op < 0.67:
                    lines[at:at + run] = new  # replace
                else:
                    lines[at:at] = new  # insert
        out = b"".join(lines)
    if kind >= 0.4:  # 50-byte substitutions from other real text
        subs = max(1, min(6, len(out) // 1500))
        buf = bytearray(out)
        for _ in range(subs):
            donor = rng.choice(donors)
            if len(donor) < SUB_LEN or len(buf) < SUB_LEN:
                continue
            d = rng.randrange(len(donor) - SUB_LEN + 1)
            o = rng.randrange(len(buf) - SUB_LEN + 1)
            buf[o:o + SUB_LEN] = donor[d:d + SUB_LEN]
        out = bytes(buf)
    if out == data:
        out = data + b"/* edited */\n"
    return out


def cmd_build(args):
    n = args.n
    rng = random.Random(args.seed * 1000003 + n)
    with open(args.pool, "rb") as f:
        pool = [l.split() for l in f if l.strip()]
    if len(pool) < n:
        print(f"make-moves.py: the pool has only {len(pool)} candidate blobs, "
              f"fewer than N = {n}", file=sys.stderr)
        sys.exit(3)

    edited = set(rng.sample(range(n), n // 3))
    perm = list(range(n))
    rng.shuffle(perm)

    out = sys.stdout.buffer
    src = Source(args.source)
    old_paths, new_paths, marks_old, marks_new = [], [], [], []
    donors = []  # recent corpus texts, the source of inserted text
    mark = 0
    skipped = 0
    take = iter(pool)
    for i in range(n):
        while True:
            cand = next(take, None)
            if cand is None:
                src.close()
                print(f"make-moves.py: only {i} text blobs among the {len(pool)} "
                      f"candidates ({skipped} binary), fewer than N = {n}",
                      file=sys.stderr)
                sys.exit(3)
            oid, path_ext = cand[0], (cand[1] if len(cand) > 1 else b"txt")
            data = src.get(oid)
            if data is not None and b"\0" not in data:
                break
            skipped += 1
        mark += 1
        out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        out.write(data)
        out.write(b"\n")
        m_old = mark
        m_new = m_old
        if i in edited:
            new = edit(data, donors or [data], rng)
            mark += 1
            out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(new)))
            out.write(new)
            out.write(b"\n")
            m_new = mark
        donors.append(data)
        if len(donors) > 64:
            donors.pop(0)
        j = perm[i]
        old_paths.append(b"old/d%d/f%d.%s" % (i // PER_DIR, i, path_ext))
        new_paths.append(b"new/e%d/g%d_%06x.%s" % (j // PER_DIR, j, rng.getrandbits(24), path_ext))
        marks_old.append(m_old)
        marks_new.append(m_new)
    src.close()

    def commit(msg, date, own_mark, parent, paths, marks):
        msg = msg.encode()
        out.write(b"commit refs/heads/main\nmark :%d\n" % own_mark)
        out.write(b"author %s %s\ncommitter %s %s\n" % (AUTHOR, date, AUTHOR, date))
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if parent is not None:
            out.write(b"from :%d\ndeleteall\n" % parent)
        for p, m in zip(paths, marks):
            out.write(b"M 100644 :%d %s\n" % (m, p))
        out.write(b"\n")

    commit(f"{n} files", DATE1, mark + 1, None, old_paths, marks_old)
    commit(f"move {n} files to new directories and names, edit {len(edited)}",
           DATE2, mark + 2, mark + 1, new_paths, marks_new)
    out.write(b"done\n")
    out.flush()

    with open(args.pairs, "wb") as f:
        for i in range(n):
            f.write(b"%s\t%s\t%d\n" % (old_paths[i], new_paths[i], i in edited))
    print(f"corpus: {n} blobs ({skipped} binary candidates skipped), "
          f"{len(edited)} edited", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pool")
    p.add_argument("--per-path", type=int, default=20)
    p.add_argument("--min-size", type=int, default=1024)
    p.add_argument("--max-size", type=int, default=65536)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--even-sizes", type=int, default=0, metavar="B",
                   help="spread sizes evenly over B bins of the size range")
    p.add_argument("--need", type=int, nargs="*", default=[],
                   help="sizes N to report the --per-path needed for, if larger")
    b = sub.add_parser("build")
    b.add_argument("--source", required=True, help="git dir of the source repository")
    b.add_argument("--pool", required=True)
    b.add_argument("--n", type=int, required=True)
    b.add_argument("--pairs", required=True)
    b.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "pool":
        if args.per_path < 1:
            ap.error("--per-path must be at least 1")
        cmd_pool(args)
    else:
        cmd_build(args)


if __name__ == "__main__":
    main()
