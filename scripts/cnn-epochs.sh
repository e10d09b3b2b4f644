#!/usr/bin/env bash
# Epoch-time predictions for ResNet-50 and VGG-16 on ABCI's V100 nodes (4 GPUs a node), fp32,
# Chainer with ChainerMN (the setup of Kahira et al., HPDC'21): data parallelism from 1 to
# 1,024 GPUs at a fixed batch per GPU, and the hybrid strategies at 32-256 GPUs at a fixed
# batch per node. Prints the markdown tables docs/operator-graphs.md shows.
#   scripts/cnn-epochs.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/shardcost
epoch=1281167
run() {  # model strategy gpus gbs -> one JSON line
  "$bin" estimate --model "data/onnx/$1.onnx" --cluster abci-v100 --gpus "$3" \
    --strategy "$2,gbs=$4,precision=fp32" --software chainermn --epoch-samples $epoch \
    --format json || true
}
echo "Data parallelism (batch per GPU: ResNet-50 64, VGG-16 32)"
echo
echo "| GPUs | ResNet-50 epoch s | step s | all-reduce exposed s | VGG-16 epoch s | step s | all-reduce exposed s |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for g in 1 2 4 8 16 32 64 128 256 512 1024; do
  r=$(run resnet50 data "$g" $((64 * g)) | tr -d '\n')
  v=$(run vgg16 data "$g" $((32 * g)) | tr -d '\n')
  python3 - "$g" "$r" "$v" <<'PY'
import json, sys
g, r, v = sys.argv[1], json.loads(sys.argv[2])["plan"], json.loads(sys.argv[3])["plan"]
cell = lambda p: f"{p['epoch_s']:.0f} | {p['step_time_s']:.4f} | {p['sync_exposed_s']:.4f}" if p["feasible"] else "does not fit | - | -"
print(f"| {g} | {cell(r)} | {cell(v)} |")
PY
done
echo
echo "Hybrid strategies (the model-parallel split over a node's 4 GPUs; batch per node: ResNet-50 64, VGG-16 32)"
echo
echo "| model | strategy | 32 GPUs | 64 | 128 | 256 |"
echo "|---|---|---:|---:|---:|---:|"
for m in resnet50:64 vgg16:32; do
  model=${m%%:*}; per_node=${m##*:}
  for s in data+filter data+spatial data+channel data+pipeline; do
    row="| $model | $s |"
    for g in 32 64 128 256; do
      j=$(run "$model" "$s" "$g" $((per_node * g / 4)) | tr -d '\n')
      row+=$(python3 -c 'import json,sys; p=json.loads(sys.argv[1])["plan"]; print(" %.0f |" % p["epoch_s"] if p["feasible"] else " does not fit |")' "$j")
    done
    echo "$row"
  done
done
