"""Writes cost tables as CSV for the compare tests: the same host benchmark figures with fresh
noise per seed, optionally slowed down in one table. Not a test itself (the runner globs *.sh).

usage: compare_gen.py OUT_DIR SEED [--slow TABLE] [--factor 1.2] [--noise 0.04] [--iters 30]
                      [--no-samples]
Writes OUT_DIR/{gemm,memory,collective,kernels}.csv.
"""
import argparse
import csv
import os
import random

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("seed", type=int)
p.add_argument("--slow", default="")
p.add_argument("--factor", type=float, default=1.2)
p.add_argument("--noise", type=float, default=0.04, help="relative sigma of one iteration")
p.add_argument("--iters", type=int, default=30)
p.add_argument("--no-samples", action="store_true")
p.add_argument("--gpu", action="store_true", help="A100-like figures (for the report) instead of a host CPU's")
a = p.parse_args()
rng = random.Random(a.seed)
DEVICE = "NVIDIA A100-SXM4-80GB" if a.gpu else "Generic Host CPU @ 3.0GHz"


def saturating(peak, size, half):
    """A rate that reaches half its peak at size half: small calls are latency-bound."""
    return peak * size / (size + half)

os.makedirs(a.out, exist_ok=True)


def times(true_ns, table):
    """Per-iteration times: Gaussian jitter plus a rare slow outlier, as a host run shows."""
    scale = a.factor if table == a.slow else 1.0
    out = []
    for _ in range(a.iters):
        x = true_ns * scale * (1 + rng.gauss(0, a.noise))
        if rng.random() < 0.05:
            x *= 1 + rng.random() * 0.5
        out.append(max(1, int(round(x))))
    return out


def pct(s, q):
    s = sorted(s)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] * (1 - (pos - lo)) + s[hi] * (pos - lo)


def summary(samples):
    row = {"time_ns": int(round(pct(samples, 0.5))), "time_p10_ns": int(round(pct(samples, 0.1))),
           "time_p90_ns": int(round(pct(samples, 0.9))), "iterations": len(samples)}
    if not a.no_samples:
        row["samples_ns"] = " ".join(map(str, samples))
    return row


def write(name, rows):
    with open(os.path.join(a.out, name + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


gemm = []
GEMM = (("bf16", 290.0), ("tf32", 140.0), ("fp32", 19.0)) if a.gpu else (("fp32", 1.2), ("bf16", 0.6))
for dtype, tflops in GEMM:
    for n in ((256, 512, 1024, 2048, 4096, 8192) if a.gpu else (128, 256, 512, 1024, 2048)):
        rate = saturating(tflops, 2 * n ** 3, 2 * 1024 ** 3) if a.gpu else tflops
        t = 2 * n ** 3 / (rate * 1e12) * 1e9
        gemm.append({"device": DEVICE, "host": "ci-runner", "dtype": dtype, "m": n, "n": n, "k": n, "batch": 1,
                     **summary(times(t, "gemm"))})
write("gemm", gemm)

memory = []
MEMORY = (("copy_d2d", 1700.0), ("memset", 1850.0), ("copy_h2d", 24.0)) if a.gpu else \
    (("copy", 9.0), ("read", 14.0), ("write", 11.0))
for kind, gbps in MEMORY:
    for size in (1 << s for s in range(16, 31 if a.gpu else 27, 2)):  # 64 KiB .. 64 MiB (gpu: 1 GiB)
        rate = saturating(gbps, size, 4 << 20) if a.gpu else gbps
        memory.append({"device": DEVICE, "host": "ci-runner", "kind": kind, "bytes": size,
                       **summary(times(size / rate, "memory"))})
write("memory", memory)

collective = []
for op in ("all_reduce", "all_gather"):
    for ranks in ((4, 8) if a.gpu else (2, 4)):
        for size in (1 << s for s in range(10, 31 if a.gpu else 25, 2)):  # 1 KiB .. 16 MiB (gpu: 1 GiB)
            busbw = 230.0 if a.gpu else 5.0
            t = (8000 if a.gpu else 3000) + size / busbw * (2 if op == "all_reduce" else 1) * (ranks - 1) / ranks
            collective.append({"device": DEVICE, "host": "ci-runner", "op": op, "dtype": "float",
                               "redop": "sum" if op == "all_reduce" else "none", "root": -1, "bytes": size,
                               "elements": size // 4, "ranks": ranks, "nodes": 1, "fabric_level": "intra_node",
                               "in_place": 0, **summary(times(t, "collective"))})
write("collective", collective)

kernels = []
start = 0
for i in range(120):
    for name, t in (("sgemm_128x128_nn", 52000), ("vectorized_elementwise_kernel", 6100),
                    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 31000)):
        d = times(t, "kernels")[0]
        kernels.append({"device": DEVICE, "host": "ci-runner", "stream": 7, "kind": "kernel", "name": name,
                        "start_ns": start, "duration_ns": d, "bytes": ""})
        start += d + 500
write("kernels", kernels)
