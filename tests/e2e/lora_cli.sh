#!/usr/bin/env bash
# lora=R (LoRA fine-tuning) through the real binary: the estimate says what trains, JSON carries
# the rank and targets, rank pins it in every plan, the fine-tuning step is cheaper than full
# training of the same plan, and bad values are one line.
source "$(dirname "$0")/../e2e_lib.sh"

S=tp=2,pp=1,dp=4,mbs=1,gbs=32,sp=true,zero=1
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=16
grep -q "^strategy .*,lora=16\b" "$SCRATCH/out" || fail "strategy: $OUT"
grep -q "^LoRA            rank-16 adapters on qkv/proj/fc1/fc2 train; every other weight is frozen" \
  "$SCRATCH/out" || fail "LoRA line: $OUT"
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=16,lora_targets=attention --format json
cp "$SCRATCH/out" "$SCRATCH/lora.json"
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S --format json
python3 - "$SCRATCH/lora.json" "$SCRATCH/out" <<'PY'
import json, sys
def load(p):
    j = json.load(open(p))
    return j if "strategy" in j and "step_time_s" in j else j["estimate"]
lora, full = load(sys.argv[1]), load(sys.argv[2])
assert lora["strategy"]["lora"] == 16 and lora["strategy"]["lora_targets"] == "qkv/proj", lora["strategy"]
assert "lora" not in full["strategy"], full["strategy"]
assert lora["step_time_s"] < full["step_time_s"], (lora["step_time_s"], full["step_time_s"])
mem = lambda e, k: next(p["gib"] * 2**30 for p in e["breakdown"]["memory"] if p["part"] == k)
# Adapters on qkv and proj, 32 layers: 16 x ((4096 + 6144) + (4096 + 4096)) weights each, fp32
# gradients, halved over tp 2.
adapters = 32 * 16 * (10240 + 8192)
assert abs(mem(lora, "gradients") / (4 * adapters / 2) - 1) < 1e-5, mem(lora, "gradients")
assert mem(lora, "optimizer_state") < mem(full, "optimizer_state") / 100
PY

# rank: pinned, every plan fine-tunes, and the text says so.
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 32 --top 3 --fix lora=16
grep -q "^LoRA            rank-16 adapters on qkv/proj/fc1/fc2 in every plan (pinned)" "$SCRATCH/out" || fail "rank note: $OUT"
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 32 --top 3
! grep -q "LoRA" "$SCRATCH/out" || fail "rank says LoRA unasked: $OUT"
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 32 --top 3 --fix lora=16 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
plans = j["strategies"]
assert plans, j.keys()
for p in plans:
    assert p["strategy"]["lora"] == 16, p["strategy"]
PY

check "strategy key 'lora' needs the adapters' rank" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=0
check "needs linears from qkv, proj, fc1 and fc2" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=16,lora_targets=gate
check "lora_targets and lora_dropout need lora=R" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora_targets=qkv
check "a probability from 0 up to" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=16,lora_dropout=1.5
check "divisible by tp=2" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S,lora=15
check "dense transformer layers" estimate --model mixtral-8x7b --cluster dgx-h100 --gpus 8 --strategy tp=1,dp=8,ep=8,gbs=8,lora=16
check "the other keys are transformer strategies" estimate --model "$SRC/data/onnx/resnet50.onnx" --cluster abci-v100 --gpus 8 --strategy data,gbs=256,lora=16
echo "lora_cli: ok"
