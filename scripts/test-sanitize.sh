#!/usr/bin/env bash
# The sanitizer build (CI runs it after scripts/test.sh): address and undefined-behaviour
# sanitizers, every unit test and the fuzz corpora replayed through the loaders. End-to-end
# scripts run in the plain build. Not -Werror here: GCC 12 warns of maybe-uninitialized inside
# libstdc++'s <regex> under the sanitizers (a false positive the plain -Werror build does not see).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-sanitize "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDCOST_SANITIZE=ON
cmake --build build-sanitize --parallel "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" --label-exclude e2e
