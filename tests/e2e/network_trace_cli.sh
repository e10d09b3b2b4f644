#!/usr/bin/env bash
# Networks that change through the real binary (issue 19, item 3): one plan over a bandwidth
# trace, rank --replan; bad traces, one line each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"

expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
  --strategy tp=1,dp=64,mbs=1,gbs=128,zero=2 --network-trace data/examples/network-trace.csv \
  --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = j["trace"]
assert t["duration_s"] == 5400 and len(t["segments"]) == 4, t
steps = [s["step_time_s"] for s in t["segments"]]
assert steps[2] > steps[1] > steps[0] and abs(steps[0] - steps[3]) < 1e-12, steps
assert abs(t["steps"] - sum((s["end_s"] - s["start_s"]) / s["step_time_s"] for s in t["segments"])) < 1e-6
PY

expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 128 \
  --network-trace data/examples/network-trace.csv --replan
golden replan_llama3_8b.txt

bad_csv() {
  printf "$1" >"$SCRATCH/trace.csv"
  expect_exit 2 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 \
    --strategy tp=1,dp=64,mbs=1,gbs=128,zero=2 --network-trace "$SCRATCH/trace.csv"
  one_line_error
  case "$ERR" in *"$2"*) ;; *) fail "error does not say '$2': $ERR";; esac
}
bad_csv 'seconds,bandwidth_GBps\n0,50\n600,5\n300,50\n' "increase"
bad_csv 'seconds,bandwidth_GBps\n0,50\n600,-5\n900,50\n' "positive"
bad_csv 'seconds,bandwidth_GBps\n0,50\n' "two points"
bad_csv 'seconds,bandwidth_GBps\n0;50\n60;50\n' "seconds,bandwidth_GBps"

cat >"$SCRATCH/mix.json" <<'JSON'
{"name": "mix", "inter_node_bandwidth_GBps": 50,
 "node_groups": [
   {"name": "a", "device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300},
   {"name": "h", "device": "h100-sxm5-80gb", "nodes": 1, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 450}],
 "links": [{"between": ["a", "h"], "bandwidth_GBps": 12.5, "trace": [[0, 12.5], [100, -1], [300, 1]]}]}
JSON
expect_exit 2 "$BIN" estimate --model llama3-8b --cluster "$SCRATCH/mix.json" \
  --strategy tp=8,pp=2,mbs=1,gbs=64
one_line_error
case "$ERR" in *"links[0] trace"*) ;; *) fail "error does not name the link: $ERR";; esac

expect_exit 2 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 128 --replan
one_line_error

# A trace of 200,000 points (issue 37, item 2): refused at once with the bound, in little
# memory (it took 16 GB, then bad_alloc: every segment copied the whole trace).
python3 -c 'print("seconds,bandwidth_GBps"); [print(f"{i * 10},{5 + i % 7}") for i in range(200000)]' > "$SCRATCH/long.csv"
expect_exit 2 prlimit --as=1073741824 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --gbs 64 --replan --network-trace "$SCRATCH/long.csv"
one_line_error
case "$ERR" in *"its traces make 199999 segments; shardcost prices up to 1,000"*) ;; *) fail "long trace: $ERR";; esac

echo "network_trace_cli: ok"
