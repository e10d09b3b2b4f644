# bench gemm/memory on the host backend: real BLAS and memory measurements, checked, stored.
source "$(dirname "$0")/../e2e_lib.sh"
DB=$SCRATCH/host.db

expect_exit 0 "$BIN" bench gemm --device cpu --shape 64x32x48 -m 16,32 -n 8 -k 1K:2K:2 --iters 3 --warmup 1 --db "$DB"
grep -q "^64x32x48 *fp32" <<<"$OUT" || fail "gemm table lacks the --shape row: $OUT"
[ "$(grep -c ' ok' <<<"$OUT")" = 5 ] || fail "expected 5 checked GEMM rows: $OUT"

expect_exit 0 "$BIN" bench gemm --shape 128x128x128 --iters 3 --warmup 1 --compare-baseline --format json
python3 - "$SCRATCH/out" <<'PY' || fail "gemm json: $OUT"
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["wrong"] == 0 and r["tflops"] > 0 and r["baseline_tflops"] > 0, r
assert r["stats"]["iterations"] == 3 and r["stats"]["p10_ns"] <= r["stats"]["median_ns"] <= r["stats"]["p90_ns"], r
PY

expect_exit 0 "$BIN" bench memory --device cpu -b 64K -e 1M -f 4 --iters 3 --warmup 1 --compare-baseline --format csv --db "$DB"
# The CSV is the export's layout, naming the run it was stored as: it imports, and joins.
head -1 <<<"$OUT" | grep -q "^run_id,run_uuid,device,host,kind,bytes,time_ns" || fail "memory csv header: $OUT"
[ "$(grep -c ',copy,' <<<"$OUT")" = 3 ] || fail "expected 3 copy sizes: $OUT"
grep -q ',read,1048576,' <<<"$OUT" || fail "memory read row missing: $OUT"
printf '%s\n' "$OUT" >"$SCRATCH/memory.csv"
mem_uuid=$(sed -n 2p "$SCRATCH/memory.csv" | cut -d, -f2)
mem_id=$(sed -n 2p "$SCRATCH/memory.csv" | cut -d, -f1)
expect_exit 0 "$BIN" export --db "$DB" --table runs
grep -q "^$mem_id,$mem_uuid,shardcost," <<<"$OUT" || fail "bench csv names run $mem_id $mem_uuid, the store: $OUT"
expect_exit 0 "$BIN" import csv --db "$DB" "$SCRATCH/memory.csv"
grep -q "holds these rows already; nothing added" <<<"$OUT" || fail "bench csv re-import: $OUT"
expect_exit 0 "$BIN" import csv --db "$SCRATCH/copy.db" "$SCRATCH/memory.csv"
"$BIN" export --db "$SCRATCH/copy.db" --table memory | cut -d, -f2- >"$SCRATCH/copy.csv"
cut -d, -f2- "$SCRATCH/memory.csv" | cmp -s - "$SCRATCH/copy.csv" || fail "bench csv does not import as it was"
# Without a store the run is named but has no id.
expect_exit 0 "$BIN" bench memory --device cpu -b 64K -e 64K --op copy --iters 2 --warmup 0 --format csv
grep -q '^,[0-9a-f-]\{36\},' <<<"$(sed -n 2p <<<"$OUT")" || fail "unstored bench csv: $OUT"

# Ctrl-C keeps what was measured: stored, said, exit 130.
"$BIN" bench memory --device cpu -b 1M -e 256M -f 2 --iters 20 --warmup 1 --db "$SCRATCH/int.db" >"$SCRATCH/int.out" 2>"$SCRATCH/int.err" &
job=$!
sleep 1.5
kill -INT $job
set +e; wait $job; code=$?; set -e
[ "$code" = 130 ] || fail "an interrupted benchmark exited $code: $(cat "$SCRATCH/int.err")"
grep -q "interrupted: [0-9]* of 27 measurements stored in $SCRATCH/int.db as run 1" "$SCRATCH/int.err" \
  || grep -q "interrupted: 0 of 27 measurements made; nothing stored" "$SCRATCH/int.err" || fail "interrupt: $(cat "$SCRATCH/int.err")"
n=$(grep -o "interrupted: [0-9]*" "$SCRATCH/int.err" | grep -o "[0-9]*$")
[ "$n" -lt 27 ] || fail "nothing was interrupted"
[ "$(grep -cE '^(copy|read|write) ' "$SCRATCH/int.out")" = "$n" ] || fail "printed rows differ from the $n said: $(cat "$SCRATCH/int.out")"
if [ "$n" -gt 0 ]; then
  stored=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from memory').fetchone()[0])" "$SCRATCH/int.db")
  [ "$stored" = "$n" ] || fail "said $n stored, the store holds $stored"
fi

# Both runs landed in the store, with provenance.
expect_exit 0 "$BIN" db info "$DB"
grep -q "gemm 5" <<<"$OUT" || fail "store lacks the 5 GEMM rows: $OUT"
grep -q "memory 9" <<<"$OUT" || fail "store lacks the 9 memory rows: $OUT"

# Every timed iteration after warm-up is stored as samples_ns (3 per row), and compare tests
# a store against itself with them (Mann-Whitney), finding nothing.
python3 - "$DB" <<'PY' || fail "samples_ns not stored"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for table in ("gemm", "memory"):
    rows = db.execute(f"SELECT iterations, samples_ns FROM {table}").fetchall()
    assert rows, table
    for iterations, samples in rows:
        assert samples is not None, (table, iterations)
        values = [int(v) for v in samples.split(" ")]
        assert len(values) == iterations == 3 and all(v > 0 for v in values), (table, samples)
PY
expect_exit 0 "$BIN" compare "$DB" "$DB" --format json
python3 - "$SCRATCH/out" <<'PY' || fail "compare of a store with itself: $OUT"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["summary"]["regressed"] == 0 and c["pairs"], c["summary"]
assert {p["method"] for p in c["pairs"]} == {"mann-whitney"}, {p["method"] for p in c["pairs"]}
PY

# Bad input: one line, exit 2.
expect_exit 2 "$BIN" bench memory -b 12Q; one_line_error
grep -q "invalid size '12Q'" <<<"$ERR" || fail "$ERR"
expect_exit 2 "$BIN" bench gemm --device cpu --dtype fp8 --shape 8x8x8; one_line_error
expect_exit 2 "$BIN" bench gemm --device tpu --shape 8x8x8; one_line_error
expect_exit 2 "$BIN" bench gemm --shape 8x8; one_line_error
expect_exit 2 "$BIN" bench memory --op flush; one_line_error
expect_exit 2 "$BIN" bench gemm --shapes-from no-such-model; one_line_error
# Issue 37, item 3: sizes BLAS cannot take, shapes for a split the model cannot take, and a
# benchmark past the process's own memory limit are refused before anything is allocated.
expect_exit 2 "$BIN" bench gemm --shape 2147483648x1x1 --db "$SCRATCH/never.db"; one_line_error
case "$ERR" in *"M = 2147483648 is past 2^31 - 1"*) ;; *) fail "no BLAS size refusal: $ERR";; esac
expect_exit 2 "$BIN" bench gemm --shapes-from llama3-70b --tp 3 --db "$SCRATCH/never.db"
one_line_error
case "$ERR" in *"tp=3 does not divide the 64 heads"*) ;; *) fail "tp=3 ran: $ERR";; esac
expect_exit 2 bash -c "ulimit -v 1500000; exec \"\$0\" bench gemm --shape 40000x1x20000 --db \"\$1\"" \
  "$BIN" "$SCRATCH/never.db"
one_line_error
case "$ERR" in *"needs 3.0 GiB of host memory"*) ;; *) fail "ulimit -v ignored: $ERR";; esac
[ ! -e "$SCRATCH/never.db" ] || fail "a refused benchmark created its store"
# Measurements are stored as they end: a store that cannot be written stops the benchmark at
# its first measurement, one line, exit 2.
echo "not a store" >"$SCRATCH/text.db"
expect_exit 2 "$BIN" bench memory --op copy -b 1M -e 64M --iters 2 --warmup 0 --db "$SCRATCH/text.db"
one_line_error
case "$ERR" in *"text.db is not a shardcost store"*) ;; *) fail "unwritable store: $ERR";; esac
expect_exit 2 "$BIN" import nccl-tests --db "$SCRATCH/never.db" --op frobnicate \
  "$SRC/tests/fixtures/nccl/broadcast_root.txt"
one_line_error
# Threads bound where --cpus says (default: every CPU the process may use), and said so.
last=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
expect_exit 0 "$BIN" bench memory -b 64K -e 64K --op read --iters 2 --warmup 0 --threads 1
grep -q "^# threads: 1 thread bound to CPU [0-9]" <<<"$OUT" || fail "binding line: $OUT"
expect_exit 0 "$BIN" bench memory -b 64K -e 64K --op read --iters 2 --warmup 0 --cpus "$last" --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["threads"].startswith("1 thread bound to CPU %s" % sys.argv[2]), j["threads"]' "$SCRATCH/out" "$last" \
  || fail "--cpus $last: $OUT"
expect_exit 0 "$BIN" bench embedding --rows 1K --dim 16 --pooling 1 --batch 64 --zipf 0 --pass forward --iters 2 --warmup 0 --cpus none --threads 3
grep -q "^# threads: 3 threads not bound (may run on CPUs " <<<"$OUT" || fail "--cpus none: $OUT"
expect_exit 0 "$BIN" bench gemm --shape 64x64x64 --iters 2 --warmup 0 --threads 1
grep -q "^# threads: 1 BLAS thread placed by the BLAS on CPUs " <<<"$OUT" || fail "gemm threads: $OUT"
expect_exit 2 "$BIN" bench memory -b 64K -e 64K --cpus 4096; one_line_error
expect_exit 2 "$BIN" bench memory -b 64K -e 64K --cpus 0-; one_line_error
expect_exit 2 "$BIN" bench memory -b 64K -e 64K --cpus numa:99; one_line_error
expect_exit 2 "$BIN" bench memory -b 64K -e 64K --cpus "$last" --threads 2; one_line_error
expect_exit 2 "$BIN" bench memory --device cuda -b 64K -e 64K --cpus 0; one_line_error
echo "bench_host: ok"
