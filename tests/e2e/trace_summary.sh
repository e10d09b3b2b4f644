#!/usr/bin/env bash
# trace summary and trace export on a fixture store written through the real trace-file ->
# collect -> store path (tests/trace_make_fixture): golden summaries, a valid Perfetto file.
source "$(dirname "$0")/../e2e_lib.sh"
MAKE=$(dirname "$BIN")/tests/trace_make_fixture
[ -x "$MAKE" ] || fail "missing $MAKE (built with SHARDCOST_TESTS)"
DB=$SCRATCH/fixture.db
"$MAKE" "$DB"

expect_exit 0 "$BIN" trace summary --db "$DB"
golden trace_summary.txt
expect_exit 0 "$BIN" trace summary --db "$DB" --run trace-fixture --format csv
golden trace_summary.csv
expect_exit 0 "$BIN" trace summary --db "$DB" --format json --top 3
python3 - "$SCRATCH/out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kernels"] == 10 and s["copies"] == 2 and s["sets"] == 2, s
assert abs(s["overlap_fraction"] - 0.5) < 1e-9, s["overlap_fraction"]
assert len(s["top"]) == 3 and s["top"][0]["class"] == "gemm", s["top"]
PY

expect_exit 0 "$BIN" trace export --db "$DB" --run 1 --perfetto "$SCRATCH/trace.json"
python3 - "$SCRATCH/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
assert isinstance(events, list) and events
complete = [e for e in events if e["ph"] == "X"]
assert len(complete) == 16, len(complete)
for e in complete:
    for key in ("name", "ts", "dur", "pid", "tid", "cat"):
        assert key in e, (key, e)
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
    assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
meta = {(e["name"], e["pid"], e["tid"]) for e in events if e["ph"] == "M"}
tracks = {(e["pid"], e["tid"]) for e in complete}
for pid, tid in tracks:
    assert ("thread_name", pid, tid) in meta, (pid, tid)
    assert ("process_name", pid, 0) in meta, pid
# Events on one stream track never overlap (Perfetto needs them nested).
for pid, tid in tracks:
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in complete if (e["pid"], e["tid"]) == (pid, tid))
    assert all(a[1] <= b[0] + 1e-6 for a, b in zip(spans, spans[1:])), (pid, tid)
assert {e["cat"] for e in complete} >= {"gemm", "attention", "communication", "copy", "set", "sync"}
PY

# The traced kernels are costs the estimator and other tools can read.
expect_exit 0 "$BIN" export --db "$DB" --table kernels --format csv
[ "$(printf '%s\n' "$OUT" | grep -c ncclDevKernel_AllReduce)" = 2 ] || fail "kernels export: $OUT"
# Keyed by name and launch configuration: grid in blocks, block in threads (schema 4).
head -1 <<<"$OUT" | grep -q "^run_id,run_uuid,device,host,device_index,.*,grid_x_blocks,grid_y_blocks,grid_z_blocks,block_x_threads,block_y_threads,block_z_threads$" \
  || fail "kernels export lacks the launch columns: $(head -1 <<<"$OUT")"
[ "$(grep -c '^[0-9]*,trace-fixture,NVIDIA H100 80GB HBM3,fixture-host,0,7,kernel,ampere_bf16.*,132,1,1,256,1,1$' <<<"$OUT")" = 2 ] \
  || fail "the GEMM's launch configuration is missing: $OUT"
grep -q '^[0-9]*,trace-fixture,NVIDIA H100 80GB HBM3,fixture-host,0,7,memcpy,memcpy HtoD,.*,1048576,,,,,,$' <<<"$OUT" \
  || fail "a copy should have no launch configuration: $OUT"
# ... and survive import csv and db merge unchanged.
"$BIN" export --db "$DB" --table kernels -o "$SCRATCH/kernels.csv"
expect_exit 0 "$BIN" import csv --db "$SCRATCH/copy.db" "$SCRATCH/kernels.csv"
"$BIN" export --db "$SCRATCH/copy.db" --table kernels -o "$SCRATCH/kernels.again.csv"
# The copy's run is the traced run, by uuid (run_id is each store's own number).
cmp -s <(cut -d, -f2- "$SCRATCH/kernels.csv") <(cut -d, -f2- "$SCRATCH/kernels.again.csv") \
  || fail "kernels CSV round trip differs"
expect_exit 0 "$BIN" db merge "$SCRATCH/merged.db" "$DB"
"$BIN" export --db "$SCRATCH/merged.db" --table kernels -o "$SCRATCH/kernels.merged.csv"
cmp -s <(cut -d, -f2- "$SCRATCH/kernels.csv") <(cut -d, -f2- "$SCRATCH/kernels.merged.csv") \
  || fail "kernels differ after db merge"

expect_exit 2 "$BIN" trace summary --db "$DB" --run 999
one_line_error
expect_exit 2 "$BIN" trace summary --db "$DB" --format yaml
one_line_error
echo "trace_summary: ok"
