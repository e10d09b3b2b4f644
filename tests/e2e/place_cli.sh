#!/usr/bin/env bash
# place through the real binary (issue 19, item 4): gpt-small on 4 A100s and 4 V100s, ResNet-50
# on one kind of GPU beside the layer-wise search; bad input, one line each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"

expect_exit 0 "$BIN" place --model data/onnx/gpt-small.onnx --cluster data/examples/a100-v100.json \
  --micro-batch 16
golden place_gpt_small.txt

expect_exit 0 "$BIN" place --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 \
  --micro-batch 32 --micro-batches 16 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["feasible"] and j["exact"], j
assert abs(j["step_s"] - (16 + len(j["stages"]) - 1) * j["stage_s"]) < 1e-9 * j["step_s"]
assert max(s["compute_s"] + s["comm_s"] for s in j["stages"]) <= j["stage_s"] * (1 + 1e-12)
assert sum(len(s["operators"]) for s in j["stages"]) == 174
assert "layerwise" in j and j["layerwise"]["step_s"] > 0
PY

# The integer program (GLPK) alone, and past a limit on ideals: the same exact placement of a
# small graph as the program over every ideal.
# (--solver-time: ample, so that a loaded machine still proves these small programs; each
# stops once proven, in seconds.)
odd=(--model tests/data/onnx/odd-shapes.onnx --cluster data/examples/a100-v100.json
  --micro-batch 512 --micro-batches 8 --format json --solver-time 300)
expect_exit 0 "$BIN" place "${odd[@]}"
cp "$SCRATCH/out" "$SCRATCH/ideals.json"
expect_exit 0 "$BIN" place "${odd[@]}" --solver mip
cp "$SCRATCH/out" "$SCRATCH/mip.json"
expect_exit 0 "$BIN" place "${odd[@]}" --max-ideals 2
python3 - "$SCRATCH/ideals.json" "$SCRATCH/mip.json" "$SCRATCH/out" <<'PY'
import json, sys
ideals, mip, wide = (json.load(open(f)) for f in sys.argv[1:])
assert ideals["exact"] and mip["exact"] and wide["exact"], (mip.get("note"), wide.get("note"))
for j in (mip, wide):
    assert abs(j["step_s"] - ideals["step_s"]) <= 1e-9 * ideals["step_s"], (j["step_s"], ideals["step_s"])
    assert j["integer_programs"] >= 1 and "integer program" in j["note"], j
assert "prefixes" in wide["note"]
PY

bad() { expect_exit 2 "$BIN" place "$@"; one_line_error; }
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --solver gurobi
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --max-ideals 0
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --solver-time 0
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 72 --micro-batch 8
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --micro-batch 0
bad --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --micro-batches -1
bad --model data/onnx/resnet50.onnx --cluster data/examples/a100-v100.json --precision bf16
bad --model fuzz/corpus/onnx/conv-zero-stride.onnx --cluster dgx-a100 --gpus 8

# Bounds before allocating (issue 37, item 2): --max-ideals 2^31-1 took 2.1 GB.
expect_exit 2 "$BIN" place --model "$SRC/tests/data/onnx/cnn-dynamic.onnx" --cluster dgx-a100 --gpus 8 --max-ideals 2147483647
one_line_error
case "$ERR" in *"--max-ideals 2147483647: give 1 to 5,000,000"*) ;; *) fail "max ideals: $ERR";; esac
# A chain of 5,000 operators (over a minute): refused at once, naming the bound.
/usr/bin/python3 - "$SCRATCH/chain.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
nodes, weights, prev = [], [], "x"
for i in range(5000):
    weights.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, [8, 8], [0.0] * 64))
    nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"], name=f"mm{i}"))
    prev = f"h{i}"
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
y = helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 8])
save(helper.make_model(helper.make_graph(nodes, "chain", [x], [y], weights)), sys.argv[1])
PY
expect_exit 2 prlimit --as=2147483648 --cpu=20 "$BIN" place --model "$SCRATCH/chain.onnx" --cluster dgx-a100 --gpus 8
one_line_error
case "$ERR" in *"5000 operators; place takes graphs of up to 2,000"*) ;; *) fail "long chain: $ERR";; esac
echo "place_cli: ok"
