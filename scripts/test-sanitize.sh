#!/usr/bin/env bash
# The sanitizer build (CI runs it after scripts/test.sh): address and undefined-behaviour
# sanitizers, every unit test and the fuzz corpora replayed through the loaders. End-to-end
# scripts run in the plain build; CUDA and the benchmarks are left out here to keep it short.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-sanitize "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDCOST_SANITIZE=ON \
  -DSHARDCOST_CUDA=OFF -DSHARDCOST_BENCH=OFF -DSHARDCOST_WERROR=ON
cmake --build build-sanitize --parallel "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" --label-exclude e2e
