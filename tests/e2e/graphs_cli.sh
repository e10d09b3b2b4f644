#!/usr/bin/env bash
# Operator graphs through the real binary (issue 16): ONNX files, the layer-wise search and the
# uniform strategies, one uniform strategy priced by estimate, the files' generator; bad input,
# one line each with exit 2.
source "$(dirname "$0")/../e2e_lib.sh"
cd "$SRC"  # relative paths: the golden names the file as given

# ResNet-50 on 8 ABCI V100s, fp32, ChainerMN: the layer-wise plan and every uniform one.
expect_exit 0 "$BIN" rank --model data/onnx/resnet50.onnx --cluster abci-v100 --gpus 8 \
  --gbs 512 --fix precision=fp32 --software chainermn --epoch-samples 1281167
golden graphs_rank_resnet50.txt

expect_exit 0 "$BIN" rank --model data/onnx/vgg16.onnx --cluster abci-v100 --gpus 16 --gbs 512 \
  --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["parameters"] == 138357544 and j["precision"] == "fp32", (j["parameters"], j["precision"])
assert j["software"] == "pytorch-ddp"
best = j["best"]
assert best["feasible"]
for u in j["uniform"]:
    if u["feasible"]:
        assert best["step_time_s"] <= u["step_time_s"] * (1 + 1e-12), (u["strategy"], best, u)
assert len(best["operators"]) == 38, len(best["operators"])
PY

# One uniform strategy.
expect_exit 0 "$BIN" estimate --model data/onnx/unet3d.onnx --cluster abci-v100 --gpus 8 \
  --strategy data+spatial,gbs=2
case "$OUT" in *"data+spatial"*) ;; *) fail "no data+spatial plan: $OUT";; esac
# A strategy that does not fit: printed, exit 1.
expect_exit 1 "$BIN" estimate --model data/onnx/vgg16.onnx --cluster abci-v100 --gpus 4 \
  --strategy filter,gbs=1024,precision=fp32

# An operator shardcost does not know: priced, and said.
expect_exit 0 "$BIN" rank --model tests/data/onnx/custom-op.onnx --cluster abci-v100 --gpus 4 --gbs 64
case "$OUT" in *"1 x FancyNorm not known to shardcost"*) ;; *) fail "unknown op not listed: $OUT";; esac

# A static-batch export (torch.onnx.export's default) prices as its dynamic twin, and says so;
# a weight the loader cannot follow to an initializer is said too.
expect_exit 0 "$BIN" rank --model tests/data/onnx/cnn-static8.onnx --cluster abci-v100 --gpus 4 --gbs 64
static_out=$OUT
case "$static_out" in *"note: input 'input' has a fixed batch of 8 (a static export)"*) ;;
  *) fail "no static-batch note: $static_out";; esac
expect_exit 0 "$BIN" rank --model tests/data/onnx/cnn-dynamic.onnx --cluster abci-v100 --gpus 4 --gbs 64
# (node names differ: the static file's Reshape takes a number)
same() { echo "$1" | grep -v -e '^note:' -e '^small-cnn' | sed -E 's/_[0-9]+//g'; }
[ "$(same "$static_out")" = "$(same "$OUT")" ] || fail "static and dynamic plans differ"
expect_exit 0 "$BIN" rank --model tests/data/onnx/computed-weight.onnx --cluster abci-v100 \
  --gpus 4 --gbs 64
case "$OUT" in *"note: 1 weight operand (first: node"*) ;; *) fail "no weight note: $OUT";; esac

# Bad input: one line, exit 2.
head -c 3000 data/onnx/resnet50.onnx >"$SCRATCH/cut.onnx"
for args in "--model $SCRATCH/cut.onnx --gbs 64" \
            "--model tests/data/onnx/no-shape.onnx --gbs 64" \
            "--model tests/data/onnx/symbolic-dim.onnx --gbs 64" \
            "--model data/onnx/missing.onnx --gbs 64" \
            "--model data/onnx/resnet50.onnx --gbs 7" \
            "--model data/onnx/resnet50.onnx --gbs 64 --fix tp=2" \
            "--model data/onnx/resnet50.onnx --gbs 64 --fix precision=bf16" \
            "--model data/onnx/resnet50.onnx --gbs 64 --optimizer lamb" \
            "--model data/onnx/resnet50.onnx --gbs 64 --replan"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$BIN" rank --cluster abci-v100 --gpus 8 $args
  one_line_error
done
expect_exit 2 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster abci-v100 --gpus 8 \
  --strategy diagonal,gbs=64
one_line_error
expect_exit 2 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster abci-v100 --gpus 8 \
  --strategy data
one_line_error

# The shipped files are the generator's output, byte for byte (where Debian's onnx is there).
if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
  /usr/bin/python3 scripts/make-onnx.py "$SCRATCH/onnx" >/dev/null
  /usr/bin/python3 scripts/make-onnx.py --test-cases "$SCRATCH/cases" >/dev/null
  for f in resnet50 resnet152 vgg16 unet3d gpt-small; do
    cmp "$SCRATCH/onnx/$f.onnx" "data/onnx/$f.onnx" || fail "data/onnx/$f.onnx differs from scripts/make-onnx.py's"
  done
  for f in custom-op no-shape symbolic-dim odd-shapes cnn-dynamic cnn-static1 cnn-static8 \
           vit-tiny computed-weight; do
    cmp "$SCRATCH/cases/$f.onnx" "tests/data/onnx/$f.onnx" || fail "tests/data/onnx/$f.onnx differs"
  done
else
  echo "skip: python3-onnx not installed, shipped ONNX files not regenerated"
fi
# fp32 on a part with TF32 (issue 35): the stack's settings, said in the header and priced.
expect_exit 0 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --strategy data,gbs=256
grep -q "global batch 256, fp32 (convolutions on TF32, matmuls in fp32), software pytorch-ddp$" "$SCRATCH/out" || fail "fp32 math: $OUT"
conv=$(awk '$2 == "data" {print $3}' "$SCRATCH/out")
expect_exit 0 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --strategy data,gbs=256 \
  --software pytorch-ddp:tf32_conv=false
ieee=$(awk '$2 == "data" {print $3}' "$SCRATCH/out")
python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert b > 2 * a, (a, b)' "$conv" "$ieee" || fail "tf32_conv=false: $conv -> $ieee"
expect_exit 2 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster dgx-a100 --gpus 8 --strategy data,gbs=256 \
  --software pytorch-ddp:tf32_conv=maybe
one_line_error
# Memory (issue 35): ResNet-50 in fp32 at 128 images on one 16 GB V100 fits, as NVIDIA's
# examples train it there; --memory-headroom replaces the stack's allowance (2 GiB + 5 %).
expect_exit 0 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster abci-v100 --gpus 1 \
  --strategy data,gbs=128,precision=fp32
expect_exit 1 "$BIN" estimate --model data/onnx/resnet50.onnx --cluster abci-v100 --gpus 1 \
  --strategy data,gbs=128,precision=fp32 --memory-headroom 6
grep -q "does not fit" "$SCRATCH/out" "$SCRATCH/err" || fail "--memory-headroom 6 still fits: $OUT"
echo "graphs_cli: ok"
