#!/usr/bin/env bash
# Embedding bags through the real binary, on this host: bench embedding into a store, fit,
# predict embedding (learned, extrapolated, catalog), a sharding plan's lookups run GPU by GPU
# against the fitted models (bench embedding --plan), the CSV round trip, and bad input.
source "$(dirname "$0")/../e2e_lib.sh"

DB="$SCRATCH/e.db"
# A small grid (tables under 2 MiB, seconds not minutes): 24 configurations, both passes.
expect_exit 0 "$BIN" bench embedding --rows 1K,16K,64K --dim 8,32 --pooling 1,4 --batch 128,512 \
  --zipf 0 --iters 3 --warmup 1 --db "$DB" --format json
cp "$SCRATCH/out" "$SCRATCH/grid.json"
DEV=$(python3 - "$SCRATCH/grid.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["results"]
assert len(r) == 48, len(r)
assert all(x["wrong"] == 0 and x["lookups_per_s"] > 0 for x in r)
assert {x["pass"] for x in r} == {"forward", "backward"}
assert {x["optimizer"] for x in r if x["pass"] == "backward"} == {"rowwise_adagrad"}
print(j["device"]["name"])
PY
)
[ -n "$DEV" ] || fail "no device name"

expect_exit 0 "$BIN" fit --db "$DB" --table embedding --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
models = j["models"] if isinstance(j, dict) else j
emb = [m for m in models if m["kind"] == "embedding_lookup"]
assert len(emb) == 2, emb
for m in emb:
    assert not m.get("skipped"), m
    assert m["rows"] == 24, m
    splits = [c["split"] for c in m["cross_validation"]]
    assert splits[:2] == ["5-fold", "5-fold, prior alone"], splits
PY

# Inside the grid: learned; a table far larger than any measured: extrapolated.
expect_exit 0 "$BIN" predict embedding --device "$DEV" --db "$DB" --rows 5000 --dim 16 \
  --pooling 2 --batch 300 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert [r["pass"] for r in rows] == ["forward", "backward"], rows
assert all(r["source"] == "learned" and r["time_ns"] > 0 for r in rows), rows
PY
expect_exit 0 "$BIN" predict embedding --device "$DEV" --db "$DB" --rows 4M --dim 16 --batch 300 \
  --pass backward
case "$OUT" in *extrapolated*) ;; *) fail "4M rows should be extrapolated: $OUT";; esac
# A catalog GPU with no model in the store: its streaming rate.
expect_exit 0 "$BIN" predict embedding --device a100-sxm4-80gb --rows 1M --dim 128 --pooling 20 \
  --batch 4096
case "$OUT" in *catalog*) ;; *) fail "no catalog answer: $OUT";; esac

# A plan's lookups, GPU by GPU: MLPerf DLRM-DCNv2's tables scaled to 0.41 GB, planned on 8
# A100s at a batch of 128, each shard run here and set beside the host's fitted models.
expect_exit 0 "$BIN" shard-tables --tables "$SRC/data/examples/mlperf-dlrmv2-tables-scaled.csv" \
  --cluster dgx-a100 --gpus 8 --batch 128 --format json
cp "$SCRATCH/out" "$SCRATCH/plan.json"
python3 - "$SCRATCH/plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["plan"]
for t in p["tables"]:
    assert len(t["shards"]) == len(t["gpus"]), t
    assert all(s["rows"] >= 1 and s["dim"] >= 1 and s["batch"] > 0 for s in t["shards"]), t
PY
expect_exit 0 "$BIN" bench embedding --plan "$SCRATCH/plan.json" --db "$DB" --iters 2 --warmup 1 \
  --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["gpus"]) == 8, j
assert all(g["measured_s"] > 0 and g["predicted_s"] > 0 for g in j["gpus"]), j
assert j["median_abs_error"] >= 0 and j["origin"] in ("learned", "extrapolated", "mixed"), j
PY
expect_exit 0 "$BIN" bench embedding --plan "$SCRATCH/plan.json" --iters 1 --warmup 0
case "$OUT" in *"no prediction"*) ;; *) fail "without --db there is nothing to predict: $OUT";; esac

# The skew as a histogram (1 % of the rows take 60 % of the lookups): measured from a tables
# file, carried into a plan's shards, priced.
cat >"$SCRATCH/hist.json" <<'JSON'
{"tables": [{"name": "hot", "rows": 20000, "dim": 16, "pooling_factor": 4,
             "histogram": [[0.01, 0.6], [0.99, 0.4]]},
            {"name": "flat", "rows": 3000, "dim": 16, "pooling_factor": 2}]}
JSON
expect_exit 0 "$BIN" bench embedding --tables "$SCRATCH/hist.json" --batch 256 --iters 2 --warmup 1
case "$OUT" in *"20000"*"3000"*) ;; *) fail "tables file not measured: $OUT";; esac
expect_exit 0 "$BIN" shard-tables --tables "$SCRATCH/hist.json" --cluster dgx-a100 --gpus 8 \
  --batch 256 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
t = {x["table"]: x for x in json.load(open(sys.argv[1]))["plan"]["tables"]}
assert t["hot"]["shards"][0]["histogram"] == [[0.01, 0.6], [0.99, 0.4]], t["hot"]
assert t["flat"]["shards"][0]["histogram"] == [], t["flat"]
PY
expect_exit 0 "$BIN" predict embedding --device "$DEV" --db "$DB" --tables "$SCRATCH/hist.json" \
  --batch 256 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
assert len(json.load(open(sys.argv[1]))["rows"]) == 4
PY

# The store's rows export and import as they were.
expect_exit 0 "$BIN" export --db "$DB" --table embedding --format csv
cp "$SCRATCH/out" "$SCRATCH/emb.csv"
expect_exit 0 "$BIN" import csv --db "$SCRATCH/copy.db" "$SCRATCH/emb.csv"
expect_exit 0 "$BIN" export --db "$SCRATCH/copy.db" --table embedding --format csv
cut -d, -f3- "$SCRATCH/emb.csv" >"$SCRATCH/a"
cut -d, -f3- "$SCRATCH/out" >"$SCRATCH/b"
diff "$SCRATCH/a" "$SCRATCH/b" >/dev/null || fail "embedding rows changed in the CSV round trip"

# Bad input: one line, exit 2.
expect_exit 2 "$BIN" bench embedding --rows 0 --dim 8 --batch 16 --pooling 1 --zipf 0
one_line_error
case "$ERR" in *"--rows '0': give positive whole numbers"*) ;; *) fail "rows 0: $ERR";; esac
expect_exit 2 "$BIN" bench embedding --rows 1K --dim 8 --batch 16 --pooling many
one_line_error
case "$ERR" in *"--pooling 'many'"*) ;; *) fail "pooling: $ERR";; esac
expect_exit 2 "$BIN" bench embedding --rows 1K --dim 8 --batch 16 --pass sideways
one_line_error
echo '{"plan": {}}' >"$SCRATCH/notaplan.json"
expect_exit 2 "$BIN" bench embedding --plan "$SCRATCH/notaplan.json"
one_line_error
case "$ERR" in *"no plan.tables"*) ;; *) fail "not a plan: $ERR";; esac
echo '{"plan": {"tables": [5]}}' >"$SCRATCH/badplan.json"
expect_exit 2 "$BIN" bench embedding --plan "$SCRATCH/badplan.json"
one_line_error
case "$ERR" in *"is not an object"*) ;; *) fail "a table that is not an object: $ERR";; esac
echo '{"plan": {"tables": [{"table": 7, "shards": [3]}]}}' >"$SCRATCH/badplan.json"
expect_exit 2 "$BIN" bench embedding --plan "$SCRATCH/badplan.json"
one_line_error
# A shard no GPU or table could hold (issue 37, item 5): refused before anything runs.
for bad in 'rows=-5' 'rows=1e300' 'dim=1e300' 'gpu=99' 'batch=-1' 'zipf=-2' 'dtype_bytes=0'; do
  python3 - "$SCRATCH/plan.json" "$SCRATCH/badplan.json" "$bad" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
field, value = sys.argv[3].split("=")
j["plan"]["tables"][0]["shards"][0][field] = float(value) if "e" in value else int(value)
json.dump(j, open(sys.argv[2], "w"))
PY
  expect_exit 2 "$BIN" bench embedding --plan "$SCRATCH/badplan.json" --iters 1 --warmup 0
  one_line_error
  case "$ERR" in *"'${bad%%=*}' is"*"it must be"*) ;; *) fail "plan shard $bad: $ERR";; esac
done
expect_exit 2 "$BIN" predict embedding --device "no such cpu" --rows 1K --dim 8 --batch 16
one_line_error
expect_exit 2 "$BIN" predict embedding --device "no such cpu" --db "$DB" --rows 1K --dim 8 \
  --batch 16
one_line_error
case "$ERR" in *"no fitted forward lookup model of 'no such cpu'"*) ;; *) fail "no model: $ERR";; esac
echo "embedding_cli: ok"
