#!/usr/bin/env bash
# estimate on variable-length data through the real binary: fixed lengths at seq_len are the
# fixed estimate; a long tail, balanced, beats its baseline; bad input is one line, exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
E=(estimate --model llama3-8b --cluster dgx-h100 --gpus 16 --format json)

expect_exit 0 "$BIN" "${E[@]}" --strategy "tp=2,pp=2,mbs=1,gbs=64"
cp "$SCRATCH/out" "$SCRATCH/fixed.json"
expect_exit 0 "$BIN" "${E[@]}" --strategy "tp=2,pp=2,mbs=1,gbs=64" --seq-dist fixed:8192 --batches 3
python3 - "$SCRATCH/fixed.json" "$SCRATCH/out" <<'PY'
import json, sys
f, v = (json.load(open(p)) for p in sys.argv[1:])
for k in ("step_time_s", "tokens_per_s", "mfu", "memory_per_gpu_gib"):
    assert f.get(k) == v.get(k), (k, f.get(k), v.get(k))
assert v["step_time_p10_s"] == v["step_time_p90_s"] and v["imbalance"] == 1, v
assert v["sequences"]["drawn"] == 3 * 64 and v["sequences"]["dropped"] == 0, v["sequences"]
PY

# A long tail from a file (gzip, as the shared Wikipedia sample is): 1 in 50 sequences is
# 6,000-8,000 tokens, the rest 100-600.
python3 - "$SCRATCH/lengths.txt.gz" <<'PY'
import gzip, random, sys
r = random.Random(11)
with gzip.open(sys.argv[1], "wt") as f:
    for i in range(5000):
        f.write(f"{r.randint(6000, 8000) if i % 50 == 0 else r.randint(100, 600)}\n")
PY
L=(--seq-lengths "$SCRATCH/lengths.txt.gz" --batches 50 --seed 4)
expect_exit 0 "$BIN" "${E[@]}" --strategy "tp=2,pp=1,mbs=1,gbs=256,zero=1,max_tokens=8192" "${L[@]}"
cp "$SCRATCH/out" "$SCRATCH/none.json"
expect_exit 0 "$BIN" "${E[@]}" --strategy "tp=2,pp=1,mbs=1,gbs=256,zero=1,max_tokens=8192,balance=cost" "${L[@]}"
python3 - "$SCRATCH/none.json" "$SCRATCH/out" <<'PY'
import json, sys
none, cost = (json.load(open(p)) for p in sys.argv[1:])
assert cost["strategy"]["balance"] == "cost" and cost["strategy"]["max_tokens"] == 8192, cost["strategy"]
assert none["imbalance"] > 1.1, none["imbalance"]
assert cost["imbalance"] < none["imbalance"], (cost["imbalance"], none["imbalance"])
assert cost["step_time_s"] < none["step_time_s"], (cost["step_time_s"], none["step_time_s"])
# The baseline is the same sampled batches spread as drawn.
assert cost["baseline_step_time_s"] == none["step_time_s"], (cost["baseline_step_time_s"], none["step_time_s"])
assert none["step_time_p10_s"] < none["step_time_p90_s"]
PY
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 16 \
  --strategy "tp=2,pp=1,mbs=1,gbs=256,zero=1,max_tokens=8192,balance=tokens" "${L[@]}"
grep -q "^variable-length data: .*lengths.txt.gz: 5000 lengths" <<<"$OUT" || fail "text: $OUT"
grep -q "baseline .* with sequences spread as drawn (balance=none): .*x faster" <<<"$OUT" || fail "baseline: $OUT"

# Dynamic context parallelism: each sequence on the smallest CP group that holds it; the JSON
# keeps cp numeric (cp_max) with cp_mode, and says how many sequences ran at each size.
printf '{"name": "llama3-8b-64k", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 128256, "seq_len": 65536, "activation": "swiglu"}\n' >"$SCRATCH/long.json"
expect_exit 0 "$BIN" estimate --model "$SCRATCH/long.json" --cluster dgx-h100 --gpus 64 --format json \
  --strategy "tp=8,mbs=1,gbs=1024,cp=dynamic,cp_max=8,max_tokens=8192,zero=1" \
  --seq-dist "lognormal:median=400,sigma=1.8,min=16,max=65536" --batches 10 --seed 2
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["strategy"]["cp"] == 8 and j["strategy"]["cp_mode"] == "dynamic", j["strategy"]
sizes = j["cp_sequences"]
assert sizes["1"] > 9 * 1024 and sum(sizes.values()) == 10 * 1024, sizes
assert "cp=8," in j["baseline"] and j["step_time_s"] < j["baseline_step_time_s"], j
PY

S=(estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy "tp=8,mbs=1,gbs=8")
printf '100\n\n' >"$SCRATCH/ok.txt"
printf '100\nabc\n' >"$SCRATCH/bad.txt"
printf '0\n' >"$SCRATCH/zero.txt"
: >"$SCRATCH/empty.txt"
check "bad.txt:2: 'abc' is not a whole number" "${S[@]}" --seq-lengths "$SCRATCH/bad.txt"
check "zero.txt:1: length 0 must be at least 1" "${S[@]}" --seq-lengths "$SCRATCH/zero.txt"
check "empty.txt: holds no lengths" "${S[@]}" --seq-lengths "$SCRATCH/empty.txt"
check "cannot open the lengths file" "${S[@]}" --seq-lengths "$SCRATCH/missing.txt"
check "unknown parameter 'mean' for lognormal" "${S[@]}" --seq-dist "lognormal:median=1000,sigma=1,mean=5"
check "unknown form 'zipf'" "${S[@]}" --seq-dist "zipf:s=1"
check "--long-seqs 'cut': use drop or truncate" "${S[@]}" --seq-dist fixed:100 --long-seqs cut
check "balance=, max_tokens= and cp=dynamic apply to variable-length data" estimate --model llama3-8b \
  --cluster dgx-h100 --gpus 8 --strategy "tp=8,mbs=1,gbs=8,balance=cost"
check "max_tokens=50 per GPU is below the longest kept sequence (100 tokens)" estimate --model llama3-8b \
  --cluster dgx-h100 --gpus 8 --strategy "tp=8,mbs=1,gbs=8,max_tokens=50" --seq-lengths "$SCRATCH/ok.txt"
check "strategy key 'balance' needs none, count, tokens or cost" estimate --model llama3-8b \
  --cluster dgx-h100 --gpus 8 --strategy "tp=8,gbs=8,balance=fair" --seq-dist fixed:100
check "has the unfused kernel" "${S[@]}" --software megatron-lm-2021 --seq-dist fixed:100
check "--fix balance=cost: balance applies to variable-length data" rank --model llama3-8b --cluster dgx-h100 \
  --gpus 8 --gbs 8 --fix balance=cost
check "cp=dynamic needs max_tokens=N" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 \
  --strategy "tp=2,mbs=1,gbs=8,cp=dynamic" --seq-dist fixed:100

# rank on variable-length data: the fixed-length search shortlists, sampled batches decide;
# best mean step first, every plan within its memory.
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 64 --top 5 --format json \
  --seq-lengths "$SCRATCH/lengths.txt.gz" --batches 10
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
plans = j["strategies"]
assert 1 <= len(plans) <= 5 and j["evaluated"] >= len(plans), j
steps = [p["step_time_s"] for p in plans]
assert steps == sorted(steps), steps
for p in plans:
    assert p["feasible"] and p["memory_per_gpu_gib"] <= p["memory_capacity_gib"], p
    assert p["strategy"]["max_tokens"] > 0 and p["step_time_p10_s"] <= p["step_time_p90_s"], p
PY
