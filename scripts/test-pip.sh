#!/usr/bin/env bash
# The Python module as a user installs it (issue 36): `pip install .` from this clone in a fresh
# virtual environment (after scripts/install-deps.sh), then the module imported there and its
# JSON checked against the binary's for one request. CI runs it after the test command. Needs
# PyPI for scikit-build-core; where PyPI cannot be reached it says so and skips (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
/usr/bin/python3 -m venv "$scratch/venv"
pip=("$scratch/venv/bin/pip" --disable-pip-version-check -q)
if ! "${pip[@]}" download --no-deps -d "$scratch/probe" 'scikit-build-core>=0.10' >/dev/null 2>&1; then
  echo "test-pip.sh: skipped: PyPI cannot be reached for scikit-build-core (pip install . needs it)"
  exit 0
fi
start=$(date +%s)
"${pip[@]}" install "$src"
echo "test-pip.sh: pip install . took $(( $(date +%s) - start )) s"
[ -x build/shardcost ] || SHARDCOST_TARGET=shardcost scripts/build.sh >/dev/null
cd "$scratch"  # the installed package, not the clone's python/ folder
"$scratch/venv/bin/python" - "$src/build/shardcost" <<'PY'
import subprocess, sys
import shardcost
assert shardcost.__file__.startswith(sys.prefix), shardcost.__file__
r = shardcost.estimate("gpt3-13b", "dgx-a100", "tp=8,pp=2,mbs=1,gbs=256", gpus=32)
out = subprocess.run([sys.argv[1], "estimate", "--model", "gpt3-13b", "--cluster", "dgx-a100",
                      "--gpus", "32", "--strategy", "tp=8,pp=2,mbs=1,gbs=256", "--format", "json"],
                     check=True, capture_output=True, text=True).stdout
assert r.json + "\n" == out, "the installed module's JSON differs from the binary's"
plans = shardcost.rank("gpt3-13b", "dgx-a100", 256, gpus=32, top=3)
assert len(plans) == 3
print(f"test-pip.sh: the installed module gives the binary's JSON ({shardcost.__file__})")
PY
