#!/usr/bin/env python3
"""Writes the embedding tables of MLPerf's DLRM-DCNv2 benchmark (Criteo 1TB, synthetic
multi-hot) as shard-tables files, at full size and scaled for a host run.

Source of the figures (public, as the MLPerf Training reference and TorchRec's DLRM example
give them):
  - vocabulary sizes, `--num_embeddings_per_feature 40000000,39060,17295,7424,20265,3,7122,
    1543,63,40000000,3067956,405282,10,2209,11938,155,4,976,14,40000000,40000000,40000000,
    590152,12973,108,36` (Criteo 1TB's 26 categorical features, hashed to at most 40 M rows);
  - pooling factors, `--multi_hot_sizes 3,2,1,2,6,1,1,1,1,7,3,8,1,6,9,5,1,1,1,12,100,27,10,3,
    1,1` with `--multi_hot_distribution_type uniform` (materialize_synthetic_multihot_dataset.py);
  - `--embedding_dim 128`, fp32 weights.
The rows are drawn uniformly (zipf 0), as that materialisation draws its multi-hot ids.

Usage: scripts/dlrm-tables.py OUT_DIR [--scale 256]
Writes OUT_DIR/mlperf-dlrmv2-tables.csv (full) and OUT_DIR/mlperf-dlrmv2-tables-scaled.csv
(every table's rows divided by the scale, at least its pooling factor and never more than it
had: the full set's 105 GB of fp32 weights become 0.41 GB, below the 4 GiB a CI host holds).
"""
import argparse
import math
import pathlib

VOCAB = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
         2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
HOTS = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
DIM = 128


def write(path, scale):
    lines = ["name,rows,dim,pooling_factor,dtype,zipf"]
    for i, (rows, hot) in enumerate(zip(VOCAB, HOTS)):
        r = rows if scale == 1 else min(rows, max(hot, math.ceil(rows / scale)))
        lines.append(f"C{i + 1},{r},{DIM},{hot},fp32,0")
    path.write_text("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--scale", type=int, default=256)
    a = ap.parse_args()
    write(a.out / "mlperf-dlrmv2-tables.csv", 1)
    write(a.out / "mlperf-dlrmv2-tables-scaled.csv", a.scale)


if __name__ == "__main__":
    main()
