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
echo "requests: ok"
