# Damaged and foreign files, newer schemas, SIGKILL during a long import, two writers at once.
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures

# Not SQLite at all.
printf 'step,time\n1,2\n%.0s' {1..200} >"$SCRATCH/text.db"
expect_exit 2 "$BIN" db info "$SCRATCH/text.db"
one_line_error
case "$ERR" in *"not a shardcost store"*) ;; *) fail "unclear message: $ERR";; esac

# ... said at once to a writer too, never after a lock wait.
expect_exit 2 timeout 10 "$BIN" import nccl-tests --db "$SCRATCH/text.db" "$F/nccl/broadcast_root.txt"
one_line_error
case "$ERR" in *"not a shardcost store"*) ;; *) fail "unclear message: $ERR";; esac

# A writer that has to wait for another says so at once, then finishes.
"$BIN" import nccl-tests --db "$SCRATCH/locked.db" "$F/nccl/broadcast_root.txt" >/dev/null
python3 - "$SCRATCH/locked.db" "$SCRATCH/locked.ready" <<'PY' &
import pathlib, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
pathlib.Path(sys.argv[2]).touch()
time.sleep(1.5)
c.execute("COMMIT")
PY
holder=$!
for _ in $(seq 1 500); do [ -e "$SCRATCH/locked.ready" ] && break; sleep 0.01; done
expect_exit 0 "$BIN" import nccl-tests --db "$SCRATCH/locked.db" "$F/nccl/all_reduce_8gpu_v2.13.txt"
wait $holder
case "$ERR" in *"waiting for $SCRATCH/locked.db (locked by another writer"*) ;; *) fail "no lock-wait notice: $ERR";; esac
grep -q "run 2: 50 collective rows" <<<"$OUT" || fail "the waiting import did not finish: $OUT"

# A store in a folder this user cannot write is read (as root, through another user). The
# folder and a copy of the binary sit in a world-readable scratch folder of their own, so the
# test runs wherever the clone is (a clone under /root is out of other users' reach).
ro_top=$(mktemp -d "${TMPDIR:-/tmp}/shardcost-ro.XXXXXX")
trap 'chmod -R u+w "$ro_top" 2>/dev/null; rm -rf "$ro_top"' EXIT
chmod 755 "$ro_top"
cp "$BIN" "$ro_top/shardcost"
chmod 755 "$ro_top/shardcost"
mkdir -p "$ro_top/ro"
"$BIN" import nccl-tests --db "$ro_top/ro/s.db" "$F/nccl/broadcast_root.txt" >/dev/null
chmod 555 "$ro_top/ro"
chmod 444 "$ro_top/ro/s.db"
as_reader=()
[ "$(id -u)" = 0 ] && as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! "${as_reader[@]}" "$ro_top/shardcost" --version >/dev/null 2>&1; then
  echo "skipped: no other user to read a read-only folder as (setpriv, nobody)"
elif ! "${as_reader[@]}" test -r "$ro_top/ro/s.db" || "${as_reader[@]}" test -w "$ro_top/ro"; then
  echo "skipped: $ro_top is not read-only and readable to the reader (a mount option?)"
else
  BIN_RO=$ro_top/shardcost
  expect_exit 0 "${as_reader[@]}" "$BIN_RO" db info "$ro_top/ro/s.db"
  grep -q "collective 14" <<<"$OUT" || fail "read-only folder store: $OUT"
  expect_exit 0 "${as_reader[@]}" "$BIN_RO" export --db "$ro_top/ro/s.db" --table runs
  expect_exit 2 "${as_reader[@]}" "$BIN_RO" import nccl-tests --db "$ro_top/ro/s.db" "$F/nccl/all_reduce_8gpu_v2.13.txt"
  one_line_error
fi

# A missing file.
expect_exit 2 "$BIN" db check "$SCRATCH/missing.db"
one_line_error

# A store missing one of its tables (issue 37, item 6): bad input, exit 2, one line (not the
# exit 1 that compare means as "regressed").
"$BIN" import nccl-tests --db "$SCRATCH/holed.db" "$F/nccl/broadcast_root.txt" >/dev/null
sqlite3 "$SCRATCH/holed.db" "DROP TABLE gemm" 2>/dev/null || python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE gemm"); c.commit()' "$SCRATCH/holed.db"
for cmd in "compare $SCRATCH/holed.db $SCRATCH/holed.db" "export --db $SCRATCH/holed.db --table gemm"; do
  expect_exit 2 "$BIN" $cmd
  one_line_error
  case "$ERR" in *"is not a whole shardcost store (no such table: gemm"*) ;; *) fail "$cmd: $ERR";; esac
done

# A generated trace: one Kineto file with many GPU events.
gen_trace() {  # gen_trace FILE EVENTS
  awk -v n="$2" 'BEGIN {
    printf "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", \"totalGlobalMem\": 85031714816}],\n\"traceEvents\": [\n";
    for (i = 0; i < n; i++) printf "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%d\",\"pid\":0,\"tid\":7,\"ts\":%d.5,\"dur\":3.25,\"args\":{\"device\":0,\"stream\":7}}\n", (i ? "," : ""), i % 97, i * 5;
    printf "]}\n" }' >"$1"
}
gen_trace "$SCRATCH/big.json" 400000

# Imports of the same files started together (issue 37, item 1): each file stored once, every
# importer done, the store whole. Four importers of one 400,000-event Kineto trace (committing
# every 5,000 rows, so that they interleave: before the fix they stored 1,090,000 events for a
# 300,000-event trace) and three of one nccl-tests log, into one store at once.
pids=()
for i in 1 2 3 4; do
  "$BIN" import kineto --db "$SCRATCH/together.db" --batch-rows 5000 "$SCRATCH/big.json" \
    >"$SCRATCH/together.$i.out" 2>&1 & pids+=($!)
done
for i in 1 2 3; do
  "$BIN" import nccl-tests --db "$SCRATCH/together.db" "$F/nccl/broadcast_root.txt" \
    >"$SCRATCH/together.n$i.out" 2>&1 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent import failed: $(cat "$SCRATCH"/together.*.out)"; done
expect_exit 0 "$BIN" db info "$SCRATCH/together.db"
grep -q "rows     run 2,.* collective 14,.* kernel_event 400000," <<<"$OUT" ||
  fail "concurrent imports stored a file more than once: $(head -3 <<<"$OUT")"
expect_exit 0 "$BIN" db check "$SCRATCH/together.db"

# A truncated store: half of a real one.
"$BIN" import kineto --db "$SCRATCH/full.db" --batch-rows 5000 "$SCRATCH/big.json" >/dev/null
sqlite3 "$SCRATCH/full.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1 || true
size=$(stat -c %s "$SCRATCH/full.db")
head -c $((size / 2)) "$SCRATCH/full.db" >"$SCRATCH/truncated.db"
expect_exit 2 "$BIN" db check "$SCRATCH/truncated.db"
one_line_error
expect_exit 2 "$BIN" export --db "$SCRATCH/truncated.db" --table kernels
one_line_error

# A newer schema than this binary knows.
cp "$F/../fixtures/nccl/broadcast_root.txt" "$SCRATCH/b.txt"
"$BIN" import nccl-tests --db "$SCRATCH/newer.db" "$SCRATCH/b.txt" >/dev/null
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version = 42'); c.commit()" "$SCRATCH/newer.db"
expect_exit 2 "$BIN" db info "$SCRATCH/newer.db"
one_line_error
case "$ERR" in *"schema version 42"*"newer shardcost"*) ;; *) fail "unclear message: $ERR";; esac
expect_exit 2 "$BIN" import nccl-tests --db "$SCRATCH/newer.db" "$F/nccl/all_reduce_8gpu_v2.13.txt"
one_line_error

# SIGKILL in the middle of a long import: the file passes db check and holds whole batches.
BATCH=2000
"$BIN" import kineto --db "$SCRATCH/killed.db" --batch-rows $BATCH "$SCRATCH/big.json" >/dev/null 2>&1 &
pid=$!
rows=0
for _ in $(seq 1 400); do
  # Watch through the binary itself (read-only): the first committed batch ends the wait.
  rows=$("$BIN" db info --format json "$SCRATCH/killed.db" 2>/dev/null | grep -o '"kernel_event": [0-9]*' | grep -o '[0-9]*$' || echo 0)
  [ "${rows:-0}" -gt 0 ] && break
  sleep 0.01
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
expect_exit 0 "$BIN" db check "$SCRATCH/killed.db"
rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from kernel_event').fetchone()[0])" "$SCRATCH/killed.db")
[ "$rows" -gt 0 ] || fail "the killed import kept no rows: its committed batches were lost"
[ $((rows % BATCH)) = 0 ] || [ "$rows" = 400000 ] || fail "$rows rows: not whole batches of $BATCH"
echo "killed import kept $rows rows"
# Importing the same file again completes it: the unfinished run is replaced, never "already
# imported" (unless the kill came after the import had finished).
expect_exit 0 "$BIN" import kineto --db "$SCRATCH/killed.db" "$SCRATCH/big.json"
if [ "$rows" = 400000 ]; then
  grep -q "already imported" <<<"$OUT" || fail "a finished import imported again: $OUT"
else
  grep -q "had not finished; replaced" <<<"$OUT" || fail "the unfinished run was not replaced: $OUT"
fi
rows=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from kernel_event').fetchone()[0])" "$SCRATCH/killed.db")
[ "$rows" = 400000 ] || fail "after the second import: $rows rows, not 400000"
# And a run can be removed, by id (or uuid).
run=$(grep -o 'run [0-9]*' <<<"$OUT" | head -1 | grep -o '[0-9]*')
expect_exit 0 "$BIN" db delete-run "$SCRATCH/killed.db" "$run"
grep -q "run $run removed (400001 rows)" <<<"$OUT" || fail "delete-run: $OUT"
expect_exit 2 "$BIN" db delete-run "$SCRATCH/killed.db" "$run"
one_line_error

# Two writers on one file at once: both succeed (busy timeout), nothing lost or corrupted.
gen_trace "$SCRATCH/w1.json" 150000
sed 's/kernel_/other_/g' "$SCRATCH/w1.json" >"$SCRATCH/w2.json"
"$BIN" import kineto --db "$SCRATCH/shared.db" --batch-rows 2000 "$SCRATCH/w1.json" >"$SCRATCH/w1.out" 2>&1 &
p1=$!
"$BIN" import kineto --db "$SCRATCH/shared.db" --batch-rows 2000 "$SCRATCH/w2.json" >"$SCRATCH/w2.out" 2>&1 &
p2=$!
wait $p1 || fail "writer 1 failed: $(cat "$SCRATCH/w1.out")"
wait $p2 || fail "writer 2 failed: $(cat "$SCRATCH/w2.out")"
expect_exit 0 "$BIN" db check "$SCRATCH/shared.db"
expect_exit 0 "$BIN" db info --format json "$SCRATCH/shared.db"
python3 -c "import json,sys; r=json.loads(sys.argv[1])['rows']; assert r['kernel_event']==300000 and r['string']==194, r" "$OUT" \
  || fail "concurrent writers lost rows: $OUT"
echo "ok"
