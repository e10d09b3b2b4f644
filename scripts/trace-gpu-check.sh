#!/usr/bin/env bash
# GPU check of `shardcost trace` (docs/tracing.md): on a machine with an NVIDIA GPU and PyTorch,
#   1. builds shardcost and libshardcost_inject.so, runs the tracing unit tests;
#   2. traces a short PyTorch training loop and compares, over the same measured steps, the
#      kernel count and total kernel time against torch.profiler's (within 2 %);
#   3. measures tracing overhead: median step time traced against untraced (aim < 3 %);
#      checks that the traced loop's NVTX step ranges are stored as its steps (within 5 %);
#   4. writes $OUT/trace-gpu-report.md (+ .json, the summary, the Perfetto timeline).
# Exit status: 0 when every check passes, 1 otherwise. Usage: scripts/trace-gpu-check.sh, from the
# shardcost tree (builds into $BUILD) or from a pack made by scripts/pack-gpu.sh (builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/trace-gpu-out}
BUILD=${BUILD:-build-gpu}
STEPS=${STEPS:-30}
WARMUP=${WARMUP:-10}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { echo "[trace-gpu-check] $*" >&2; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" || { log "no GPU"; exit 1; }
log "GPU: $(cat "$OUT/gpu.txt")"

if [ -x bin/shardcost ]; then  # inside a pack (scripts/pack-gpu.sh): built here, nothing to build
  export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
  TRACE_TESTS=bin/trace_tests BENCH_TRACE=bin/bench_trace BIN=bin/shardcost
else
  log "building"
  generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDCOST_BENCH=ON > "$OUT/cmake.log" 2>&1
  cmake --build "$BUILD" --parallel "$(nproc)" --target shardcost shardcost_inject trace_tests bench_trace \
    > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  TRACE_TESTS=$BUILD/profiler/trace/trace_tests BENCH_TRACE=$BUILD/bench/bench_trace BIN=$BUILD/shardcost
fi
"$TRACE_TESTS" > "$OUT/trace_tests.log" 2>&1 || { log "unit tests failed"; exit 1; }
"$BENCH_TRACE" > "$OUT/bench_trace.txt" 2>&1 || true

cat > "$WORK/train.py" <<'PY'
# A short training loop: warm-up steps, then measured steps between two synchronisations whose
# wall-clock window (CLOCK_REALTIME ns, CUPTI's clock too) is written out with the step times.
import json, sys, time, torch
mode, out, steps, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True,
                                                               dropout=0.0) for _ in range(4)]).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(8, 512, 1024, device=dev)
def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
for _ in range(warmup):
    step()
torch.cuda.synchronize()
times = []
def measured():
    for i in range(steps):
        t = time.perf_counter()
        if mode == "traced":  # the steps as NVTX ranges: shardcost trace keeps them as steps
            torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        step()
        torch.cuda.synchronize()
        if mode == "traced":
            torch.cuda.nvtx.range_pop()
        times.append(time.perf_counter() - t)
window = {}
if mode == "profiler":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        measured()
    prof.export_chrome_trace(out + ".trace.json")
else:
    window["start_ns"] = time.time_ns()
    measured()
    window["end_ns"] = time.time_ns()
json.dump({"mode": mode, "step_s": times, **window}, open(out, "w"))
PY

log "untraced run"
$PYTHON "$WORK/train.py" plain "$WORK/plain.json" "$STEPS" "$WARMUP"
log "traced run"
rm -f "$OUT/trace.db"
"$BIN" trace --db "$OUT/trace.db" --perfetto "$OUT/trace.perfetto.json" -- \
  $PYTHON "$WORK/train.py" traced "$WORK/traced.json" "$STEPS" "$WARMUP" 2> "$OUT/trace-stderr.txt"
log "torch.profiler run"
$PYTHON "$WORK/train.py" profiler "$WORK/profiler.json" "$STEPS" "$WARMUP"
log "second untraced run (noise check)"
$PYTHON "$WORK/train.py" plain "$WORK/plain2.json" "$STEPS" "$WARMUP"

"$BIN" trace summary --db "$OUT/trace.db" > "$OUT/trace-summary.txt"
"$BIN" export --db "$OUT/trace.db" --table kernels --format csv > "$WORK/kernels.csv"
cp "$WORK"/*.json "$OUT/" 2>/dev/null || true

$PYTHON - "$WORK" "$OUT" <<'PY'
import csv, json, statistics, sys
work, out = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(f"{work}/{n}.json"))
plain, plain2, traced, prof = load("plain"), load("plain2"), load("traced"), load("profiler")
lo, hi = traced["start_ns"], traced["end_ns"]
ours = [r for r in csv.DictReader(open(f"{work}/kernels.csv"))
        if r["kind"] == "kernel" and lo <= int(r["start_ns"]) <= hi]
ours_count, ours_ns = len(ours), sum(int(r["duration_ns"]) for r in ours)
events = json.load(open(f"{work}/profiler.json.trace.json"))["traceEvents"]
theirs = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
theirs_count, theirs_ns = len(theirs), sum(float(e["dur"]) for e in theirs) * 1000.0
med = lambda r: statistics.median(r["step_s"])
untraced = min(med(plain), med(plain2))
overhead = med(traced) / untraced - 1.0
noise = abs(med(plain) / med(plain2) - 1.0)
count_err = abs(ours_count - theirs_count) / max(theirs_count, 1)
# The NVTX step ranges the traced run opened, as the store keeps them, against the loop's own
# clock.
import sqlite3
with sqlite3.connect(f"{out}/trace.db") as db:
    stored = [r[0] / 1e9 for r in db.execute("SELECT duration_ns FROM step ORDER BY number")]
step_err = (abs(statistics.mean(stored) / statistics.mean(traced["step_s"]) - 1.0)
            if stored else 1.0)
time_err = abs(ours_ns - theirs_ns) / max(theirs_ns, 1.0)
checks = {"kernel_count_within_2pct": count_err <= 0.02, "kernel_time_within_2pct": time_err <= 0.02,
          "overhead_under_3pct": overhead <= 0.03,
          "nvtx_steps_stored": len(stored) == len(traced["step_s"]),
          "nvtx_step_time_within_5pct": step_err <= 0.05}
report = {"gpu": open(f"{out}/gpu.txt").read().strip(), "steps": len(traced["step_s"]),
          "shardcost": {"kernels": ours_count, "kernel_time_ns": ours_ns},
          "torch_profiler": {"kernels": theirs_count, "kernel_time_ns": round(theirs_ns)},
          "count_error": count_err, "time_error": time_err,
          "step_s": {"untraced": untraced, "traced": med(traced), "untraced_run_to_run": noise},
          "overhead": overhead, "nvtx_steps": {"stored": len(stored), "mean_error": step_err},
          "checks": checks}
json.dump(report, open(f"{out}/trace-gpu-report.json", "w"), indent=2)
with open(f"{out}/trace-gpu-report.md", "w") as f:
    f.write(f"# shardcost trace on {report['gpu']}\n\n")
    f.write(f"{report['steps']} measured training steps (4 transformer layers, d=1024, bf16 autocast).\n\n")
    f.write("| | shardcost trace | torch.profiler | difference |\n|---|---:|---:|---:|\n")
    f.write(f"| kernels | {ours_count} | {theirs_count} | {100*count_err:.2f} % |\n")
    f.write(f"| kernel time ms | {ours_ns/1e6:.3f} | {theirs_ns/1e6:.3f} | {100*time_err:.2f} % |\n\n")
    f.write(f"Median step: untraced {1e3*untraced:.3f} ms, traced {1e3*med(traced):.3f} ms, "
            f"overhead {100*overhead:.2f} % (untraced run-to-run {100*noise:.2f} %).\n\n")
    f.write(f"NVTX step ranges stored as steps: {len(stored)} of {len(traced['step_s'])}, mean "
            f"{100*step_err:.2f} % from the loop's own step times.\n\n")
    f.write("Checks: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in checks.items()) + "\n")
print(open(f"{out}/trace-gpu-report.md").read())
sys.exit(0 if all(checks.values()) else 1)
PY
