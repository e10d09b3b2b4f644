#!/usr/bin/env bash
# Configures and builds shardcost into ./build (Release, warnings as errors), one configuration
# for the demo and the tests, so that running one after the other builds nothing twice; through
# ccache where it is installed. SHARDCOST_TARGET builds one target (the demo: shardcost).
# Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDCOST_WERROR=ON \
  "${launcher[@]}" "$@"
target=()
[ -n "${SHARDCOST_TARGET:-}" ] && target=(--target "$SHARDCOST_TARGET")
cmake --build build --parallel "$(nproc)" "${target[@]}"
