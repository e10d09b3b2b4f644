#!/usr/bin/env bash
# The CLI's rough edges (issue 13): each gets one clear line and the right exit code.
source "$(dirname "$0")/../e2e_lib.sh"

check_exit() {  # check_exit CODE PATTERN CMD...: exit CODE, one line on stderr, containing PATTERN
  local code=$1 pattern=$2; shift 2
  expect_exit "$code" "$BIN" "$@"
  one_line_error
  case "$ERR" in *"$pattern"*) ;; *) fail "error for '$*' lacks '$pattern': $ERR";; esac
}
# Catalog names: the closest one suggested.
check_exit 2 "did you mean 'llama3-8b'?" estimate --model llama3-8bb --cluster dgx-h100 --strategy tp=8,mbs=1,gbs=8
check_exit 2 "did you mean 'dgx-h100'?" estimate --model llama3-8b --cluster dgx-h10 --strategy tp=8,mbs=1,gbs=8
check_exit 2 "strategy key 'tp' is given twice" estimate --model llama3-8b --cluster dgx-h100 --strategy tp=8,tp=4,mbs=1,gbs=8
printf '{"name": "x", "layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn_hidden": 1024, "vocab": 1000, "seq_len": 128, "activaton": "swiglu"}\n' >"$SCRATCH/m.json"
check_exit 2 "unknown field 'activaton' (did you mean 'activation'?)" estimate --model "$SCRATCH/m.json" --cluster dgx-h100 --strategy tp=1,mbs=1,gbs=8
# Store paths.
check_exit 2 "the store path is empty" db info ""
check_exit 2 "is a directory, not a store file" db info "$SCRATCH"
check_exit 2 "no such store file; check the path" db migrate "$SCRATCH/typo.db"
[ ! -e "$SCRATCH/typo.db" ] || fail "db migrate created a mistyped store"
check_exit 2 "it is a directory" import kineto --db "$SCRATCH/x.db" "$SCRATCH"
printf 'device,dtype,m,n,k,time_ns\nA,bf16,64,64,64,-5\n' >"$SCRATCH/neg.csv"
check_exit 2 "column time_ns holds -5, which is negative" import csv --db "$SCRATCH/x.db" "$SCRATCH/neg.csv"
# Output that cannot be written is a failure.
if [ -w /dev/full ]; then
  set +e
  "$BIN" catalog >/dev/full 2>"$SCRATCH/err"
  code=$?
  set -e
  [ "$code" = 1 ] || fail "a failed write exited $code"
  grep -q "^shardcost: cannot write the output: No space left on device" "$SCRATCH/err" || fail "$(cat "$SCRATCH/err")"
fi
# Output paths are checked before the work: a traced program does not run for nothing.
check_exit 2 "--perfetto $SCRATCH/no/such/dir/t.json: the folder $SCRATCH/no/such/dir does not exist" \
  trace --db "$SCRATCH/t.db" --perfetto "$SCRATCH/no/such/dir/t.json" -- sh -c 'echo ran >&2'
check_exit 2 "--output $SCRATCH is a folder" report --db "$SCRATCH/t.db" --out "$SCRATCH"
check_exit 2 "--output $SCRATCH/no/x.csv: the folder $SCRATCH/no does not exist" export --db "$SCRATCH/t.db" --table runs -o "$SCRATCH/no/x.csv"
# -o/--output on every command: the file is written whole when the command succeeds, and left
# as it was (no temporary file beside it) when it fails.
expect_exit 0 "$BIN" catalog -o "$SCRATCH/catalog.txt"
[ -z "$OUT" ] || fail "catalog -o still printed: $OUT"
grep -q "^devices" "$SCRATCH/catalog.txt" || fail "catalog -o wrote: $(head -3 "$SCRATCH/catalog.txt")"
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --strategy tp=8,mbs=1,gbs=8 --format json --output "$SCRATCH/e.json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$SCRATCH/e.json" || fail "estimate --output is not JSON"
check_exit 2 "did you mean 'llama3-8b'?" estimate --model llama3-8bb --cluster dgx-h100 --strategy tp=8,mbs=1,gbs=8 -o "$SCRATCH/catalog.txt"
grep -q "^devices" "$SCRATCH/catalog.txt" || fail "a failed command replaced its -o file"
[ -z "$(ls "$SCRATCH" | grep '\.tmp-')" ] || fail "a temporary output file was left: $(ls "$SCRATCH")"
expect_exit 2 "$BIN" catalog -o "$SCRATCH/no/such/dir/c.txt"
one_line_error
# ... and a device is written to, never replaced by a file.
expect_exit 0 "$BIN" catalog -o /dev/null
[ -c /dev/null ] || fail "catalog -o /dev/null replaced the device"
# A command that ran and found nothing feasible (exit 1) keeps what it printed.
expect_exit 1 "$BIN" rank --model llama3-70b --cluster dgx-h100 --gpus 1 --gbs 8 -o "$SCRATCH/rank.txt"
[ -e "$SCRATCH/rank.txt" ] || fail "rank -o with nothing feasible wrote no file"
# A merge whose input is bad leaves no empty output behind.
check_exit 2 "no such store file" db merge "$SCRATCH/merged.db" "$SCRATCH/missing.db"
[ ! -e "$SCRATCH/merged.db" ] || fail "a failed merge created its output"
# Benchmarks check their buffers against the memory there is, before allocating.
check_exit 2 "needs 447.0 GiB of host memory" bench gemm --device cpu --shape 200000x200000x200000
# estimate of a plan that does not fit prints it whole and exits 1, saying why.
expect_exit 1 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 8 --strategy tp=1,mbs=1,gbs=8
grep -q "does not fit" <<<"$OUT" || fail "the infeasible estimate was not printed: $OUT"
one_line_error
case "$ERR" in *"the strategy does not fit: needs "*" GiB of "*) ;; *) fail "estimate infeasible: $ERR";; esac
# rank that finds nothing feasible exits 1 and says what would fit.
expect_exit 1 "$BIN" rank --model llama3-70b --cluster dgx-h100 --gpus 1 --gbs 8
case "$ERR" in *"no strategy fits llama3-70b on 1 GPUs; the fewest GPUs (doubling) that hold it: "*"(rank --gpus "*) ;; *) fail "rank hint: $ERR";; esac
# Mistyped commands are named, with the closest one.
check_exit 2 "unknown command 'infoo' for 'shardcost db' (did you mean 'info'?)" db infoo x
check_exit 2 "unknown command 'frobnicate' for 'shardcost'" frobnicate
# Deep nesting in a model file: one line, no crash.
python3 -c "print('{\"layers\": ' + '['*100000 + ']'*100000 + '}')" >"$SCRATCH/deep.json"
check_exit 2 "nests deeper than 64 levels" estimate --model "$SCRATCH/deep.json" --cluster dgx-h100 --strategy tp=1,gbs=8
# Sizes past any machine are refused at once, not run for minutes.
check_exit 2 "--gpus 1000000000 is above 1048576" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 1000000000 --strategy tp=1
check_exit 2 "--warmup 2147483647 is above 1000000" bench gemm --device cpu --shape 8x8x8 --iters 1 --warmup 2147483647
check_exit 2 "--batches 10000000 is above 100000" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --strategy tp=1,gbs=64 --seq-dist lognormal:median=1024,sigma=1.5 --batches 10000000
printf '{"device": "a100-sxm4-80gb", "nodes": 2147483647, "gpus_per_node": 8, "intra_node_bandwidth_GBps": 300, "inter_node_bandwidth_GBps": 25}\n' >"$SCRATCH/huge.json"
check_exit 2 "a cluster holds at most 1048576" estimate --model gpt3-1.3b --cluster "$SCRATCH/huge.json" --strategy tp=1
# A store name with a byte that is not UTF-8 still exports as JSON.
printf 'device,host,dtype,m,n,k,time_ns\nA,h\377st,bf16,64,64,64,5\n' >"$SCRATCH/badutf8.csv"
expect_exit 0 "$BIN" import csv --db "$SCRATCH/u.db" "$SCRATCH/badutf8.csv"
expect_exit 0 "$BIN" export --db "$SCRATCH/u.db" --table gemm --format json
python3 -c "import json,sys; json.loads(sys.argv[1])" "$OUT" || fail "export json with a bad byte: $OUT"
echo "cli_edges: ok"
