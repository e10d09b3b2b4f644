#!/usr/bin/env bash
# predict through the real binary: measured rows come back as measured, shapes between them
# interpolated, the rest from the catalog; input order kept; bad input one line, exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
M=$SRC/tests/fixtures/measured
DB=$SCRATCH/a100.db
"$BIN" import csv --db "$DB" "$M/gemm_a100_excerpt.csv" "$M/collective_a100_excerpt.csv" >/dev/null

# 1024 and 4096 rows were measured (207,566 and 548,896 ns in aiconfigurator's table); 3000
# lies between 2048 and 4096; 100 is below every measured m: the catalog's.
expect_exit 0 "$BIN" predict gemm --device a100-sxm4-80gb --db "$DB" --format csv \
  --shape 4096x4096x4096 --shape 3000x4096x4096 --shape 100x4096x4096 --shape 1024x4096x4096
cat >"$SCRATCH/want.csv" <<'CSV'
m,n,k,batch,dtype,time_ns,source
4096,4096,4096,1,bf16,548896,measured
3000,4096,4096,1,bf16,INTERP,interpolated
100,4096,4096,1,bf16,CATALOG,catalog
1024,4096,4096,1,bf16,207566,measured
CSV
python3 - "$SCRATCH/out" "$SCRATCH/want.csv" <<'PY'
import csv, sys
got = list(csv.DictReader(open(sys.argv[1])))
want = list(csv.DictReader(open(sys.argv[2])))
assert len(got) == len(want), got
for g, w in zip(got, want):
    for k in ("m", "n", "k", "batch", "dtype", "source"):
        assert g[k] == w[k], (k, g, w)
    if w["time_ns"].isdigit():
        assert g["time_ns"] == w["time_ns"], (g, w)
t = float(got[1]["time_ns"])
assert 328049 < t < 548896, t   # between its measured neighbours
PY

# The same shapes from a file, and JSON keeps numbers as numbers.
printf 'm,n,k,batch\n4096,4096,4096,1\n100,4096,4096,1\n' >"$SCRATCH/shapes.csv"
expect_exit 0 "$BIN" predict gemm --device a100-sxm4-80gb --db "$DB" --shapes "$SCRATCH/shapes.csv" --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["rows"]
assert [r["m"] for r in rows] == [4096, 100], rows
assert rows[0]["source"] == "measured" and rows[0]["time_ns"] == 548896
assert rows[1]["source"] == "catalog"
PY

# Collectives: the store's all_to_all rows are priced as measured (16 MiB on 8 GPUs: 114.3 us).
expect_exit 0 "$BIN" predict collective --device a100-sxm4-80gb --db "$DB" --op all_to_all \
  --ranks 8 -b 16M -e 16M --format csv
grep -q '^all_to_all,8,1,8,16777216,114300,measured,measured: this size at 8 ranks over 1 node,,,$' "$SCRATCH/out" \
  || fail "all_to_all: $OUT"
# Without a store, across two DGX A100 nodes: the catalog.
expect_exit 0 "$BIN" predict collective --device a100-sxm4-80gb --op all_reduce --ranks 16 --nodes 2 -b 1M -e 4M
grep -q 'catalog' "$SCRATCH/out" || fail "catalog collective: $OUT"
[ "$(grep -c 'all_reduce' "$SCRATCH/out")" = 3 ] || fail "three sizes: $OUT"
expect_exit 0 "$BIN" predict memory --device h100-sxm5-80gb --op copy_d2d -b 1G --format csv
grep -q '^copy_d2d,1073741824,[0-9]*,catalog$' "$SCRATCH/out" || fail "memory: $OUT"

printf 'm,n,k\n1,2,3\n4,x,6\n' >"$SCRATCH/bad.csv"
check "bad.csv:3: column 'n' is 'x'; it must be a positive integer" predict gemm --device a100-sxm4-80gb --shapes "$SCRATCH/bad.csv"
printf 'm,k\n1,2\n' >"$SCRATCH/nocol.csv"
check "the header has no column 'n'" predict gemm --device a100-sxm4-80gb --shapes "$SCRATCH/nocol.csv"
check "unknown device 'a200'" predict gemm --device a200 --shape 1x2x3
check "unknown data type 'bf17'" predict gemm --device a100-sxm4-80gb --shape 1x2x3 --dtype bf17
check "has no fp8 peak" predict gemm --device a100-sxm4-80gb --shape 64x64x64 --dtype fp8
check "no GEMM shapes" predict gemm --device a100-sxm4-80gb
check "unknown collective 'allreduce'" predict collective --device a100-sxm4-80gb --op allreduce --ranks 8
check "17 ranks over 2 nodes put 9 on a node, and its nodes have 8 GPUs; use at least 3 nodes" \
  predict collective --device a100-sxm4-80gb --op all_reduce --ranks 17 --nodes 2
check "every node of the collective holds a rank" predict collective --device a100-sxm4-80gb --op all_reduce --ranks 3 --nodes 4
check "unknown memory operation 'copy'" predict memory --device a100-sxm4-80gb --op copy
