#!/usr/bin/env bash
# torchtitan's torch.compile and torchao float8 through the real binary: the stack's keys show in
# the text and JSON, compiled runs are faster than eager ones and float8 faster than bf16 only
# compiled, float8 all-gathers move fewer bytes, and keys of the wrong stack are one line.
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

check() {  # check PATTERN CMD...
  local pattern=$1; shift
  expect_exit 2 "$BIN" "$@"
  one_line_error
  case "$ERR" in *"$pattern"*) ;; *) fail "error for '$*' lacks '$pattern': $ERR";; esac
}
E=(estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --strategy $S)
check "runs fused kernels already; drop compile" "${E[@]}" --software megatron-core:compile=true
check "trains FP8 through Transformer Engine" "${E[@]}" --software nemo:float8_all_gather=true
check "only under the tensorwise recipe" "${E[@]}" --software torchtitan:float8_recipe=rowwise,float8_all_gather=true
check "unknown float8 recipe 'mx'" "${E[@]}" --software torchtitan:float8_recipe=mx
check "priced for precision=fp8 only" estimate --model llama3-8b --cluster dgx-b200 --gpus 8 --software torchtitan --strategy $S,precision=mxfp8
echo "torchtitan_cli: ok"
