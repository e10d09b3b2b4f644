#!/usr/bin/env bash
# shardcost trace -- CMD on programs that never touch CUDA: output and exit code pass through
# unchanged, the environment reaches grandchildren, and "no GPU activity" is said, not failed.
source "$(dirname "$0")/../e2e_lib.sh"
DB=$SCRATCH/t.db

expect_exit 3 "$BIN" trace --db "$DB" -- sh -c 'echo hi; echo err >&2; exit 3'
[ "$OUT" = "hi" ] || fail "stdout changed: '$OUT'"
case "$ERR" in *err*"no GPU activity was recorded"*) ;; *) fail "stderr: $ERR";; esac
[ ! -e "$DB" ] || fail "an empty trace wrote a store"

expect_exit 0 "$BIN" trace --db "$DB" -- sh -c 'sh -c "echo \$SHARDCOST_TRACE_DIR"'
[ -n "$OUT" ] || fail "a grandchild did not inherit SHARDCOST_TRACE_DIR"
if [ -e "$(dirname "$BIN")/libshardcost_inject.so" ]; then
  expect_exit 0 "$BIN" trace --db "$DB" -- sh -c 'echo "$CUDA_INJECTION64_PATH"'
  [ "$OUT" = "$(cd "$(dirname "$BIN")" && pwd)/libshardcost_inject.so" ] || fail "CUDA_INJECTION64_PATH='$OUT'"
fi

# Killed by a signal: reported as a shell does (128 + SIGTERM).
expect_exit 143 "$BIN" trace --db "$DB" -- sh -c 'kill -TERM $$'
# Arguments after -- are the command's, even when they look like ours.
expect_exit 0 "$BIN" trace --db "$DB" -- echo --db summary --help
[ "$OUT" = "--db summary --help" ] || fail "arguments changed: '$OUT'"

check "cannot run '/nonexistent/prog'" trace --db "$DB" -- /nonexistent/prog
check "unknown --kinds entry 'kernels'" trace --kinds kernels -- true
check "no command to trace" trace --db "$DB"
check "does not exist" trace summary --db "$SCRATCH/missing.db"
# A store in a folder that is not there is refused before the program runs (issue 37, item 9):
# a training run is not lost to a mistyped --db.
check "--db $SCRATCH/no/such/t.db: the folder $SCRATCH/no/such does not exist" \
  trace --db "$SCRATCH/no/such/t.db" -- sh -c "touch '$SCRATCH/ran'"
[ ! -e "$SCRATCH/ran" ] || fail "the program ran although --db could not be written"
# A kernel name holding a terminal escape sequence is shown spelled out, not obeyed (issue 37,
# item 9).
printf '{"traceEvents":[{"ph":"X","cat":"kernel","name":"evil\\u001b[31mRED","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0,"stream":7}}]}' >"$SCRATCH/evil.json"
"$BIN" import kineto --db "$SCRATCH/evil.db" "$SCRATCH/evil.json" >/dev/null
expect_exit 0 "$BIN" trace summary --db "$SCRATCH/evil.db"
grep -q 'evil\\x1b\[31mRED' <<<"$OUT" || fail "escape not spelled out: $OUT"
LC_ALL=C grep -q $'\x1b' <<<"$OUT" && fail "a raw ESC reached the terminal"
echo "trace_plain: ok"
