#!/usr/bin/env bash
# One request, one report (issue 36): estimate and rank run a saved request (--request), the
# JSON they print holds the request that reproduces it, options beside --request replace its
# keys, and a bad request file is one line.
source "$(dirname "$0")/../e2e_lib.sh"

# A report's JSON, run again, is the same report; its text is the text the options give.
expect_exit 0 "$BIN" estimate --model gpt3-13b --cluster dgx-a100 --gpus 32 --strategy tp=8,pp=2,mbs=1,gbs=256 --seq-len 4096 --format json
cp "$SCRATCH/out" "$SCRATCH/report.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["request"]; assert r == {"command": "estimate", "model": "gpt3-13b", "cluster": "dgx-a100", "gpus": 32, "software": "megatron-core", "seq_len": 4096, "strategy": "tp=8,pp=2,mbs=1,gbs=256"}, r' "$SCRATCH/report.json" \
  || fail "the request in the report: $(head -c 300 "$SCRATCH/report.json")"
expect_exit 0 "$BIN" estimate --request "$SCRATCH/report.json" --format json
cmp -s "$SCRATCH/out" "$SCRATCH/report.json" || fail "--request of a report's JSON gave another report"
expect_exit 0 "$BIN" estimate --request "$SCRATCH/report.json"
cp "$SCRATCH/out" "$SCRATCH/from_request.txt"
expect_exit 0 "$BIN" estimate --model gpt3-13b --cluster dgx-a100 --gpus 32 --strategy tp=8,pp=2,mbs=1,gbs=256 --seq-len 4096
cmp -s "$SCRATCH/out" "$SCRATCH/from_request.txt" || fail "text of --request differs from the options'"

# A what-if: options beside --request replace its keys (a --plan given replaces its strategy).
expect_exit 0 "$BIN" estimate --request "$SCRATCH/report.json" --gpus 64 --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["gpus"] == 64 and j["strategy"]["dp"] == 4 and j["request"]["seq_len"] == 4096, j["request"]' "$SCRATCH/out" \
  || fail "--gpus beside --request"

# A saved rank request, written by hand.
cat > "$SCRATCH/rank.json" <<'JSON'
{"command": "rank", "model": "gpt3-1.3b", "cluster": "dgx-a100", "gpus": 8, "gbs": 64, "top": 3}
JSON
expect_exit 0 "$BIN" rank --request "$SCRATCH/rank.json" --format csv
[ "$(wc -l < "$SCRATCH/out")" = 4 ] || fail "rank --request: $OUT"
expect_exit 0 "$BIN" rank --request "$SCRATCH/rank.json" --top 5 --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["strategies"]) == 5 and j["request"]["top"] == 5' "$SCRATCH/out" \
  || fail "--top beside --request"

# Bad requests: one line each, exit 2.
printf '{"command": "rank", "model": "gpt3-1.3b", "cluster": "dgx-a100", "gbs": 64, "topp": 3}' > "$SCRATCH/typo.json"
expect_exit 2 "$BIN" rank --request "$SCRATCH/typo.json"
one_line_error
case "$ERR" in *"'topp'"*"top"*) ;; *) fail "misspelt key: $ERR";; esac
printf '{"command": "rank", "model": ' > "$SCRATCH/cut.json"
expect_exit 2 "$BIN" estimate --request "$SCRATCH/cut.json"
one_line_error
case "$ERR" in *"malformed JSON"*) ;; *) fail "cut file: $ERR";; esac
expect_exit 2 "$BIN" estimate --request "$SCRATCH/missing.json"
one_line_error
expect_exit 2 "$BIN" estimate --cluster dgx-a100 --strategy tp=8
one_line_error
case "$ERR" in *"--model is required"*) ;; *) fail "no model: $ERR";; esac
expect_exit 2 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100
case "$ERR" in *"--gbs is required"*) ;; *) fail "no gbs: $ERR";; esac
# CSV is the fixed-length search's: refused before any search for variable-length data.
expect_exit 2 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --gbs 64 --seq-dist fixed:1024 --format csv
one_line_error
# The sibling planners run saved requests too (the Python module's dicts as files), options
# beside --request replacing their keys.
ONNX="$SRC/tests/data/onnx/cnn-dynamic.onnx"
printf '{"command": "place", "model": "%s", "cluster": "dgx-a100", "gpus": 4}' "$ONNX" > "$SCRATCH/place.json"
expect_exit 0 "$BIN" place --request "$SCRATCH/place.json" --format json
cp "$SCRATCH/out" "$SCRATCH/placed.json"
expect_exit 0 "$BIN" place --model "$ONNX" --cluster dgx-a100 --gpus 4 --format json
cmp -s "$SCRATCH/out" "$SCRATCH/placed.json" || fail "place --request differs from its options"
expect_exit 0 "$BIN" place --request "$SCRATCH/place.json" --gpus 8 --format json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["gpus"] == 8' "$SCRATCH/out"   || fail "--gpus beside place --request"
TABLES="$SRC/data/examples/criteo-kaggle-tables.csv"
printf '{"command": "shard-tables", "tables": "%s", "cluster": "dgx-a100", "gpus": 8, "batch": 4096, "dense_mlp": [[13, 512, 256, 64], "415,512,256,1"]}' "$TABLES" > "$SCRATCH/shard.json"
expect_exit 0 "$BIN" shard-tables --request "$SCRATCH/shard.json" --format json
sed 's/"elapsed_s": [0-9.e+-]*/"elapsed_s": 0/' "$SCRATCH/out" > "$SCRATCH/sharded.json"
expect_exit 0 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100 --gpus 8 --batch 4096 \
  --dense-mlp 13,512,256,64 --dense-mlp 415,512,256,1 --format json
sed 's/"elapsed_s": [0-9.e+-]*/"elapsed_s": 0/' "$SCRATCH/out" | cmp -s - "$SCRATCH/sharded.json" \
  || fail "shard-tables --request differs from its options"
printf '{"command": "schedule", "jobs": "%s", "cluster": "dgx-h100", "gpus": 64, "solver": "heuristic"}' \
  "$SRC/tests/fixtures/jobs/sweep.json" > "$SCRATCH/schedule.json"
expect_exit 0 "$BIN" schedule --request "$SCRATCH/schedule.json" --format json
cp "$SCRATCH/out" "$SCRATCH/scheduled.json"
expect_exit 0 "$BIN" schedule --jobs "$SRC/tests/fixtures/jobs/sweep.json" --cluster dgx-h100 --gpus 64 \
  --solver heuristic --format json
cmp -s "$SCRATCH/out" "$SCRATCH/scheduled.json" || fail "schedule --request differs from its options"
# --search beside a jobs request replaces its jobs: the search's report (its solver key refused).
expect_exit 2 "$BIN" schedule --request "$SCRATCH/schedule.json" --search "$SRC/tests/fixtures/search/llama8b.json"
one_line_error
case "$ERR" in *"'solver'"*) ;; *) fail "a search request with a solver: $ERR";; esac
printf '{"command": "schedule", "jobs": "%s", "cluster": "dgx-h100", "gpus": 64}' \
  "$SRC/tests/fixtures/jobs/sweep.json" > "$SCRATCH/jobs.json"
expect_exit 0 "$BIN" schedule --request "$SCRATCH/jobs.json" --search "$SRC/tests/fixtures/search/llama8b.json" --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert "runs" in j, list(j)' "$SCRATCH/out" \
  || fail "--search beside a jobs request"
printf '{"command": "split-learning", "model": "%s", "devices": "%s", "server": "a100-sxm4-80gb"}' \
  "$SRC/data/onnx/resnet50.onnx" "$SRC/data/examples/edge-devices.json" > "$SCRATCH/split.json"
expect_exit 0 "$BIN" split-learning --request "$SCRATCH/split.json" --inference --format json
cp "$SCRATCH/out" "$SCRATCH/split_out.json"
expect_exit 0 "$BIN" split-learning --model "$SRC/data/onnx/resnet50.onnx" --devices "$SRC/data/examples/edge-devices.json" \
  --server a100-sxm4-80gb --inference --format json
cmp -s "$SCRATCH/out" "$SCRATCH/split_out.json" || fail "split-learning --request differs"
# Another command's request, a missing required option: one line each.
expect_exit 2 "$BIN" place --request "$SCRATCH/shard.json"
one_line_error
case "$ERR" in *"'shard-tables' where place was asked"*) ;; *) fail "another command's request: $ERR";; esac
expect_exit 2 "$BIN" place --cluster dgx-a100
one_line_error
case "$ERR" in *"--model is required (or --request FILE)"*) ;; *) fail "place without a model: $ERR";; esac
expect_exit 2 "$BIN" shard-tables --tables "$TABLES" --cluster dgx-a100
case "$ERR" in *"--batch is required"*) ;; *) fail "shard-tables without a batch: $ERR";; esac
echo "requests: ok"
