"""Shared loading, roofline, features and metrics for the GEMM cost-model research.

Data: /work/shared/data/measured/gemm_*.csv (aiconfigurator, CUDA-graph replay, short bursts).
Specs: /work/main/data/catalog/devices.json (+ L2 sizes from vendor docs, see DEVICE_EXTRA).
"""
import json
import numpy as np
import pandas as pd

DATA = "/work/shared/data/measured/"
CATALOG = "/work/main/data/catalog/devices.json"

FILES = {
    "a100": ("gemm_a100-sxm4-80gb.csv", "a100-sxm4-80gb"),
    "b200": ("gemm_b200-sxm-180gb.csv", "b200-sxm-180gb"),
    "l40s": ("gemm_l40s.csv", "l40s"),
}

# Specs the catalog lacks (L2 capacity in MiB). Sources in REPORT.md:
#   A100: 40 MB  (NVIDIA Ampere GA100 whitepaper / A100 datasheet)
#   B200: 126 MB (Chips and Cheese "Nvidia's B200: Keeping the CUDA Juggernaut Rolling", 2 dies x ~63 MB)
#   L40S: 96 MB  (NVIDIA Ada (AD102) architecture whitepaper; L40/L40S use AD102 with 96 MB L2)
DEVICE_EXTRA = {
    "a100-sxm4-80gb": {"l2_MiB": 40.0},
    "b200-sxm-180gb": {"l2_MiB": 126.0},
    "l40s": {"l2_MiB": 96.0},
}

ELEM_IN = {"bf16": 2, "fp16": 2, "fp8": 1}
ELEM_OUT = 2  # bf16 output for both bf16 and fp8 GEMMs


def load_specs():
    d = json.load(open(CATALOG))
    out = {}
    for x in d["devices"]:
        s = dict(sms=x["sms"], clock_mhz=x["boost_clock_mhz"], bw_GBps=x["memory_bandwidth_GBps"],
                 peak=x["peak_tflops"], eff=x["efficiency"], arch=x["architecture"],
                 tdp_w=x["tdp_w"])
        s.update(DEVICE_EXTRA.get(x["name"], {}))
        out[x["name"]] = s
    return out


SPECS = load_specs()


def load(gpu, dtype):
    fn, dev = FILES[gpu]
    d = pd.read_csv(DATA + fn)
    d = d[d.dtype == dtype].reset_index(drop=True)
    d["gpu"] = gpu
    d["devname"] = dev
    return add_roofline(d)


def add_roofline(d):
    d = d.copy()
    peak = np.array([SPECS[dv]["peak"][dt] for dv, dt in zip(d.devname, d.dtype)], float) * 1e12
    bw = np.array([SPECS[dv]["bw_GBps"] for dv in d.devname], float) * 1e9
    ein = d.dtype.map(ELEM_IN).values.astype(float)
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    flops = 2 * m * n * k * b
    byts = (ein * (m * k + k * n) + ELEM_OUT * m * n) * b
    d["flops"] = flops
    d["bytes"] = byts
    d["t_comp"] = flops / peak * 1e9  # ns
    d["t_mem"] = byts / bw * 1e9
    d["t_roof"] = np.maximum(d.t_comp, d.t_mem)
    d["eff"] = d.t_roof / d.time_ns
    return d


TILES = [(128, 128), (128, 256), (256, 128), (64, 128), (128, 64)]


def features(d, device=True, tiles=TILES, extra=True):
    """Feature matrix. All device-dependent quantities are computed from specs, not from data."""
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    F = {}
    F["log2_m"] = np.log2(m)
    F["log2_n"] = np.log2(n)
    F["log2_k"] = np.log2(k)
    F["log2_batch"] = np.log2(b)
    F["log2_flops"] = np.log2(d.flops.values)
    F["log2_bytes"] = np.log2(d.bytes.values)
    F["log2_ai"] = np.log2(d.flops.values / d.bytes.values)
    F["k_amort"] = k / (k + 96.0)
    for tm, tn in tiles:
        tiles_ = np.ceil(m / tm) * np.ceil(n / tn) * b
        waves = np.ceil(tiles_ / sms)
        F[f"wave_eff_{tm}x{tn}"] = tiles_ / (waves * sms)
        F[f"pad_eff_{tm}x{tn}"] = (m * n) / (np.ceil(m / tm) * tm * np.ceil(n / tn) * tn)
        if extra:
            F[f"log2_waves_{tm}x{tn}"] = np.log2(tiles_ / sms)
    if extra:
        # device-relative quantities (meaningful across GPUs)
        F["log2_t_roof_us"] = np.log2(d.t_roof.values / 1e3)
        F["log2_t_comp_over_mem"] = np.log2(d.t_comp.values / d.t_mem.values)
    if device:
        F.update(device_features(d))
    return pd.DataFrame(F)


def device_features(d):
    g = lambda f: np.array([f(SPECS[dv], dt) for dv, dt in zip(d.devname, d.dtype)], float)
    F = {}
    F["dev_sms"] = g(lambda s, dt: s["sms"])
    F["dev_log2_peak_tflops"] = g(lambda s, dt: np.log2(s["peak"][dt]))
    F["dev_log2_bw"] = g(lambda s, dt: np.log2(s["bw_GBps"]))
    F["dev_log2_ridge"] = g(lambda s, dt: np.log2(s["peak"][dt] * 1e12 / (s["bw_GBps"] * 1e9)))
    F["dev_l2_MiB"] = g(lambda s, dt: s["l2_MiB"])
    F["dev_clock_mhz"] = g(lambda s, dt: s["clock_mhz"])
    F["dev_flops_per_sm_clk"] = g(lambda s, dt: s["peak"][dt] * 1e12 / (s["sms"] * s["clock_mhz"] * 1e6))
    return F


def errs(pred_ns, meas_ns):
    e = np.abs(np.asarray(pred_ns) - np.asarray(meas_ns)) / np.asarray(meas_ns)
    return dict(median=float(np.median(e)) * 100, p90=float(np.percentile(e, 90)) * 100,
                mean=float(np.mean(e)) * 100, p99=float(np.percentile(e, 99)) * 100)


def fmt(e):
    return f"med {e['median']:5.2f}%  p90 {e['p90']:6.2f}%  p99 {e['p99']:7.2f}%"


def split_p1(d, n_train=2000, seed=0):
    rng = np.random.RandomState(seed)
    idx = rng.permutation(len(d))
    return idx[:n_train], idx[n_train:]


def features_v2(d, device=True, align=True, l2=True, more_tiles=True, ntiles=True, base_extra=True):
    """v1 features + alignment, L2-residency, extra tile candidates, CTA counts."""
    tiles = list(TILES) + ([(64, 64), (256, 256), (32, 128)] if more_tiles else [])
    F = features(d, device=device, tiles=tiles, extra=base_extra)
    m, n, k, b = (d[c].values.astype(np.int64) for c in ("m", "n", "k", "batch"))
    if align:
        for name, v in (("m", m), ("n", n), ("k", k)):
            F[f"align_{name}"] = np.log2(np.gcd(v, 256))
    if l2:
        l2b = np.array([SPECS[dv]["l2_MiB"] for dv in d.devname], float) * 2**20
        ein = d.dtype.map(ELEM_IN).values.astype(float)
        F["log2_bytes_over_l2"] = np.log2(d.bytes.values / l2b)
        F["log2_B_over_l2"] = np.log2(ein * k * n * b / l2b)  # weight operand (k x n)
        F["log2_A_over_l2"] = np.log2(ein * m * k * b / l2b)
    if ntiles:
        sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
        F["log2_tiles_128x128_per_sm"] = np.log2(np.ceil(m / 128) * np.ceil(n / 128) * b / sms)
        F["log2_k_iters_64"] = np.log2(np.ceil(k / 64))
    return F


def features_v3(d, device=True, **kw):
    """v2 + split-K / best-tile summary features."""
    F = features_v2(d, device=device, **kw)
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    best = np.zeros(len(d))
    for tm, tn in TILES + [(64, 64), (256, 256), (32, 128)]:
        best = np.maximum(best, F[f"wave_eff_{tm}x{tn}"].values * F[f"pad_eff_{tm}x{tn}"].values)
    F["best_tile_eff"] = best
    t = np.ceil(m / 128) * np.ceil(n / 128) * b
    sk = np.clip(np.floor(sms / t), 1, np.maximum(1, np.floor(k / 256)))
    F["log2_splitk"] = np.log2(sk)
    tt = t * sk
    F["wave_eff_splitk"] = tt / (np.ceil(tt / sms) * sms)
    F["log2_k_per_split"] = np.log2(k / sk)
    return F
