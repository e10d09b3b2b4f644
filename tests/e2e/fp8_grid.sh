#!/usr/bin/env bash
# The catalog's FP8 grids by shape are what scripts/fp8-shape-grid.py makes of the shared
# measured tables (docs/estimator.md, "FP8 GEMMs by shape"): each device's grid, point by
# point, from its own table and its own peaks. And the script refuses bad input in one line.
source "$(dirname "$0")/../e2e_lib.sh"

measured=$SRC/../shared/data/measured
[ -d "$measured" ] || { echo "SKIP: no ../shared/data/measured beside the clone"; exit 77; }
for pair in b200-sxm-180gb:gemm_b200-sxm-180gb.csv l40s:gemm_l40s.csv; do
  device=${pair%%:*}
  table=$measured/${pair#*:}
  ratio=$(python3 -c 'import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["devices"]}[sys.argv[2]]["peak_tflops"]
print(repr(d["fp8"] / d["bf16"]))' "$SRC/data/catalog/devices.json" "$device")
  expect_exit 0 python3 "$SRC/scripts/fp8-shape-grid.py" "$table" "$ratio"
  python3 - "$OUT" "$SRC/data/catalog/devices.json" "$device" <<'PY' || fail "$device: the catalog's grid is not the table's"
import json, sys
made = json.loads(sys.argv[1])
catalog = {d["name"]: d for d in json.load(open(sys.argv[2]))["devices"]}
held = catalog[sys.argv[3]]["gemm_fp8_shape"]
assert held["dims"] == made["dims"], (held["dims"], made["dims"])
assert held["relative"] == made["relative"], sys.argv[3]
PY
done

# One point against the raw table, computed here without the script: B200 at m = 1024,
# n = 4096, k = 8192 is relative[2][4][5] (m, then n, then k), the median of fp8 / bf16 / 2 over
# the shapes within half an octave of it.
python3 - "$measured/gemm_b200-sxm-180gb.csv" "$SRC/data/catalog/devices.json" <<'PY' || fail "B200's grid point at 1024 x 4096 x 8192"
import csv, json, math, statistics, sys
rates = {}
for r in csv.DictReader(open(sys.argv[1])):
    rates[(r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]))] = float(r["tflop_per_s"])
near = lambda x, c: abs(math.log2(x / c)) <= 0.5
v = [f / rates[("bf16", m, n, k)] / 2 for (t, m, n, k), f in rates.items()
     if t == "fp8" and ("bf16", m, n, k) in rates and near(m, 1024) and near(n, 4096) and near(k, 8192)]
grid = {d["name"]: d for d in json.load(open(sys.argv[2]))["devices"]}["b200-sxm-180gb"]["gemm_fp8_shape"]
assert grid["dims"][2] == 1024 and grid["dims"][4] == 4096 and grid["dims"][5] == 8192
assert abs(grid["relative"][2][4][5] - statistics.median(v)) < 5e-4, (grid["relative"][2][4][5], statistics.median(v))
assert abs(grid["relative"][5][4][2] - grid["relative"][2][4][5]) > 0.01  # the axes are told apart
PY

# bf16 rows alone: nothing to compare FP8 against, one line and exit 1.
head -3 "$measured/gemm_b200-sxm-180gb.csv" >"$SCRATCH/bf16.csv"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/bf16.csv" 2
case "$ERR" in *"no shape measured in both bf16 and fp8"*) ;; *) fail "refusal: $ERR";; esac
# A row without its numbers, a file that is not there, a peak ratio that is not one: one line each.
printf 'device,host,dtype,m,n,k,batch,time_ns,tflop_per_s\nx,y,fp8,64,x,64,1,1,1\n' >"$SCRATCH/bad.csv"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/bad.csv" 2
[ "$ERR" = "$SCRATCH/bad.csv line 2: needs numeric m, n, k and tflop_per_s columns (shardcost export --format csv)" ] ||
  fail "bad row: $ERR"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/none.csv" 2
[ "$ERR" = "$SCRATCH/none.csv: No such file or directory" ] || fail "missing file: $ERR"
expect_exit 2 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/bad.csv" two
[ "$ERR" = "PEAK_RATIO 'two' must be a positive number (FP8 peak / bf16 peak)" ] || fail "ratio: $ERR"
