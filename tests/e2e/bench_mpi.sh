# mpirun -np 2 shardcost bench collective/p2p --backend mpi: nccl-tests' figures, checked, stored.
source "$(dirname "$0")/../e2e_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
# Open MPI refuses root without these; the container has few cores and no fabric.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPI=(mpirun -np 2 --oversubscribe --mca btl self,vader --mca pml ob1)
DB=$SCRATCH/coll.db

expect_exit 0 "${MPI[@]}" "$BIN" bench collective --backend mpi --op all -b 1K -e 64K -f 8 --iters 5 --warmup 1 --db "$DB"
grep -q "^# 2 ranks on 1 node (intra_node)" <<<"$OUT" || fail "header: $OUT"
[ "$(grep -cE '^(all_reduce|all_gather|reduce_scatter|broadcast|reduce|all_to_all|send_recv) ' <<<"$OUT")" = 21 ] \
  || fail "expected 7 ops x 3 sizes, printed once (rank 0): $OUT"
awk '$1 ~ /^(all_reduce|all_to_all)/ && $NF != 0 { exit 1 }' <<<"$OUT" || fail "#wrong not 0: $OUT"
# nccl-tests' short names are aliases of the store's.
expect_exit 0 "${MPI[@]}" "$BIN" bench collective --backend mpi --op alltoall,sendrecv -b 1K -e 1K --iters 2 --warmup 0
[ "$(grep -cE '^(all_to_all|send_recv) ' <<<"$OUT")" = 2 ] || fail "aliases: $OUT"

# busbw = algbw x nccl-tests' factor: 2(n-1)/n = 1 for all_reduce, (n-1)/n = 0.5 for all_gather on 2 ranks.
expect_exit 0 "${MPI[@]}" "$BIN" bench collective --op all_gather,all_reduce,reduce_scatter -b 64K --iters 5 --warmup 1 --redop max --in-place --format json
python3 - "$SCRATCH/out" <<'PY' || fail "collective json: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ranks"] == 2 and j["fabric_level"] == "intra_node", j
for r in j["results"]:
    f = {"all_gather": 0.5, "all_reduce": 1.0, "reduce_scatter": 0.5}[r["op"]]
    assert abs(r["busbw_gbps"] - r["algbw_gbps"] * f) < 1e-9 * max(1, r["algbw_gbps"]), r
    assert r["wrong"] == 0 and r["in_place"] and r["bytes"] == 65536, r
PY

expect_exit 0 "${MPI[@]}" "$BIN" bench p2p --backend mpi -b 8 -e 64K -f 64 --iters 5 --warmup 1 --format csv --db "$DB"
grep -q ",send_recv,int8,none,-1,8,8,2,1,intra_node,0," <<<"$OUT" || fail "p2p csv: $OUT"
[ "$(grep -c ',send_recv,' <<<"$OUT")" = 3 ] || fail "expected 3 sizes: $OUT"

expect_exit 0 "$BIN" db info "$DB"
grep -q "collective 24" <<<"$OUT" || fail "store lacks 21 collective + 3 p2p rows: $OUT"

# Ctrl-C reaching one rank stops both at the same point (they agree before each
# measurement): the finished measurements are stored and said, exit 130.
rm -f "$SCRATCH/int.db"
"${MPI[@]}" "$BIN" bench collective --backend mpi --op all_reduce -b 1K -e 64M -f 2 --iters 200 --warmup 1 --db "$SCRATCH/int.db" >"$SCRATCH/int.out" 2>"$SCRATCH/int.err" &
job=$!
for _ in $(seq 1 200); do
  ranks=$(pgrep -f "bench collective --backend mpi --op all_reduce -b 1K -e 64M" | grep -v "^$job$" || true)
  [ "$(wc -w <<<"$ranks")" -ge 2 ] && break
  sleep 0.05
done
sleep 1
# One rank (mpirun is $job) is told; the other hears of it only through the agreement.
kill -INT "$(tail -1 <<<"$ranks")"
set +e; wait $job; code=$?; set -e
[ "$code" != 0 ] || fail "an interrupted benchmark exited 0"
grep -q "interrupted: [0-9]* of 17 measurements stored in $SCRATCH/int.db as run 1" "$SCRATCH/int.err" || fail "interrupt: $(cat "$SCRATCH/int.err")"
n=$(grep -o "interrupted: [0-9]*" "$SCRATCH/int.err" | grep -o "[0-9]*$")
[ "$n" -lt 17 ] || fail "nothing was interrupted: $(cat "$SCRATCH/int.err")"
stored=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from collective').fetchone()[0])" "$SCRATCH/int.db" 2>/dev/null || echo 0)
[ "$stored" = "$n" ] || fail "said $n stored, the store holds $stored"

# The launcher signalling the whole group (Ctrl-C or SIGTERM to mpirun: every rank gets SIGTERM,
# then SIGKILL a second later) loses nothing finished: each measurement is stored as it ends.
rows_in() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from collective').fetchone()[0])" "$1" 2>/dev/null || echo 0; }
for sig in TERM INT; do
  rm -f "$SCRATCH/group.db"*
  "${MPI[@]}" "$BIN" bench collective --backend mpi --op all_reduce -b 1K -e 256M -f 2 --iters 400 --warmup 1 --db "$SCRATCH/group.db" >"$SCRATCH/group.out" 2>"$SCRATCH/group.err" &
  job=$!
  for _ in $(seq 1 600); do
    [ "$(rows_in "$SCRATCH/group.db")" -ge 3 ] && break
    sleep 0.05
  done
  seen=$(rows_in "$SCRATCH/group.db")
  [ "$seen" -ge 3 ] || fail "no measurement stored while running: $(cat "$SCRATCH/group.err")"
  kill -$sig $job
  set +e; wait $job; set -e
  kept=$(rows_in "$SCRATCH/group.db")
  [ "$kept" -ge "$seen" ] && [ "$kept" -lt 19 ] || fail "SIG$sig to mpirun: $seen stored before, $kept after"
  expect_exit 0 "$BIN" db check "$SCRATCH/group.db"
  expect_exit 0 "$BIN" db info "$SCRATCH/group.db"
  grep -q "collective $kept," <<<"$OUT" && grep -q " completed " <<<"$OUT" || fail "SIG$sig: $OUT"
done

# One file per rank with {rank}.
expect_exit 0 "${MPI[@]}" "$BIN" bench collective -b 1K --iters 2 --warmup 0 --db "$SCRATCH/r{rank}.db"
[ -f "$SCRATCH/r0.db" ] && [ -f "$SCRATCH/r1.db" ] || fail "per-rank stores missing: $(ls "$SCRATCH")"

# A stalled rank is bounded by --timeout and reported, never a silent hang.
set +e
timeout 60 "${MPI[@]}" "$BIN" bench collective -b 1K --iters 2 --timeout 2 --debug-stall-rank 1 \
  >"$SCRATCH/out" 2>"$SCRATCH/err"
rc=$?
set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "stalled run exited $rc (124: hung)"
grep -q "shardcost: MPI all_reduce of 1024 bytes over 2 ranks did not finish within 2 s" "$SCRATCH/err" \
  || fail "timeout not reported: $(cat "$SCRATCH/err")"

# p2p needs two ranks; bad input is one line with exit 2.
expect_exit 2 "$BIN" bench p2p -b 8; one_line_error
expect_exit 2 "$BIN" bench collective --op allreduce -b 8; one_line_error
expect_exit 2 "$BIN" bench collective --backend gloo -b 8; one_line_error
expect_exit 2 "$BIN" bench collective --dtype half -b 8; one_line_error
echo "bench_mpi: ok"
