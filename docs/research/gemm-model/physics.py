"""Physics prior for GEMM time with a few GLOBAL constants (fitted on the training GPUs only).

t_prior = T0 + softmax_p( t_comp / (ec * q),  t_mem / em )
  t_comp, t_mem : roofline terms from datasheet peak / bandwidth
  q             : best (wave-efficiency x tile-padding efficiency) over tile candidates, x k/(k+96)
  ec, em        : catalog efficiency.gemm / efficiency.memory  (device spec inputs), optionally times a
                  global scale fitted on training GPUs
  T0            : fixed per-kernel floor (global, fitted)
"""
import numpy as np
from scipy.optimize import least_squares
from common import SPECS, TILES

PRIOR_TILES = [(128, 128), (128, 256), (256, 128), (64, 128), (128, 64), (64, 64)]


def quant_eff(d, tiles=PRIOR_TILES, kpro=96.0):
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    best = np.zeros(len(d))
    for tm, tn in tiles:
        t = np.ceil(m / tm) * np.ceil(n / tn) * b
        we = t / (np.ceil(t / sms) * sms)
        pe = (m * n) / (np.ceil(m / tm) * tm * np.ceil(n / tn) * tn)
        best = np.maximum(best, we * pe)
    return best * k / (k + kpro)


def cat_eff(d):
    eg = np.array([SPECS[dv]["eff"]["gemm"] for dv in d.devname])
    em = np.array([SPECS[dv]["eff"]["memory"] for dv in d.devname])
    return eg, em


def prior(params, d, kind):
    T0 = np.exp(params[0])
    eg, em = cat_eff(d)
    q = quant_eff(d) if "q" in kind else 1.0
    sc = np.exp(params[1]) if "scale" in kind else 1.0
    sm = np.exp(params[2]) if "scale" in kind else 1.0
    tc = d.t_comp.values / (eg * sc * q)
    tm = d.t_mem.values / (em * sm)
    p = np.exp(params[3]) if "soft" in kind else None
    if p is None:
        body = np.maximum(tc, tm)
    else:
        body = (tc ** p + tm ** p) ** (1 / p)
    return T0 + body


def fit_prior(d, kind):
    p0 = np.array([np.log(2500.0), 0.0, 0.0, np.log(3.0)])
    r = least_squares(lambda p: np.log(prior(p, d, kind)) - np.log(d.time_ns.values), p0,
                      loss="soft_l1", f_scale=0.1)
    return r.x


def quant_eff2(d, tiles=((64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128)), kpro=96.0):
    """best wave x padding efficiency; the tile height never exceeds the next power of two >= max(m,16)
    (small-M / GEMV kernels exist), so tiny m is not charged a 64-row tile."""
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    mcap = 2.0 ** np.ceil(np.log2(np.maximum(m, 16)))
    best = np.zeros(len(d))
    for tm, tn in tiles:
        tm_ = np.minimum(tm, mcap)
        t = np.ceil(m / tm_) * np.ceil(n / tn) * b
        we = t / (np.ceil(t / sms) * sms)
        pe = (m * n) / (np.ceil(m / tm_) * tm_ * np.ceil(n / tn) * tn)
        best = np.maximum(best, we * pe)
    return best * k / (k + kpro)


def smclk(d):
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    clk = np.array([SPECS[dv]["clock_mhz"] for dv in d.devname], float) * 1e6
    return sms * clk


def l2_bytes(d):
    return np.array([SPECS[dv]["l2_MiB"] for dv in d.devname], float) * 2**20


QFUN = None

def prior2(params, d, kind, alpha=0.5):
    """params: [log T0, log p (softmax power), log beta (B/clk/SM), log ec-scale]"""
    T0 = np.exp(params[0]); p = np.exp(params[1]); beta = np.exp(params[2])
    sc = np.exp(params[3]) if "scale" in kind else 1.0
    eg, em = cat_eff(d)
    tc = d.t_comp.values / (eg * sc * QFUN(d))
    tm = d.t_mem.values / em
    terms = [tc]
    if "l2" in kind:
        fits = d.bytes.values <= alpha * l2_bytes(d)
        tm = np.where(fits, 0.0, tm)
    terms.append(tm)
    if "sm" in kind:
        terms.append(d.bytes.values / (smclk(d) * beta) * 1e9)
    body = sum(t ** p for t in terms) ** (1 / p)
    return T0 + body


def fit_prior2(d, kind, alpha=0.5):
    p0 = np.array([np.log(2500.0), np.log(3.0), np.log(8.0), 0.0])
    r = least_squares(lambda p: np.log(prior2(p, d, kind, alpha)) - np.log(d.time_ns.values), p0,
                      loss="soft_l1", f_scale=0.1)
    return r.x


def quant_eff3(d, tiles=((64, 64), (64, 128), (128, 64), (128, 128), (128, 256), (256, 128)),
               kpro=96.0, kmin_split=256.0):
    """quant_eff2 + split-K: a grid with fewer tiles than SMs splits K (each split keeps >= kmin_split of K)."""
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    mcap = 2.0 ** np.ceil(np.log2(np.maximum(m, 16)))
    best = np.zeros(len(d))
    for tm, tn in tiles:
        tm_ = np.minimum(tm, mcap)
        t = np.ceil(m / tm_) * np.ceil(n / tn) * b
        s = np.clip(np.floor(sms / t), 1, np.maximum(1, np.floor(k / kmin_split)))
        ks = np.ceil(k / s)
        tt = t * s
        we = tt / (np.ceil(tt / sms) * sms)
        pe = (m * n) / (np.ceil(m / tm_) * tm_ * np.ceil(n / tn) * tn)
        best = np.maximum(best, we * pe * ks / (ks + kpro))
    return best

QFUN = quant_eff3


def clock_hz(d):
    return np.array([SPECS[dv]["clock_mhz"] for dv in d.devname], float) * 1e6


def prior3(params, d, l2=False, alpha=0.5, qfun=None):
    """T0 = C0 cycles / boost clock; body = (tc^p + tm^p)^(1/p) with catalog efficiencies.
    params: [log C0 (cycles), log p]"""
    qfun = qfun or quant_eff3
    T0 = np.exp(params[0]) / clock_hz(d) * 1e9
    p = np.exp(params[1])
    eg, em = cat_eff(d)
    tc = d.t_comp.values / (eg * qfun(d))
    tm = d.t_mem.values / em
    if l2:
        tm = np.where(d.bytes.values <= alpha * l2_bytes(d), 0.0, tm)
    # scale-safe soft max
    mx = np.maximum(tc, tm)
    body = mx * ((tc / mx) ** p + (tm / mx) ** p) ** (1 / p)
    return T0 + body


def fit_prior3(d, **kw):
    p0 = np.array([np.log(6000.0), np.log(3.0)])
    r = least_squares(lambda p: np.log(prior3(p, d, **kw)) - np.log(d.time_ns.values), p0,
                      loss="soft_l1", f_scale=0.1)
    return r.x


def prior4(params, d, ec_mode="cat", em_mode="cat", l2=False, alpha=0.5, qfun=None):
    """prior3 with choice of catalog vs global-fitted efficiencies.
    params: [log C0, log p, log ec_global, log em_global]"""
    qfun = qfun or quant_eff3
    T0 = np.exp(params[0]) / clock_hz(d) * 1e9
    p = np.exp(params[1])
    eg, em = cat_eff(d)
    if ec_mode == "global":
        eg = np.exp(params[2])
    if em_mode == "global":
        em = np.exp(params[3])
    tc = d.t_comp.values / (eg * qfun(d))
    tm = d.t_mem.values / em
    if l2:
        tm = np.where(d.bytes.values <= alpha * l2_bytes(d), 0.0, tm)
    mx = np.maximum(tc, tm)
    return T0 + mx * ((tc / mx) ** p + (tm / mx) ** p) ** (1 / p)


def fit_prior4(d, **kw):
    p0 = np.array([np.log(6000.0), np.log(3.0), np.log(0.7), np.log(0.75)])
    r = least_squares(lambda p: np.log(prior4(p, d, **kw)) - np.log(d.time_ns.values), p0,
                      loss="soft_l1", f_scale=0.1)
    return r.x


def kloop_cycles(d, tile=(128, 128), bk=64.0, kmin_split=256.0):
    """sequential main-loop iterations per CTA x waves for a 128x128-tile kernel with split-K
    (latency-bound lower bound on duration in units of 'iteration latency')."""
    m, n, k, b = (d[c].values.astype(float) for c in ("m", "n", "k", "batch"))
    sms = np.array([SPECS[dv]["sms"] for dv in d.devname], float)
    tm, tn = tile
    mcap = 2.0 ** np.ceil(np.log2(np.maximum(m, 16)))
    tm_ = np.minimum(tm, mcap)
    t = np.ceil(m / tm_) * np.ceil(n / tn) * b
    s = np.clip(np.floor(sms / t), 1, np.maximum(1, np.floor(k / kmin_split)))
    waves = np.ceil(t * s / sms)
    return np.ceil(k / s / bk) * waves


def prior5(params, d, ec_mode="cat", em_mode="cat", l2=False, alpha=0.5, loop=True, qfun=None):
    """prior4 + latency-bound K-loop term t_loop = c_iter * kloop / clock.
    params: [log C0, log p, log ec_g, log em_g, log c_iter]"""
    qfun = qfun or quant_eff3
    clk = clock_hz(d)
    T0 = np.exp(params[0]) / clk * 1e9
    p = np.exp(params[1])
    eg, em = cat_eff(d)
    if ec_mode == "global":
        eg = np.exp(params[2])
    if em_mode == "global":
        em = np.exp(params[3])
    tc = d.t_comp.values / (eg * qfun(d))
    tm = d.t_mem.values / em
    if l2:
        tm = np.where(d.bytes.values <= alpha * l2_bytes(d), 1e-3, tm)
    terms = [tc, tm]
    if loop:
        terms.append(np.exp(params[4]) * kloop_cycles(d) / clk * 1e9)
    mx = np.maximum.reduce(terms)
    return T0 + mx * sum((t / mx) ** p for t in terms) ** (1 / p)


def fit_prior5(d, **kw):
    p0 = np.array([np.log(5000.0), np.log(3.0), np.log(0.7), np.log(0.75), np.log(300.0)])
    r = least_squares(lambda p: np.log(prior5(p, d, **kw)) - np.log(d.time_ns.values), p0,
                      loss="soft_l1", f_scale=0.1)
    return r.x
