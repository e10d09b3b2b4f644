#!/usr/bin/env bash
# The sanitizer build (CI runs it after scripts/test.sh): address and undefined-behaviour
# sanitizers, every unit test, the fuzz corpora replayed through the loaders, and the MPI
# end-to-end tests (the other end-to-end scripts run in the plain build). Not -Werror here:
# GCC 12 warns of maybe-uninitialized inside libstdc++'s <regex> under the sanitizers (a false
# positive the plain -Werror build does not see).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B build-sanitize "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDCOST_SANITIZE=ON
cmake --build build-sanitize --parallel "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" --label-exclude e2e
# The MPI end-to-end tests under the sanitizers too: Open MPI keeps its own allocations until
# exit by design, so leaks whose stacks pass through it are suppressed (scripts/lsan-openmpi.supp;
# full unwinding, components kept loaded, so that those stacks are attributed); shardcost's own
# still fail.
ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0:malloc_context_size=40 \
  LSAN_OPTIONS=suppressions=$PWD/scripts/lsan-openmpi.supp:print_suppressions=0 \
  OMPI_MCA_mca_base_component_disable_dlclose=1 \
  ctest --test-dir build-sanitize --output-on-failure -R 'e2e\.(bench_mpi|bench_estimate)$'
