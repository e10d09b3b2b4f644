#!/usr/bin/env bash
# The catalog's FP8 grids by shape are what scripts/fp8-shape-grid.py makes of the shared
# measured tables (docs/estimator.md, "FP8 GEMMs by shape"): each device's grid, point by
# point, from its own table. And the script refuses a table without both types.
source "$(dirname "$0")/../e2e_lib.sh"

measured=$SRC/../shared/data/measured
[ -d "$measured" ] || { echo "SKIP: no ../shared/data/measured beside the clone"; exit 77; }
for pair in b200-sxm-180gb:gemm_b200-sxm-180gb.csv l40s:gemm_l40s.csv; do
  device=${pair%%:*}
  table=$measured/${pair#*:}
  expect_exit 0 python3 "$SRC/scripts/fp8-shape-grid.py" "$table"
  python3 - "$OUT" "$SRC/data/catalog/devices.json" "$device" <<'PY' || fail "$device: the catalog's grid is not the table's"
import json, sys
made = json.loads(sys.argv[1])
catalog = {d["name"]: d for d in json.load(open(sys.argv[2]))["devices"]}
held = catalog[sys.argv[3]]["gemm_fp8_shape"]
assert held["dims"] == made["dims"], (held["dims"], made["dims"])
assert held["relative"] == made["relative"], sys.argv[3]
PY
done

# bf16 rows alone: nothing to compare FP8 against, one line and exit 1.
head -3 "$measured/gemm_b200-sxm-180gb.csv" >"$SCRATCH/bf16.csv"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/bf16.csv"
case "$ERR" in *"no shape measured in both bf16 and fp8"*) ;; *) fail "refusal: $ERR";; esac
# A row without its numbers, and a file that is not there: one line each, exit 1.
printf 'device,host,dtype,m,n,k,batch,time_ns,tflop_per_s\nx,y,fp8,64,x,64,1,1,1\n' >"$SCRATCH/bad.csv"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/bad.csv"
[ "$ERR" = "$SCRATCH/bad.csv line 2: needs numeric m, n, k and tflop_per_s columns (shardcost export --format csv)" ] ||
  fail "bad row: $ERR"
expect_exit 1 python3 "$SRC/scripts/fp8-shape-grid.py" "$SCRATCH/none.csv"
[ "$ERR" = "$SCRATCH/none.csv: No such file or directory" ] || fail "missing file: $ERR"
