"""P1 final: seeds 0..2, all tables; baselines, non-learned alternatives, XGB variants, grouped CV."""
import sys, time
from p1 import *
import common
from physics import fit_prior3, prior3
from sklearn.model_selection import GroupKFold

BEST = dict(max_depth=8, n_estimators=1000, learning_rate=0.03, subsample=0.8, colsample_bytree=0.8, min_child_weight=2)
fe_v1 = lambda x: features(x, device=False, extra=False)   # the brief's list
fe_v2 = lambda x: common.features_v2(x, device=False)

def xgb_pred(tr, te, fe, params, prior=False):
    y = np.log(tr.eff.values)
    if prior:
        pr = fit_prior3(tr)
        base_tr, base_te = np.log(tr.t_roof.values / prior3(pr, tr)), np.log(te.t_roof.values / prior3(pr, te))
    else:
        base_tr, base_te = np.zeros(len(tr)), np.zeros(len(te))
    m = xgb.XGBRegressor(**{**XGB_DEFAULT, **params})
    m.fit(fe(tr), y - base_tr)
    return te.t_roof.values / np.exp(m.predict(fe(te)) + base_te)

def gcv(tr, fe, params, prior=False):
    groups = tr.n.astype(str) + "x" + tr.k.astype(str)
    pred = np.zeros(len(tr))
    for a, b in GroupKFold(n_splits=5).split(tr, groups=groups):
        pred[b] = xgb_pred(tr.iloc[a].reset_index(drop=True), tr.iloc[b].reset_index(drop=True), fe, params, prior)
    return errs(pred, tr.time_ns.values)

seeds = [int(s) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else [0, 1, 2]
rows = []
for seed in seeds:
    for gpu, dt in TABLES:
        d = load(gpu, dt)
        itr, ite = split_p1(d, 2000, seed)
        tr, te = d.iloc[itr].reset_index(drop=True), d.iloc[ite].reset_index(drop=True)
        R = baselines(tr, te)
        pr = fit_prior3(tr); R["physics prior3 (fit on 2000)"] = prior3(pr, te)
        R["kNN k=4 (log-shape, log-eff)"] = pred_knn(tr, te, 4)
        R["log-log linear interp (Delaunay)"] = pred_interp(tr, te)
        R["xgb v1 feats d6x1500"] = xgb_pred(tr, te, fe_v1, {})
        R["xgb v2 feats d8x1000"] = xgb_pred(tr, te, fe_v2, BEST)
        R["xgb v2 feats d8x1000 + prior3 margin"] = xgb_pred(tr, te, fe_v2, BEST, prior=True)
        R["xgb v2 feats d6x300 (cheap)"] = xgb_pred(tr, te, fe_v2, dict(max_depth=6, n_estimators=300, learning_rate=0.08))
        for name, p in R.items():
            e = errs(p, te.time_ns.values)
            rows.append(dict(seed=seed, table=f"{gpu}/{dt}", model=name, eval="holdout", **e))
            print(f"s{seed} {gpu}/{dt:4s} {name:38s} {fmt(e)}", flush=True)
        if seed == seeds[0]:
            for name, fe, prm, prior in [("xgb v2 feats d8x1000", fe_v2, BEST, False),
                                         ("xgb v2 feats d8x1000 + prior3 margin", fe_v2, BEST, True)]:
                e = gcv(tr, fe, prm, prior)
                rows.append(dict(seed=seed, table=f"{gpu}/{dt}", model=name, eval="groupCV(n,k) on 2000", **e))
                print(f"s{seed} {gpu}/{dt:4s} GROUPED-CV {name:27s} {fmt(e)}", flush=True)
pd.DataFrame(rows).to_csv("results_p1_final.csv", index=False)
