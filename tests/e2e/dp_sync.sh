#!/usr/bin/env bash
# dp_sync=async:S and local:H through the real binary (issue 39, item 2): the estimate says the
# staleness or the averaging period beside the time, JSON carries them, rank shows them only
# when pinned and says what is not priced, and bad values are one line.
source "$(dirname "$0")/../e2e_lib.sh"

printf '%s\n' '{"name": "slow", "device": "a100-sxm4-80gb", "gpus_per_node": 8, "nodes": 4,' \
  '"intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 0.5}' >"$SCRATCH/slow.json"
S=tp=1,pp=1,dp=32,mbs=1,gbs=32,zero=0
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster "$SCRATCH/slow.json" --strategy $S,dp_sync=async:2
grep -q "^strategy .*,dp_sync=async:2," "$SCRATCH/out" || fail "strategy: $OUT"
grep -q "^data parallel   asynchronous, gradients 2 updates late (bound 2); one exchange [0-9.]* s; .* per update, .* ms per sample; convergence is not priced$" \
  "$SCRATCH/out" || fail "async line: $OUT"
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster "$SCRATCH/slow.json" --strategy $S,dp_sync=local:8 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
e = j if "dp_sync" in j else j["estimate"]
d = e["dp_sync"]
assert d["mode"] == "local" and d["averaging_period_steps"] == 8, d
assert d["per_update_s"] == e["step_time_s"] and d["exchange_s"] > 0, d
assert "not priced" in d["convergence"], d
assert e["strategy"]["dp_sync"] == "local:8", e["strategy"]
PY
# The synchronous estimate says nothing of it.
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster "$SCRATCH/slow.json" --strategy $S
! grep -q "data parallel" "$SCRATCH/out" || fail "sync says dp_sync: $OUT"

# rank: never searched by default; pinned, every plan runs it and the output says what is
# not priced.
expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --gbs 64 --top 3 --format json
! grep -q dp_sync "$SCRATCH/out" || fail "rank searched dp_sync unasked"
expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --gbs 64 --top 3 --fix dp_sync=local:4
grep -q "^data parallel   local:4 in every plan (pinned): replicas train alone, parameters averaged every 4 steps; the times are per update, and what the updates train to is not priced$" \
  "$SCRATCH/out" || fail "rank note: $OUT"

check "strategy key 'dp_sync' needs sync, async:S" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --strategy tp=1,dp=16,gbs=64,dp_sync=lazy
check "a whole number of steps" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --strategy tp=1,dp=16,gbs=64,dp_sync=async:0
check "use zero=0" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --strategy tp=1,dp=16,gbs=64,zero=1,dp_sync=async:2
check "needs dp>=2" estimate --model gpt3-1.3b --cluster dgx-h100 --gpus 16 --strategy tp=16,dp=1,gbs=64,zero=0,dp_sync=local:4
echo "dp_sync: ok"
