#!/usr/bin/env bash
# The scripts a lent GPU session runs (scripts/device-session.sh and what it calls) cannot run
# here, but what they do without a GPU can: the attention sweep's catalog lookup, FLOP count and
# report (--selftest prints the catalog's own cuDNN 9.19.1 rates back), the session's refusal
# outside a pack and without a GPU, and every script's syntax.
source "$(dirname "$0")/../e2e_lib.sh"

for s in device-session.sh gpu-check.sh trace-gpu-check.sh learned-gpu-check.sh pack-gpu.sh; do
  bash -n "$SRC/scripts/$s" || fail "scripts/$s: syntax"
done

# The attention sweep, priced from made-up timings that reproduce the catalog at 8k.
expect_exit 0 python3 "$SRC/scripts/attention-gpu-check.py" --selftest --binary "$BIN" \
  --out "$SCRATCH/attention"
grep -q "^| cudnn | 8192 | 644 | 529 (9.1), 644 (9.19.1) | 541 | 457 (9.1), 541 (9.19.1) |" \
  "$SCRATCH/attention/attention-gpu.md" || fail "attention report: $(cat "$SCRATCH/attention/attention-gpu.md")"
python3 - "$SCRATCH/attention/attention-gpu.json" <<'PY' || fail "attention JSON"
import json, sys
d = json.load(open(sys.argv[1]))
cudnn = [r for r in d["rows"] if r["backend"] == "cudnn"][0]
assert abs(cudnn["catalog"]["9.19.1"]["forward"] - 644) < 1e-9, cudnn
assert [r for r in d["rows"] if r["backend"] == "flash"][0]["error"].startswith("made up")
PY
expect_exit 2 python3 "$SRC/scripts/attention-gpu-check.py" --selftest --binary "$BIN" \
  --device no-such-gpu --out "$SCRATCH/attention"
case "$ERR" in *"no catalog device 'no-such-gpu'"*) ;; *) fail "unknown device: $ERR";; esac

# The session runs from a pack only, and says so.
expect_exit 2 bash "$SRC/scripts/device-session.sh"
case "$ERR" in *"run it from a pack"*) ;; *) fail "outside a pack: $ERR";; esac
# In a pack (the binary and the scripts, as scripts/pack-gpu.sh lays them out) on a machine
# without a GPU it runs nothing and exits 77.
mkdir -p "$SCRATCH/pack/bin" "$SCRATCH/pack/scripts"
ln -s "$BIN" "$SCRATCH/pack/bin/shardcost"
cp "$SRC"/scripts/{device-session.sh,gpu-check.sh,trace-gpu-check.sh,learned-gpu-check.sh,attention-gpu-check.py} \
  "$SCRATCH/pack/scripts/"
expect_exit 2 env OUT="$SCRATCH/device-out" bash "$SCRATCH/pack/scripts/device-session.sh" --nope
case "$ERR" in *"unknown option --nope"*) ;; *) fail "unknown option: $ERR";; esac
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
  expect_exit 77 env OUT="$SCRATCH/device-out" bash "$SCRATCH/pack/scripts/device-session.sh"
  case "$ERR" in *"no GPU"*) ;; *) fail "without a GPU: $ERR";; esac
  [ ! -e "$SCRATCH/device-out/session.md" ] || fail "a session without a GPU wrote a report"
fi
echo "device scripts: OK"
