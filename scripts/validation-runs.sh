#!/usr/bin/env bash
# The published training tables as measured runs, the table `shardcost import runs` reads
# (docs/calibration.md): scripts/validation-runs.sh OUT.csv
# The tables are the ones the binary embeds (data/validation/); where the shared copies
# (../shared/data/validation/) are present they must be the same files, or this stops.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/validation-runs.sh OUT.csv}
bin=${SHARDCOST:-$root/build/shardcost}
[ -x "$bin" ] || { echo "validation-runs: no shardcost at $bin; build it (scripts/build.sh) or set SHARDCOST" >&2; exit 1; }
shared=$root/../shared/data/validation
if [ -d "$shared" ]; then
  for f in "$shared"/*.csv; do
    embedded=$root/data/validation/$(basename "$f")
    [ -f "$embedded" ] || continue
    cmp -s "$f" "$embedded" || {
      echo "validation-runs: $f differs from $embedded; copy the shared table into data/validation and rebuild" >&2
      exit 1
    }
  done
fi
"$bin" validate --format runs -o "$out"
echo "validation-runs: $(($(wc -l <"$out") - 1)) measured runs in $out"
