#!/usr/bin/env bash
# The injection library on a machine without a GPU driver: loaded into programs, it leaves their
# output and exit code unchanged, and `shardcost trace` reports its warnings and no activity.
source "$(dirname "$0")/../e2e_lib.sh"
DIR=$(cd "$(dirname "$BIN")" && pwd)
LIB=$DIR/libshardcost_inject.so
PROBE=$DIR/tests/trace_cudart_probe
LOADER=$DIR/tests/trace_inject_probe
if [ ! -e "$LIB" ] || [ ! -x "$PROBE" ] || [ ! -x "$LOADER" ]; then
  echo "SKIP: built without CUDA/CUPTI (no libshardcost_inject.so)"; exit 77
fi

# A real cudart program, with and without the injection variable: identical.
set +e
plain=$("$PROBE" 2>&1); plain_rc=$?
injected=$(CUDA_INJECTION64_PATH=$LIB SHARDCOST_TRACE_DIR=$SCRATCH "$PROBE" 2>&1); injected_rc=$?
set -e
[ "$plain" = "$injected" ] || fail "output changed: '$plain' vs '$injected'"
[ "$plain_rc" = "$injected_rc" ] || fail "exit code changed: $plain_rc vs $injected_rc"
# With a driver present CUPTI starts and says nothing: the warning checks are for driverless CI.
NO_DRIVER=0
case "$plain" in *cudaErrorInsufficientDriver*|*cudaErrorNoDevice*) NO_DRIVER=1;; esac
expect_exit "$plain_rc" "$BIN" trace --db "$SCRATCH/t.db" -- "$PROBE"
[ "$OUT" = "$plain" ] || fail "traced output changed: '$OUT'"
case "$ERR" in *"no GPU activity was recorded"*) ;; *) fail "stderr: $ERR";; esac

# Loaded the driver's way (dlopen + InitializeInjection) with no driver: CUPTI fails, the
# library warns once, writes its trace file, and the program carries on to its own exit code.
mkdir -p "$SCRATCH/raw"
expect_exit 5 env SHARDCOST_TRACE_DIR="$SCRATCH/raw" "$LOADER" "$LIB"
[ "$OUT" = "program output unchanged (InitializeInjection returned 1)" ] || fail "stdout: $OUT"
if [ "$NO_DRIVER" = 1 ]; then
  case "$ERR" in "shardcost-inject: warning: "*) ;; *) fail "no warning: $ERR";; esac
fi
ls "$SCRATCH"/raw/*.sctrace >/dev/null || fail "no trace file written"
# Without SHARDCOST_TRACE_DIR it does nothing but say so.
expect_exit 5 "$LOADER" "$LIB"
case "$ERR" in *"SHARDCOST_TRACE_DIR is not set"*) ;; *) fail "stderr: $ERR";; esac

# Under shardcost trace: the library's warning comes back from the file, the exit code through.
expect_exit 5 "$BIN" trace --db "$SCRATCH/t.db" -- "$LOADER" "$LIB"
if [ "$NO_DRIVER" = 1 ]; then
  case "$ERR" in *"shardcost: warning: process "*"failed"*"no GPU activity was recorded"*) ;; *) fail "stderr: $ERR";; esac
fi
echo "trace_inject: ok"
