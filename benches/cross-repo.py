#!/usr/bin/env python3
"""Similar files across repositories on existing engines.

Exports N repositories with `git simm export`, runs queries/near-duplicates.sql
and queries/contains.sql on DuckDB, Apache DataFusion and Apache Spark (local
mode), prints each engine's time and result size, checks that every engine
returns the same pairs, and checks the pairs against git-simm's exact score:

  - every reported pair is re-scored by `git simm similar` (the file of one
    repository against the other repository's tree, git's rename score);
  - a seeded sample of files (default 200) is searched with `git simm
    similar --limit 0` in every other repository: the pairs at 80% or more
    that it finds are the truth the query's recall is measured against.

  python3 benches/cross-repo.py run --git-simm target/release/git-simm \\
      --workdir /tmp/xr redis=/path/redis.git hiredis=/path/hiredis.git ...
  python3 benches/cross-repo.py scale --rows 10000000 --workdir /tmp/xr

`scale` replicates the exports made by `run` (in --workdir) to the number of
rows asked for (families of ten: an unrelated repository, its fingerprints
XORed with a random mask, its band keys re-hashed, except the keys real
unrelated files share by chance, and its signature sketches' symbols
renamed, and nine forks of it with a few bits flipped and one file in five
edited, its sketches too; `cmd_scale` explains why), then times
near-duplicates.sql on DuckDB over growing numbers of replicas, each step in
its own process (`scale-step`) with its peak memory and spill (with
--unfiltered, the query without its signature filter too, and the ratio),
and prints Spark's plan (EXPLAIN FORMATTED) over all replicas with
--explain.

Needs: pip install duckdb datafusion pyspark pyarrow numpy, and Java 17 for
Spark. Engines whose module is missing are skipped with a note (CI may skip
the whole script). Not part of `cargo test`.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
QUERIES = HERE / "queries"

# Band keys of export schema 2002 (src/similarity/bands.rs).
BANDS = 32


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def log(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- engines


def xor_udfs():
    """DataFusion has `^` but neither xor() nor bit_count(): vectorised UDFs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from datafusion import udf

    def xor(a, b):
        return pc.bit_wise_xor(a, b)

    def bit_count(a):
        arr = a.to_numpy(zero_copy_only=False)
        mask = pc.is_null(a).to_numpy(zero_copy_only=False)
        vals = np.bitwise_count(np.nan_to_num(arr).astype(np.int64).view(np.uint64))
        return pa.array(vals.astype(np.int64), mask=mask)

    return [
        udf(xor, [pa.int64(), pa.int64()], pa.int64(), "immutable", name="xor"),
        udf(bit_count, [pa.int64()], pa.int64(), "immutable", name="bit_count"),
    ]


class DuckDB:
    name = "duckdb"

    def __init__(self, files):
        import duckdb

        self.con = duckdb.connect()
        # Spills go beside the exports, never into the current directory.
        spill = Path(files[0]).parent.parent / "duckdb-tmp"
        self.con.execute(f"SET temp_directory = '{spill}'")
        self.con.execute("SET max_temp_directory_size = '6GB'")
        lst = ", ".join(f"'{f}'" for f in files)
        self.con.execute(f"CREATE VIEW fingerprints AS SELECT * FROM read_parquet([{lst}])")

    def run(self, sql):
        return [tuple(r) for r in self.con.execute(sql).fetchall()]

    def explain(self, sql):
        return "\n".join(r[1] for r in self.con.execute("EXPLAIN " + sql).fetchall())


class DataFusion:
    name = "datafusion"

    def __init__(self, files):
        import datafusion

        self.ctx = datafusion.SessionContext()
        import pyarrow.dataset as ds

        self.ctx.register_dataset("fingerprints", ds.dataset([str(f) for f in files], format="parquet"))
        for u in xor_udfs():
            self.ctx.register_udf(u)

    def run(self, sql):
        t = self.ctx.sql(sql).to_arrow_table()
        cols = [t.column(i).to_pylist() for i in range(t.num_columns)]
        return list(zip(*cols))


class Spark:
    name = "spark"

    def __init__(self, files):
        from pyspark.sql import SparkSession

        self.spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "3g")
            .config("spark.sql.shuffle.partitions", "8")
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.spark.sql(
            "CREATE OR REPLACE TEMPORARY FUNCTION xor(a BIGINT, b BIGINT) RETURNS BIGINT RETURN a ^ b"
        )
        self.spark.read.parquet(*[str(f) for f in files]).createOrReplaceTempView("fingerprints")

    def run(self, sql):
        return [tuple(r) for r in self.spark.sql(sql).collect()]

    def explain(self, sql):
        return self.spark.sql(sql)._jdf.queryExecution().explainString(
            self.spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
        )


ENGINES = {"duckdb": DuckDB, "datafusion": DataFusion, "spark": Spark}
MODULES = {"duckdb": "duckdb", "datafusion": "datafusion", "spark": "pyspark"}


def engines_available(names):
    import importlib.util

    out = []
    for n in names:
        if importlib.util.find_spec(MODULES[n]) is None:
            log(f"note: {n} skipped ({MODULES[n]} is not installed)")
        else:
            out.append(n)
    return out


def timed(f, *a):
    t = time.perf_counter()
    r = f(*a)
    return r, time.perf_counter() - t


def near_sql(estimate_min=None):
    """near-duplicates.sql, with the signature filter's threshold changed
    when asked (0: the query without the filter, for calibration)."""
    text = (QUERIES / "near-duplicates.sql").read_text()
    if estimate_min is None:
        return text
    old = "WHERE symbols * 100 <= (100 - 75) * longer"
    assert old in text, "near-duplicates.sql: the threshold's line changed"
    return text.replace(old, f"WHERE symbols * 100 <= (100 - {estimate_min}) * longer")


def unfiltered_sql(text):
    """near-duplicates.sql without its signature filter: the band-key
    candidates go to the ranking as they are (no sketch read, no
    levenshtein), ranked by fingerprint distance alone (every estimate the
    same), which is the query as it stands without the filter."""
    start, end = text.index("signatures AS ("), text.index("pairs AS (")
    assert start < end and "estimated AS (" in text[start:end], "near-duplicates.sql: the filter's CTEs changed"
    plain = "estimated AS (\n  SELECT version, blob_a, blob_b, distance, 100 AS estimate FROM candidates\n),\n"
    return text[:start] + plain + text[end:]


def contains_sql(repo, directory):
    text = (QUERIES / "contains.sql").read_text()
    # The one documented edit: the parameters' line.
    return text.replace("'redis' AS repo, 'deps/hiredis/' AS dir", f"'{repo}' AS repo, '{directory}' AS dir")


# ---------------------------------------------------------------- git-simm


def export(simm, name, git_dir, out):
    t = time.perf_counter()
    p = subprocess.run(
        [simm, "-C", git_dir, "export", "--name", name, "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        sys.exit(f"export of {name} failed: {p.stderr}")
    return time.perf_counter() - t, p.stderr.strip()


def similar(simm, git_dir, query_file):
    """git simm similar --limit 0 at 80%, git's score: {path: (score, distance)}."""
    p = subprocess.run(
        # git's plain score: `similar` weighs the tree's boilerplate down
        # unless told not to.
        [simm, "-C", git_dir, "similar", "--no-ignore-common", "--json", "--threshold", "80", "--limit", "0", str(query_file), "HEAD"],
        capture_output=True,
        text=True,
    )
    if p.returncode not in (0, 1):
        sys.exit(f"similar failed in {git_dir}: {p.stderr}")
    doc = json.loads(p.stdout) if p.stdout.strip() else {"matches": []}
    return {m["path"]: (m["score"], m.get("distance")) for m in doc["matches"]}


def blob_content(git_dir, blob):
    return subprocess.run(["git", "-C", git_dir, "cat-file", "blob", blob], capture_output=True, check=True).stdout


class Scorer:
    """Exact scores of (file of repo A) against repo B's tree, cached per
    (blob, repo B): one `similar` run answers every path of B."""

    def __init__(self, simm, repos, tmp, workdir):
        self.simm, self.repos, self.tmp, self.cache, self.runs = simm, repos, Path(tmp), {}, 0
        self.workdir = workdir

    def matches(self, repo_a, blob_a, repo_b):
        key = (blob_a, repo_b)
        if key not in self.cache:
            f = self.tmp / f"q-{blob_a}"
            if not f.exists():
                f.write_bytes(blob_content(self.repos[repo_a], blob_a))
            self.cache[key] = similar(self.simm, self.repos[repo_b], f)
            self.runs += 1
        return self.cache[key]


# ---------------------------------------------------------------- run


def cmd_run(args):
    work = Path(args.workdir)
    (work / "pq").mkdir(parents=True, exist_ok=True)
    repos = {}
    for spec in args.repos:
        name, _, path = spec.partition("=")
        repos[name] = os.path.abspath(path)
    log(f"load {load()}")
    files = []
    for name, path in repos.items():
        out = work / "pq" / f"{name}.parquet"
        secs, msg = export(args.git_simm, name, path, out)
        log(f"export {name:<10} {secs:6.2f} s  {msg}")
        files.append(out)

    import pyarrow.parquet as pq

    table = pq.read_table(files, columns=["repo", "path", "blob", "size", "fingerprint", "mh0"])
    rows = table.num_rows
    log(f"{rows} rows in {len(files)} exports, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB")

    near = near_sql(args.estimate_min)
    results = {}
    contains_results = {}
    for eng in engines_available(args.engines):
        e, setup = timed(ENGINES[eng], files)
        r, secs = timed(e.run, near)
        r2, secs2 = timed(e.run, near)  # warm
        pairs = {(x[0], x[3], x[6], x[9]) for x in r}
        results[eng] = (pairs, r)
        log(f"{eng:<10} near-duplicates: {len(r)} rows, {secs:.2f} s cold, {secs2:.2f} s warm (setup {setup:.1f} s), load {load()}")
        if args.contains:
            repo, _, d = args.contains.partition(":")
            c, secs = timed(e.run, contains_sql(repo, d))
            contains_results[eng] = c
            log(f"{eng:<10} contains {args.contains}: {len(c)} rows, {secs:.2f} s")
            for line in c[:5]:
                log("    ", line)
    names = list(results)
    if not names:
        return
    same = all(results[n][0] == results[names[0]][0] for n in names)
    log(f"pairs identical on {', '.join(names)}: {same}")
    for n in names[1:]:
        a, b = results[names[0]][0], results[n][0]
        if a != b:
            log(f"  {names[0]} only: {sorted(a - b)[:5]}  {n} only: {sorted(b - a)[:5]}")
    if contains_results:
        c0 = list(contains_results.values())[0]
        # Spark returns ROUND(...) as a decimal, the others as a double.
        norm = lambda rows: sorted(tuple(float(v) if hasattr(v, "as_tuple") else v for v in r) for r in rows)
        log(f"contains identical: {all(norm(c) == norm(c0) for c in contains_results.values())}")
    reported = results[names[0]][1]
    (work / "pairs.json").write_text(json.dumps(reported))

    with tempfile.TemporaryDirectory() as tmp:
        scorer = Scorer(args.git_simm, repos, tmp, args.workdir)
        check_pairs(reported, scorer)
        for seed in args.seed:
            recall(table, reported, scorer, args, repos, seed)


def check_pairs(reported, scorer):
    """Every reported pair re-scored exactly."""
    t = time.perf_counter()
    scores, confirmed, scored = [], [], []
    for row in reported:
        repo_a, _, path_a, blob_a, _, _, repo_b, _, path_b, blob_b, _, _, dist = row[:13]
        m = scorer.matches(repo_a, blob_a, repo_b)
        # One representative path per blob: git's score is the same at
        # every path of blob_b.
        score = m.get(path_b, (0, None))[0]
        scores.append((score, dist))
        scored.append(list(row) + [score])
        if score >= 80:
            confirmed.append(list(row) + [score])
    ok = sum(1 for s, _ in scores if s >= 80)
    log(
        f"check: {len(scores)} reported pairs re-scored by git simm similar ({scorer.runs} runs, "
        f"{time.perf_counter() - t:.1f} s): {ok} at >= 80% (kept, pairs-confirmed.json), {len(scores) - ok} below"
    )
    # What the pipeline reports in the end: the pairs git's score confirms.
    Path(scorer.workdir, "pairs-confirmed.json").write_text(json.dumps(confirmed))
    # Every pair with its score: what estimate_table() reads.
    Path(scorer.workdir, "pairs-scored.json").write_text(json.dumps(scored))
    below = sorted(d for s, d in scores if s < 80)
    if below:
        log(f"  distances of the pairs below 80%: {below[:20]}{' ...' if len(below) > 20 else ''}")
    return ok


def recall(table, reported, scorer, args, repos, seed):
    """Files sampled, searched in every other repository by `similar`."""
    import pyarrow.compute as pc

    fp = table.filter(pc.is_valid(table.column("fingerprint")))
    rows = fp.select(["repo", "path", "blob"]).to_pylist()
    blob_at = {(r["repo"], r["path"]): r["blob"] for r in table.select(["repo", "path", "blob"]).to_pylist()}
    # The same number of files from each repository: a uniform sample
    # would be nearly all vim's and libgit2's, and the small vendored
    # libraries, where most cross-repository pairs are, would go unseen.
    rng = random.Random(seed)
    by_repo = {}
    for r in rows:
        by_repo.setdefault(r["repo"], []).append(r)
    sample = []
    for name in sorted(by_repo):
        # --sample 0: every file (for small sets, where a sample would
        # hold only a handful of the shared files).
        k = len(by_repo[name]) if args.sample == 0 else min(len(by_repo[name]), args.sample // len(by_repo))
        sample += rng.sample(by_repo[name], k)
    # The query reports blobs (one path each): a true pair of paths is
    # found when the pair of their blobs is.
    found = {}
    for row in reported:
        repo_a, _, _, blob_a, _, _, repo_b, _, _, blob_b, _, _, dist = row[:13]
        est = row[13] if len(row) > 13 else None
        found[(repo_a, blob_a, repo_b, blob_b)] = est
        found[(repo_b, blob_b, repo_a, blob_a)] = est
    t = time.perf_counter()
    truth, missed, dists, pairs, sample_keys = 0, [], [], [], []
    for r in sample:
        for other in repos:
            if other == r["repo"]:
                continue
            for path_b, (score, dist) in scorer.matches(r["repo"], r["blob"], other).items():
                truth += 1
                dists.append(dist)
                pairs.append((r["repo"], r["path"], other, path_b, score, dist))
                key = (r["repo"], r["blob"], other, blob_at.get((other, path_b)))
                sample_keys.append(key)
                if key not in found:
                    missed.append((r["repo"], r["path"], other, path_b, score, dist))
    secs = time.perf_counter() - t
    hit = truth - len(missed)
    pct = 100.0 * hit / truth if truth else 100.0
    log(
        f"recall (seed {seed}): {len(sample)} sampled files, {truth} pairs at >= 80% by git simm similar in the other "
        f"{len(repos) - 1} repositories, {hit} found by the query ({pct:.2f}%), {secs:.1f} s"
    )
    for m in missed[:20]:
        log("  missed:", m)
    if args.estimate_min is not None:
        estimate_table(reported, found, sample_keys, scorer.workdir)
    ds = sorted(d for d in dists if d is not None)
    if ds:
        q = lambda p: ds[min(len(ds) - 1, int(p * (len(ds) - 1)))]
        log(f"  distances of the true pairs: p50 {q(0.5)} p90 {q(0.9)} p99 {q(0.99)} max {ds[-1]}")
    Path(args.workdir, f"truth-{seed}.json").write_text(json.dumps({"missed": missed, "pairs": pairs}))


def estimate_table(reported, found, truth_keys, workdir):
    """Precision (reported pairs at git score >= 80%) and recall (true
    pairs found) of the query with its signature filter at each threshold,
    from a run at a lower one."""
    scored = json.loads(Path(workdir, "pairs-scored.json").read_text())
    log("  | estimate >= | pairs | at >= 80% | precision | recall |")
    log("  |---:|---:|---:|---:|---:|")
    for t in [0, 40, 50, 55, 60, 65, 70, 75, 80]:
        kept = [r for r in scored if r[13] >= t]
        good = sum(1 for r in kept if r[14] >= 80)
        hit = sum(1 for k in truth_keys if k in found and found[k] is not None and found[k] >= t)
        prec = 100.0 * good / len(kept) if kept else 100.0
        rec = 100.0 * hit / len(truth_keys) if truth_keys else 100.0
        log(f"  | {t} | {len(kept)} | {good} | {prec:.1f}% | {rec:.2f}% |")


# ---------------------------------------------------------------- scale


MASK63 = (1 << 63) - 1

# The sketches' symbols as text (src/similarity/signature/mod.rs, ALPHABET).
SKETCH_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# The sketches' columns near-duplicates.sql reads.
SKETCH_COLUMNS = ["sketch_level", "sketch", "sketch_next"]
# Symbols of an edited file's sketch edited per fingerprint bit flipped:
# on the ten-repository exports (benches/cross-repo.py run), the query's
# 607 candidate pairs whose fingerprints are 8 to 24 bits apart (the bits
# a fork's edit flips) have sketches whose levenshtein distance is on
# average 6.8% of the longer sketch at 17.5 bits; the least-squares slope
# through zero over them is 0.0039 per bit (0.0049 over the 1,738 pairs 1
# to 40 bits apart). So 8 to 24 bits flipped edit 3.1% to 9.4% of the
# symbols, 6.2% on average: an edit at a Jaccard index of about 0.9
# replaces about 5% of the chunks, and a replaced chunk is mostly a
# deletion plus an insertion in a sketch (docs/signatures.md,
# "Estimates"), so 5-10% of the symbols.
SKETCH_EDIT_PER_BIT = 0.0039


def edit_sketch(s, rate, rng):
    """`s` with about `rate` of its length in symbol edits (a substitution,
    an insertion or a deletion each, equally likely, at a random place)."""
    out = list(s)
    for _ in range(rng.binomial(len(out), rate)):
        op = rng.integers(3)
        sym = SKETCH_ALPHABET[rng.integers(64)]
        if op == 1 or not out:
            out.insert(int(rng.integers(len(out) + 1)), sym)
        elif op == 0:
            out[int(rng.integers(len(out)))] = sym
        else:
            del out[int(rng.integers(len(out)))]
    return "".join(out)


def mix64(x):
    """splitmix64's finaliser over a uint64 numpy array."""
    import numpy as np

    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def blob_key(blob):
    """The export's `blob_key`: the first 64 bits of a blob id, signed; for
    a replica's made-up id (`<id>-f3`), of the SHA-1 of that string."""
    import hashlib

    raw = bytes.fromhex(blob) if len(blob) == 40 else hashlib.sha1(blob.encode()).digest()
    return int.from_bytes(raw[:8], "big", signed=True)


def common_keys(keys, words, radius=84):
    """Which band keys of the real exports are shared by chance: held by
    two blobs whose fingerprints are more than `radius` bits apart
    (unrelated files whose minima are the same common chunks)."""
    import numpy as np

    n, bands = keys.shape
    out = np.zeros((n, bands), dtype=bool)
    for j in range(bands):
        order = np.argsort(keys[:, j], kind="stable")
        k = keys[order, j]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        ends = np.r_[starts[1:], n]
        for s_, e_ in zip(starts, ends):
            if e_ - s_ < 2:
                continue
            g = order[s_:e_]
            d = sum(np.bitwise_count(words[g, w] ^ words[g[0], w]) for w in range(4))
            if (d > radius).any():
                out[g, j] = True
    return out


def cmd_scale(args):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(args.workdir)
    src = sorted((work / "pq").glob("*.parquet"))
    cols = (
        ["version", "repo", "revision", "path", "blob", "blob_key", "size"]
        + [f"fp{i}" for i in range(4)]
        + [f"mh{i}" for i in range(BANDS)]
        + SKETCH_COLUMNS
    )
    base = pq.read_table(src, columns=cols)
    base = base.filter(pa.compute.is_valid(base.column("mh0")))
    n0 = base.num_rows
    reps = max(1, args.rows // n0)
    out = work / "scale"
    out.mkdir(exist_ok=True)
    rng = np.random.default_rng(args.seed)
    # The sketches' draws from a stream of their own: the fingerprints and
    # keys of a replica are the same with or without them.
    srng = np.random.default_rng([args.seed, 1])
    sketch0 = base.column("sketch").to_pylist()
    next0 = base.column("sketch_next").to_pylist()
    words0 = np.stack([base.column(f"fp{i}").to_numpy().view(np.uint64) for i in range(4)], axis=1)
    keys0 = np.stack([base.column(f"mh{i}").to_numpy().view(np.uint64) for i in range(BANDS)], axis=1)
    common = common_keys(keys0, words0)
    log(f"scale: {n0} rows with keys x {reps} replicas = {n0 * reps} rows; {common.mean() * 100:.2f}% of the keys shared by chance (kept in every replica), load {load()}")
    t = time.perf_counter()
    files = []
    for r in range(reps):
        f = out / f"r{r:04d}.parquet"
        files.append(f)
        if f.exists():
            continue
        # Replicas come in families of ten: the first of a family is an
        # unrelated repository, the other nine its forks. An unrelated
        # repository has contents of its own: blob ids of its own, each
        # fingerprint bit flipped with probability 1/2 (one random mask
        # per family) and every band key re-hashed with the family's salt,
        # except the keys that unrelated real files share by chance
        # (common chunks as minima): those stay, so a replica's files meet
        # other replicas' files through them as often as unrelated real
        # files meet, and the join's chance pairs grow with the square of
        # the rows as they would. Family 0 is the real exports. A fork
        # holds its family's files byte for byte (same blob ids, same
        # fingerprints and keys), except one file in five, edited: a blob
        # id of its own, 8 to 24 fingerprint bits flipped, each of its
        # keys re-drawn with probability 0.3 (an edit at J of about 0.9
        # changes a band of four minima with that probability).
        # Sketches: an unrelated repository's are family 0's with every
        # symbol renamed by a permutation of the 64 symbols drawn per
        # family, so lengths, levels and the symbols' frequencies stay real,
        # pairs within a family keep their real levenshtein distances
        # (a renaming preserves them) and a sketch matches another
        # family's by chance only. An edited file's sketch and next-level
        # sketch each get SKETCH_EDIT_PER_BIT times its flipped bits of
        # their symbols edited (see there: from real pairs' distances).
        family, member = divmod(r, 10)
        if member == 0:
            fam_words = words0
            fam_keys = keys0
            fam_blobs = base.column("blob").to_pylist()
            fam_sketch, fam_next = sketch0, next0
            if family:
                perm = str.maketrans(SKETCH_ALPHABET, "".join(SKETCH_ALPHABET[i] for i in srng.permutation(64)))
                fam_sketch = [x.translate(perm) if x is not None else None for x in sketch0]
                fam_next = [x.translate(perm) if x is not None else None for x in next0]
                fam_words = words0 ^ rng.integers(0, 2**64, size=4, dtype=np.uint64)
                salt = np.uint64(rng.integers(0, 2**63))
                fam_keys = np.where(common, keys0, mix64(keys0 ^ salt) & np.uint64(MASK63))
                fam_blobs = [f"{b}-f{family}" for b in fam_blobs]
        w = fam_words.copy()
        keys = fam_keys.copy()
        blobs = list(fam_blobs)
        sketch, sketch_next = list(fam_sketch), list(fam_next)
        if member:
            # Edited per content, so every path of an edited blob changes.
            edited_blob = {b: rng.random() < 0.2 for b in set(blobs)}
            edited = np.array([edited_blob[b] for b in blobs])
            per_blob = {}
            for i in np.flatnonzero(edited):
                per_blob.setdefault(blobs[i], []).append(i)
            for b, rows_of_b in per_blob.items():
                flips = np.zeros(4, dtype=np.uint64)
                nbits = rng.integers(8, 25)
                for bit in rng.choice(256, size=nbits, replace=False):
                    flips[bit // 64] ^= np.uint64(1) << np.uint64(bit % 64)
                redraw = (rng.random(BANDS) < 0.3) & ~common[rows_of_b[0]]
                fresh = rng.integers(0, 2**63, size=BANDS, dtype=np.int64).view(np.uint64)
                first = rows_of_b[0]
                rate = SKETCH_EDIT_PER_BIT * nbits
                new_sketch = edit_sketch(sketch[first], rate, srng) if sketch[first] is not None else None
                new_next = edit_sketch(sketch_next[first], rate, srng) if sketch_next[first] is not None else None
                for i in rows_of_b:
                    w[i] ^= flips
                    keys[i] = np.where(redraw, fresh, keys[i])
                    blobs[i] = f"{b}-r{r}"
                    sketch[i], sketch_next[i] = new_sketch, new_next
        t_cols = {
            "version": base.column("version"),
            "repo": pa.array([f"{x}-{r}" for x in base.column("repo").to_pylist()]),
            "revision": base.column("revision"),
            "path": base.column("path"),
            "blob": pa.array(blobs),
            "blob_key": pa.array([blob_key(b) for b in blobs], type=pa.int64()),
            "size": base.column("size"),
        }
        for i in range(4):
            t_cols[f"fp{i}"] = pa.array(w[:, i].view(np.int64))
        for i in range(BANDS):
            t_cols[f"mh{i}"] = pa.array(keys[:, i].view(np.int64))
        t_cols["sketch_level"] = base.column("sketch_level")
        t_cols["sketch"] = pa.array(sketch, type=pa.string())
        t_cols["sketch_next"] = pa.array(sketch_next, type=pa.string())
        pq.write_table(pa.table(t_cols), f, compression="zstd")
    log(f"  replicas written in {time.perf_counter() - t:.1f} s ({sum(f.stat().st_size for f in files) / 1e9:.2f} GB)")
    steps = sorted(set(max(1, min(len(files), int(round(len(files) * k)))) for k in args.steps))
    sql = (QUERIES / "near-duplicates.sql").read_text()

    def counting(text):
        if args.upto:
            # The query up to one of its steps (`expanded`: the join's pairs
            # spread over repositories, before ranking and naming).
            return text[: text.index("ranked AS (")].rstrip().rstrip(",") + f" SELECT COUNT(*) FROM {args.upto}"
        return f"SELECT COUNT(*) FROM ({text.rsplit('ORDER BY', 1)[0]}) t"

    (out / "count.sql").write_text(counting(sql))
    variants = [("count.sql", "")]
    if args.unfiltered:
        (out / "count-unfiltered.sql").write_text(counting(unfiltered_sql(sql)))
        variants.append(("count-unfiltered.sql", " without the signature filter"))
    for k, n in enumerate(steps):
        secs, stop = {}, False
        # Both queries at each step, in alternating order, so that neither
        # is always the one that reads the replicas first.
        for name, label in variants if k % 2 == 0 else variants[::-1]:
            # One process per step: its peak resident memory is the step's.
            cmd = [sys.executable, __file__, "scale-step", "--workdir", str(work), "--replicas", str(n),
                   "--memory", args.memory, "--spill", args.spill, "--sql", name]
            before = load()
            code, stdout, stderr, spent, rss, disk = watch_step(cmd, work / "duckdb-tmp", args.step_timeout)
            so_far = f"peak memory {rss / 1e9:.2f} GB, peak spill {disk / 1e9:.2f} GB, load {load()} (load {before} before)"
            if code is None:
                log(f"duckdb {n * n0:>10} rows ({n} replicas){label}: stopped after {spent:.0f} s, {so_far}")
                # The killed step's spill files: DuckDB removes them only
                # on a clean exit.
                shutil.rmtree(work / "duckdb-tmp", ignore_errors=True)
                stop = True
                continue
            if code != 0:
                log(f"duckdb {n * n0:>10} rows ({n} replicas){label}: failed after {spent:.0f} s, {so_far}: {stderr.strip()[-600:]}")
                continue
            log(stdout.strip() + f" (load {before} before){label}")
            m = re.search(r" pairs, ([0-9.]+) s,", stdout)
            secs[name] = float(m.group(1))
        if len(secs) == 2:
            log(f"  with the filter / without: {secs['count.sql'] / secs['count-unfiltered.sql']:.2f}x")
        if stop:
            log("  (larger steps not run)")
            break
    if args.explain and "spark" in engines_available(["spark"]):
        e = Spark(files)
        log(f"Spark's plan (EXPLAIN FORMATTED) of near-duplicates.sql over all {len(files)} replicas ({len(files) * n0} rows):")
        log(e.explain(sql))


def watch_step(cmd, spill, timeout):
    """Runs one step's process, following its peak resident memory and the
    spill directory's size from outside, so that a step stopped or failed
    still says how far it got: (return code, or None when stopped after
    `timeout` seconds; stdout; stderr; seconds; peak memory; peak spill)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t, rss, disk = time.perf_counter(), 0, 0
    while p.poll() is None:
        try:
            status = Path(f"/proc/{p.pid}/status").read_text()
            rss = max(rss, next(int(l.split()[1]) * 1000 for l in status.splitlines() if l.startswith("VmHWM")))
        except (OSError, StopIteration):
            pass
        disk = max(disk, sum(f.stat().st_size for f in spill.rglob("*") if f.is_file()) if spill.exists() else 0)
        if timeout and time.perf_counter() - t > timeout:
            p.kill()
            p.communicate()
            return None, "", "", time.perf_counter() - t, rss, disk
        time.sleep(1)
    out, err = p.communicate()
    return p.returncode, out, err, time.perf_counter() - t, rss, disk


def cmd_scale_step(args):
    """One step of `scale`: the count query on DuckDB over the first
    --replicas replicas, with time, peak resident memory and peak spill."""
    import threading

    import duckdb

    work = Path(args.workdir)
    files = sorted((work / "scale").glob("r*.parquet"))[: args.replicas]
    spill = work / "duckdb-tmp"
    spill.mkdir(exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{spill}'")
    con.execute(f"SET max_temp_directory_size = '{args.spill}'")
    con.execute(f"SET memory_limit = '{args.memory}'")
    con.execute("SET preserve_insertion_order = false")
    lst = ", ".join(f"'{f}'" for f in files)
    con.execute(f"CREATE VIEW fingerprints AS SELECT * FROM read_parquet([{lst}])")
    rows = con.execute("SELECT COUNT(*) FROM fingerprints").fetchone()[0]
    peak = [0]
    done = threading.Event()

    def watch():
        while not done.wait(0.5):
            size = sum(f.stat().st_size for f in spill.rglob("*") if f.is_file())
            peak[0] = max(peak[0], size)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    t = time.perf_counter()
    pairs = con.execute((work / "scale" / args.sql).read_text()).fetchone()[0]
    secs = time.perf_counter() - t
    done.set()
    th.join()
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(
        f"duckdb {rows:>10} rows ({args.replicas} replicas): {pairs} pairs, {secs:.1f} s, "
        f"peak memory {hwm / 1e6:.2f} GB, peak spill {peak[0] / 1e9:.2f} GB, load {load()}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--git-simm", default=str(HERE / "target/release/git-simm"))
    r.add_argument("--workdir", required=True)
    r.add_argument("--engines", nargs="+", default=["duckdb", "datafusion", "spark"])
    r.add_argument("--sample", type=int, default=200)
    r.add_argument("--seed", type=int, nargs="+", default=[16, 17], help="one recall sample per seed")
    r.add_argument("--contains", help="repo:dir/ for queries/contains.sql")
    r.add_argument(
        "--estimate-min",
        type=int,
        help="the signature filter's threshold instead of the shipped one (0: no filter); "
        "prints precision and recall by threshold over what that query reports",
    )
    r.add_argument("repos", nargs="+", help="name=path to a repository")
    s = sub.add_parser("scale")
    s.add_argument("--workdir", required=True)
    s.add_argument("--rows", type=int, default=10_000_000)
    s.add_argument("--steps", type=float, nargs="+", default=[0, 0.05, 0.1, 0.25, 0.5, 1])
    s.add_argument("--memory", default="10GB", help="DuckDB's memory_limit")
    s.add_argument("--spill", default="8GB", help="DuckDB's max_temp_directory_size")
    s.add_argument("--seed", type=int, default=16)
    s.add_argument("--explain", action="store_true")
    s.add_argument("--upto", choices=["candidates", "estimated", "expanded"], help="count the query's rows up to this step only")
    s.add_argument(
        "--unfiltered",
        action="store_true",
        help="at each step, also time the query without its signature filter (no sketch read, no levenshtein) "
        "and print the ratio",
    )
    s.add_argument("--step-timeout", type=float, help="stop a step after this many seconds, and run no larger one")
    t = sub.add_parser("scale-step")
    t.add_argument("--workdir", required=True)
    t.add_argument("--replicas", type=int, required=True)
    t.add_argument("--memory", default="10GB")
    t.add_argument("--spill", default="8GB")
    t.add_argument("--sql", default="count.sql", help="the query's file in WORKDIR/scale")
    args = ap.parse_args()
    {"run": cmd_run, "scale": cmd_scale, "scale-step": cmd_scale_step}[args.cmd](args)


if __name__ == "__main__":
    main()
