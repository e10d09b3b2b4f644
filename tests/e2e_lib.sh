# Helpers for the end-to-end scripts; sourced, not run.
set -euo pipefail
BIN=$1
SRC=$2
SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
GOLDEN=$SRC/tests/golden
# Progress lines (cli/progress.h) come after 2 s of work: on a slow machine they would reach
# tests that read stderr whole, so tests see them only where they ask (SHARDCOST_PROGRESS_AFTER_S=0).
export SHARDCOST_PROGRESS_AFTER_S=1000000

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_exit CODE CMD...: runs CMD, checks its exit code, leaves stdout/stderr in $OUT/$ERR.
expect_exit() {
  local want=$1; shift
  set +e
  "$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
  local got=$?
  set -e
  OUT=$(cat "$SCRATCH/out"); ERR=$(cat "$SCRATCH/err")
  [ "$got" = "$want" ] || fail "exit $got (wanted $want): $* -- stderr: $ERR"
}

# golden NAME: compares $SCRATCH/out with tests/golden/NAME; UPDATE_GOLDEN=1 rewrites it.
golden() {
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then cp "$SCRATCH/out" "$GOLDEN/$1"; return; fi
  diff -u "$GOLDEN/$1" "$SCRATCH/out" || fail "output differs from golden $1 (UPDATE_GOLDEN=1 to accept)"
}

# one_line_error: stderr is exactly one line starting with "shardcost: ".
one_line_error() {
  [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] || fail "expected one error line, got: $ERR"
  case "$ERR" in "shardcost: "*) ;; *) fail "error does not start with 'shardcost: ': $ERR";; esac
}

# check PATTERN CMD...: the binary refuses CMD (exit 2) in one line containing PATTERN.
check() {
  local pattern=$1; shift
  expect_exit 2 "$BIN" "$@"
  one_line_error
  case "$ERR" in *"$pattern"*) ;; *) fail "error for '$*' lacks '$pattern': $ERR";; esac
}
