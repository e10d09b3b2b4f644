#!/usr/bin/env bash
# import -> fit -> predict -> estimate --db: the learned half end to end, without a GPU.
source "$(dirname "$0")/../e2e_lib.sh"
M=$SRC/tests/fixtures/measured
DB=$SCRATCH/s.db
"$BIN" import csv --db "$DB" "$M/gemm_a100_sample.csv" >/dev/null

if ! "$BIN" fit --db "$DB" --format json >"$SCRATCH/fit.json" 2>"$SCRATCH/fit.err"; then
  if grep -q "built without XGBoost" "$SCRATCH/fit.err"; then
    echo "SKIP: this build has no XGBoost (libxgboost-dev)"; exit 77
  fi
  fail "fit: $(cat "$SCRATCH/fit.err")"
fi
python3 - "$SCRATCH/fit.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m, pooled = j["models"]
assert m["kind"] == "gemm_efficiency" and m["device"] == "a100-sxm4-80gb" and m["key"] == "bf16", m
# The prior over every device of the type (one here: nothing to leave out).
assert pooled["kind"] == "gemm_prior_pooled" and pooled["key"] == "bf16", pooled
assert pooled["rows"] == 300 and not pooled.get("cross_validation"), pooled
assert m["rows"] == 300, m
splits = {c["split"]: c for c in m["cross_validation"]}
assert set(splits) == {"5-fold", "5-fold by (n, k)"}, splits
# 300 shapes are few; the figure is what it is, but it must be a real held-out error.
assert 0.005 < splits["5-fold"]["median"] < 0.5, splits
PY
# Refitting replaces the model and gives the same figures (fixed seeds).
expect_exit 0 "$BIN" fit --db "$DB" --format json
cmp -s "$SCRATCH/out" "$SCRATCH/fit.json" || fail "refitting changed the figures"
[ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM fitted_model')" = 2 ] || fail "refit kept old models"

# A shape the store did not measure is priced by the model, inside its domain.
expect_exit 0 "$BIN" predict gemm --device a100-sxm4-80gb --db "$DB" --shape 3000x5000x7000 --format csv
grep -q '^3000,5000,7000,1,bf16,[0-9]*,learned$' "$SCRATCH/out" || fail "learned: $OUT"
# Far outside every fitted dimension: extrapolated, and said so.
expect_exit 0 "$BIN" predict gemm --device a100-sxm4-80gb --db "$DB" --shape 3x5000x1000000 --format csv
grep -q ',extrapolated$' "$SCRATCH/out" || fail "extrapolated: $OUT"

# A device the store has no rows of: the pooled prior, extrapolated.
expect_exit 0 "$BIN" predict gemm --device h100-sxm5-80gb --db "$DB" --shape 4096x4096x4096 --format csv
grep -q ',extrapolated$' "$SCRATCH/out" || fail "pooled prior: $OUT"

# estimate --db names the learned share of the parts it priced.
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-a100 --gpus 8 --db "$DB" \
  --strategy "tp=8,mbs=1,gbs=8" --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
parts = {p["part"]: p for p in j["breakdown"]["time"]}
fwd = parts["compute_forward"]
learned = fwd["sources"].get("learned", 0) + fwd["sources"].get("extrapolated", 0)
assert learned > 0.5 * fwd["seconds"], fwd
for p in parts.values():
    assert abs(sum(p["sources"].values()) - p["seconds"]) <= 1e-5 * max(1, p["seconds"]), p
PY

# The report draws each fitted model against its rows, with its held-out figures.
expect_exit 0 "$BIN" report --db "$DB" -o "$SCRATCH/report.html"
grep -q 'gemm_efficiency · a100-sxm4-80gb · bf16' "$SCRATCH/report.html" || fail "report: no model plot"
grep -q '300 rows it was fitted on; held out 5-fold: median' "$SCRATCH/report.html" || fail "report: no figures"

# A damaged model row never crashes pricing: one warning, and the next source prices.
sqlite3 "$DB" "UPDATE fitted_model SET parameters_json = '{\"fitter\": 1}'"
expect_exit 0 "$BIN" predict gemm --device a100-sxm4-80gb --db "$DB" --shape 3000x5000x7000 --format csv
grep -q ',catalog$' "$SCRATCH/out" || fail "fallback: $OUT"
case "$ERR" in *"warning"*"fitted model gemm_efficiency"*"skipped"*) ;; *) fail "no warning: $ERR";; esac

# Too few rows: one line per model, nothing fitted, exit 1.
head -21 "$M/gemm_a100_sample.csv" >"$SCRATCH/few.csv"
"$BIN" import csv --db "$SCRATCH/few.db" "$SCRATCH/few.csv" >/dev/null
expect_exit 1 "$BIN" fit --db "$SCRATCH/few.db"
case "$ERR" in *"20 shapes, fewer than the 50 a model needs"*) ;; *) fail "few rows: $ERR";; esac
expect_exit 2 "$BIN" fit --db "$DB" --table collective
expect_exit 2 "$BIN" fit --db "$DB" --device a200
