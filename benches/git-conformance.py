#!/usr/bin/env python3
"""Helper of benches/git-conformance.sh (python3 >= 3.8, standard library only).

  git-conformance.py --git-src DIR --simm BIN --work DIR --report DIR
      [--scripts LIST] [--jobs N] [--max-pairs N] [--reuse] [--flags LIST]

1. Runs git's own test scripts (DIR/t/tNNNN-*.sh) with `-d --root=WORK/trash`,
   so each leaves its trash directory behind (skipped with --reuse when the
   trash directory of a script is already there).
2. Copies every trash directory to WORK/copy (so neither tool can change
   what the test left) and finds every repository in it: the trash
   directory itself, repositories nested in it (work trees with a `.git`
   directory or file, bare repositories), but not the git directories of
   submodules under `.git/modules` (their work trees are found instead).
3. In each repository compares

       git-simm renames --no-cache <flags> <args>
       git diff --name-status -l0 --no-rename-empty <flags> <args>

   stdout byte for byte and exit status, for each flag set (default -M,
   -C, "-C -C", -M30%, "-B -M", "-B -C -C") and each of these <args>:

       A B          every ordered pair of distinct commits reachable from
                    any ref, and of root trees no commit names (what
                    `git write-tree` left: many diff tests never commit),
                    at most 12 of those (capped: see --max-pairs)
       --cached     index against HEAD (without a HEAD commit: against
                    each of those trees)
       HEAD         work tree against HEAD (or those trees), twice: with
                    the index as the copy left it (every entry's stat data
                    stale: copying changes inodes and ctimes) and after
                    `git update-index -q --refresh` (fresh). git's output
                    depends on which: an entry whose stat data is stale is
                    queued as modified and then dropped as unchanged
                    (diff.c, diffcore_skip_stat_unmatch), so it is no copy
                    source for -C -C; an unmerged entry is never fresh.

   The index is put back before every run that reads it (git diff in the
   work tree rewrites a refreshed index when it can); in a partial clone
   (a promisor remote) the object directory is put back after every run,
   so a lazy fetch by one tool does not feed the other. git-simm is
   checked to leave the index and the git directory's top level alone.
4. Prints a summary (per script, per flag set, per mode: cases, identical,
   differing, errors) and writes to REPORT:
       summary.txt         the same tables
       repositories.tsv    every repository: script, path, commits, pairs
                           compared, capped or not, work tree, partial clone
       differences.jsonl   one JSON object per case that was not identical
                           (repository, mode, flags, arguments, both
                           commands' exit status, stdout and stderr, class)
       differences/<script>/<n>.txt   the same, readable
       classes.txt         counts by class, with one example each
       tests/<script>.log  the test script's output

A case is "identical" when stdout and exit status are the same, "differing"
when only stdout differs, an "error" when the exit statuses differ (git-simm
refusing -B with 129, a fatal error of either tool, a timeout). Classes are
a heuristic label of each difference, to sort them; the report has the
outputs to judge from.
"""

import argparse
import collections
import concurrent.futures
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time

DEFAULT_SCRIPTS = (
    "t4001 t4003 t4005 t4007 t4008 t4009 t4010 t4011 t4013 t4023 t4027 t4029 "
    "t4031 t4043 t4054 t4206 t6400 t6404 t6421 t6422 t6423 t6426 t7001"
).split()

DEFAULT_FLAGS = ["-M", "-C", "-C -C", "-M30%", "-B -M", "-B -C -C"]

TIMEOUT = 300

# Trees written without a commit (see loose_root_trees) taken per
# repository.
MAX_LOOSE_TREES = 12

MODES = ["pair", "cached", "worktree-stale", "worktree-fresh"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def clean_env(git_src, home):
    """The environment both tools run in: nothing from the caller's git
    variables or configuration, the built git first on PATH (git-simm runs
    git for some work), C locale."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "PATH": os.path.join(git_src, "bin-wrappers") + os.pathsep + env.get("PATH", ""),
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "LANG": "C",
            "TZ": "UTC",
        }
    )
    return env


# ---------------------------------------------------------------------------
# 1. git's test scripts


def script_path(git_src, name):
    found = sorted(glob.glob(os.path.join(git_src, "t", name + "-*.sh")))
    if not found:
        raise SystemExit(f"git-conformance: no test script {name}-*.sh in {git_src}/t")
    return found[0]


def trash_of(trash_root, path):
    return os.path.join(trash_root, "trash directory." + os.path.basename(path)[:-3])


def run_test_script(git_src, trash_root, report, path, env):
    name = os.path.basename(path)[:-3]
    logfile = os.path.join(report, "tests", name + ".log")
    start = time.time()
    with open(logfile, "wb") as out:
        rc = subprocess.call(
            ["sh", path, "-d", "--root=" + trash_root],
            cwd=os.path.join(git_src, "t"),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    tail = open(logfile, "rb").read().decode("utf-8", "replace").strip().splitlines()
    verdict = tail[-1] if tail else ""
    log(f"  {name}: exit {rc}, {time.time() - start:.0f} s: {verdict}")
    return name, rc, verdict


# ---------------------------------------------------------------------------
# 2. repositories


def looks_like_git_dir(d):
    return (
        os.path.isfile(os.path.join(d, "HEAD"))
        and os.path.isdir(os.path.join(d, "objects"))
        and any(os.path.exists(os.path.join(d, x)) for x in ("refs", "packed-refs", "reftable"))
    )


def candidates(root):
    """Directories that hold a repository: (kind, path), outer ones first."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if ".git" in dirnames or ".git" in filenames:
            found.append(("worktree", dirpath))
        elif looks_like_git_dir(dirpath):
            found.append(("gitdir", dirpath))
            dirnames[:] = []
            continue
        if ".git" in dirnames:
            dirnames.remove(".git")
    return found


def git_out(git, cwd, args, env, check=False):
    p = subprocess.run(
        [git] + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT
    )
    if check and p.returncode != 0:
        return None
    return p


class Repo:
    def __init__(self, script, path, rel):
        self.script = script
        self.path = path
        self.rel = rel
        self.git_dir = None
        self.worktree = False
        self.head = None
        self.commits = []
        self.trees = []
        self.pairs = []
        self.capped = False
        self.partial = False
        self.index = None
        self.unmerged = set()
        self.bases = []
        self.note = ""


def describe(git, kind, path, env):
    """What `git rev-parse` says of a candidate; None when git does not see a
    repository there (a test may leave a broken one on purpose)."""
    p = git_out(
        git,
        path,
        ["rev-parse", "--absolute-git-dir", "--is-bare-repository", "--is-inside-work-tree"],
        env,
    )
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
    lines = p.stdout.decode().split("\n")
    git_dir, bare, inside = lines[0], lines[1] == "true", lines[2] == "true"
    worktree = False
    if kind == "worktree" and not bare and inside:
        top = git_out(git, path, ["rev-parse", "--show-toplevel"], env)
        worktree = top.returncode == 0 and os.path.realpath(top.stdout.decode().strip()) == os.path.realpath(path)
        if not worktree:
            return None, ["work tree elsewhere"]
    return (os.path.realpath(git_dir), worktree), None


def choose_pairs(commits, parents, max_pairs, seed):
    """Every ordered pair of distinct commits; above max_pairs, every
    parent-child pair (both orders) and a seeded sample of the others."""
    all_pairs = [(a, b) for a in commits for b in commits if a != b]
    if len(all_pairs) <= max_pairs:
        return all_pairs, False
    chosen = []
    seen = set()
    for c in commits:
        for p in parents.get(c, []):
            for pair in ((p, c), (c, p)):
                if pair not in seen:
                    seen.add(pair)
                    chosen.append(pair)
    rest = [p for p in all_pairs if p not in seen]
    random.Random(seed).shuffle(rest)
    chosen.extend(rest[: max(0, max_pairs - len(chosen))])
    return chosen, True


def loose_root_trees(git, path, env, commit_trees, most=MAX_LOOSE_TREES):
    """Trees no commit and no other tree names: what git's diff tests write
    with `git write-tree` and compare with diff-tree and diff-index, without
    ever committing. At most `most`, in object-id order."""
    p = git_out(git, path, ["cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"], env)
    trees = [l.split()[0] for l in p.stdout.decode().split("\n") if l.endswith(" tree")]
    if not trees:
        return []
    feed = ("\n".join(trees) + "\n").encode()
    p = subprocess.run(
        [git, "cat-file", "--batch"], cwd=path, env=env, input=feed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT
    )
    data = p.stdout
    raw = len(trees[0]) // 2
    children = set()
    at = 0
    while at < len(data):
        nl = data.index(b"\n", at)
        header = data[at:nl].split()
        if len(header) < 3:
            at = nl + 1
            continue
        size = int(header[2])
        body = data[nl + 1 : nl + 1 + size]
        at = nl + 1 + size + 1
        i = 0
        while i < len(body):
            sp = body.index(b" ", i)
            nul = body.index(b"\0", sp)
            mode = body[i:sp]
            oid = body[nul + 1 : nul + 1 + raw].hex()
            if mode in (b"40000", b"040000"):
                children.add(oid)
            i = nul + 1 + raw
    roots = [t for t in trees if t not in children and t not in commit_trees]
    return roots[:most]


def prepare(git, script, kind, path, copy_root, env, max_pairs, seen_git_dirs, lock):
    rel = os.path.relpath(path, copy_root)
    desc, why = describe(git, kind, path, env)
    r = Repo(script, path, rel)
    if desc is None:
        r.note = "skipped: " + " ".join(why or ["not a repository"])
        return r
    git_dir, worktree = desc
    with lock:
        if git_dir in seen_git_dirs:
            r.note = "skipped: same git directory as " + seen_git_dirs[git_dir]
            return r
        seen_git_dirs[git_dir] = rel
    r.git_dir = git_dir
    r.worktree = worktree
    p = git_out(git, path, ["rev-list", "--all", "--parents"], env)
    if p.returncode != 0:
        r.note = "rev-list --all failed: " + p.stderr.decode("utf-8", "replace").strip()[:200]
    parents = {}
    for line in p.stdout.decode().split("\n"):
        if line:
            ids = line.split()
            parents[ids[0]] = ids[1:]
    r.commits = list(parents)
    commit_trees = git_out(git, path, ["log", "--all", "--format=%T"], env).stdout.decode().split()
    r.trees = loose_root_trees(git, path, env, set(commit_trees))
    r.pairs, r.capped = choose_pairs(
        r.commits + r.trees, parents, max_pairs, int(hashlib.sha1(rel.encode()).hexdigest()[:8], 16)
    )
    head = git_out(git, path, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], env)
    if head.returncode == 0:
        r.head = head.stdout.decode().strip()
    cfg = git_out(
        git, path, ["config", "--get-regexp", r"^(extensions\.partialclone|remote\..*\.promisor)$"], env
    )
    r.partial = cfg.returncode == 0 and bool(cfg.stdout.strip())
    # The index and the work tree are compared with HEAD, or where there is
    # no commit, with the trees the test wrote.
    r.bases = ["HEAD"] if r.head else r.trees
    if r.worktree and r.bases:
        index = git_out(git, path, ["rev-parse", "--git-path", "index"], env).stdout.decode().strip()
        r.index = os.path.join(path, index) if not os.path.isabs(index) else index
        if not os.path.exists(r.index):
            r.index = None
        u = git_out(git, path, ["ls-files", "-u", "-z"], env)
        for rec in u.stdout.split(b"\0"):
            if b"\t" in rec:
                r.unmerged.add(rec.split(b"\t", 1)[1])
    return r


# ---------------------------------------------------------------------------
# 3. comparing


def snapshot(d):
    files = set()
    for dirpath, dirnames, filenames in os.walk(d):
        for f in filenames:
            files.add(os.path.join(dirpath, f))
        for x in dirnames:
            files.add(os.path.join(dirpath, x) + os.sep)
    return files


def restore_objects(objects, before):
    """Remove what a lazy fetch added to the copy's object directory (the
    copy is this script's own)."""
    now = snapshot(objects)
    for f in sorted(now - before, reverse=True):
        if f.endswith(os.sep):
            try:
                os.rmdir(f)
            except OSError:
                pass
        else:
            os.unlink(f)


def top_level(git_dir):
    return sorted(os.listdir(git_dir))


def run(cmd, cwd, env):
    start = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT)
        return p.returncode, p.stdout, p.stderr, time.time() - start
    except subprocess.TimeoutExpired:
        return "timeout", b"", b"timeout", time.time() - start


def records(out):
    """name-status lines as {destination: (status letter, score, source)}."""
    recs = {}
    for line in out.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        f = line.split("\t")
        st = f[0]
        if st[:1] in ("R", "C") and len(f) >= 3:
            recs[f[2]] = (st[0], st[1:], f[1])
        elif len(f) >= 2:
            recs.setdefault(f[1], (st[0], st[1:], None))
    return recs


def classify(r, mode, flags, g, s):
    grc, gout, _, _ = g
    src, sout, serr, _ = s
    if src != grc:
        if src == 129 and "-B" in flags:
            return "B-unsupported (git-simm exits 129)"
        first = serr.decode("utf-8", "replace").strip().splitlines()
        first = first[0] if first else ""
        for hexid in [w for w in first.split() if len(w) >= 40 and all(c in "0123456789abcdef" for c in w)]:
            first = first.replace(hexid, "<oid>")
        return f"exit status: git {grc}, git-simm {src}: {first[:120]}"
    gr, sr = records(gout), records(sout)
    kinds = set()
    unmerged = {u.decode("utf-8", "replace") for u in r.unmerged}
    touches_unmerged = False
    for dst in sorted(set(gr) | set(sr)):
        a, b = gr.get(dst), sr.get(dst)
        if a == b:
            continue
        for rec in (a, b):
            if rec and (dst in unmerged or (rec[2] in unmerged)):
                touches_unmerged = True
        if a is None:
            kinds.add(f"only git-simm prints {b[0]}")
        elif b is None:
            kinds.add(f"only git prints {a[0]}")
        elif a[0] in "RC" and b[0] in "RC" and a[2] != b[2]:
            kinds.add(f"{a[0]} from another source ({b[0]})")
        elif a[0] in "RC" and b[0] in "RC" and a[0] != b[0]:
            kinds.add(f"git {a[0]}, git-simm {b[0]}")
        elif a[0] == b[0] and a[2] == b[2]:
            kinds.add(f"{a[0]} score differs")
        else:
            kinds.add(f"git {a[0]}, git-simm {b[0]}")
    if not kinds:
        kinds.add("same records, different order or bytes")
    label = "; ".join(sorted(kinds))
    if touches_unmerged:
        label = "unmerged path: " + label
    if r.partial:
        label = "partial clone: " + label
    return label


class Results:
    def __init__(self, report):
        self.report = report
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.classes = collections.Counter()
        self.class_example = {}
        self.class_by_flags = collections.Counter()
        self.time = collections.Counter()
        self.numbered = collections.Counter()
        self.diff_file = open(os.path.join(report, "differences.jsonl"), "w")
        self.simm_wrote = []

    def add(self, r, mode, flags, args, g, s, gcmd, scmd):
        same = g[0] == s[0] and g[1] == s[1]
        outcome = "identical" if same else ("differing" if g[0] == s[0] else "errors")
        with self.lock:
            for key in ((r.script, flags, mode), ("*", flags, mode), (r.script, "*", "*"), ("*", flags, "*"), ("*", "*", mode), ("*", "*", "*"), (r.script, flags, "*")):
                self.counts[key + ("run",)] += 1
                self.counts[key + (outcome,)] += 1
            self.time["git"] += g[3]
            self.time["simm"] += s[3]
            if same:
                return
            cls = classify(r, mode, flags, g, s)
            self.classes[cls] += 1
            self.class_by_flags[(cls, flags)] += 1
            self.numbered[r.script] += 1
            n = self.numbered[r.script]
            rel = os.path.join("differences", r.script, f"{n:05d}.txt")
            self.class_example.setdefault(cls, rel)
            doc = {
                "script": r.script,
                "repo": r.rel,
                "mode": mode,
                "flags": flags,
                "args": args,
                "class": cls,
                "git": {"cmd": gcmd, "exit": g[0], "stdout": g[1].decode("utf-8", "replace"), "stderr": g[2].decode("utf-8", "replace")},
                "simm": {"cmd": scmd, "exit": s[0], "stdout": s[1].decode("utf-8", "replace"), "stderr": s[2].decode("utf-8", "replace")},
                "file": rel,
            }
            self.diff_file.write(json.dumps(doc) + "\n")
            os.makedirs(os.path.join(self.report, "differences", r.script), exist_ok=True)
            with open(os.path.join(self.report, rel), "w") as f:
                f.write(f"script: {r.script}\nrepository: {r.rel}\nmode: {mode}\nflags: {flags}\nclass: {cls}\n")
                f.write(f"git: {' '.join(gcmd)}  (exit {g[0]})\n")
                f.write(f"git-simm: {' '.join(scmd)}  (exit {s[0]})\n")
                f.write("--- git stdout\n" + doc["git"]["stdout"])
                f.write("--- git-simm stdout\n" + doc["simm"]["stdout"])
                if doc["git"]["stderr"]:
                    f.write("--- git stderr\n" + doc["git"]["stderr"])
                if doc["simm"]["stderr"]:
                    f.write("--- git-simm stderr\n" + doc["simm"]["stderr"])


def compare_repo(r, git, simm, flagsets, env, results):
    cwd = r.path
    objects = os.path.join(r.git_dir, "objects")
    before = snapshot(objects) if r.partial else None
    top = top_level(r.git_dir)
    saved = {}
    if r.index:
        with open(r.index, "rb") as f:
            saved["stale"] = f.read()
        stale_stat = os.stat(r.index)
        git_out(git, cwd, ["update-index", "-q", "--refresh"], env)
        with open(r.index, "rb") as f:
            saved["fresh"] = f.read()
        fresh_stat = os.stat(r.index)
        stats = {"stale": stale_stat, "fresh": fresh_stat}

    def put_index(state):
        with open(r.index, "wb") as f:
            f.write(saved[state])
        st = stats[state]
        os.utime(r.index, ns=(st.st_atime_ns, st.st_mtime_ns))

    jobs = [("pair", [a, b], None) for a, b in r.pairs]
    if r.index:
        for base in r.bases:
            cached = ["--cached"] if base == "HEAD" else ["--cached", base]
            jobs.append(("cached", cached, "stale"))
            jobs.append(("worktree-stale", [base], "stale"))
            jobs.append(("worktree-fresh", [base], "fresh"))
    for mode, args, state in jobs:
        for flags in flagsets:
            fl = flags.split()
            gcmd = [git, "diff", "--name-status", "-l0", "--no-rename-empty"] + fl + args
            scmd = [simm, "renames", "--no-cache"] + fl + args
            if state:
                put_index(state)
            g = run(gcmd, cwd, env)
            if before is not None:
                restore_objects(objects, before)
            if state:
                put_index(state)
            s = run(scmd, cwd, env)
            if before is not None:
                restore_objects(objects, before)
            wrote = []
            if state:
                with open(r.index, "rb") as f:
                    if f.read() != saved[state]:
                        wrote.append("index")
            if top_level(r.git_dir) != top:
                wrote.append("git directory: " + " ".join(sorted(set(top_level(r.git_dir)) ^ set(top))))
                top = top_level(r.git_dir)
            if wrote:
                with results.lock:
                    results.simm_wrote.append(f"{r.script} {r.rel} {mode} {flags}: {', '.join(wrote)}")
            results.add(
                r,
                mode,
                flags,
                args,
                g,
                s,
                ["git", "diff", "--name-status", "-l0", "--no-rename-empty"] + fl + args,
                ["git-simm", "renames", "--no-cache"] + fl + args,
            )
    if r.index:
        put_index("stale")


# ---------------------------------------------------------------------------
# 4. the summary


def table(results, scripts, flagsets, title):
    c = results.counts
    out = [title, f"{'script':<16} {'flags':<10} {'run':>7} {'identical':>10} {'differing':>10} {'errors':>7}"]
    for script in scripts:
        for flags in ["*"] + flagsets:
            k = (script, flags, "*")
            if c[k + ("run",)] == 0:
                continue
            out.append(
                f"{'all scripts' if script == '*' else script:<16} {'all' if flags == '*' else flags:<10} "
                f"{c[k + ('run',)]:>7} {c[k + ('identical',)]:>10} {c[k + ('differing',)]:>10} {c[k + ('errors',)]:>7}"
            )
    return out


def summary(results, scripts, flagsets, repos, test_runs):
    c = results.counts
    lines = ["git-conformance: git-simm renames against git diff --name-status -l0 --no-rename-empty", ""]
    lines.append("test scripts:")
    for name, rc, verdict in test_runs:
        lines.append(f"  {name:<36} exit {rc}  {verdict}")
    lines.append("")
    nrepos = sum(1 for r in repos if r.git_dir)
    capped = [r for r in repos if r.capped]
    lines.append(
        f"repositories compared: {nrepos} ({sum(1 for r in repos if r.worktree and r.index)} with a work tree and HEAD, "
        f"{sum(1 for r in repos if r.partial)} partial clones, {len(capped)} with commit pairs capped); "
        f"skipped: {sum(1 for r in repos if not r.git_dir)} (see repositories.tsv)"
    )
    for r in capped:
        lines.append(f"  capped: {r.script} {r.rel}: {len(r.commits)} commits, {len(r.pairs)} of {len(r.commits) * (len(r.commits) - 1)} ordered pairs")
    lines.append("")
    lines += table(results, scripts + ["*"], flagsets, "per script and flag set (all modes):")
    lines.append("")
    out = ["per mode and flag set (all scripts):", f"{'mode':<16} {'flags':<10} {'run':>7} {'identical':>10} {'differing':>10} {'errors':>7}"]
    for mode in MODES:
        for flags in ["*"] + flagsets:
            k = ("*", flags, mode)
            if c[k + ("run",)]:
                out.append(f"{mode:<16} {'all' if flags == '*' else flags:<10} {c[k + ('run',)]:>7} {c[k + ('identical',)]:>10} {c[k + ('differing',)]:>10} {c[k + ('errors',)]:>7}")
    lines += out
    lines.append("")
    lines.append(f"time spent: git {results.time['git']:.1f} s, git-simm {results.time['simm']:.1f} s (all runs, informative)")
    if results.simm_wrote:
        lines.append("")
        lines.append(f"WARNING: git-simm changed the repository in {len(results.simm_wrote)} run(s):")
        lines += ["  " + w for w in results.simm_wrote[:50]]
    lines.append("")
    lines.append("classes of differences (count; example; by flag set):")
    for cls, n in results.classes.most_common():
        per = ", ".join(f"{f}: {results.class_by_flags[(cls, f)]}" for f in flagsets if results.class_by_flags[(cls, f)])
        lines.append(f"  {n:>6}  {cls}\n          e.g. {results.class_example[cls]}\n          {per}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-src", required=True)
    ap.add_argument("--simm", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--scripts", default=" ".join(DEFAULT_SCRIPTS))
    ap.add_argument("--flags", default=",".join(DEFAULT_FLAGS), help="comma-separated flag sets")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-pairs", type=int, default=1000)
    ap.add_argument("--reuse", action="store_true", help="keep trash directories already there")
    a = ap.parse_args()

    git_src = os.path.realpath(a.git_src)
    git = os.path.join(git_src, "bin-wrappers", "git")
    if not os.access(git, os.X_OK):
        raise SystemExit(f"git-conformance: {git_src} is not a built git tree (no bin-wrappers/git): run make there")
    scripts = a.scripts.replace(",", " ").split()
    flagsets = [f.strip() for f in a.flags.split(",") if f.strip()]
    work = os.path.realpath(a.work)
    report = os.path.realpath(a.report)
    trash_root = os.path.join(work, "trash")
    copy_root = os.path.join(work, "copy")
    home = os.path.join(work, "home")
    for d in (trash_root, home, report, os.path.join(report, "tests")):
        os.makedirs(d, exist_ok=True)
    if os.path.exists(os.path.join(report, "differences")):
        shutil.rmtree(os.path.join(report, "differences"))
    env = clean_env(git_src, home)
    version = subprocess.run([git, "version"], stdout=subprocess.PIPE, env=env).stdout.decode().strip()
    simm_version = subprocess.run([a.simm, "--version"], stdout=subprocess.PIPE, env=env).stdout.decode().strip()
    log(f"git-conformance: {version} ({git_src}), {simm_version} ({a.simm})")

    paths = {s: script_path(git_src, s) for s in scripts}
    names = {s: os.path.basename(p)[:-3] for s, p in paths.items()}
    # The test scripts run as git's test suite runs them: their own
    # environment from test-lib.sh, the caller's GIT_* variables removed.
    test_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    todo = [p for s, p in paths.items() if not (a.reuse and os.path.isdir(trash_of(trash_root, p)))]
    log(f"running {len(todo)} test script(s) with -d ({len(paths) - len(todo)} reused)")
    test_runs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for res in ex.map(lambda p: run_test_script(git_src, trash_root, report, p, test_env), todo):
            test_runs.append(res)
    for s in scripts:
        if all(t[0] != names[s] for t in test_runs):
            test_runs.append((names[s], "-", "reused"))
    test_runs.sort()

    if os.path.exists(copy_root):
        shutil.rmtree(copy_root)
    os.makedirs(copy_root)
    repos = []
    seen = {}
    lock = threading.Lock()
    for s in scripts:
        src = trash_of(trash_root, paths[s])
        if not os.path.isdir(src):
            log(f"  {names[s]}: no trash directory left")
            continue
        dst = os.path.join(copy_root, os.path.basename(src))
        subprocess.check_call(["cp", "-a", src, dst])
        for kind, path in candidates(dst):
            repos.append(prepare(git, s, kind, path, copy_root, env, a.max_pairs, seen, lock))

    with open(os.path.join(report, "repositories.tsv"), "w") as f:
        f.write("script\trepository\tcommits\tloose trees\tpairs\tcapped\tworktree\tpartial\tunmerged\tnote\n")
        for r in repos:
            f.write(
                f"{r.script}\t{r.rel}\t{len(r.commits)}\t{len(r.trees)}\t{len(r.pairs)}\t{int(r.capped)}\t"
                f"{int(bool(r.index))}\t{int(r.partial)}\t{len(r.unmerged)}\t{r.note}\n"
            )
    todo = [r for r in repos if r.git_dir]
    total = sum(len(r.pairs) + (3 * len(r.bases) if r.index else 0) for r in todo) * len(flagsets)
    log(f"{len(todo)} repositories, {total} cases (each run by both tools)")

    simm_copy = os.path.join(work, "git-simm")
    shutil.copy2(a.simm, simm_copy)
    results = Results(report)
    start = time.time()
    done = [0]

    def one(r):
        compare_repo(r, git, simm_copy, flagsets, env, results)
        with results.lock:
            done[0] += 1
            c = results.counts
            log(
                f"  [{done[0]}/{len(todo)}] {r.rel}: {len(r.pairs)} pairs{' (capped)' if r.capped else ''}; "
                f"so far {c[('*', '*', '*', 'run')]} cases, {c[('*', '*', '*', 'differing')]} differing, "
                f"{c[('*', '*', '*', 'errors')]} errors, {time.time() - start:.0f} s"
            )

    # The repositories of one test script run one after the other: a
    # superproject's work-tree diff reads its submodules' indexes, which the
    # comparisons in a submodule rewrite.
    groups = collections.OrderedDict()
    for r in todo:
        groups.setdefault(r.script, []).append(r)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        list(ex.map(lambda rs: [one(r) for r in rs], sorted(groups.values(), key=len, reverse=True)))
    results.diff_file.close()

    lines = summary(results, scripts, flagsets, repos, test_runs)
    with open(os.path.join(report, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(report, "classes.txt"), "w") as f:
        for cls, n in results.classes.most_common():
            f.write(f"{n}\t{cls}\t{results.class_example[cls]}\n")
    print("\n".join(lines))
    print(f"\nreport: {report}")
    c = results.counts
    return 0 if c[("*", "*", "*", "identical")] == c[("*", "*", "*", "run")] else 1


if __name__ == "__main__":
    sys.exit(main())
