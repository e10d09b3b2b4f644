"""P2 with physics prior (global constants fitted on training GPUs) + XGBoost residual on
device-invariant features; residual configuration chosen by inner leave-one-GPU-out on the two
training GPUs (never looks at the held-out GPU)."""
import sys, itertools
from p2 import *
from physics import *

def fs_S1(d):
    """shape-only + prior-derived (device-normalised) features"""
    m, n, k = (d[c].values.astype(float) for c in ("m", "n", "k"))
    F = pd.DataFrame({"log2_m": np.log2(m), "log2_n": np.log2(n), "log2_k": np.log2(k),
                      "k_amort": k / (k + 96.0)})
    for name, v in (("m", d.m.values), ("n", d.n.values), ("k", d.k.values)):
        F[f"align_{name}"] = np.log2(np.gcd(v.astype(np.int64), 256))
    eg, em = cat_eff(d)
    tc, tm = d.t_comp.values / eg, d.t_mem.values / em
    F["log2_tc_over_tm"] = np.log2(tc / tm)
    F["q3"] = quant_eff3(d)
    F["log2_body_cycles"] = np.log2(np.maximum(tc / quant_eff3(d), tm) * 1e-9 * clock_hz(d))
    return F

def fs_S2(d):
    F = fs_S1(d)
    m, n, b = (d[c].values.astype(float) for c in ("m", "n", "batch"))
    sms = np.array([SPECS[x]["sms"] for x in d.devname], float)
    for tm_, tn in [(128, 128), (128, 256), (256, 128), (64, 128)]:
        t = np.ceil(m / tm_) * np.ceil(n / tn) * b
        F[f"wave_eff_{tm_}x{tn}"] = t / (np.ceil(t / sms) * sms)
        F[f"log2_waves_{tm_}x{tn}"] = np.log2(t / sms)
        F[f"pad_eff_{tm_}x{tn}"] = (m * n) / (np.ceil(m / tm_) * tm_ * np.ceil(n / tn) * tn)
    return F

def fs_S3(d):
    F = fs_S2(d)
    l2 = l2_bytes(d); ein = d.dtype.map(ELEM_IN).values.astype(float)
    F["log2_bytes_over_l2"] = np.log2(d.bytes.values / l2)
    F["log2_B_over_l2"] = np.log2(ein * d.k.values * d.n.values / l2)
    return F

FS = {"S1": fs_S1, "S2": fs_S2, "S3": fs_S3}
CONFIGS = [("prior-only", None, 0, 0, 1.0)] + [
    (f"{fs} n{n} d{dp} s{s}", fs, n, dp, s)
    for fs in FS for n in (100, 400) for dp in (3, 6) for s in (0.5, 1.0)]

def fit_predict(tr, te, cfg, l2):
    _, fs, n, dp, s = cfg
    pr = fit_prior3(tr, l2=l2)
    pt = prior3(pr, te, l2=l2)
    if fs is None:
        return pt
    y = np.log(prior3(pr, tr, l2=l2) / tr.time_ns.values)
    m = xgb.XGBRegressor(**{**P2_XGB, "n_estimators": n, "max_depth": dp, "learning_rate": 0.05})
    m.fit(FS[fs](tr), y)
    return pt / np.exp(s * m.predict(FS[fs](te)))

def score(e):
    return e["median"] + 0.25 * e["p90"]

if __name__ == "__main__":
    per_gpu = None if (len(sys.argv) > 1 and sys.argv[1] == "all") else 2000
    l2 = len(sys.argv) > 2 and sys.argv[2] == "l2"
    data = {g: load(g, "bf16") for g in GPUS}
    rows = []
    for held in GPUS:
        A, B = [g for g in GPUS if g != held]
        sA, sB = sample(data[A], per_gpu, 0), sample(data[B], per_gpu, 0)
        inner = {}
        for cfg in CONFIGS:
            e1 = errs(fit_predict(sA, data[B], cfg, l2), data[B].time_ns.values)
            e2 = errs(fit_predict(sB, data[A], cfg, l2), data[A].time_ns.values)
            inner[cfg[0]] = (score(e1) + score(e2)) / 2
        tr = pd.concat([sA, sB], ignore_index=True)
        best = min(CONFIGS, key=lambda c: inner[c[0]])
        for cfg in CONFIGS:
            e = errs(fit_predict(tr, data[held], cfg, l2), data[held].time_ns.values)
            rows.append(dict(held_out=held, cfg=cfg[0], inner=inner[cfg[0]], chosen=cfg is best, **e))
            print(f"held={held} {cfg[0]:22s} inner={inner[cfg[0]]:6.2f} {'*' if cfg is best else ' '} TEST {fmt(e)}", flush=True)
    pd.DataFrame(rows).to_csv(f"results_p2_nested_{'all' if per_gpu is None else per_gpu}{'_l2' if l2 else ''}.csv", index=False)
