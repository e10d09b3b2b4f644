#!/usr/bin/env bash
# Lower-severity input defects (issue 37, item 9): a JSON key given twice, two tables or edge
# devices of one name, a stage_tp that is not numbers named as stage_tp, sampling options without
# variable-length data, rank --objective memory on variable-length data, and predict on the
# host CPU a store names (as bench and fit stored it).
source "$(dirname "$0")/../e2e_lib.sh"

# A key twice in one JSON object: refused, naming it (readers differ in which they keep).
printf '{"name": "m", "layers": 2, "layers": 4, "hidden": 1024, "heads": 8, "seq_len": 1024, "vocab": 1000}' > "$SCRATCH/model.json"
expect_exit 2 "$BIN" estimate --model "$SCRATCH/model.json" --cluster dgx-a100 --gpus 8 --strategy tp=1
one_line_error
case "$ERR" in *"model file"*"key 'layers' is given twice in one object"*) ;; *) fail "model key twice: $ERR";; esac
printf '{"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "nodes": 2, "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25}' > "$SCRATCH/cluster.json"
expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster "$SCRATCH/cluster.json" --strategy tp=1
case "$ERR" in *"key 'nodes' is given twice"*) ;; *) fail "cluster key twice: $ERR";; esac
printf '{"command": "estimate", "model": "gpt3-1.3b", "cluster": "dgx-a100", "strategy": "tp=1", "gpus": 8, "gpus": 16}' > "$SCRATCH/request.json"
expect_exit 2 "$BIN" estimate --request "$SCRATCH/request.json"
case "$ERR" in *"key 'gpus' is given twice"*) ;; *) fail "request key twice: $ERR";; esac
# The same key in two objects is no duplicate (each node group has a name, a device, ...).
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster "$SRC/data/examples/a100-v100.json" --strategy "tp=4,pp=2,gbs=64"

# Two tables, two edge devices of one name.
printf 'name,rows,dim,pooling_factor\nC1,1460,128,1\nC1,583,128,1\n' > "$SCRATCH/tables.csv"
expect_exit 2 "$BIN" shard-tables --tables "$SCRATCH/tables.csv" --cluster dgx-a100 --gpus 8 --batch 1024
one_line_error
case "$ERR" in *"tables 1 and 2 are both named 'C1'"*) ;; *) fail "tables named twice: $ERR";; esac
cat > "$SCRATCH/devices.json" <<'JSON'
{"devices": [{"name": "p", "device": "jetson-nano", "uplink_Mbps": 10, "downlink_Mbps": 50, "batch": 8},
             {"name": "p", "device": "raspberry-pi-4", "uplink_Mbps": 10, "downlink_Mbps": 50, "batch": 8}]}
JSON
expect_exit 2 "$BIN" split-learning --model "$SRC/tests/data/onnx/cnn-dynamic.onnx" --devices "$SCRATCH/devices.json" --server a100-sxm4-80gb
one_line_error
case "$ERR" in *"devices[1]: name 'p' is already devices[0]'s"*) ;; *) fail "devices named twice: $ERR";; esac

# stage_tp that is not numbers: said of stage_tp, not of layers.
expect_exit 2 "$BIN" estimate --model gpt3-13b --cluster dgx-a100 --gpus 32 --strategy "pp=2,stage_tp=8/x,gbs=64"
case "$ERR" in *"strategy key 'stage_tp' needs a tensor-parallel degree per stage"*) ;; *) fail "stage_tp: $ERR";; esac

# predict on the host CPU as the store names it: its measurements and fitted curve answer,
# what they do not price is said; without --db the name is not a device.
expect_exit 0 "$BIN" bench memory --device cpu --op copy -b 1M -e 16M -f 2 --iters 3 --db "$SCRATCH/host.db"
host=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select name from device").fetchone()[0])' "$SCRATCH/host.db")
expect_exit 0 "$BIN" predict memory --db "$SCRATCH/host.db" --device "$host" --op copy -b 4M -e 4M
case "$OUT" in *measured*) ;; *) fail "predict on $host: $OUT";; esac
expect_exit 2 "$BIN" predict gemm --db "$SCRATCH/host.db" --device "$host" --shape 64x64x64
one_line_error
case "$ERR" in *"is not a catalog device, and the store has no measurement or fitted model of it that prices bf16 GEMMs"*) ;; *) fail "host gemm: $ERR";; esac
expect_exit 2 "$BIN" predict memory --device "$host" --op copy -b 4M -e 4M
case "$ERR" in *"unknown device"*) ;; *) fail "host without --db: $ERR";; esac
# Sampling options with no variable-length data to sample: said, not ignored.
for opt in "--seed 3" "--batches 5" "--long-seqs truncate" "--pad-to 64" "--batch-tokens 8192"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --strategy tp=1,gbs=64 $opt
  one_line_error
  case "$ERR" in *"sample variable-length data: give --seq-lengths FILE or --seq-dist too"*) ;; *) fail "$opt alone: $ERR";; esac
done
# rank --objective memory on variable-length data: ordered by memory.
expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --gbs 64 --objective memory --seq-dist fixed:1024 --batches 2 --top 6 --format json
python3 -c 'import json,sys; m=[p["memory_per_gpu_gib"] for p in json.load(open(sys.argv[1]))["strategies"]]; assert m == sorted(m) and len(m) == 6, m' "$SCRATCH/out" \
  || fail "rank --objective memory on variable-length data is not ordered by memory"
echo "input_mistakes: ok"
