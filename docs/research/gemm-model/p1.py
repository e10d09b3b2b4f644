"""P1: same GPU. 2,000 random shapes (seed) train, all other shapes of that GPU+dtype test."""
import sys, time
import numpy as np
import pandas as pd
import xgboost as xgb
from scipy.interpolate import LinearNDInterpolator, NearestNDInterpolator
from sklearn.neighbors import KNeighborsRegressor
from common import *

TABLES = [("a100", "bf16"), ("b200", "bf16"), ("l40s", "bf16"), ("b200", "fp8"), ("l40s", "fp8")]

XGB_DEFAULT = dict(n_estimators=1500, max_depth=6, learning_rate=0.03, subsample=0.8,
                   colsample_bytree=0.8, min_child_weight=2, reg_lambda=1.0,
                   tree_method="hist", n_jobs=2, random_state=0)


def fit_xgb(Xtr, ytr, params=None):
    p = dict(XGB_DEFAULT)
    if params:
        p.update(params)
    m = xgb.XGBRegressor(**p)
    m.fit(Xtr, ytr)
    return m


def pred_xgb(tr, te, feat_kw=None, params=None, target="logeff"):
    feat_kw = feat_kw or {}
    Xtr, Xte = features(tr, **feat_kw), features(te, **feat_kw)
    if target == "logeff":
        y = np.log(tr.eff.values)
        m = fit_xgb(Xtr, y, params)
        return te.t_roof.values / np.exp(m.predict(Xte)), m
    if target == "logtime":
        y = np.log(tr.time_ns.values)
        m = fit_xgb(Xtr, y, params)
        return np.exp(m.predict(Xte)), m
    raise ValueError(target)


def shape_coords(d):
    return np.c_[np.log2(d.m.values), np.log2(d.n.values), np.log2(d.k.values)]


def pred_knn(tr, te, k=4):
    r = KNeighborsRegressor(n_neighbors=k, weights="distance")
    r.fit(shape_coords(tr), np.log(tr.eff.values))
    return te.t_roof.values / np.exp(r.predict(shape_coords(te)))


def pred_interp(tr, te):
    """Piecewise-linear (Delaunay) interpolation of log-efficiency in log2(m,n,k); nearest outside hull."""
    X, y = shape_coords(tr), np.log(tr.eff.values)
    lin = LinearNDInterpolator(X, y)
    nn = NearestNDInterpolator(X, y)
    Xt = shape_coords(te)
    p = lin(Xt)
    bad = np.isnan(p)
    p[bad] = nn(Xt[bad])
    return te.t_roof.values / np.exp(p)


def baselines(tr, te):
    dev = te.devname.iloc[0]
    s = SPECS[dev]
    out = {}
    # catalog efficiencies: compute term / eff.gemm, memory term / eff.memory
    out["roofline, catalog eff (gemm/mem)"] = np.maximum(te.t_comp / s["eff"]["gemm"], te.t_mem / s["eff"]["memory"]).values
    c = np.exp(np.median(np.log(tr.eff)))  # constant fitted on the 2000 training rows
    out["roofline / const eff (fit on train)"] = te.t_roof.values / c
    return out


def grouped_cv(tr, feat_kw=None, params=None, folds=5, seed=0):
    from sklearn.model_selection import GroupKFold
    groups = tr.n.astype(str) + "x" + tr.k.astype(str)
    pred = np.zeros(len(tr))
    gkf = GroupKFold(n_splits=folds)
    for a, b in gkf.split(tr, groups=groups):
        p, _ = pred_xgb(tr.iloc[a], tr.iloc[b], feat_kw, params)
        pred[b] = p
    return errs(pred, tr.time_ns.values)


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    rows = []
    for gpu, dt in TABLES:
        d = load(gpu, dt)
        itr, ite = split_p1(d, 2000, seed)
        tr, te = d.iloc[itr].reset_index(drop=True), d.iloc[ite].reset_index(drop=True)
        res = baselines(tr, te)
        res["kNN k=4 (log-shape, log-eff)"] = pred_knn(tr, te, 4)
        res["log-log linear interp"] = pred_interp(tr, te)
        t0 = time.time()
        res["xgb logeff, no-extra feats"], _ = pred_xgb(tr, te, dict(device=False, extra=False))
        res["xgb logeff, all feats"], _ = pred_xgb(tr, te, dict(device=False))
        res["xgb logtime, all feats"], _ = pred_xgb(tr, te, dict(device=False), target="logtime")
        for name, p in res.items():
            e = errs(p, te.time_ns.values)
            rows.append(dict(table=f"{gpu}/{dt}", model=name, **e))
            print(f"{gpu}/{dt:4s} {name:40s} {fmt(e)}", flush=True)
    pd.DataFrame(rows).to_csv(f"results_p1_seed{seed}.csv", index=False)
