#!/usr/bin/env bash
# Learned GEMM models on a lent GPU: measure about 1,000 sampled bf16 and fp8 shapes there,
# fit on them, measure 1,000 more, and record how far the learned models and the catalog miss
# the second set. Stays under 4 minutes of device time (--time-budget per shape). Writes
# $OUT/learned-gpu.md (and the stores and CSVs beside it).
# Usage: scripts/learned-gpu-check.sh [--device CATALOG_NAME] [--shapes N] [--selftest TABLE.csv]
#   run from the shardcost tree (build-gpu/shardcost) or from a pack (bin/shardcost), as
#   scripts/gpu-check.sh is. --selftest takes a measured table instead of measuring (no GPU:
#   checks the fit, predict and report steps end to end).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/learned-gpu-out}
mkdir -p "$OUT"
DEVICE=h200-sxm-141gb
N=1000
SELFTEST=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2;;
    --shapes) N=$2; shift 2;;
    --selftest) SELFTEST=$2; shift 2;;
    *) echo "learned-gpu-check.sh: unknown option $1" >&2; exit 2;;
  esac
done
if [ -x bin/shardcost ]; then BIN=bin/shardcost; export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
elif [ -x build-gpu/shardcost ]; then BIN=build-gpu/shardcost
else BIN=build/shardcost; fi
report=$OUT/learned-gpu.md
: >"$report"
rm -f "$OUT"/train.db "$OUT"/test.db

# 2N shapes: m log-uniform over 1..16384 (as micro-batches of tokens are), n and k from the
# hidden and FFN sizes of today's models split by tp in 1, 2, 4, 8; a fixed seed.
python3 - "$N" >"$OUT/shapes.txt" <<'PY'
import random, sys
n = int(sys.argv[1])
rng = random.Random(20261201)
dims = [1024, 2048, 3584, 4096, 5120, 6144, 7168, 8192, 12288, 14336, 16384, 28672, 53248]
shapes = set()
while len(shapes) < 2 * n:
    m = max(1, int(round(2 ** rng.uniform(0, 14))))
    tp = rng.choice([1, 2, 4, 8])
    nn, kk = rng.choice(dims), rng.choice(dims)
    if rng.random() < 0.5: nn //= tp
    else: kk //= tp
    shapes.add((m, nn, kk))
shapes = sorted(shapes)
rng.shuffle(shapes)
for s in shapes: print("%dx%dx%d" % s)
PY

measure() {  # measure DTYPE DB FIRST COUNT
  local args=()
  while read -r s; do args+=(--shape "$s"); done < <(sed -n "$3,$(($3 + $4 - 1))p" "$OUT/shapes.txt")
  "$BIN" bench gemm --device cuda --dtype "$1" "${args[@]}" --warmup 3 --time-budget 0.02 --db "$2" \
    --format csv >>"$OUT/bench-$1.csv" 2>>"$OUT/bench.log"
}

start=$(date +%s)
if [ -n "$SELFTEST" ]; then
  python3 - "$SELFTEST" "$N" "$OUT" <<'PY'
import csv, random, sys
rows = list(csv.DictReader(open(sys.argv[1]))); n = int(sys.argv[2]); out = sys.argv[3]
random.Random(20261201).shuffle(rows)
for name, part in (("train", rows[:n]), ("test", rows[n:2 * n])):
    with open(f"{out}/{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0].keys())); w.writeheader(); w.writerows(part)
PY
  "$BIN" import csv --db "$OUT/train.db" "$OUT/train.csv" >/dev/null
  "$BIN" import csv --db "$OUT/test.db" "$OUT/test.csv" >/dev/null
else
  for dtype in bf16 fp8; do
    measure "$dtype" "$OUT/train.db" 1 "$N"
    measure "$dtype" "$OUT/test.db" $((N + 1)) "$N"
  done
fi
echo "measured in $(( $(date +%s) - start )) s" >>"$OUT/bench.log"

"$BIN" fit --db "$OUT/train.db" >"$OUT/fit.txt" 2>>"$OUT/fit.log" || { echo "fit failed: $OUT/fit.log" | tee -a "$report"; exit 1; }
"$BIN" export --db "$OUT/test.db" --table gemm --format csv >"$OUT/test-measured.csv"
status=0
python3 - "$BIN" "$DEVICE" "$OUT" <<'PY' >>"$report" || status=1
import csv, subprocess, sys, datetime
binary, device, out = sys.argv[1:4]
measured = list(csv.DictReader(open(f"{out}/test-measured.csv")))
def q(v, x):
    v = sorted(v); return v[int(x * (len(v) - 1))] if v else float("nan")
print(f"# Learned GEMM models on {device}, {datetime.datetime.utcnow():%Y-%m-%d}\n")
print("```"); print(open(f"{out}/fit.txt").read().rstrip()); print("```\n")
print("| dtype | shapes | source | median | p90 |\n|---|---|---|---|---|")
for dtype in sorted({r["dtype"] for r in measured}):
    rows = [r for r in measured if r["dtype"] == dtype]
    with open(f"{out}/shapes-{dtype}.csv", "w") as f:
        f.write("m,n,k,batch\n")
        for r in rows: f.write(f"{r['m']},{r['n']},{r['k']},{r['batch']}\n")
    for label, extra in (("store + models", ["--db", f"{out}/train.db"]), ("catalog", [])):
        p = subprocess.run([binary, "predict", "gemm", "--device", device, "--dtype", dtype,
                            "--shapes", f"{out}/shapes-{dtype}.csv", "--format", "csv"] + extra,
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(f"| {dtype} | {len(rows)} | {label} | {p.stderr.strip()} | |"); continue
        got = list(csv.DictReader(p.stdout.splitlines()))
        e = [abs(float(g["time_ns"]) - float(r["time_ns"])) / float(r["time_ns"]) for g, r in zip(got, rows)]
        print(f"| {dtype} | {len(rows)} | {label} | {100 * q(e, .5):.2f} % | {100 * q(e, .9):.2f} % |")
PY
cat "$report"
exit $status
