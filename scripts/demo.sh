#!/usr/bin/env bash
# Quick start 1: install, build, and rank strategies for Llama-3-70B on 64 H100s from the
# built-in catalog.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
SHARDCOST_TARGET=shardcost scripts/build.sh >/dev/null
./build/shardcost rank --model llama3-70b --cluster dgx-h100 --gpus 64 --gbs 512 --top 10
