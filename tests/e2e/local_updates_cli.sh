#!/usr/bin/env bash
# Local-update training through the real binary (issue 19, item 2): a plan under
# schedule=local beside 1F1B, rank with the schedule pinned; bad input, one line with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"

expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,pp=8,dp=8,mbs=1,gbs=32,schedule=local
golden local_updates_llama3_8b.txt

expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,pp=8,dp=8,mbs=1,gbs=32,schedule=local --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["strategy"]["schedule"] == "local", j["strategy"]
lu = j["local_updates"]
assert lu["one_f_one_b_step_time_s"] > j["step_time_s"], lu
assert abs(lu["throughput_ratio"] - lu["one_f_one_b_step_time_s"] / j["step_time_s"]) < 1e-5
assert "prices time, not accuracy" in lu["convergence"]
bubble = [p for p in j["breakdown"]["time"] if p["part"] == "pipeline_bubble"]
assert bubble and bubble[0]["seconds"] == 0, bubble
PY

expect_exit 0 "$BIN" rank --model llama3-70b --cluster dgx-h100 --gpus 64 --gbs 32 --top 3 \
  --fix schedule=local
golden local_updates_rank_llama3_70b.txt

bad() { expect_exit 2 "$BIN" "$@"; one_line_error; }
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy tp=1,pp=1,gbs=64,schedule=local
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,pp=4,vpp=2,gbs=64,schedule=local
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy tp=1,pp=4,gbs=64,schedule=locl
bad estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --strategy tp=1,pp=4,gbs=64,schedule=local \
  --seq-dist lognormal:median=2048,sigma=0.5
echo "local_updates_cli: ok"
