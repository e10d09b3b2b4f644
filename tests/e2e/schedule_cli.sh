#!/usr/bin/env bash
# schedule through the real binary: golden text, the JSON contract, exit codes for jobs that
# fit nowhere or run late, and bad jobs files.
source "$(dirname "$0")/../e2e_lib.sh"

JOBS="$SRC/tests/fixtures/jobs/sweep.json"
# List scheduling is deterministic (the exact solver's text names its time limit).
expect_exit 0 "$BIN" schedule --jobs "$JOBS" --cluster dgx-h100 --gpus 64 --solver heuristic
golden schedule_sweep.txt

expect_exit 0 "$BIN" schedule --jobs "$JOBS" --cluster dgx-h100 --gpus 64 --format json --time-limit 2
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["jobs"]) == 6 and not j["unschedulable"] and not j["late"], j
assert j["makespan_s"] <= j["sequential_s"] + 1e-6 and j["makespan_s"] <= j["even_split_s"] + 1e-6
assert j["makespan_s"] >= j["makespan_bound_s"] - 1e-6
# No instant holds more than the cluster's GPUs.
events = sorted([(x["start_s"], x["gpus"]) for x in j["jobs"]] + [(x["end_s"], -x["gpus"]) for x in j["jobs"]],
                key=lambda e: (e[0], e[1]))
used = 0
for _, g in events:
    used += g
    assert used <= 64, used
assert {c["name"] for c in j["curves"]} == {x["name"] for x in j["jobs"]}
PY

# A job that fits at no GPU count it allows is listed, the rest are scheduled, exit 1.
cat >"$SCRATCH/huge.json" <<'J'
{"jobs": [{"name": "tiny", "model": "gpt3-1.3b", "gbs": 32, "steps": 100},
          {"name": "huge", "model": "gpt3-175b", "gbs": 64, "steps": 10, "gpus": [1, 2]}]}
J
expect_exit 1 "$BIN" schedule --jobs "$SCRATCH/huge.json" --cluster dgx-h100 --gpus 8
grep -q '^tiny ' "$SCRATCH/out" || fail "the job that fits is scheduled"
grep -q '^not scheduled     huge: gpt3-175b at global batch 64 fits at none of the GPU counts 1, 2$' \
  "$SCRATCH/out" || fail "the job that fits nowhere is named"

# With --spill it runs on one GPU shard after shard from host memory (Hydra), exit 0.
expect_exit 0 "$BIN" schedule --jobs "$SCRATCH/huge.json" --cluster dgx-h100 --gpus 8 --spill
grep -q '^huge .* shards spilled to host, mbs=.*(Hydra)$' "$SCRATCH/out" || fail "spilled shards"

# Bad jobs files: one line naming the job and the field, exit 2.
echo '{"jobs": [{"name": "x", "model": "gpt3-1.3b", "gbs": 32}]}' >"$SCRATCH/bad.json"
expect_exit 2 "$BIN" schedule --jobs "$SCRATCH/bad.json" --cluster dgx-h100
one_line_error
case "$ERR" in *"jobs[0]: give either steps or tokens"*) ;; *) fail "bad job: $ERR";; esac
printf 'name,model,gbs,steps\nx,gpt3-1.3b,32,lots\n' >"$SCRATCH/bad.csv"
expect_exit 2 "$BIN" schedule --jobs "$SCRATCH/bad.csv" --cluster dgx-h100
one_line_error
case "$ERR" in *"line 2: steps 'lots' is not a number"*) ;; *) fail "bad csv: $ERR";; esac
echo '{"jobs": [{"name": "x", "model": "gpt-9", "gbs": 32, "steps": 1}]}' >"$SCRATCH/model.json"
expect_exit 2 "$BIN" schedule --jobs "$SCRATCH/model.json" --cluster dgx-h100
one_line_error
case "$ERR" in *"job 'x': "*) ;; *) fail "unknown model: $ERR";; esac
expect_exit 2 "$BIN" schedule --jobs "$JOBS" --cluster dgx-h100 --objective fastest
one_line_error
# schedule --db keeps the schedule as a run; report draws it.
expect_exit 0 "$BIN" schedule --jobs "$JOBS" --cluster dgx-h100 --gpus 64 --solver heuristic \
  --db "$SCRATCH/sched.db"
expect_exit 0 "$BIN" report --db "$SCRATCH/sched.db" -o "$SCRATCH/sched.html"
grep -q 'class="plot gantt"' "$SCRATCH/sched.html" || fail "report draws the schedule"
grep -q 'data-name="gpt13b"' "$SCRATCH/sched.html" || fail "report names the jobs"

# --solver exact on 2,000 jobs (10 GB in 60 s): refused before any job is priced.
python3 -c 'import json,sys; json.dump({"jobs": [{"name": f"j{i}", "model": "gpt3-1.3b", "gbs": 32, "tokens": 5e8} for i in range(2000)]}, open(sys.argv[1], "w"))' "$SCRATCH/many.json"
expect_exit 2 prlimit --as=1073741824 --cpu=20 "$BIN" schedule --jobs "$SCRATCH/many.json" --cluster dgx-a100 --gpus 64 --solver exact
one_line_error
case "$ERR" in *"--solver exact schedules up to 64 jobs"*"has 2000"*) ;; *) fail "exact on 2,000 jobs: $ERR";; esac

# Progress on stderr as the jobs' curves are priced.
SHARDCOST_PROGRESS_AFTER_S=0 expect_exit 0 "$BIN" schedule --jobs "$SRC/tests/fixtures/jobs/sweep.json" --cluster dgx-a100 --gpus 64
case "$ERR" in *"shardcost: schedule: 0 of 6 jobs' curves priced"*"shardcost: schedule: 6 of 6 jobs' curves priced"*) ;; *) fail "progress: $ERR";; esac
echo "schedule_cli: ok"
