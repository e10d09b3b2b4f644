#!/usr/bin/env bash
# GPU acceptance checks for the micro-benchmarks, ready for the first GPU machine:
#   bf16 8192^3 GEMM vs torch.matmul (>= 95 %), device-to-device copy vs torch copy_ (>= 95 %),
#   NCCL collectives on one GPU, checked; GPU unit tests. Writes $OUT/gpu-check.md (and .json).
# Usage: scripts/gpu-check.sh [--no-build]   with the shardcost tree as the working directory,
#   or from a ./pack/ made by scripts/pack-gpu.sh (then binaries come from pack/bin).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT"
report=$OUT/gpu-check.md
status=0
note() { echo "$*" | tee -a "$report"; }

if [ -x bin/shardcost ]; then  # inside a pack
  BIN=bin/shardcost; TESTS=bin/profiler_gpu_tests; export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
else
  if [ "${1:-}" != "--no-build" ]; then
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDCOST_CUDA_ARCHS=90 >"$OUT/configure.log" 2>&1 &&
      cmake --build build-gpu --parallel "$(nproc)" >"$OUT/build.log" 2>&1 || { echo "build failed: $OUT/build.log"; exit 1; }
  fi
  BIN=build-gpu/shardcost; TESTS=build-gpu/profiler/profiler_gpu_tests
fi

: >"$report"
note "# shardcost GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
note ""
note '```'
"$BIN" devices | tee -a "$report"
note '```'

# 1. bf16 8192^3 GEMM: shardcost (cuBLASLt) against torch.matmul, same machine, same run.
"$BIN" bench gemm --device cuda --dtype bf16 --shape 8192x8192x8192 --iters 50 --warmup 10 --format json >"$OUT/gemm.json" || status=1
# 2. device-to-device copy of 1 GiB against torch's copy_.
"$BIN" bench memory --device cuda --op copy_d2d,copy_h2d,copy_d2h,memset,read,write -b 1G --iters 50 --warmup 5 --format json >"$OUT/memory.json" || status=1
# 3. NCCL collectives on the one GPU, every op, checked.
"$BIN" bench collective --backend nccl --gpus 1 --op all -b 8 -e 256M -f 8 --iters 20 --warmup 5 --format json >"$OUT/nccl.json" || status=1
# 4. embedding bags, forward and backward (rowwise Adagrad), uniform and skewed rows, checked.
"$BIN" bench embedding --device cuda --rows 1M,10M --dim 64,128 --pooling 1,20 --batch 16384 --zipf 0,1.05 --format json >"$OUT/embedding.json" || status=1

python3 - "$OUT" <<'PY' | tee -a "$report" || status=1
import json, sys, os
out = sys.argv[1]
g = json.load(open(f"{out}/gemm.json"))["results"][0]
m = {r["kind"]: r for r in json.load(open(f"{out}/memory.json"))["results"]}
n = json.load(open(f"{out}/nccl.json"))["results"]
ok = True
try:
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    def timed(fn, iters):
        for _ in range(10): fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 1e3)
        times.sort(); return times[len(times) // 2]
    t = timed(lambda: torch.matmul(a, b), 50)
    torch_tflops = 2 * 8192**3 / t / 1e12
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
    torch_gbps = (1 << 30) / timed(lambda: dst.copy_(src), 50) / 1e9
except Exception as e:  # no torch: report shardcost's figures alone, and say the check is incomplete
    print(f"torch unavailable ({e}); comparison skipped"); torch_tflops = torch_gbps = None
    open(f"{out}/incomplete", "w").write(f"torch unavailable: {e}\n")
print("\n| check | shardcost | torch | ratio | pass (>= 95 %) |\n|---|---|---|---|---|")
def row(name, ours, theirs, unit):
    global ok
    if theirs is None:
        print(f"| {name} | {ours:.1f} {unit} | - | - | - |"); return
    r = ours / theirs; ok &= r >= 0.95 
    print(f"| {name} | {ours:.1f} {unit} | {theirs:.1f} {unit} | {100*r:.1f} % | {'yes' if r >= 0.95 else 'NO'} |")
row("bf16 GEMM 8192^3", g["tflops"], torch_tflops, "TFLOP/s")
row("D2D copy 1 GiB", m["copy_d2d"]["bandwidth_gbps"], torch_gbps, "GB/s")
print("\nmemory (1 GiB): " + ", ".join(f"{k} {v['bandwidth_gbps']:.1f} GB/s (wrong {v['wrong']})" for k, v in m.items()))
bad = [r for r in n if r["wrong"] != 0] + ([g] if g["wrong"] else [])
print(f"NCCL on 1 GPU: {len(n)} results, ops {sorted({r['op'] for r in n})}, wrong results: {len(bad)}")
ok &= not bad and all(v["wrong"] == 0 for v in m.values())
sys.exit(0 if ok else 1)
PY

note ""
note '```'
"$TESTS" 2>&1 | tail -5 | tee -a "$report" || status=1
note '```'
note ""
# A comparison that could not run is not a pass: INCOMPLETE, exit 3.
if [ $status = 0 ] && [ -e "$OUT/incomplete" ]; then
  note "result: INCOMPLETE ($(cat "$OUT/incomplete"))"
  exit 3
fi
note "result: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
