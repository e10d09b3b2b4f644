#!/usr/bin/env bash
# split-learning through the real binary (issue 16): ResNet-50 over six edge devices behind one
# access point; bad devices files, one line each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"

expect_exit 0 "$BIN" split-learning --model data/onnx/resnet50.onnx \
  --devices data/examples/edge-devices.json --server a100-sxm4-80gb
golden split_learning_resnet50.txt

expect_exit 0 "$BIN" split-learning --model data/onnx/vgg16.onnx \
  --devices data/examples/edge-devices.json --server h100-sxm5-80gb --precision bf16 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
best, base = j["best"], j["baseline"]
assert best["round_s"] <= base["round_s"], (best["round_s"], base["round_s"])
assert abs(sum(d["share"] for d in best["devices"]) - 1) < 1e-9
assert all(d["finish_s"] <= best["round_s"] + 1e-12 for d in best["devices"])
assert len({d["cut"] for d in base["devices"]}) == 1
PY

# Inference (issue 39, item 3): a forward pass per request batch, latency and throughput.
expect_exit 0 "$BIN" split-learning --model data/onnx/resnet50.onnx \
  --devices data/examples/edge-devices.json --server a100-sxm4-80gb --precision fp16 --inference
golden split_learning_inference.txt
expect_exit 0 "$BIN" split-learning --model data/onnx/resnet50.onnx \
  --devices data/examples/edge-devices.json --server a100-sxm4-80gb --precision fp16 --inference \
  --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["inference"] is True and j["cuts"] == 39, j["cuts"]
best = j["best"]
assert best["samples_per_s"] > 0 and best["round_s"] <= j["baseline"]["round_s"]
for d in best["devices"]:
    assert abs(d["finish_s"] - (d["device_s"] + d["upload_s"] + d["wait_s"] + d["server_s"] + d["download_s"])) < 1e-9, d
    # The logits come back (1,000 fp16 values a sample), nothing where the device ran it all.
    local = "all on the device" in d["cut_after"]
    assert (d["result_bytes"] == 0) if local else (d["result_bytes"] > 0 and d["result_bytes"] % 2000 == 0), d
PY

bad() {
  printf '%s' "$1" >"$SCRATCH/devices.json"
  expect_exit 2 "$BIN" split-learning --model data/onnx/resnet50.onnx \
    --devices "$SCRATCH/devices.json" --server a100-sxm4-80gb
  one_line_error
  case "$ERR" in *"$2"*) ;; *) fail "error does not name '$2': $ERR";; esac
}
bad '{"devices": [{"device": "jetson-nano", "downlink_Mbps": 100, "batch": 8}]}' "uplink_Mbps"
bad '{"devices": [{"device": "jetson-nano", "uplink_Mbps": 100, "batch": 8}]}' "downlink_Mbps"
bad '{"devices": [{"device": "pixel-9", "uplink_Mbps": 1, "downlink_Mbps": 1, "batch": 8}]}' "pixel-9"
bad '{"devices": []}' "devices"
bad '{"devices": [{"device": "jetson-nano", "uplink_Mbps": 1, "downlink_Mbps": 1}]}' "batch"
bad '{"devices": [{"device": "jetson-nano", "uplink_Mbps": 1, "downlink_Mbps": 1, "batch": 8}' "line"
expect_exit 2 "$BIN" split-learning --model data/onnx/resnet50.onnx \
  --devices data/examples/edge-devices.json --server v100-sxm2-16gb --precision bf16
one_line_error
echo "split_learning_cli: ok"
