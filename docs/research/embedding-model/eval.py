#!/usr/bin/env python3
"""Prices kept off-grid embedding measurements with a store's fitted lookup models.

Usage: eval.py SHARDCOST KEEP_DIR [--refit] [--train STORE]
KEEP_DIR is what `bench_embedding_model SECONDS KEEP_DIR` leaves: grid.db (the grid and its
models), off1.db and off2.db (40 configurations off the grid, measured twice). --refit fits
the training store again first (after a change to the model). Prints, per pass, the model's median and
p90 |error| against off1 and the two measurements' own difference.
"""
import csv
import io
import json
import statistics
import subprocess
import sys


def rows(shardcost, db):
    """Each configuration once, at its median over the rounds it was measured in."""
    out = subprocess.run([shardcost, "export", "--db", db, "--table", "embedding", "--format",
                          "csv"], check=True, capture_output=True, text=True).stdout
    groups = {}
    for r in csv.DictReader(io.StringIO(out)):
        key = tuple(r[k] for k in ("device", "pass", "rows", "dim", "pooling", "batch", "zipf"))
        groups.setdefault(key, dict(r, times=[]))["times"].append(int(r["time_ns"]))
    for g in groups.values():
        g["time_ns"] = str(statistics.median(g["times"]))
    return [groups[k] for k in sorted(groups)]


def main():
    shardcost, keep = sys.argv[1], sys.argv[2]
    grid = f"{keep}/grid.db"
    if "--train" in sys.argv:
        grid = sys.argv[sys.argv.index("--train") + 1]
    if "--refit" in sys.argv:
        subprocess.run([shardcost, "fit", "--db", grid, "--table", "embedding"], check=True)
    first, second = rows(shardcost, f"{keep}/off1.db"), rows(shardcost, f"{keep}/off2.db")
    errors = {"forward": [], "backward": []}
    noise = {"forward": [], "backward": []}
    for a, b in zip(first, second):
        args = [shardcost, "predict", "embedding", "--device", a["device"], "--db", grid,
                "--rows", a["rows"], "--dim", a["dim"], "--pooling", a["pooling"], "--batch",
                a["batch"], "--zipf", a["zipf"], "--pass", a["pass"], "--format", "json"]
        p = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        t = float(a["time_ns"])
        errors[a["pass"]].append(abs(p["rows"][0]["time_ns"] / t - 1))
        noise[a["pass"]].append(abs(float(b["time_ns"]) / t - 1))
    for p in ("forward", "backward"):
        e, n = sorted(errors[p]), sorted(noise[p])
        print(f"{p:>8}: model {100 * e[len(e) // 2]:.1f} % median, {100 * e[int(0.9 * len(e))]:.1f} % "
              f"p90; measured again {100 * n[len(n) // 2]:.1f} % median, "
              f"{100 * n[int(0.9 * len(n))]:.1f} % p90 ({len(e)} configurations)")


if __name__ == "__main__":
    main()
