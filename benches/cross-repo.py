#!/usr/bin/env python3
"""Similar files across repositories on existing engines (issue 16).

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
rows asked for, each replica's fingerprints XORed with its own random mask
(families of ten: an unrelated repository, half its bits flipped, and nine
forks of it, a few more bits flipped), band keys
recomputed, and times the queries on DuckDB (and DataFusion with --engines)
over growing numbers of replicas (near-duplicates.sql only up to
--narrow-max-rows: its 16-bit keys make the join grow with the square of the
rows; near-duplicates-wide.sql to the end), then prints Spark's plan
(EXPLAIN) with --explain.

Needs: pip install duckdb datafusion pyspark pyarrow numpy, and Java 17 for
Spark. Engines whose module is missing are skipped with a note (CI may skip
the whole script). Not part of `cargo test`.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
QUERIES = HERE / "queries"

# Band layout of export schema 1002 (src/similarity/bands.rs).
BANDS = 32
BAND_BITS = 16


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

    near = (QUERIES / "near-duplicates.sql").read_text()
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
    scores, confirmed = [], []
    for row in reported:
        repo_a, _, path_a, blob_a, _, _, repo_b, _, path_b, blob_b, _, _, dist = row
        m = scorer.matches(repo_a, blob_a, repo_b)
        # One representative path per blob: git's score is the same at
        # every path of blob_b.
        score = m.get(path_b, (0, None))[0]
        scores.append((score, dist))
        if score >= 80:
            confirmed.append(list(row) + [score])
    ok = sum(1 for s, _ in scores if s >= 80)
    log(
        f"check: {len(scores)} reported pairs re-scored by git simm similar ({scorer.runs} runs, "
        f"{time.perf_counter() - t:.1f} s): {ok} at >= 80% (kept, pairs-confirmed.json), {len(scores) - ok} below"
    )
    # What the pipeline reports in the end: the pairs git's score confirms.
    Path(scorer.workdir, "pairs-confirmed.json").write_text(json.dumps(confirmed))
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
        k = min(len(by_repo[name]), args.sample // len(by_repo))
        sample += rng.sample(by_repo[name], k)
    # The query reports blobs (one path each): a true pair of paths is
    # found when the pair of their blobs is.
    found = {}
    for repo_a, _, _, blob_a, _, _, repo_b, _, _, blob_b, _, _, dist in reported:
        found[(repo_a, blob_a, repo_b, blob_b)] = dist
        found[(repo_b, blob_b, repo_a, blob_a)] = dist
    t = time.perf_counter()
    truth, missed, dists, pairs = 0, [], [], []
    for r in sample:
        for other in repos:
            if other == r["repo"]:
                continue
            for path_b, (score, dist) in scorer.matches(r["repo"], r["blob"], other).items():
                truth += 1
                dists.append(dist)
                pairs.append((r["repo"], r["path"], other, path_b, score, dist))
                if (r["repo"], r["blob"], other, blob_at.get((other, path_b))) not in found:
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
    ds = sorted(d for d in dists if d is not None)
    if ds:
        q = lambda p: ds[min(len(ds) - 1, int(p * (len(ds) - 1)))]
        log(f"  distances of the true pairs: p50 {q(0.5)} p90 {q(0.9)} p99 {q(0.99)} max {ds[-1]}")
    Path(args.workdir, f"truth-{seed}.json").write_text(json.dumps({"missed": missed, "pairs": pairs}))


# ---------------------------------------------------------------- scale


def band_keys(words, bands=BANDS, bits=BAND_BITS):
    """src/similarity/bands.rs, vectorised: words is (n, 4) uint64."""
    import numpy as np

    n = words.shape[0]
    out = np.empty((n, bands), dtype=np.int64)
    for i in range(bands):
        start = i * 256 // bands
        v = np.zeros(n, dtype=np.uint64)
        for j in range(bits):
            p = (start + j) % 256
            bit = (words[:, p // 64] >> np.uint64(p % 64)) & np.uint64(1)
            v |= bit << np.uint64(j)
        out[:, i] = (np.int64(i) << np.int64(32)) | v.astype(np.int64)
    return out


def cmd_calibrate(args):
    """Recall of the sample's true pairs and the band join's size for other
    band counts and widths (what chose BANDS and BAND_BITS)."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    work = Path(args.workdir)
    t = pq.read_table(sorted((work / "pq").glob("*.parquet")), columns=["repo", "path", "fp0", "fp1", "fp2", "fp3"])
    t = t.filter(pc.is_valid(t.column("fp0")))
    words = np.stack([t.column(f"fp{i}").to_numpy().view(np.uint64) for i in range(4)], axis=1)
    index = {(r, p): i for i, (r, p) in enumerate(zip(t.column("repo").to_pylist(), t.column("path").to_pylist()))}
    truth = json.loads((work / "truth.json").read_text())["pairs"]
    ia = np.array([index[(a, pa_)] for a, pa_, b, pb, _, _ in truth])
    ib = np.array([index[(b, pb)] for a, pa_, b, pb, _, _ in truth])
    dist = sum(np.bitwise_count(words[ia, i] ^ words[ib, i]) for i in range(4))
    log(f"{len(truth)} true pairs (>= 80%), {words.shape[0]} fingerprinted rows")
    for radius in (48, 56, 64, 72, 84):
        log(f"  within {radius} bits: {100.0 * np.mean(dist <= radius):.2f}%")
    log("bands x bits: recall (any band shared, distance <= radius), band-join rows")
    for bands, bits in args.configs:
        keys = band_keys(words, bands, bits)
        shared = (keys[ia] == keys[ib]).any(axis=1)
        join = 0
        for i in range(bands):
            _, counts = np.unique(keys[:, i], return_counts=True)
            join += int((counts.astype(np.int64) * (counts - 1) // 2).sum())
        log(f"  {bands:3d} x {bits:2d}: {100.0 * np.mean(shared):6.2f}% / {100.0 * np.mean(shared & (dist <= args.radius)):6.2f}%  {join:>12,}")


def cmd_scale(args):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(args.workdir)
    src = sorted((work / "pq").glob("*.parquet"))
    base = pq.read_table(src)
    base = base.filter(pa.compute.is_valid(base.column("fp0")))
    n0 = base.num_rows
    reps = max(1, args.rows // n0)
    out = work / "scale"
    out.mkdir(exist_ok=True)
    rng = np.random.default_rng(args.seed)
    words0 = np.stack([base.column(f"fp{i}").to_numpy().view(np.uint64) for i in range(4)], axis=1)
    log(f"scale: {n0} fingerprinted rows x {reps} replicas = {n0 * reps} rows, load {load()}")
    t = time.perf_counter()
    files = []
    for r in range(reps):
        f = out / f"r{r:04d}.parquet"
        files.append(f)
        if f.exists():
            continue
        # Replicas come in families of ten: the first of a family is an
        # unrelated repository (each bit flipped with probability 1/2;
        # family 0 is the real exports), the other nine its forks (2 to 12
        # more bits flipped, the same for every file of the fork). So every
        # file has nine near copies at any scale, as a project and its
        # forks do, and the pairs grow with the rows, not their square.
        family, member = divmod(r, 10)
        if member == 0:
            fam_mask = np.zeros(4, dtype=np.uint64)
            if family:
                fam_mask = rng.integers(0, 2**63, size=4, dtype=np.int64).astype(np.uint64) * np.uint64(2) + rng.integers(0, 2, size=4).astype(np.uint64)
        mask = fam_mask.copy()
        if member:
            for b in rng.choice(256, size=rng.integers(2, 13), replace=False):
                mask[b // 64] ^= np.uint64(1) << np.uint64(b % 64)
        w = words0 ^ mask
        keys = band_keys(w)
        cols = {
            "version": base.column("version"),
            "repo": pa.array([f"{x}-{r}" for x in base.column("repo").to_pylist()]),
            "revision": base.column("revision"),
            "path": base.column("path"),
            "blob": base.column("blob"),
            "size": base.column("size"),
        }
        for i in range(4):
            cols[f"fp{i}"] = pa.array(w[:, i].view(np.int64))
        for i in range(BANDS):
            cols[f"band{i}"] = pa.array(keys[:, i])
        # Forks keep their family's names; other families get names of
        # their own (a random key per file), or every replica's README.md
        # would pair with every other's.
        if member == 0:
            fam_names = base.column("name_key").to_numpy(zero_copy_only=False)
            if family:
                fam_names = rng.integers(-(2**63), -1, size=n0, dtype=np.int64)
        names = fam_names
        cols["name_key"] = pa.array(names)
        pq.write_table(pa.table(cols), f)
    log(f"  replicas written in {time.perf_counter() - t:.1f} s ({sum(f.stat().st_size for f in files) / 1e9:.2f} GB)")
    steps = sorted(set(max(1, len(files) * k // max(args.steps)) for k in args.steps))
    for name in args.queries:
        sql = (QUERIES / name).read_text()
        count = f"SELECT COUNT(*) FROM ({sql.rsplit('ORDER BY', 1)[0]}) t"
        for eng in engines_available(args.engines):
            for n in steps:
                rows_in = n * n0
                if name == "near-duplicates.sql" and rows_in > args.narrow_max_rows:
                    log(f"{eng:<10} {name} {rows_in:>10} rows: skipped (over --narrow-max-rows)")
                    continue
                e = ENGINES[eng](files[:n])
                r, secs = timed(e.run, count)
                log(f"{eng:<10} {name} {rows_in:>10} rows ({n} replicas): {r[0][0]} pairs, {secs:.1f} s, load {load()}")
    if args.explain and "spark" in engines_available(["spark"]):
        e = Spark(files)
        sql = (QUERIES / args.queries[-1]).read_text()
        log(f"Spark's plan (EXPLAIN FORMATTED) of {args.queries[-1]} over all {len(files)} replicas:")
        log(e.explain(sql))


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
    r.add_argument("repos", nargs="+", help="name=path to a repository")
    c = sub.add_parser("calibrate")
    c.add_argument("--workdir", required=True)
    c.add_argument("--radius", type=int, default=64)
    c.add_argument(
        "--configs",
        type=lambda v: tuple(map(int, v.split("x"))),
        nargs="+",
        default=[(16, 16), (32, 16), (32, 12), (32, 20), (48, 16), (64, 16), (64, 20), (64, 24), (96, 24), (128, 24)],
    )
    s = sub.add_parser("scale")
    s.add_argument("--workdir", required=True)
    s.add_argument("--rows", type=int, default=10_000_000)
    s.add_argument("--engines", nargs="+", default=["duckdb"])
    s.add_argument("--steps", type=int, nargs="+", default=[1, 2, 4, 8])
    s.add_argument("--queries", nargs="+", default=["near-duplicates.sql", "near-duplicates-wide.sql"])
    s.add_argument("--narrow-max-rows", type=int, default=1_500_000)
    s.add_argument("--seed", type=int, default=16)
    s.add_argument("--explain", action="store_true")
    args = ap.parse_args()
    {"run": cmd_run, "scale": cmd_scale, "calibrate": cmd_calibrate}[args.cmd](args)


if __name__ == "__main__":
    main()
