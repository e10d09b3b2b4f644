#!/usr/bin/env python3
"""The collective models' held-out figures on measured tables, through the real binary.

For each table (an nccl-tests-like CSV as `shardcost export` writes), import it into a fresh
store, `shardcost fit --table collective`, and print each model's cross-validated |relative
error| of time: each size held out (predicted from its neighbours on the same rank count),
the largest and the smallest quarter of the sizes held out, and each rank count held out
(predicted from the rank counts either side; on a node whose links are not uniform the model
never does this, and the line says so).

  scripts/eval-collectives.py BUILD/shardcost TABLE.csv... [--format md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--format", choices=["text", "md"], default="text")
    a = ap.parse_args()
    if a.format == "md":
        print("| table | model | held out | rows | median | p90 |")
        print("|---|---|---|---|---|---|")
    for table in a.tables:
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "s.db")
            subprocess.run([a.binary, "import", "csv", "--db", db, table], check=True, stdout=subprocess.DEVNULL)
            out = subprocess.run([a.binary, "fit", "--db", db, "--table", "collective", "--format", "json"],
                                 check=True, capture_output=True, text=True)
            for m in json.loads(out.stdout)["models"]:
                if m.get("skipped"):
                    print(f"{os.path.basename(table)}: {m['key']} skipped: {m['skipped']}", file=sys.stderr)
                    continue
                for c in m.get("cross_validation", []):
                    cells = [os.path.basename(table), f"{m['device']} {m['key']}", c["split"], str(c["rows"]),
                             f"{100 * c['median']:.2f} %", f"{100 * c['p90']:.2f} %"]
                    print(("| " + " | ".join(cells) + " |") if a.format == "md" else "  ".join(cells))


if __name__ == "__main__":
    main()
