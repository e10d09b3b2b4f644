#!/usr/bin/env bash
# Every GPU check a lent device session owes (the developers' guide), as one prepared run, from a
# pack made here by scripts/pack-gpu.sh (the device image has no Debian packages to build with):
#   1. scripts/gpu-check.sh          GEMM/copy against torch, NCCL and embeddings checked, GPU tests
#   2. scripts/trace-gpu-check.sh    shardcost trace against torch.profiler on a training loop
#   3. scripts/learned-gpu-check.sh  learned GEMM models on shapes measured there (SHAPES of them)
#   4. bench gemm at the GEMMs the estimator prices for two `validate` rows (Megatron-core r0.8's
#      1.7B at mbs 4 and 70B at tp 8, bf16) and bench memory's device-to-device copies (which
#      price the memory-bound passes), then `validate --db` against the catalog: does the
#      measured device move the H100 tables (issue 32's Megatron-core gap)?
#   5. scripts/attention-gpu-check.py fused attention (flash, cuDNN) against the catalog's curves
# Each step runs under its own time limit and one failing does not stop the next; OUT/session.md
# lists each step's exit status and seconds, and every report sits under OUT.
# Usage (on the device, in the working tree's root, with pack carried):
#   OUT=$OUT pack/scripts/device-session.sh [--device CATALOG_NAME]
# Exit: 0 when every step passed, 1 when one failed, 77 without a GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x bin/shardcost ] || { echo "device-session: run it from a pack (scripts/pack-gpu.sh): no bin/shardcost" >&2; exit 2; }
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
OUT=${OUT:-$PWD/device-out}
SHAPES=${SHAPES:-300}
DEVICE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2;;
    *) echo "device-session: unknown option $1 (the one option is --device CATALOG_NAME)" >&2; exit 2;;
  esac
done
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null) ||
  { echo "device-session: no GPU (nvidia-smi failed); nothing run" >&2; exit 77; }
if [ -z "$DEVICE" ]; then
  case "$gpu" in
    *H200*) DEVICE=h200-sxm-141gb;; *H100*) DEVICE=h100-sxm5-80gb;; *B200*) DEVICE=b200-sxm-180gb;;
    *) echo "device-session: no catalog device for '$gpu'; pass --device" >&2; exit 2;;
  esac
fi
summary=$OUT/session.md
{ echo "# Device session, $(date -u +%Y-%m-%dT%H:%MZ)"; echo; echo "GPU: $gpu (catalog: $DEVICE)"; echo
  echo "| step | exit | seconds | log |"; echo "|---|---:|---:|---|"; } >"$summary"
failed=0
step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  echo "[device-session] $name (at most $limit s)" >&2
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || failed=1
  echo "| $name | $rc$([ $rc = 124 ] && echo ' (time limit)') | $((SECONDS - start)) | $name.log |" >>"$summary"
}

step gpu-check 150 env OUT="$OUT/gpu-check" scripts/gpu-check.sh
step trace-gpu-check 150 env OUT="$OUT/trace" scripts/trace-gpu-check.sh
step learned-gpu-check 150 env OUT="$OUT/learned" scripts/learned-gpu-check.sh --device "$DEVICE" --shapes "$SHAPES"

# The GEMMs two Megatron-core rows price, measured: their models as validate writes them.
bin/shardcost validate --format runs -o "$OUT/runs.csv" >/dev/null 2>&1
python3 - "$OUT" <<'PY' || failed=1
import csv, sys
out = sys.argv[1]
for r in csv.DictReader(open(f"{out}/runs.csv")):
    for size in ("1.7B", "70B"):
        if r["label"] == f"megatron_core_h100_2024: {size}":
            open(f"{out}/megatron-core-{size}.json", "w").write(r["model"])
PY
# (timeout runs programs, not shell functions: the two sweeps go through bash -c.)
gemms='bin/shardcost bench gemm --device cuda --dtype bf16 --shapes-from "$OUT/megatron-core-1.7B.json" \
    --tp 1 --mbs 4 --warmup 3 --time-budget 0.05 --db "$OUT/gemm.db" &&
  bin/shardcost bench gemm --device cuda --dtype bf16 --shapes-from "$OUT/megatron-core-70B.json" \
    --tp 8 --mbs 1,2,4 --warmup 3 --time-budget 0.05 --db "$OUT/gemm.db"'
step bench-gemm-megatron-core 120 env OUT="$OUT" bash -c "$gemms"
# Device-to-device copies from 1 MiB to 4 GiB into the same store: `validate --db` then prices
# the memory-bound passes (norms, activations, the loss) from them too (docs/store.md).
step bench-memory 60 bin/shardcost bench memory --device cuda --op copy_d2d -b 1M -e 4G -f 2 \
  --warmup 3 --time-budget 0.05 --db "$OUT/gemm.db"
step validate-catalog 120 bin/shardcost validate -o "$OUT/validate-catalog.txt"
step validate-db 120 bin/shardcost validate --db "$OUT/gemm.db" -o "$OUT/validate-db.txt"
step attention 150 python3 scripts/attention-gpu-check.py --binary bin/shardcost --device "$DEVICE" \
  --out "$OUT/attention"

{ echo; echo "Megatron-core r0.8 H100 BF16, catalog against the measured GEMMs:"; echo '```'
  grep -A12 "^Megatron-core" "$OUT/validate-catalog.txt" 2>/dev/null | grep -E "^  [0-9]|mean"
  echo "--- from $OUT/gemm.db:"
  grep -A12 "^Megatron-core" "$OUT/validate-db.txt" 2>/dev/null | grep -E "^  [0-9]|mean"
  echo '```'; } >>"$summary"
cat "$summary"
exit $failed
