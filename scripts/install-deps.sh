#!/usr/bin/env bash
# Installs what shardcost needs to build and test on Debian 12, from Debian's packages.
# Run as root (or with sudo). Safe to run again: apt-get skips what is already there.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: run as root (sudo $0)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build git python3
  libcli11-dev libfmt-dev nlohmann-json3-dev libsqlite3-dev sqlite3 zlib1g-dev
  libsimdjson-dev                   # streaming trace imports
  libtomlplusplus-dev               # torchtitan job configs (TOML)
  libopenblas-dev libopenmpi-dev openmpi-bin   # host GEMM and MPI collectives
  libxgboost-dev                    # learned cost models (fit)
  libglpk-dev                       # the exact job scheduler (schedule), an MILP
  libonnx-dev libprotobuf-dev python3-onnx   # operator graphs from ONNX files; their generator
  libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-venv   # the Python module (import shardcost; pip install .)
  python3-pytest python3-pandas python3-matplotlib   # its tests; DataFrames; docs/python.md plots
  clang libclang-rt-14-dev          # libFuzzer targets (optional SHARDCOST_FUZZ build)
  clang-format-14                   # the style check (tests/e2e/format.sh)
  chromium fonts-dejavu-core        # the HTML report test renders a screenshot
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps.sh: dependencies present"
