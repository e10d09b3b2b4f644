#!/usr/bin/env bash
# --data-loading cores=N,rate=R through the real binary (issue 39, item 4): each data-parallel
# replica's loader against the step, the wait only when loading is slower, in text, JSON, a
# saved request, rank and operator graphs; bad values are one line.
source "$(dirname "$0")/../e2e_lib.sh"

S=tp=2,pp=1,dp=4,mbs=1,gbs=64,zero=1
# 16 samples per replica at 1 core x 20 samples/s: 0.8 s, past the step's compute (0.39 s).
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --strategy $S --data-loading cores=1,rate=20
golden estimate_data_loading.txt
# Enough cores: the same step as without a loader.
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --strategy $S --format json
free=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$SCRATCH/out")
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --strategy $S --data-loading cores=64,rate=100 --format json
cp "$SCRATCH/out" "$SCRATCH/fast.json"
python3 - "$SCRATCH/fast.json" "$free" <<'PY' || fail "keeps up: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
i = j["input"]
assert i["loaders"] == 4 and i["samples_per_loader"] == 16 and not i["input_bound"], i
assert i["wait_s"] == 0 and j["step_time_s"] == float(sys.argv[2]), (i, j["step_time_s"])
assert abs(i["load_s"] - 16 / 6400) < 1e-6, i
wait = [p for p in j["breakdown"]["time"] if p["part"] == "input_wait"]
assert wait == [{"part": "input_wait", "seconds": 0, "source": "given", "sources": {}}], wait
assert j["request"]["data_loading"] == "cores=64,rate=100", j["request"]
PY
# The saved output runs again as a request, the loader with it.
expect_exit 0 "$BIN" estimate --request "$SCRATCH/fast.json" --format json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["input"]["loaders"] == 4' "$SCRATCH/out" || fail "request: $OUT"

# rank: every plan with its wait; more replicas, fewer samples per loader.
expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --gbs 64 --top 3 --data-loading cores=1,rate=0.5
grep -q "input wait s" "$SCRATCH/out" || fail "rank column: $OUT"
grep -q "^input           each rank's loader: 1 core x 0.5 samples/s (--data-loading)" "$SCRATCH/out" || fail "rank line: $OUT"

# Operator graphs: the first operator's batch split loads.
expect_exit 0 "$BIN" estimate --model "$SRC/data/onnx/resnet50.onnx" --cluster abci-v100 --gpus 8 --strategy data,gbs=512 --data-loading cores=1,rate=200
grep -q "^input of plan 1: 8 loaders (1 core x 200 samples/s each), 64 samples each per step: 0.3200 s; input-bound" "$SCRATCH/out" || fail "graph: $OUT"
grep -qE "^1  data +0\.3200 +1600 " "$SCRATCH/out" || fail "graph step: $OUT"

for bad in cores=2 rate=1 cores=0,rate=1 cores=2,rate=x cores=2,speed=1 cores=1.5,rate=1; do
  expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --strategy $S --data-loading $bad
  one_line_error
done
expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 8 --strategy $S --data-loading cores=1,rate=1 \
  --seq-dist lognormal:median=512,sigma=1
one_line_error
echo "data_loading: ok"
