#!/usr/bin/env python3
"""Benchmark --jobs: several FILEs translated at once.

    scripts/bench/jobs.py [--files 8] [--size 16M] [--jobs 1,2] [--rounds 5] [--bin PATH]

Builds FILES inputs of SIZE each from the recordings (gen.py; the dialects
taken in turn, so a batch is a mix), then times `agui-translate -j N FILE...`
for each N, the commands interleaved round by round so that machine noise
hits them alike, output to /dev/null. Reports the median seconds and input
MB/s for each N and its speed-up over the first, and checks that every N
writes the same bytes (by SHA-256). Results go to stdout as Markdown.
"""
import argparse
import hashlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DIALECTS = ["gemini", "codex", "codex-legacy", "claude", "claude-partial"]


def timed(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    return elapsed


def digest(cmd):
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as proc:
        for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--size", default="16M")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "agui-translate"))
    args = ap.parse_args()
    jobs = [int(j) for j in args.jobs.split(",")]
    with tempfile.TemporaryDirectory(prefix="agui-jobs-") as tmp:
        files = []
        for i in range(args.files):
            dialect = DIALECTS[i % len(DIALECTS)]
            path = os.path.join(tmp, f"{i}-{dialect}.jsonl")
            subprocess.run(
                [sys.executable, os.path.join(HERE, "gen.py"), dialect, args.size, path],
                check=True,
                stderr=subprocess.DEVNULL,
            )
            files.append(path)
        total = sum(os.path.getsize(p) for p in files)
        cmds = {j: [args.bin, "-j", str(j), *files] for j in jobs}
        sums = {j: digest(cmds[j]) for j in jobs}
        if len(set(sums.values())) != 1:
            sys.exit(f"different output for different --jobs: {sums}")
        times = {j: [] for j in jobs}
        for _ in range(args.rounds):
            for j in jobs:
                times[j].append(timed(cmds[j]))
        cpus = os.cpu_count()
        print(f"`--jobs` on {args.files} files of {args.size} ({total / 1e6:.0f} MB), "
              f"{platform.machine()}, {cpus} processors, median of {args.rounds} rounds; "
              "the same bytes for every N.\n")
        print("| -j | seconds | MB/s | speed-up |")
        print("|---:|---:|---:|---:|")
        base = statistics.median(times[jobs[0]])
        for j in jobs:
            t = statistics.median(times[j])
            print(f"| {j} | {t:.3f} | {total / 1e6 / t:.0f} | {base / t:.2f}× |")


if __name__ == "__main__":
    main()
