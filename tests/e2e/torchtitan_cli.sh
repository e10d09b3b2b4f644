#!/usr/bin/env bash
# torchtitan's torch.compile and torchao float8 and MXFP8 through the real binary: the stack's
# keys show in the text and JSON, compiled runs are faster than eager ones and float8 faster than
# bf16 only compiled, float8 all-gathers move fewer bytes, MXFP8 runs on Blackwell only, its
# experts' key quantizes an MoE's experts, and keys of the wrong stack are one line.
source "$(dirname "$0")/../e2e_lib.sh"

S=tp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=selective
run() {  # run SOFTWARE PRECISION: the estimate's JSON into $SCRATCH/SOFTWARE-PRECISION.json
  expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --software "$1" \
    --strategy $S,precision=$2 --format json
  cp "$SCRATCH/out" "$SCRATCH/$1-$2.json"
}
run torchtitan bf16
run torchtitan fp8
run torchtitan:compile=true bf16
run torchtitan:compile=true fp8
run torchtitan:compile=true,float8_all_gather=true fp8
run torchtitan:compile=true,float8_recipe=rowwise fp8
python3 - "$SCRATCH" <<'PY'
import json, sys, os
def load(name):
    j = json.load(open(os.path.join(sys.argv[1], name + ".json")))
    return j if "step_time_s" in j else j["estimate"]
def t(name): return load(name)["step_time_s"]
def part(name, k): return next(p["seconds"] for p in load(name)["breakdown"]["time"] if p["part"] == k)
eager16, eager8 = t("torchtitan-bf16"), t("torchtitan-fp8")
c16, c8 = t("torchtitan:compile=true-bf16"), t("torchtitan:compile=true-fp8")
gather = "torchtitan:compile=true,float8_all_gather=true-fp8"
# Compiled beats eager; float8 pays off only compiled (eager casts are op by op).
assert c16 < eager16 and c8 < c16 and eager8 > eager16, (eager16, eager8, c16, c8)
assert t(gather) < c8 and part(gather, "dp_comm") < part("torchtitan:compile=true-fp8", "dp_comm")
assert load(gather)["software"] == "torchtitan:compile=true,float8_all_gather=true", load(gather)["software"]
PY
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 \
  --software torchtitan:compile=true --strategy $S,precision=fp8
grep -q "software torchtitan:compile=true$" "$SCRATCH/out" || fail "software named: $OUT"

# The catalog names torchao as torchtitan's float8.
expect_exit 0 "$BIN" catalog
grep -q "^  torchtitan .* torchao " "$SCRATCH/out" || fail "catalog: $OUT"

E=(estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S)
check "runs fused kernels already; drop compile" "${E[@]}" --software megatron-core:compile=true
check "trains FP8 through Transformer Engine" "${E[@]}" --software nemo:float8_all_gather=true
check "only under the tensorwise recipe" "${E[@]}" --software torchtitan:float8_recipe=rowwise,float8_all_gather=true
check "unknown float8 recipe 'mx'" "${E[@]}" --software torchtitan:float8_recipe=mx
check "precision=fp8 (Float8Linear) and mxfp8 (MXLinear)" estimate --model llama3-8b --cluster dgx-b200 --gpus 8 --software torchtitan --strategy $S,precision=nvfp4
check "has no mxfp8 peak" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --software torchtitan:compile=true --strategy $S,precision=mxfp8
check "tensor parallelism under torch.compile" estimate --model llama3-8b --cluster dgx-b200 --gpus 8 --software torchtitan:compile=true --strategy tp=2,dp=4,mbs=1,gbs=8,zero=3,precision=mxfp8
check "unknown MXFP8 dim-1 cast kernel 'cutlass'" "${E[@]}" --software torchtitan:mx_dim1_cast=cutlass

# MXFP8 on Blackwell (torchao's MXLinear): its keys named, compiled faster than bf16 where the
# policy saves the scaled GEMMs' outputs, and the experts' key quantizing Mixtral's experts.
B=(estimate --model llama3-8b --cluster dgx-b200 --gpus 8 --format json)
expect_exit 0 "$BIN" "${B[@]}" --software torchtitan:compile=true,sac_saves_scaled_mm=true --strategy $S,precision=bf16
cp "$SCRATCH/out" "$SCRATCH/b200-bf16.json"
expect_exit 0 "$BIN" "${B[@]}" --software torchtitan:compile=true,sac_saves_scaled_mm=true,mx_dim1_cast=cuda --strategy $S,precision=mxfp8
cp "$SCRATCH/out" "$SCRATCH/b200-mx.json"
for mbs in 1 8; do
  M=(estimate --model mixtral-8x7b --cluster dgx-b200 --gpus 8 --format json --strategy tp=1,dp=8,mbs=$mbs,gbs=$((8 * mbs)),zero=3,recompute=full,precision=mxfp8)
  expect_exit 0 "$BIN" "${M[@]}" --software torchtitan:compile=true
  cp "$SCRATCH/out" "$SCRATCH/moe-plain-$mbs.json"
  expect_exit 0 "$BIN" "${M[@]}" --software torchtitan:compile=true,quantize_experts=true
  cp "$SCRATCH/out" "$SCRATCH/moe-experts-$mbs.json"
done
python3 - "$SCRATCH" <<'PY'
import json, sys, os
def load(name):
    j = json.load(open(os.path.join(sys.argv[1], name + ".json")))
    return j if "step_time_s" in j else j["estimate"]
bf16, mx = load("b200-bf16"), load("b200-mx")
assert mx["step_time_s"] < bf16["step_time_s"], (mx["step_time_s"], bf16["step_time_s"])
assert mx["software"] == "torchtitan:compile=true,sac_saves_scaled_mm=true,mx_dim1_cast=cuda", mx["software"]
# Every local expert's weights are cast each micro-batch: quantized experts pay off as the
# tokens a micro-batch routes to them grow (Mixtral 8x7B, 1,024 and 8,192 tokens an expert).
ratio = {m: load(f"moe-experts-{m}")["step_time_s"] / load(f"moe-plain-{m}")["step_time_s"] for m in (1, 8)}
assert ratio[8] < 1 and ratio[1] > ratio[8], ratio
assert load("moe-experts-8")["software"] == "torchtitan:compile=true,quantize_experts=true"
PY
# Expert parallelism under torchtitan: the experts' all-to-alls priced, the overlap refused.
expect_exit 0 "$BIN" estimate --model mixtral-8x7b --cluster dgx-h100 --gpus 16 --software torchtitan:compile=true \
  --strategy tp=1,dp=16,ep=8,mbs=1,gbs=16,zero=3,recompute=full --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j = j if "step_time_s" in j else j["estimate"]
ep = next(p["seconds"] for p in j["breakdown"]["time"] if p["part"] == "ep_comm")
assert ep > 0, ep
PY
check "no expert-parallel all-to-all overlap" estimate --model mixtral-8x7b --cluster dgx-h100 --gpus 16 --software torchtitan --strategy tp=1,dp=16,ep=8,ep_overlap=true,mbs=1,gbs=16,zero=3,recompute=none
echo "torchtitan_cli: ok"
