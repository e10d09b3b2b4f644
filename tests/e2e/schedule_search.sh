#!/usr/bin/env bash
# schedule --search through the real binary: golden text, the JSON contract, a hand-checked
# search from given step times, exit codes and bad search files (issue 39, item 1).
source "$(dirname "$0")/../e2e_lib.sh"

SEARCH="$SRC/tests/fixtures/search/llama8b.json"
expect_exit 0 "$BIN" schedule --search "$SEARCH" --cluster dgx-h100 --gpus 64
golden schedule_search.txt

expect_exit 0 "$BIN" schedule --search "$SEARCH" --cluster dgx-h100 --gpus 64 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["trials"] == 256 and j["budgets_steps"] == [100, 300, 900, 2700, 8100], j
runs = j["runs"]
assert [(r["gpus_per_trial"], r["halving"]) for r in runs] == [
    (g, h) for g in (2, 4, 8) for h in ("synchronous", "asynchronous")], runs
for r in runs:
    assert r["workers"] == 64 // r["gpus_per_trial"], r
    assert 0 < r["gpu_busy_share"] <= 1, r
    # No result before one trial could train to the full budget alone, nor after the end.
    assert r["one_trial_full_s"] <= r["first_full_s"] + 1e-6 <= r["makespan_s"] + 1e-6, r
    if r["halving"] == "synchronous":
        assert [x["trials"] for x in r["rungs"]] == [256, 85, 28, 9, 3], r
best = min(runs, key=lambda r: (r["first_full_s"], r["makespan_s"]))
assert j["fastest"]["gpus_per_trial"] == best["gpus_per_trial"], j["fastest"]
assert j["left_out"] == ["1 GPU per trial: no plan of llama3-8b fits"], j["left_out"]
PY

# By hand, from given step times: 9 trials, rungs of 1, 3 and 9 steps of 0.5 s, 4 GPUs per trial
# on 16 GPUs (4 workers). Synchronous: rung 0 in three waves (1.5 s), 3 trials resume for 2
# steps side by side (2.5 s), the best for 6 more (5.5 s).
cat >"$SCRATCH/given.json" <<'J'
{"name": "given", "trials": 9, "min_steps": 1, "max_steps": 9, "step_seconds": {"4": 0.5, "128": 0.1}}
J
expect_exit 0 "$BIN" schedule --search "$SCRATCH/given.json" --cluster dgx-h100 --gpus 16 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
sync = j["runs"][0]
assert sync["halving"] == "synchronous" and sync["workers"] == 4, sync
assert sync["first_full_s"] == 5.5 and sync["makespan_s"] == 5.5, sync
# 9 x 0.5 + 3 x 1 + 6 x 0.5 = 10.5 trial-seconds on 4 GPUs each, over 16 GPUs x 5.5 s.
assert abs(sync["gpu_busy_share"] - 10.5 * 4 / (16 * 5.5)) < 1e-6, sync
assert j["left_out"] == ["128 GPUs per trial: the cluster has 16"], j
PY

# No GPU count per trial the cluster can give: said, exit 1.
echo '{"trials": 3, "min_steps": 1, "max_steps": 3, "step_seconds": {"128": 1}}' >"$SCRATCH/none.json"
expect_exit 1 "$BIN" schedule --search "$SCRATCH/none.json" --cluster dgx-h100 --gpus 16
grep -q "left out          128 GPUs per trial: the cluster has 16" "$SCRATCH/out" || fail "none: $OUT"

# Bad input: one line, exit 2.
check "give --jobs FILE (many jobs) or --search FILE" schedule --cluster dgx-h100
check "excludes" schedule --search "$SEARCH" --jobs "$SRC/tests/fixtures/jobs/sweep.json" --cluster dgx-h100
check "--db, --spill, --objective and --solver go with --jobs" \
  schedule --search "$SEARCH" --cluster dgx-h100 --db "$SCRATCH/x.db"
echo '{"model": "llama3-8b", "gbs": 8, "trials": 10, "min_steps": 1, "max_steps": 27}' >"$SCRATCH/few.json"
check "give at least 27 trials" schedule --search "$SCRATCH/few.json" --cluster dgx-h100
echo '{"model": "llama3-8b", "gbs": 8, "trials": 9, "min_steps": 1, "max_steps": 9, "eta": 2}' >"$SCRATCH/eta.json"
check "eta" schedule --search "$SCRATCH/eta.json" --cluster dgx-h100
echo '{"model": "llama3-8b", "gbs": 8' >"$SCRATCH/cut.json"
check "cut.json" schedule --search "$SCRATCH/cut.json" --cluster dgx-h100
check "search file" schedule --search "$SCRATCH/missing.json" --cluster dgx-h100
[ ! -e "$SCRATCH/x.db" ] || fail "a refused search wrote a store"
echo "schedule_search: ok"
