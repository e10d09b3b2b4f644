#!/usr/bin/env bash
# Per-layer sharding through the real binary (issue 19, item 1): a mask priced by estimate,
# rank's mixture beside its shape's uniform ZeRO stages on a model whose embedding is a quarter
# of its parameters; bad masks, one line each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"

expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,pp=1,dp=64,mbs=1,gbs=128,zero=1,zero_layers=s/rx20/sx12/s3
golden osdp_estimate_llama3_8b.txt

expect_exit 0 "$BIN" rank --model data/examples/gemma2-2b-shape.json --cluster abci-v100 \
  --gpus 64 --gbs 256 --top 5
golden osdp_rank_gemma2_2b.txt

# JSON and CSV carry the mask (Gemma 2 2B's shape without a pipeline, where a mixture is among
# the best five).
expect_exit 0 "$BIN" rank --model data/examples/gemma2-2b-shape.json --cluster abci-v100 \
  --gpus 64 --gbs 256 --top 5 --fix pp=1 --format json
mask=$(python3 - "$SCRATCH/out" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
masks = [s["strategy"].get("zero_layers", "") for s in j["strategies"]]
mixed = [m for m in masks if re.fullmatch(r"[rs0-9x/]+", m) and "r" in m and "s" in m]
assert mixed, masks
print(mixed[0])
PY
) || fail "rank's JSON lacks a mixed mask"
expect_exit 0 "$BIN" rank --model data/examples/gemma2-2b-shape.json --cluster abci-v100 \
  --gpus 64 --gbs 256 --top 5 --fix pp=1 --format csv
grep -q ',zero_layers,' <(head -1 "$SCRATCH/out") || fail "csv header lacks zero_layers"
grep -q ",$mask,[^,]*,[a-z]*$" "$SCRATCH/out" || fail "csv rows lack the mask $mask"

bad() { expect_exit 2 "$BIN" "$@"; one_line_error; }
s=tp=1,pp=1,dp=64,mbs=1,gbs=128
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy $s,zero=1,zero_layers=s/rx31/s
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy $s,zero=3,zero_layers=s/rx32/s
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy $s,zero=1,zero_layers=s/q/s
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy $s,zero=1,zero_layers=s0x34
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,pp=2,dp=32,mbs=1,gbs=128,zero=1,zero_layers=s/rx32/s
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --software megatron-lm-2022 \
  --strategy $s,zero=1,zero_layers=s/rx32/s
bad rank --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 128 --fix zero_layers=sx34
echo "osdp_cli: ok"
