#!/usr/bin/env python3
"""FP8 GEMMs' efficiency against bf16 GEMMs of the same shape, from a measured GEMM table.

Reads a table in `shardcost export --format csv` layout holding both bf16 and fp8 rows of one
device (the shared ../shared/data/measured/gemm_*.csv), and prints the device catalog's
"gemm_fp8_shape" object: for m, n, k on a grid of powers of two, the median over the measured
shapes within half an octave of each (every dimension) of

    (fp8 TFLOP/s / fp8 peak) / (bf16 TFLOP/s / bf16 peak) = fp8 TFLOP/s / bf16 TFLOP/s / R,

the two measured at the same m, n, k, R the device's FP8 peak over its bf16 peak (the catalog's
peak_tflops: 4500 / 2250 = 2 on B200, 733 / 362.05 on L40S). A grid point with no measured
shape near it fails the script: the catalog holds no value that was not measured.

Usage: scripts/fp8-shape-grid.py TABLE.csv PEAK_RATIO
"""
import csv
import json
import math
import statistics
import sys

DIMS = [256, 512, 1024, 2048, 4096, 8192, 16384]


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        peak_ratio = float(sys.argv[2])
    except ValueError:
        peak_ratio = 0
    if not peak_ratio > 0:
        print(f"PEAK_RATIO '{sys.argv[2]}' must be a positive number (FP8 peak / bf16 peak)",
              file=sys.stderr)
        return 2
    rates = {}
    try:
        with open(sys.argv[1], newline="") as f:
            for line, row in enumerate(csv.DictReader(f), start=2):
                try:
                    key = (int(row["m"]), int(row["n"]), int(row["k"]))
                    if int(row.get("batch") or 1) != 1:
                        continue
                    rates[(row["dtype"], *key)] = float(row["tflop_per_s"])
                except (KeyError, TypeError, ValueError):
                    print(f"{sys.argv[1]} line {line}: needs numeric m, n, k and tflop_per_s "
                          "columns (shardcost export --format csv)", file=sys.stderr)
                    return 1
    except OSError as e:
        print(f"{sys.argv[1]}: {e.strerror}", file=sys.stderr)
        return 1
    ratios = []
    for (dtype, m, n, k), fp8 in rates.items():
        bf16 = rates.get(("bf16", m, n, k))
        if dtype == "fp8" and bf16:
            ratios.append((math.log2(m), math.log2(n), math.log2(k), fp8 / bf16 / peak_ratio))
    if not ratios:
        print(f"{sys.argv[1]}: no shape measured in both bf16 and fp8", file=sys.stderr)
        return 1
    grid = []
    for m in DIMS:
        plane = []
        for n in DIMS:
            line = []
            for k in DIMS:
                lm, ln, lk = math.log2(m), math.log2(n), math.log2(k)
                near = [r for a, b, c, r in ratios
                        if abs(a - lm) <= 0.5 and abs(b - ln) <= 0.5 and abs(c - lk) <= 0.5]
                if not near:
                    print(f"{sys.argv[1]}: nothing measured near m={m} n={n} k={k}",
                          file=sys.stderr)
                    return 1
                line.append(round(statistics.median(near), 3))
            plane.append(line)
        grid.append(plane)
    print(json.dumps({"dims": DIMS, "relative": grid}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
