#!/usr/bin/env bash
# Bad input: one line naming what, where and how to fix; exit code 2; never a crash.
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures


check "unknown model 'gpt9'" estimate --model gpt9 --cluster dgx-a100 --strategy tp=8
check "unknown cluster 'dgx-z'" estimate --model gpt3-13b --cluster dgx-z --strategy tp=8
check "unknown device 'tpu-v9'" estimate --model gpt3-13b --cluster "$F/clusters/unknown-device.json" --strategy tp=1
check "intra_node_busbw_GBps.all_reduce' must be sorted by strictly increasing bytes" estimate --model gpt3-13b --cluster "$F/clusters/unsorted-busbw.json" --strategy tp=8
check "field 'hidden' is missing" estimate --model "$F/models/missing-hidden.json" --cluster dgx-a100 --strategy tp=1
check "field 'layers' must be an integer >= 1 (got -4)" estimate --model "$F/models/negative-layers.json" --cluster dgx-a100 --strategy tp=1
check "malformed JSON at line 3" estimate --model "$F/models/malformed.json" --cluster dgx-a100 --strategy tp=1
check "tp=3 does not divide the 40 heads" estimate --model gpt3-13b --cluster dgx-a100 --gpus 24 --strategy tp=3
check "pp=48 is above the 40 layers" estimate --model gpt3-13b --cluster dgx-a100 --gpus 48 --strategy pp=48,gbs=192
check "gbs= is required with pipeline parallelism (pp=4)" estimate --model gpt3-13b --cluster dgx-a100 --gpus 32 --strategy tp=8,pp=4
check "stages[0]: unknown field 'layer'; the fields are layers, replicas" estimate --model llama3-70b --cluster dgx-h100 --gpus 8 --plan "$F/plans/misspelt.json"
check "plan file 'nope.json': no such file" estimate --model llama3-70b --cluster dgx-h100 --gpus 8 --plan nope.json
check "not a whole number of 8-GPU nodes" estimate --model gpt3-13b --cluster dgx-a100 --gpus 12 --strategy tp=4
check "does not divide the 64 GPUs" estimate --model gpt3-13b --cluster dgx-a100 --gpus 64 --strategy tp=3
check "unknown strategy key 'tpp'" estimate --model gpt3-13b --cluster dgx-a100 --strategy tpp=8
check "--gbs must be a positive integer" rank --model gpt3-13b --cluster dgx-a100 --gbs 0
check "unknown --format 'yaml'" rank --model gpt3-13b --cluster dgx-a100 --gbs 8 --format yaml
check "--gpus must be a positive integer" rank --model gpt3-13b --cluster dgx-a100 --gpus -8 --gbs 8
check "not a catalog name" estimate --model ./nope/model.json --cluster dgx-a100 --strategy tp=1
check "unknown software preset" estimate --model gpt3-13b --cluster dgx-a100 --strategy tp=8 --software jax
# A missing required flag is a usage error, also exit 2 with one line.
check "--strategy is required" estimate --model gpt3-13b --cluster dgx-a100
echo "bad_input: ok"
