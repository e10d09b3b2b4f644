"""P2 summary: every candidate, both training modes (2000 rows per GPU / all rows)."""
import sys
from p2 import *
from physics import *
from p2_nested import fs_S3

def gm(*ps):
    return np.exp(np.mean([np.log(p) for p in ps], 0))

rows = []
data = {g: load(g, "bf16") for g in GPUS}
for mode in ["2000", "all"]:
    per_gpu = None if mode == "all" else 2000
    for held in GPUS:
        tr = pd.concat([sample(data[g], per_gpu, 0) for g in GPUS if g != held], ignore_index=True)
        te = data[held]
        R = {}
        R["roofline, catalog eff"] = t_catalog(te)
        R["roofline / const eff (fit on train GPUs)"] = te.t_roof.values / np.exp(np.median(np.log(tr.eff)))
        R["xgb rel feats, target log-eff"], _ = run_xgb(tr, te, fs_rel, "roof")
        R["xgb rel+dev feats, target log-eff"], _ = run_xgb(tr, te, fs_rel_dev, "roof")
        pr = fit_prior3(tr); R["prior3 (T0 cycles, catalog ec/em)"] = prior3(pr, te)
        pr = fit_prior3(tr, l2=True); R["prior3 + L2-resident (a=0.5)"] = prior3(pr, te, l2=True)
        pr = fit_prior4(tr, ec_mode="global", em_mode="cat"); R["prior4 (global ec, catalog em)"] = prior4(pr, te, ec_mode="global", em_mode="cat")
        pr = fit_prior3(tr)
        y = np.log(prior3(pr, tr) / tr.time_ns.values)
        m = xgb.XGBRegressor(**{**P2_XGB, "n_estimators": 400, "max_depth": 6, "learning_rate": 0.05}); m.fit(fs_S3(tr), y)
        R["prior3 x xgb residual (S3, 400x d6, shrink .5)"] = prior3(pr, te) / np.exp(0.5 * m.predict(fs_S3(te)))
        R["ens: gm(prior3, xgb rel)"] = gm(R["prior3 (T0 cycles, catalog ec/em)"], R["xgb rel feats, target log-eff"])
        R["ens: gm(prior3, prior4)"] = gm(R["prior3 (T0 cycles, catalog ec/em)"], R["prior4 (global ec, catalog em)"])
        R["ens: gm(prior3, prior4, xgb rel)"] = gm(R["prior3 (T0 cycles, catalog ec/em)"], R["prior4 (global ec, catalog em)"], R["xgb rel feats, target log-eff"])
        for name, p in R.items():
            e = errs(p, te.time_ns.values)
            rows.append(dict(train=f"{mode}/GPU", held_out=held, model=name, **e))
            print(f"{mode:4s} held={held} {name:46s} {fmt(e)}", flush=True)
df = pd.DataFrame(rows); df.to_csv("results_p2_final.csv", index=False)
print(df.pivot_table(index=["model"], columns=["train", "held_out"], values="median").round(1).to_string())
