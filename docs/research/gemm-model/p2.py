"""P2: unseen GPU. Train on two GPUs' bf16 rows, predict all bf16 rows of the third."""
import sys, time
import numpy as np
import pandas as pd
import xgboost as xgb
from common import *
import common

GPUS = ["a100", "b200", "l40s"]
P2_XGB = dict(n_estimators=1000, max_depth=6, learning_rate=0.03, subsample=0.8, colsample_bytree=0.8,
              min_child_weight=2, tree_method="hist", n_jobs=2, random_state=0)


def t_catalog(d):
    """roofline with the catalog's constant efficiencies (device spec inputs, not fitted)."""
    eg = np.array([SPECS[dv]["eff"]["gemm"] for dv in d.devname])
    em = np.array([SPECS[dv]["eff"]["memory"] for dv in d.devname])
    return np.maximum(d.t_comp.values / eg, d.t_mem.values / em)


def fs_rel(d):
    """shape + device-relative features only (no raw device constants)."""
    F = common.features_v2(d, device=False)
    return F.drop(columns=["log2_flops", "log2_bytes"])


def fs_rel_dev(d):
    F = fs_rel(d)
    F = pd.concat([F, pd.DataFrame(device_features(d))], axis=1)
    return F


def fs_all(d):
    return common.features_v2(d, device=True)


FEATSETS = {"rel": fs_rel, "rel+dev": fs_rel_dev, "all(v2+dev)": fs_all}


def run_xgb(tr, te, fe, target="roof", params=None):
    p = dict(P2_XGB); p.update(params or {})
    den_tr = tr.t_roof.values if target == "roof" else t_catalog(tr)
    den_te = te.t_roof.values if target == "roof" else t_catalog(te)
    y = np.log(den_tr / tr.time_ns.values)
    m = xgb.XGBRegressor(**p); m.fit(fe(tr), y)
    return den_te / np.exp(m.predict(fe(te))), m


def sample(d, n, seed=0):
    if n is None or n >= len(d):
        return d
    return d.iloc[np.random.RandomState(seed).permutation(len(d))[:n]]


if __name__ == "__main__":
    per_gpu = None if (len(sys.argv) > 1 and sys.argv[1] == "all") else 2000
    data = {g: load(g, "bf16") for g in GPUS}
    rows = []
    for held in GPUS:
        tr = pd.concat([sample(data[g], per_gpu, 0) for g in GPUS if g != held], ignore_index=True)
        te = data[held]
        res = {}
        res["roofline, catalog eff"] = t_catalog(te)
        c = np.exp(np.median(np.log(tr.eff)))
        res["roofline / const eff (fit on train GPUs)"] = te.t_roof.values / c
        for fname, fe in FEATSETS.items():
            for target in ["roof", "cat"]:
                res[f"xgb {fname} target={target}"], _ = run_xgb(tr, te, fe, target)
        for name, p in res.items():
            e = errs(p, te.time_ns.values)
            rows.append(dict(held_out=held, train_rows=len(tr), model=name, **e))
            print(f"held={held} ntr={len(tr):6d} {name:42s} {fmt(e)}", flush=True)
    tag = "all" if per_gpu is None else f"{per_gpu}"
    pd.DataFrame(rows).to_csv(f"results_p2_{tag}.csv", index=False)
