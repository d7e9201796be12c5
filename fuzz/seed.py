#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from a real repository.

    python3 fuzz/seed.py --repo <url or path> [--git-simm <binary>] [--work <dir>]

Clones the repository into the work directory (outside the source tree),
runs git-simm on it to make real store tables, reads real deltas out of its
pack, writes real loose objects, and takes its configuration, .gitignore
files and paths; everything lands in fuzz/corpus/<target>/ (ignored by git),
one file per seed, named by its SHA-1. Hand-written seeds for the parsers of
user input (scores, pathspec magic, config lines) are added too. Seeds are
kept small (libFuzzer's -max_len follows the largest seed).
"""

import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import zlib

FUZZ = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(FUZZ, "corpus")
MAX_SEED = 64 * 1024


def git(repo, *args, input=None):
    return subprocess.run(
        ["git", "-C", repo, *args], input=input, capture_output=True, check=True
    ).stdout


def put(target, data):
    if len(data) > MAX_SEED:
        return
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def cat_file(repo, shas):
    """Raw contents of objects, through one `git cat-file --batch`."""
    out = git(repo, "cat-file", "--batch", input="".join(s + "\n" for s in shas).encode())
    objects, at = {}, 0
    for sha in shas:
        nl = out.index(b"\n", at)
        head = out[at:nl].split()
        size = int(head[2])
        objects[sha] = out[nl + 1 : nl + 1 + size]
        at = nl + 1 + size + 1
    return objects


def varint_header(b, at):
    c = b[at]
    kind, size, shift = (c >> 4) & 7, c & 15, 4
    at += 1
    while c & 0x80:
        c = b[at]
        size |= (c & 0x7F) << shift
        shift += 7
        at += 1
    return kind, size, at


def deltas(repo, limit=300):
    """(base, delta, result) triples read out of the repository's pack."""
    git(repo, "repack", "-adq", "--window=50")
    pack_dir = os.path.join(repo, ".git", "objects", "pack")
    packs = [p for p in os.listdir(pack_dir) if p.endswith(".pack")]
    triples = []
    for p in packs:
        path = os.path.join(pack_dir, p)
        listing = git(repo, "verify-pack", "-v", path[:-5] + ".idx").decode()
        rows = []
        for line in listing.splitlines():
            f = line.split()
            if len(f) == 7 and f[1] == "blob" and int(f[2]) < 30000:
                rows.append((f[0], int(f[4]), f[6]))
        rows = rows[:limit]
        if not rows:
            continue
        data = open(path, "rb").read()
        objects = cat_file(repo, sorted({r[0] for r in rows} | {r[2] for r in rows}))
        for sha, offset, base in rows:
            kind, _, at = varint_header(data, offset)
            if kind == 6:
                while data[at] & 0x80:
                    at += 1
                at += 1
            elif kind == 7:
                at += 20
            else:
                continue
            delta = zlib.decompressobj().decompress(data[at : at + 200000])
            if len(objects[base]) < 65536:
                triples.append((objects[base], delta, objects[sha]))
    return triples


def with_len(first, second, extra=b""):
    return struct.pack("<H", len(first)) + extra + first + second


def seed_store(repo, simm, env):
    """Small fingerprint and histogram tables, one per directory."""
    dirs = [d for d in git(repo, "ls-tree", "-d", "--name-only", "HEAD").decode().splitlines()]
    for d in dirs[:12] + [""]:
        spec = f"HEAD:{d}" if d else "HEAD"
        subprocess.run([simm, "fingerprint", "-q", spec], cwd=repo, env=env, capture_output=True)
        subprocess.run([simm, "groups", spec], cwd=repo, env=env, capture_output=True)
        subprocess.run(
            [simm, "export", "-o", os.path.join(repo, "..", "seed.parquet"), spec],
            cwd=repo,
            env=env,
            capture_output=True,
        )
    store = os.path.join(repo, ".git", "simm")
    for name in sorted(os.listdir(store)) if os.path.isdir(store) else []:
        data = open(os.path.join(store, name), "rb").read()
        if name.startswith("fp-"):
            put("store_table", data)
        elif name.startswith("hist-"):
            put("histogram_table", data)
            seed_records(data)


def seed_records(table):
    """The records of a histogram table, for spans_decode."""
    count = struct.unpack_from("<Q", table, 20)[0]
    hash_len = struct.unpack_from("<I", table, 16)[0]
    index = 32 + 1024 + count * hash_len
    data_start = index + count * 16
    for i in range(min(count, 200)):
        off, length, _ = struct.unpack_from("<QII", table, index + i * 16)
        put("spans_decode", table[data_start + off : data_start + off + length])


def seed_blobs(repo):
    files = git(repo, "ls-files", "-s").decode().splitlines()
    shas = [l.split()[1] for l in files][:400]
    blobs = cat_file(repo, shas)
    small = [b for b in blobs.values() if len(b) < 8192][:60]
    for b in small:
        put("spans_decode", b)
        put("pack_reread", b)
        put("parquet_export", b)
    # Real loose objects, as git writes them.
    loose = os.path.join(repo, "..", "loose")
    shutil.rmtree(loose, ignore_errors=True)
    git(repo, "init", "-q", loose)
    for b in small[:40]:
        sha = git(loose, "hash-object", "-w", "--stdin", input=b).decode().strip()
        put("loose_inflate", open(os.path.join(loose, ".git", "objects", sha[:2], sha[2:]), "rb").read())
    return small


def seed_text(repo):
    paths = git(repo, "ls-files").decode(errors="replace").splitlines()
    sample = "\n".join(paths[:200]).encode()
    for name in [p for p in paths if p.endswith(".gitignore")][:20]:
        put("ignore_patterns", git(repo, "show", f"HEAD:{name}") + b"\n\n" + sample)
    put("ignore_patterns", b"*.o\nbuild/\n!keep.o\n/top\ndocs/**/*.md\n\\#x\n\n" + sample)
    put("config_file", open(os.path.join(repo, ".git", "config"), "rb").read())
    if ".gitmodules" in paths:
        put("config_file", b"\0" + git(repo, "show", "HEAD:.gitmodules"))
    put(
        "config_file",
        b"[simm]\n\tgroupThreshold = 60%\n\tstrict\n\tignore = vendor/\n"
        b"[diff]\n\trenameLimit = 1k\n\tignoreSubmodules = dirty\n[gc]\n\tpruneExpire = 2.weeks.ago\n"
        b'[submodule "sub"]\n\tignore = all\n\0[submodule "sub"]\n\tpath = sub\n\turl = ../x\n\tignore = untracked\n',
    )
    for spec in [":(top)src", ":/!*.c", ":(glob)**/x", ":(icase)README", ":(attr:diff)a", ":^vendor", "../a", "sub/", "*.[ch]", ":(literal)*"]:
        put("pathspec", b"\0" + spec.encode() + b"\n\n" + sample)
        put("pathspec", b"\1" + spec.encode() + b"\n\n" + sample)


def seed_values(repo):
    alias = 'alias.params=!printf "%s" "$GIT_CONFIG_PARAMETERS"'
    for args in (["a.b=c"], ["x.y=it's !"], ["e.f="], ["flag"], ["a.b=1", "c.d=two words", "z.z"]):
        cmd = ["git", "-C", repo]
        for a in args + [alias]:
            cmd += ["-c", a]
        put("config_values", subprocess.run(cmd + ["params"], capture_output=True).stdout)
    put("config_values", b"'a.b=old style' 'c.d'")
    for v in ["now", "never", "2.weeks.ago", "3 days ago", "1.year.ago", "untracked", "dirty", "all", "none", "RCd", "ACDMRTUXB"]:
        put("config_values", v.encode())
    for v in ["", "0", "5", "50", "100", "50%", "0.5", ".5%", "1.", "100%", "99999999", "1.2.3", "5x", "%", "0.000001%"]:
        put("rename_score", v.encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="repository to clone (URL or path)")
    ap.add_argument("--git-simm", default="git-simm", help="git-simm binary for store tables")
    ap.add_argument("--work", default="/tmp/git-simm-fuzz-seed", help="scratch directory")
    a = ap.parse_args()
    repo = os.path.join(a.work, "repo")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    subprocess.run(["git", "clone", "-q", a.repo, repo], check=True)
    env = dict(os.environ, GIT_SIMM_NO_PROGRESS="1")
    if shutil.which(a.git_simm):
        seed_store(repo, a.git_simm, env)
    else:
        print(f"no {a.git_simm}: no store tables seeded", file=sys.stderr)
    seed_blobs(repo)
    for base, delta, result in deltas(repo):
        put("delta_apply", with_len(base, delta))
        put("delta_roundtrip", with_len(base, result, extra=b"\x80"))
    seed_text(repo)
    seed_values(repo)
    for t in sorted(os.listdir(CORPUS)):
        print(f"{t}: {len(os.listdir(os.path.join(CORPUS, t)))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
