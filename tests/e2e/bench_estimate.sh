# measure -> store -> estimate: a store filled by bench prices the estimate ("measured" or
# "interpolated" in its breakdown) instead of the catalog.
source "$(dirname "$0")/../e2e_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
DB=$SCRATCH/costs.db

# A model small enough to run its GEMMs on a CPU in a test.
cat >"$SCRATCH/tiny.json" <<'JSON'
{"name": "tiny", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn_hidden": 1024,
 "vocab": 1024, "seq_len": 128, "activation": "gelu"}
JSON
# The cluster is this host: its device carries the CPU's name, as bench records it.
cpu=$("$BIN" devices --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["host"]["cpu"])')
cat >"$SCRATCH/host.json" <<JSON
{"name": "this host", "device": {"name": "$cpu", "sms": 2, "memory_GiB": 16,
  "memory_bandwidth_GBps": 20, "peak_tflops": {"fp32": 0.1, "bf16": 0.1},
  "efficiency": {"gemm": 0.5, "memory": 0.5, "attention": 0.3}},
 "gpus_per_node": 2, "intra_node_bandwidth_GBps": 10, "inter_node_bandwidth_GBps": 1}
JSON

expect_exit 0 "$BIN" bench gemm --device cpu --shapes-from "$SCRATCH/tiny.json" --tp 1,2 --mbs 1 --iters 2 --warmup 1 --db "$DB"
grep -q "tp=2 mbs=1" <<<"$OUT" || fail "no tp=2 shapes measured: $OUT"
expect_exit 0 mpirun -np 2 --oversubscribe --mca btl self,vader --mca pml ob1 \
  "$BIN" bench collective --backend mpi --op all_reduce,all_gather,reduce_scatter -b 1K -e 4M -f 4 --iters 3 --warmup 1 --db "$DB"

expect_exit 0 "$BIN" estimate --model "$SCRATCH/tiny.json" --cluster "$SCRATCH/host.json" \
  --strategy "tp=2,mbs=1,gbs=8" --db "$DB" --format json
python3 - "$SCRATCH/out" <<'PY' || fail "estimate did not price from the store: $OUT"
import json, sys
parts = json.load(open(sys.argv[1]))["breakdown"]["time"]
tp = [p for p in parts if p["part"].startswith("tp")]
assert tp and all(p["source"] in ("measured", "interpolated") for p in tp if p["seconds"] > 0), parts
PY
# Without the store the same estimate is catalog-priced.
expect_exit 0 "$BIN" estimate --model "$SCRATCH/tiny.json" --cluster "$SCRATCH/host.json" \
  --strategy "tp=2,mbs=1,gbs=8" --format json
grep -q '"measured"\|"interpolated"' <<<"$OUT" && fail "catalog-only estimate claims measurements: $OUT"
echo "bench_estimate: ok"
