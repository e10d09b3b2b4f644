#!/usr/bin/env python3
"""Fused attention on a lent GPU against the catalog's attention curves (issue 32, item 1).

Times PyTorch's scaled_dot_product_attention with each fused backend the image has (flash:
FlashAttention-2, cudnn: cuDNN's fused kernel), causal, bf16, batch 1, 64 query and 8 key-value
heads of 128 (the shape NVIDIA's cudnn-frontend harness measures, whose figures the catalog
holds), forward and backward, 2k-32k tokens; converts each to TFLOP/s as the catalog counts
them (the causal lower triangle with its diagonal, forward 2 x elements x (d_qk + d_v),
backward 2.5x forward) and prints them beside the catalog's curve of the same kernel (each
cuDNN release's, where the part holds several). Writes OUT/attention-gpu.md and .json.

Usage: attention-gpu-check.py [--binary PATH] [--device CATALOG_NAME] [--out DIR]
                              [--lengths 2048,4096,...] [--iters N] [--selftest]
--selftest needs no GPU and no torch: it prices made-up timings, checking the catalog lookup,
the FLOP count and the report (what tests/e2e/device_scripts.sh runs).
"""
import argparse
import bisect
import json
import os
import subprocess
import sys

HEADS, KV_HEADS, HEAD_DIM, BATCH = 64, 8, 128, 1
BACKWARD_PER_FORWARD = 2.5  # the estimate's count: 2 x elements x (3 d_qk + 2 d_v) at d_qk = d_v


def causal_forward_flops(seq):
    elements = BATCH * HEADS * seq * (seq + 1) / 2
    return 2 * elements * (2 * HEAD_DIM)


def catalog_device(binary, name):
    out = subprocess.run([binary, "catalog", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    for d in json.loads(out)["devices"]:
        if d["name"] == name or name in d.get("aliases", []):
            return d
    print(f"attention-gpu-check: no catalog device '{name}'; pass --device with a name from "
          "`shardcost catalog`", file=sys.stderr)
    sys.exit(2)


def at_length(lengths, values, seq):
    """The curve at seq tokens: linear in log2 of the length between its points, flat past them."""
    if seq <= lengths[0]:
        return values[0]
    if seq >= lengths[-1]:
        return values[-1]
    i = bisect.bisect_left(lengths, seq)
    if lengths[i] == seq:
        return values[i]
    from math import log2
    t = (log2(seq) - log2(lengths[i - 1])) / (log2(lengths[i]) - log2(lengths[i - 1]))
    return values[i - 1] + t * (values[i] - values[i - 1])


def catalog_rates(device, kernel, seq):
    """Causal forward and backward TFLOP/s of each curve of this kernel at head dim 128:
    {release or '': (forward, backward)}. The backward is the curve's causal one, else its
    causal forward times its non-causal backward-over-forward ratio, as the estimate takes it."""
    kernels = device.get("attention_kernels") or {}
    default_lengths = kernels.get("seq_len", [])
    out = {}
    for c in kernels.get("curves", []):
        if c.get("kernel") != kernel or c.get("head_dim") != HEAD_DIM or c.get("dtype"):
            continue
        lengths = c.get("seq_len", default_lengths)
        fwd = at_length(lengths, c["forward_causal"], seq)
        if "backward_causal" in c:
            bwd = at_length(lengths, c["backward_causal"], seq)
        else:
            bwd = fwd * at_length(lengths, c["backward"], seq) / at_length(lengths, c["forward"], seq)
        out[c.get("release", "")] = (fwd, bwd)
    return out


def measure(backend_name, lengths, iters):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend_name]
    results = {}
    for seq in lengths:
        q = torch.randn(BATCH, HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True)
        k = torch.randn(BATCH, KV_HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True)
        v = torch.randn_like(k, requires_grad=True)
        grad = torch.randn(BATCH, HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16)

        def forward():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    enable_gqa=True)

        def timed(fn):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(iters):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) / 1e3)
            times.sort()
            return times[len(times) // 2]

        try:
            with sdpa_kernel([backend]):
                fwd_s = timed(forward)
                out = forward()
                bwd_s = timed(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
        except RuntimeError as e:  # the backend refuses this shape or is not built in
            results[seq] = {"error": str(e).splitlines()[0][:200]}
            continue
        finally:
            torch.cuda.empty_cache()
        results[seq] = {"forward_s": fwd_s, "backward_s": bwd_s}
    return results


def report(device, measured, out_dir, gpu):
    rows, lines = [], []
    lines.append(f"# Fused attention on {gpu} against the catalog's {device['name']}\n")
    lines.append(f"causal, bf16, batch {BATCH}, {HEADS} query and {KV_HEADS} key-value heads of "
                 f"{HEAD_DIM}; TFLOP/s as the catalog counts them (backward {BACKWARD_PER_FORWARD}x "
                 "forward's FLOPs)\n")
    lines.append("| backend | tokens | forward | catalog forward | backward | catalog backward |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for backend, by_len in measured.items():
        kernel = {"flash": "fa2", "cudnn": "cudnn"}[backend]
        for seq, r in sorted(by_len.items()):
            cat = catalog_rates(device, kernel, seq)
            cat_f = ", ".join(f"{f:.0f}" + (f" ({rel})" if rel else "") for rel, (f, _) in sorted(cat.items()))
            cat_b = ", ".join(f"{b:.0f}" + (f" ({rel})" if rel else "") for rel, (_, b) in sorted(cat.items()))
            if "error" in r:
                lines.append(f"| {backend} | {seq} | refused: {r['error']} | {cat_f or '-'} | - | {cat_b or '-'} |")
                rows.append({"backend": backend, "seq_len": seq, "error": r["error"]})
                continue
            flops = causal_forward_flops(seq)
            fwd = flops / r["forward_s"] / 1e12
            bwd = BACKWARD_PER_FORWARD * flops / r["backward_s"] / 1e12
            lines.append(f"| {backend} | {seq} | {fwd:.0f} | {cat_f or '-'} | {bwd:.0f} | {cat_b or '-'} |")
            rows.append({"backend": backend, "seq_len": seq, "forward_tflops": fwd,
                         "backward_tflops": bwd, "forward_s": r["forward_s"],
                         "backward_s": r["backward_s"],
                         "catalog": {rel or kernel: {"forward": f, "backward": b}
                                     for rel, (f, b) in cat.items()}})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "attention-gpu.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "attention-gpu.json"), "w") as f:
        json.dump({"gpu": gpu, "device": device["name"], "rows": rows}, f, indent=2)
    print("\n".join(lines))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT", "attention-gpu-out"))
    ap.add_argument("--lengths", default="2048,4096,8192,16384,32768")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    binary = a.binary or next((p for p in (os.path.join(here, "..", "bin", "shardcost"),
                                           os.path.join(here, "..", "build", "shardcost"))
                               if os.access(p, os.X_OK)), "shardcost")
    lengths = [int(x) for x in a.lengths.split(",")]
    if a.selftest:
        device = catalog_device(binary, a.device or "h100-sxm5-80gb")
        # Timings that reproduce the catalog's cuDNN 9.19.1 causal rates at 8k exactly: the
        # report must print them back.
        cat = catalog_rates(device, "cudnn", 8192)["9.19.1"]
        flops = causal_forward_flops(8192)
        measured = {"cudnn": {8192: {"forward_s": flops / (cat[0] * 1e12),
                                     "backward_s": BACKWARD_PER_FORWARD * flops / (cat[1] * 1e12)}},
                    "flash": {4096: {"error": "made up: the backend refused"}}}
        rows = report(device, measured, a.out, "selftest (no GPU)")
        ok = abs(rows[0]["forward_tflops"] - 644) < 0.5 and abs(rows[0]["backward_tflops"] - 541) < 0.5
        print("selftest:", "PASS" if ok else "FAIL")
        return 0 if ok else 1
    import torch
    if not torch.cuda.is_available():
        print("attention-gpu-check: no CUDA device", file=sys.stderr)
        return 77
    gpu = torch.cuda.get_device_name()
    name = a.device or ("h200-sxm-141gb" if "H200" in gpu else "h100-sxm5-80gb" if "H100" in gpu
                        else "b200-sxm-180gb" if "B200" in gpu else None)
    if not name:
        print(f"attention-gpu-check: no catalog device for '{gpu}'; pass --device", file=sys.stderr)
        return 2
    device = catalog_device(binary, name)
    measured = {b: measure(b, lengths, a.iters) for b in ("flash", "cudnn")}
    try:
        import torch.backends.cudnn as cudnn
        gpu += f", torch {torch.__version__}, cuDNN {cudnn.version()}"
    except Exception:
        pass
    report(device, measured, a.out, gpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
