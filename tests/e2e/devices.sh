# devices: the host always; GPUs, or one line saying why there are none.
source "$(dirname "$0")/../e2e_lib.sh"
expect_exit 0 "$BIN" devices
grep -q "^host " <<<"$OUT" || fail "no host line: $OUT"
grep -qE "^(gpus  none: .+|cuda  driver )" <<<"$OUT" || fail "no GPU line: $OUT"
expect_exit 0 "$BIN" devices --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["host"]["logical_cpus"] > 0; assert j["gpus"] or j["gpu_status"]' "$SCRATCH/out" \
  || fail "devices json: $OUT"
expect_exit 2 "$BIN" devices --format csv; one_line_error
echo "devices: ok"
