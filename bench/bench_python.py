#!/usr/bin/env python3
"""Benchmark target (issue 36): rank from Python on the quick start's case takes no more than
1.2x the binary's time. The binary is timed as a whole process (its start, the catalog, the
search, the JSON it prints), the module in one process as one call of rank_report (the same
request, the same JSON parsed into a dict) after a first call; each the median of --runs.
Prints both and exits 1 when the module's median is over 1.2x the binary's.

    PYTHONPATH=build/python python3 bench/bench_python.py build/shardcost
"""
import argparse
import statistics
import subprocess
import sys
import time

import shardcost

CASE = ["--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--gbs", "512",
        "--top", "10", "--format", "json"]
TARGET = 1.2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    binary = []
    for _ in range(a.runs):
        t = time.perf_counter()
        subprocess.run([a.binary, "rank", *CASE], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        binary.append(time.perf_counter() - t)
    shardcost.rank_report("llama3-70b", "dgx-h100", 512, gpus=64, top=10)
    module = []
    for _ in range(a.runs):
        t = time.perf_counter()
        shardcost.rank_report("llama3-70b", "dgx-h100", 512, gpus=64, top=10)
        module.append(time.perf_counter() - t)
    b, m = statistics.median(binary), statistics.median(module)
    print(f"rank llama3-70b on 64 H100s, median of {a.runs}: binary {b * 1e3:.1f} ms "
          f"(whole process), module {m * 1e3:.1f} ms (one call): {m / b:.2f}x "
          f"(target <= {TARGET}x)")
    return 0 if m <= TARGET * b else 1


if __name__ == "__main__":
    sys.exit(main())
