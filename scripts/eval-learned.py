#!/usr/bin/env python3
"""How well the store plus its fitted models price GEMMs they did not measure.

For each table (a shared measured table: device, dtype, m, n, k, batch, time_ns as
`shardcost export` writes), put N random shapes of one device and data type in a fresh store
(fixed seed), `shardcost fit` it, `shardcost predict` every other shape of that device and type,
and print the |relative error| by the source that priced it and over all.

  scripts/eval-learned.py BUILD/shardcost TABLE.csv [--train 2000] [--seed 1] [--dtype bf16]

With --unseen OTHER.csv ... the store holds N shapes of each other table instead, none of
TABLE's device, and every shape of TABLE is predicted (a device the store has no rows of).
"""
import argparse
import collections
import csv
import os
import random
import subprocess
import sys
import tempfile


def quantile(v, q):
    v = sorted(v)
    return v[int(q * (len(v) - 1))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("table")
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--device", help="catalog device (default: the table's, as the catalog names it)")
    ap.add_argument("--unseen", nargs="+", metavar="OTHER", help="tables whose shapes fill the store instead")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.table)) if r["dtype"] == a.dtype]
    if len(rows) <= a.train:
        sys.exit(f"{a.table}: {len(rows)} {a.dtype} rows, not more than --train {a.train}")
    random.Random(a.seed).shuffle(rows)
    train, test = rows[: a.train], rows[a.train :]
    if a.unseen:
        train, test = [], rows
        for other in a.unseen:
            o = [r for r in csv.DictReader(open(other)) if r["dtype"] == a.dtype]
            random.Random(a.seed).shuffle(o)
            train += o[: a.train]
        if not a.device:
            sys.exit("--unseen needs --device (the catalog name of TABLE's device)")
    header = list(rows[0].keys())
    for r in train:
        for k in list(r):
            if k not in header:
                del r[k]
    with tempfile.TemporaryDirectory() as tmp:
        def write(name, part):
            path = os.path.join(tmp, name)
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, header)
                w.writeheader()
                w.writerows(part)
            return path
        train_csv, test_csv, db = write("train.csv", train), write("test.csv", test), os.path.join(tmp, "s.db")
        subprocess.run([a.binary, "import", "csv", "--db", db, train_csv], check=True, stdout=subprocess.DEVNULL)
        fit = subprocess.run([a.binary, "fit", "--db", db, "--format", "json"], check=True,
                             capture_output=True, text=True)
        import json
        models = json.loads(fit.stdout)["models"]
        device = a.device or models[0]["device"]
        pred = subprocess.run([a.binary, "predict", "gemm", "--device", device, "--db", db, "--dtype", a.dtype,
                               "--shapes", test_csv, "--format", "csv"], check=True, capture_output=True, text=True)
    got = list(csv.DictReader(pred.stdout.splitlines()))
    assert len(got) == len(test)
    by = collections.defaultdict(list)
    for t, p in zip(test, got):
        e = abs(float(p["time_ns"]) - float(t["time_ns"])) / float(t["time_ns"])
        by[p["source"]].append(e)
        by["all"].append(e)
    held = f"{a.train} shapes of each of {', '.join(os.path.basename(u) for u in a.unseen)}" if a.unseen else f"{a.train} shapes"
    print(f"{os.path.basename(a.table)} {a.dtype}: {held} in the store (seed {a.seed}), {len(test)} predicted")
    for m in models:
        for cv in m.get("cross_validation", []):
            print(f"  fit {m['device']} {m['key']}: {cv['split']} median {100 * cv['median']:.2f} % p90 {100 * cv['p90']:.2f} %")
    for source in sorted(by, key=lambda s: (s == "all", s)):
        v = by[source]
        print(f"  {source:12s} {len(v):6d} shapes  median {100 * quantile(v, .5):6.2f} %  p90 {100 * quantile(v, .9):6.2f} %")


if __name__ == "__main__":
    main()
