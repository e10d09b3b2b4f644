#!/usr/bin/env bash
# Runs the same host benchmarks N times, one store per run, to see this machine's run-to-run
# noise (what `compare --rerun` measures) and to record noisy runs for compare's tests.
#   scripts/bench-noise.sh [N=6] [OUT=bench-noise] [BIN=build/shardcost]
# Each run: 8 host GEMM shapes and host memory copy/read/write from 64 KiB to 64 MiB, 20
# iterations each, per-iteration samples kept. Then every pair of runs is compared at the
# default threshold (the verdicts the gate would give two runs of the same build), and the
# runs' CSV exports are written beside the stores (tests/fixtures/compare/noise/ keeps one set).
set -euo pipefail
n=${1:-6}
out=${2:-bench-noise}
bin=${3:-build/shardcost}
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  rm -f "$out/run$i.db"
  "$bin" bench gemm --device cpu --db "$out/run$i.db" \
    --shape 256x256x256 --shape 512x512x512 --shape 1024x256x512 --shape 128x1024x1024 \
    --shape 2048x64x256 --shape 64x64x4096 --shape 384x384x384 --shape 768x128x768 >/dev/null
  "$bin" bench memory --device cpu --db "$out/run$i.db" -b 64K -e 64M -f 4 >/dev/null
  for t in gemm memory; do
    "$bin" export --db "$out/run$i.db" --table "$t" --format csv -o "$out/run$i.$t.csv"
  done
  echo "run $i stored in $out/run$i.db"
done
for i in $(seq 1 "$n"); do
  for j in $(seq 1 "$n"); do
    [ "$i" -lt "$j" ] || continue
    set +e
    "$bin" compare "$out/run$i.db" "$out/run$j.db" >"$out/compare.$i.$j.txt" 2>&1
    code=$?
    set -e
    echo "run $i vs run $j: exit $code: $(grep -m1 '^result:' "$out/compare.$i.$j.txt" || true)"
  done
done
