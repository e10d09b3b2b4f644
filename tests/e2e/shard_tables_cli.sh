#!/usr/bin/env bash
# shard-tables through the real binary: golden text on the Criteo tables, the JSON contract,
# bad tables files and a table no sharding holds.
source "$(dirname "$0")/../e2e_lib.sh"

TABLES="$SRC/data/examples/criteo-kaggle-tables.csv"
expect_exit 0 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100 --gpus 8 --batch 65536
golden shard_tables_criteo.txt

expect_exit 0 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100 --gpus 16 --batch 65536 \
  --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p, g = j["plan"], j["greedy"]
assert p["step_s"] <= g["step_s"] * (1 + 1e-9), (p["step_s"], g["step_s"])
assert len(p["tables"]) == 26 and len(p["gpus"]) == 16
assert abs(p["step_s"] - p["slowest_compute_s"] - p["comm_s"]) < 1e-5
budget = 80 * 0.7  # GiB of an A100-80GB the tables may take (catalog memory, 0.7)
assert all(x["memory_gib"] <= budget for x in p["gpus"]), p["gpus"]
assert {t["sharding"] for t in g["tables"]} <= {"table_wise", "row_wise"}
PY

# --db: shards priced at the store's measured read bandwidth (here 500 GB/s for the A100,
# about a third of the catalog's streaming rate), every size 2x apart so it interpolates.
python3 - "$SCRATCH/read.csv" <<'PY'
import sys
rows = ["run_id,run_uuid,device,host,kind,bytes,time_ns,time_p10_ns,time_p90_ns,iterations,bandwidth_gbps"]
for e in range(12, 31):
    b = 1 << e
    t = max(1, int(b / 500e9 * 1e9))
    rows.append(f"1,aaaaaaaa-0000-0000-0000-000000000001,NVIDIA A100-SXM4-80GB,test,read,{b},{t},{t},{t},10,{b / t:.3f}")
open(sys.argv[1], "w").write("\n".join(rows) + "\n")
PY
expect_exit 0 "$BIN" import csv --db "$SCRATCH/read.db" "$SCRATCH/read.csv"
expect_exit 0 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100 --gpus 8 --batch 65536 \
  --format json
cp "$SCRATCH/out" "$SCRATCH/catalog.json"
expect_exit 0 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100 --gpus 8 --batch 65536 \
  --format json --db "$SCRATCH/read.db"
python3 - "$SCRATCH/catalog.json" "$SCRATCH/out" <<'PY'
import json, sys
a, b = (json.load(open(f))["plan"] for f in sys.argv[1:3])
assert b["mean_compute_s"] > 2.5 * a["mean_compute_s"], (a["mean_compute_s"], b["mean_compute_s"])
PY

echo '{"tables": [{"name": "bad", "rows": 0, "dim": 8, "pooling_factor": 1}]}' >"$SCRATCH/bad.json"
expect_exit 2 "$BIN" shard-tables --tables "$SCRATCH/bad.json" --cluster dgx-a100 --batch 64
one_line_error
case "$ERR" in *"tables[0]"*"rows"*) ;; *) fail "bad rows: $ERR";; esac
printf 'name,rows,dim,pooling_factor\nx,100,16,many\n' >"$SCRATCH/bad.csv"
expect_exit 2 "$BIN" shard-tables --tables "$SCRATCH/bad.csv" --cluster dgx-a100 --batch 64
one_line_error
case "$ERR" in *"line 2: pooling_factor 'many' is not a number"*) ;; *) fail "bad csv: $ERR";; esac
echo '{"tables": [{"name": "huge", "rows": 4e9, "dim": 128, "pooling_factor": 1}]}' >"$SCRATCH/huge.json"
expect_exit 2 "$BIN" shard-tables --tables "$SCRATCH/huge.json" --cluster dgx-a100 --batch 64
one_line_error
case "$ERR" in *"table 'huge'"*"fits no sharding"*) ;; *) fail "huge table: $ERR";; esac

# 20,000 tables on 4,096 GPUs (6.5 GB in 60 s): refused at once with the bound.
python3 -c 'print("name,rows,dim,pooling_factor"); [print(f"t{i},{1000 + i * 37},64,{1 + i % 5}") for i in range(20000)]' > "$SCRATCH/many.csv"
expect_exit 2 prlimit --as=1073741824 "$BIN" shard-tables --tables "$SCRATCH/many.csv" --cluster dgx-a100 --gpus 4096 --batch 65536
one_line_error
case "$ERR" in *"20000 tables on 4096 GPUs: shard-tables plans up to 4,194,304 tables x GPUs"*) ;; *) fail "many tables: $ERR";; esac

# Progress on stderr (issue 37, item 2): lines as the search goes and when it ends; the plan on
# stdout is the same with or without them.
expect_exit 0 "$BIN" shard-tables --tables "$SRC/data/examples/criteo-kaggle-tables.csv" --cluster dgx-a100 --gpus 8 --batch 2048 --format json
cp "$SCRATCH/out" "$SCRATCH/quiet.json"
SHARDCOST_PROGRESS_AFTER_S=0 expect_exit 0 "$BIN" shard-tables --tables "$SRC/data/examples/criteo-kaggle-tables.csv" --cluster dgx-a100 --gpus 8 --batch 2048 --format json
case "$ERR" in *"shardcost: shard-tables: 0 of 26 tables placed"*"shardcost: shard-tables: 26 of 26 tables placed"*) ;; *) fail "progress: $ERR";; esac
cmp -s "$SCRATCH/out" "$SCRATCH/quiet.json" || fail "progress changed the plan"
echo "shard_tables_cli: ok"
