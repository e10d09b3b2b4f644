# import nccl-tests (text, old and new layouts, JSON) and Kineto, db info, export, CSV round
# trip, merge twice, estimate --db.
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures
DB=$SCRATCH/store.db
norm() { sed -e "s#$SCRATCH#SCRATCH#g" -e "s#$SRC#SRC#g"; }

expect_exit 0 "$BIN" import nccl-tests --db "$DB" "$F/nccl/all_reduce_8gpu_v2.13.txt" "$F/nccl/allgather_2node_old.txt" \
  "$F/nccl/broadcast_root.txt" "$F/nccl/reduce_scatter_2node.json"
expect_exit 0 "$BIN" import kineto --db "$DB" "$F/kineto/train_step.json"
expect_exit 0 "$BIN" import nccl-tests --db "$DB" "$F/nccl/all_reduce_8gpu_v2.13.txt"
case "$OUT" in *"already imported as run 1; nothing added"*) ;; *) fail "re-import added rows: $OUT";; esac

expect_exit 0 "$BIN" db info "$DB"
printf '%s\n' "$OUT" | norm >"$SCRATCH/out"
golden db_info.txt

expect_exit 0 "$BIN" export --db "$DB" --table collective --op all_gather --format csv
# Every row names its run; the golden leaves the run columns out, checked here instead.
head -1 <<<"$OUT" | grep -q "^run_id,run_uuid,device," || fail "export lacks the run columns: $OUT"
grep -q "^2,import-nccl-tests-[0-9a-f-]*,NVIDIA" <<<"$(sed -n 2p <<<"$OUT")" || fail "export run columns: $OUT"
printf '%s\n' "$OUT" | cut -d, -f3- >"$SCRATCH/out"
golden db_export_all_gather.csv
head -1 "$SCRATCH/out" | grep -q "time_ns.*busbw_gbps" || fail "units missing from the column names"

# Round trip: export every table, import into a new store, export again: the same rows.
for table in collective kernels; do
  "$BIN" export --db "$DB" --table "$table" -o "$SCRATCH/$table.csv"
  expect_exit 0 "$BIN" import csv --db "$SCRATCH/copy.db" "$SCRATCH/$table.csv"
  "$BIN" export --db "$SCRATCH/copy.db" --table "$table" -o "$SCRATCH/$table.again.csv"
  # The same rows of the same runs (by uuid); run_id is each store's own number.
  cmp -s <(cut -d, -f2- "$SCRATCH/$table.csv") <(cut -d, -f2- "$SCRATCH/$table.again.csv") \
    || fail "CSV round trip of $table differs"
done
[ "$(wc -l <"$SCRATCH/collective.csv")" = 101 ] || fail "expected 100 collective rows"
# The copy holds the same runs, by uuid; the exports join the runs table on run_uuid.
"$BIN" export --db "$DB" --table runs | cut -d, -f2 | sort >"$SCRATCH/uuids"
"$BIN" export --db "$SCRATCH/copy.db" --table runs | cut -d, -f2 | sort >"$SCRATCH/uuids.copy"
cmp -s "$SCRATCH/uuids" "$SCRATCH/uuids.copy" || fail "the copy's runs are not the original's: $(diff "$SCRATCH/uuids" "$SCRATCH/uuids.copy")"
# An export read back into its own store adds nothing: those runs hold these rows.
expect_exit 0 "$BIN" import csv --db "$DB" "$SCRATCH/collective.csv"
[ "$(grep -c 'holds these rows already; nothing added' <<<"$OUT")" = 4 ] || fail "export re-imported: $OUT"

# JSON export parses and has one object per row.
"$BIN" export --db "$DB" --table kernels --format json >"$SCRATCH/k.json"
python3 -c "import json,sys; rows=json.load(open(sys.argv[1])); assert len(rows)==6 and rows[0]['duration_ns']==42500" "$SCRATCH/k.json" \
  || fail "kernels JSON export"

# Merge: per-node files fold together; the same input twice adds nothing.
expect_exit 0 "$BIN" import nccl-tests --db "$SCRATCH/node2.db" "$F/nccl/broadcast_root.txt"
expect_exit 0 "$BIN" db merge "$SCRATCH/all.db" "$DB" "$SCRATCH/node2.db"
expect_exit 0 "$BIN" db merge "$SCRATCH/all.db" "$DB" "$SCRATCH/node2.db"
printf '%s\n' "$OUT" | norm >"$SCRATCH/out"
golden db_merge_again.txt
expect_exit 0 "$BIN" db info --format json "$SCRATCH/all.db"
python3 -c "import json,sys; j=json.loads(sys.argv[1]); assert j['rows']['run']==5 and j['rows']['collective']==100, j['rows']" "$OUT" \
  || fail "merged store has the wrong counts"
expect_exit 0 "$BIN" db check "$SCRATCH/all.db"

# The estimator prices from the store: measured parts are named.
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --strategy "tp=8,gbs=64" --db "$DB"
case "$OUT" in *measured*|*interpolated*) ;; *) fail "estimate --db names no store-priced part: $OUT";; esac
expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --gbs 64 --top 3 --db "$DB"

# The traces of a job's ranks: read in parallel, one run, each rank's GPU its own device.
cp "$F/kineto/train_step.json" "$SCRATCH/rank0.json"
sed "s/\"rank\": 0,/\"rank\": 1,/" "$F/kineto/train_step.json" >"$SCRATCH/rank1.json"
expect_exit 0 "$BIN" import kineto --one-run --threads 2 --db "$SCRATCH/ranks.db" "$SCRATCH/rank0.json" "$SCRATCH/rank1.json"
grep -q "^2 rank traces: run 1: 12 kernel events, 2 devices$" <<<"$OUT" || fail "one-run import: $OUT"
expect_exit 0 "$BIN" trace summary --db "$SCRATCH/ranks.db" --run 1 --format json
python3 -c "import json,sys; s=json.loads(sys.argv[1]); assert len(s['devices'])==2, s['devices']" "$OUT" || fail "two ranks, one device: $OUT"
expect_exit 0 "$BIN" import kineto --one-run --db "$SCRATCH/ranks.db" "$SCRATCH/rank1.json" "$SCRATCH/rank0.json"
grep -q "already imported as run 1; nothing added" <<<"$OUT" || fail "the same ranks imported twice: $OUT"

# A store whose one trace was imported: trace summary summarises it without --run, and names
# the GPU by the CUDA ordinal the trace gave (issue 34, item 5).
sed 's/"device": *0/"device": 3/g; s/"id": *0/"id": 3/' "$F/kineto/profiler_steps.json" >"$SCRATCH/gpu3.json"
expect_exit 0 "$BIN" import kineto --db "$SCRATCH/one_trace.db" "$SCRATCH/gpu3.json"
expect_exit 0 "$BIN" trace summary --db "$SCRATCH/one_trace.db"
grep -q "^  3 NVIDIA H100 80GB HBM3 " <<<"$OUT" || fail "device 3 not named by its ordinal: $OUT"

# Nsight Systems exports (issue 34, item 6), made from the SQL fixtures: kernels, NCCL kernels,
# copies and sets summarised; the same export twice is one run; with its configuration the
# NVTX step ranges make a measured run; a report not exported is one line.
for v in 2024 2021; do
  python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[2]); c.executescript(open(sys.argv[1]).read()); c.commit()' \
    "$F/nsys/report_$v.sql" "$SCRATCH/report_$v.sqlite"
done
expect_exit 0 "$BIN" import nsys --db "$SCRATCH/nsys.db" "$SCRATCH/report_2024.sqlite" "$SCRATCH/report_2021.sqlite"
grep -q "report_2024.sqlite: run 1: 8 kernel events, 1 device$" <<<"$OUT" || fail "nsys 2024: $OUT"
grep -q "report_2021.sqlite: run 2: 5 kernel events, 2 devices$" <<<"$OUT" || fail "nsys 2021: $OUT"
expect_exit 0 "$BIN" trace summary --db "$SCRATCH/nsys.db" --run 1 --format json
python3 - "$OUT" <<'PY' || fail "nsys summary: $OUT"
import json, sys
s = json.loads(sys.argv[1])
by = {c["class"]: c for c in s["classes"]}
assert by["communication"]["count"] == 2 and by["communication"]["time_ns"] == 1700000, by
assert by["gemm"]["count"] == 3 and by["copy"]["count"] == 1, by
assert [d["device"] for d in s["devices"]] == ["1 NVIDIA H100 80GB HBM3"], s["devices"]
PY
expect_exit 0 "$BIN" import nsys --db "$SCRATCH/nsys.db" "$SCRATCH/report_2024.sqlite"
grep -q "already imported as run 1; nothing added" <<<"$OUT" || fail "nsys twice: $OUT"
expect_exit 0 "$BIN" import nsys --db "$SCRATCH/nsys_run.db" --model gpt3-1.3b --cluster dgx-a100 \
  --gpus 8 --strategy "tp=8,gbs=64" "$SCRATCH/report_2024.sqlite"
grep -q "and its measured step" <<<"$OUT" || fail "nsys measured run: $OUT"
expect_exit 2 "$BIN" import nsys --db "$SCRATCH/nsys.db" "$F/kineto/train_step.json"
one_line_error
case "$ERR" in *"not an SQLite file; export the report first"*) ;; *) fail "nsys non-sqlite: $ERR";; esac

# Wrong inputs: one line, exit 2.
expect_exit 2 "$BIN" import nccl-tests --db "$DB" "$F/kineto/train_step.json"
one_line_error
expect_exit 2 "$BIN" export --db "$DB" --table nope
one_line_error

# A damaged input to db merge (issue 37, item 5): said as the input's, before anything is
# merged; the output is neither created nor changed.
"$BIN" import csv --db "$SCRATCH/big.db" "$SRC/tests/fixtures/measured/gemm_a100_sample.csv" >/dev/null
python3 - "$SCRATCH/big.db" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:  # a table page's header and cells overwritten
    f.seek(40960)
    f.write(b"\x0d\x00\x00\x00\x05" + b"\xff" * 2000)
PY
"$BIN" import csv --db "$SCRATCH/whole.db" "$SRC/tests/fixtures/measured/gemm_a100_excerpt.csv" >/dev/null
cp "$SCRATCH/whole.db" "$SCRATCH/whole.before"
expect_exit 2 "$BIN" db merge "$SCRATCH/whole.db" "$SCRATCH/whole.before" "$SCRATCH/big.db"
one_line_error
case "$ERR" in *"big.db is damaged"*) ;; *) fail "damaged input blamed elsewhere: $ERR";; esac
cmp -s "$SCRATCH/whole.db" "$SCRATCH/whole.before" || fail "db merge changed its output before refusing a damaged input"
expect_exit 2 "$BIN" db merge "$SCRATCH/fresh.db" "$SCRATCH/whole.before" "$SCRATCH/big.db"
[ ! -e "$SCRATCH/fresh.db" ] || fail "db merge left a store behind after refusing a damaged input"


# One run's rows split over two CSV files (issue 37, item 5): the second half joins the run
# (it was dropped as "already holds these rows"); the same half again adds nothing; a file
# holding some stored rows and some not is refused, saying how many of each.
"$BIN" import csv --db "$SCRATCH/src.db" "$SRC/tests/fixtures/measured/gemm_a100_sample.csv" >/dev/null
"$BIN" export --db "$SCRATCH/src.db" --table gemm --format csv > "$SCRATCH/all.csv"
{ head -1 "$SCRATCH/all.csv"; sed -n 2,151p "$SCRATCH/all.csv"; } > "$SCRATCH/half1.csv"
{ head -1 "$SCRATCH/all.csv"; sed -n 152,301p "$SCRATCH/all.csv"; } > "$SCRATCH/half2.csv"
{ head -1 "$SCRATCH/all.csv"; sed -n 100,200p "$SCRATCH/all.csv"; } > "$SCRATCH/across.csv"
expect_exit 0 "$BIN" import csv --db "$SCRATCH/halves.db" "$SCRATCH/half1.csv"
expect_exit 2 "$BIN" import csv --db "$SCRATCH/halves.db" "$SCRATCH/across.csv"
one_line_error
case "$ERR" in *"52 of these 101 rows of run 1"*"in the store already and 49 are not"*) ;; *) fail "rows across halves: $ERR";; esac
expect_exit 0 "$BIN" import csv --db "$SCRATCH/halves.db" "$SCRATCH/half2.csv"
case "$OUT" in *"150 gemm rows, 1 device (added to the run)"*) ;; *) fail "second half: $OUT";; esac
expect_exit 0 "$BIN" import csv --db "$SCRATCH/halves.db" "$SCRATCH/half2.csv"
case "$OUT" in *"holds these rows already; nothing added"*) ;; *) fail "second half again: $OUT";; esac
"$BIN" export --db "$SCRATCH/halves.db" --table gemm --format csv > "$SCRATCH/halves.csv"
cmp -s "$SCRATCH/halves.csv" "$SCRATCH/all.csv" || fail "the halves do not export as the whole run"


# Export streams (issue 37, item 2): 200,000 rows out as CSV and JSON in a few tens of MB (a
# table held whole took 737 MB for 600,000 kernel events); the text is the whole table's
# (TableText unit test).
python3 -c '
print("device,host,kind,bytes,time_ns,time_p10_ns,time_p90_ns,iterations,bandwidth_gbps")
for i in range(200000):
    b = 4096 + i * 512; t = int(1000 + b / 10.0); print(f"CPU X,h,copy,{b},{t},{t},{t},3,{b / t:.4f}")' > "$SCRATCH/mem200k.csv"
"$BIN" import csv --db "$SCRATCH/big_export.db" "$SCRATCH/mem200k.csv" >/dev/null
python3 - "$BIN" "$SCRATCH/big_export.db" <<'PY' || fail "export of 200,000 rows"
import json, resource, subprocess, sys
for fmt in ("csv", "json"):
    out = subprocess.run([sys.argv[1], "export", "--db", sys.argv[2], "--table", "memory",
                          "--format", fmt], check=True, capture_output=True, text=True).stdout
    rows = len(json.loads(out)) if fmt == "json" else out.count("\n") - 1
    assert rows == 200000, (fmt, rows)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
assert peak_mb < 100, f"export peaked at {peak_mb:.0f} MB"
PY
echo "ok"
