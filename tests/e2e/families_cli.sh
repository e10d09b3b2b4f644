#!/usr/bin/env bash
# Today's model families and rack-scale systems through the real binary (issue 20): MLA and
# fine-grained MoE with MTP, expert tensor parallelism, NVL72 racks, DualPipe, Blackwell
# precisions, a hybrid Mamba model, sliding windows from a model file; and bad input, one line
# each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"

# DeepSeek-V3 on 4 GB200 NVL72 racks: expert groups inside a rack, etp searched.
expect_exit 0 "$BIN" rank --model deepseek-v3 --cluster gb200-nvl72 --gpus 288 --gbs 2304 \
  --fix precision=fp8 --top 3 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
best = j["strategies"][0]
s = best["strategy"]
assert best["feasible"] and s["ep"] > 1, s
assert 72 % (s["ep"] * s.get("etp", s["tp"])) == 0, s
PY

# The published DeepSeek-V3 run, as given: DualPipe hides the all-to-alls. It fits 80 GB,
# within the memory model's band (79.1 GiB of 79.65: docs/model-families.md), and says so.
expect_exit 0 "$BIN" estimate --model deepseek-v3 --cluster hgx-h800 --gpus 2048 --format json \
  --software deepseek-v3 \
  --strategy tp=1,pp=16,dp=128,ep=64,mbs=1,gbs=15360,zero=1,precision=fp8,schedule=dualpipe,recompute=selective,recompute_modules=layernorm/mla_up_proj/moe_act
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["strategy"]["schedule"] == "dualpipe", j["strategy"]
assert j["strategy"]["recompute_modules"] == "layernorm/mla_up_proj/moe_act", j["strategy"]
parts = {p["part"]: p["seconds"] for p in j["breakdown"]["time"]}
assert parts["compute_recompute"] > 0 and parts["pipeline_bubble"] > 0, parts
assert 15 < j["step_time_s"] < 25, j["step_time_s"]
assert j["feasible"] and j["memory_near_limit"], (j["feasible"], j["memory_near_limit"])
PY

# Blackwell precisions on a part that has them; not on one that does not.
expect_exit 0 "$BIN" estimate --model qwen3-235b-a22b --cluster dgx-b300 --gpus 256 \
  --strategy tp=1,pp=8,ep=32,mbs=1,gbs=512,zero=1,precision=nvfp4,recompute=full
expect_exit 2 "$BIN" estimate --model qwen3-235b-a22b --cluster dgx-h100 --gpus 256 \
  --strategy tp=1,pp=8,ep=32,mbs=1,gbs=512,zero=1,precision=mxfp8,recompute=full
one_line_error
case "$ERR" in *"has no mxfp8 peak"*) ;; *) fail "wrong error: $ERR";; esac

# A hybrid Mamba model from the catalog, and a sliding-window MoE from a file.
expect_exit 0 "$BIN" rank --model nemotron-h-56b --cluster dgx-h100 --gpus 64 --gbs 256 --top 1
cat > "$SCRATCH/swa.json" <<'JSON'
{"name": "swa-moe", "layers": 4, "hidden": 2048, "heads": 32, "kv_heads": 8, "head_dim": 64,
 "ffn_hidden": 8192, "vocab": 32000, "seq_len": 8192, "activation": "swiglu", "norm": "rmsnorm",
 "position_embedding": "rope", "bias": false, "tied_embeddings": false, "sliding_window": 128,
 "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
 "moe": {"num_local_experts": 32, "num_experts_per_tok": 4, "moe_intermediate_size": 2048}}
JSON
expect_exit 0 "$BIN" estimate --model "$SCRATCH/swa.json" --cluster dgx-h100 --gpus 8 \
  --strategy tp=1,ep=8,mbs=1,gbs=8

# Bad input: one line naming the field, exit 2.
bad_model() {
  printf '%s' "$1" > "$SCRATCH/bad.json"
  expect_exit 2 "$BIN" estimate --model "$SCRATCH/bad.json" --cluster dgx-h100 --gpus 8 \
    --strategy tp=1,mbs=1,gbs=8
  one_line_error
  case "$ERR" in *"$2"*) ;; *) fail "wanted '$2' in: $ERR";; esac
}
BASE='"layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 8, "ffn_hidden": 4096, "vocab": 1000, "seq_len": 1024'
# A latent wider than the hidden states is priced as given (Megatron-core's MLA unit tests train
# q_lora_rank and kv_lora_rank 32 at hidden 12).
printf '%s' "{$BASE, \"kv_lora_rank\": 2048, \"qk_nope_head_dim\": 64, \"qk_rope_head_dim\": 32, \"v_head_dim\": 64}" \
  > "$SCRATCH/wide_latent.json"
expect_exit 0 "$BIN" estimate --model "$SCRATCH/wide_latent.json" --cluster dgx-h100 --gpus 8 \
  --strategy tp=2,mbs=1,gbs=8
grep -q '^step time' "$SCRATCH/out" || fail "wide latent: $OUT"
bad_model "{$BASE, \"hybrid_override_pattern\": \"M-*\"}" \
  "field 'hybrid_override_pattern' has 3 characters for 4 layers"
expect_exit 2 "$BIN" estimate --model deepseek-v3 --cluster dgx-h100 --gpus 1024 \
  --strategy tp=2,pp=8,ep=64,etp=4,mbs=1,gbs=1024,sp=true,zero=1
one_line_error
case "$ERR" in *"ep*etp = 256 does not divide tp*cp*dp = 128"*) ;; *) fail "wrong error: $ERR";; esac
expect_exit 2 "$BIN" estimate --model deepseek-v3 --cluster dgx-h100 --gpus 1024 \
  --strategy tp=1,pp=8,ep=96,mbs=1,gbs=1024,zero=1
one_line_error
case "$ERR" in *"ep=96 does not divide the 256 experts"*) ;; *) fail "wrong error: $ERR";; esac
expect_exit 2 "$BIN" estimate --model deepseek-v3 --cluster dgx-h100 --gpus 768 \
  --software deepseek-v3 --strategy tp=1,pp=3,ep=64,mbs=1,gbs=1024,zero=1,schedule=dualpipe
one_line_error
case "$ERR" in *"needs an even pp"*) ;; *) fail "wrong error: $ERR";; esac
expect_exit 2 "$BIN" estimate --model deepseek-v3 --cluster dgx-h100 --gpus 1024 \
  --strategy tp=1,pp=4,ep=64,mbs=1,gbs=1024,zero=1,schedule=dualpipe
one_line_error
case "$ERR" in *"megatron-core has no DualPipe schedule"*) ;; *) fail "wrong error: $ERR";; esac

# A published Hugging Face config.json as it is (issue 34): Llama 3.1 8B's, at the 8,192 tokens
# Llama 3 pre-trained at, prices as the catalog's llama3-8b (the same architecture).
S=tp=1,pp=1,dp=8,mbs=1,gbs=64,recompute=full,zero=1
expect_exit 0 "$BIN" estimate --model "$SRC/tests/fixtures/hf/llama-3.1-8b.json" --seq-len 8192 \
  --cluster dgx-h100 --gpus 8 --strategy $S --format json
HF_STEP=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$SCRATCH/out")
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S --format json
CAT_STEP=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$SCRATCH/out")
[ "$HF_STEP" = "$CAT_STEP" ] || fail "config.json prices $HF_STEP s, llama3-8b $CAT_STEP s"
# Without --seq-len, its maximum (131,072) is the length; a bad --seq-len is one line.
expect_exit 0 "$BIN" rank --model "$SRC/tests/fixtures/hf/qwen3-8b.json" --seq-len 4096 \
  --cluster dgx-h100 --gpus 8 --gbs 64 --top 1
expect_exit 2 "$BIN" estimate --model "$SRC/tests/fixtures/hf/llama-3.1-8b.json" --seq-len 0 \
  --cluster dgx-h100 --gpus 8 --strategy $S
one_line_error
# A field nobody judged is refused by name.
python3 - "$SRC/tests/fixtures/hf/llama-3.1-8b.json" "$SCRATCH/odd.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["frobnication"] = 1
json.dump(j, open(sys.argv[2], "w"))
PY
expect_exit 2 "$BIN" estimate --model "$SCRATCH/odd.json" --cluster dgx-h100 --gpus 8 --strategy $S
one_line_error
case "$ERR" in *"field 'frobnication' of a llama config.json is not read"*) ;; *) fail "$ERR";; esac
echo "families_cli: ok"
