#!/usr/bin/env bash
# The architecture as the code has it: each layer includes only the layers below it, the
# layers that read graphs never name a producer, public headers stay public
# (scripts/check-layers.py; docs/architecture.md). A seeded violation must be caught.
source "$(dirname "$0")/../e2e_lib.sh"

expect_exit 0 python3 "$SRC/scripts/check-layers.py" "$SRC"
case "$OUT" in "layers: "*" files follow the dependency rules") ;; *) fail "summary: $OUT";; esac

# The checker itself: a copy of the tree with a plan file that reaches into search/ and
# names the transformer.
mkdir -p "$SCRATCH/tree"
cp -r "$SRC/estimator" "$SRC/base" "$SRC/db" "$SRC/compare" "$SRC/profiler" "$SCRATCH/tree/"
printf '#include "search/rank.h"\n// Model\n' >>"$SCRATCH/tree/estimator/plan/memory.cpp"
# And a benchmark file that calls the CUDA runtime past its door (a comment naming one is no call).
printf '// cudaMemcpy(a, b) in a comment\nvoid f() { cudaDeviceSynchronize(); }\n' >>"$SCRATCH/tree/profiler/harness.cpp"
expect_exit 1 python3 "$SRC/scripts/check-layers.py" "$SCRATCH/tree"
grep -q 'plan/memory.cpp: includes search/rank.h' "$SCRATCH/out" || fail "missed the include: $OUT"
grep -q 'plan/memory.cpp: names a producer' "$SCRATCH/out" || fail "missed the producer: $OUT"
grep -q 'profiler/harness.cpp: calls cudaDeviceSynchronize directly; the CUDA runtime is called only through' "$SCRATCH/out" || fail "missed the door: $OUT"
if grep -q 'cudaMemcpy' "$SCRATCH/out"; then fail "a comment counted as a call: $OUT"; fi
