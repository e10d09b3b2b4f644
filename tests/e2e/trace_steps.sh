#!/usr/bin/env bash
# shardcost trace -- CMD keeps the program's NVTX step ranges as the run's training steps: a
# stand-in process writes what the injection library would (three steps of 1.5, 1.6, 1.7 ms
# inside ranges PREFIX10..12, and one other range); the store holds three steps, and --steps
# names another prefix.
source "$(dirname "$0")/../e2e_lib.sh"
FAKE=$(dirname "$BIN")/tests/trace_fake_process
[ -x "$FAKE" ] || fail "missing $FAKE (built with SHARDCOST_TESTS)"

expect_exit 0 "$BIN" trace --db "$SCRATCH/a.db" -- "$FAKE"
grep -q "shardcost: 3 training steps ('ProfilerStep#N' NVTX ranges), mean 1.600 ms" <<<"$ERR" || fail "steps line: $ERR"
expect_exit 0 "$BIN" db info "$SCRATCH/a.db"
grep -q "step 3" <<<"$OUT" || fail "no steps stored: $OUT"

# Ranges that are not named with the prefix: said, not stored as steps.
expect_exit 0 "$BIN" trace --db "$SCRATCH/b.db" -- "$FAKE" "iteration "
grep -q "4 NVTX ranges, none named 'ProfilerStep#N'; --steps PREFIX" <<<"$ERR" || fail "no-steps line: $ERR"
expect_exit 0 "$BIN" trace --db "$SCRATCH/c.db" --steps "iteration " -- "$FAKE" "iteration "
grep -q "3 training steps ('iteration N' NVTX ranges)" <<<"$ERR" || fail "--steps: $ERR"
echo "trace_steps: ok"
