# compare on generated stores: the same host figures with fresh noise pass (exit 0); a 20 %
# slowdown of one table fails (exit 1) and names its rows, with samples and with summaries;
# wide pure noise is not flagged; FILE:RUN, every format, bad input (exit 2, one line).
source "$(dirname "$0")/../e2e_lib.sh"
GEN="python3 $SRC/tests/e2e/compare_gen.py"
norm() { sed -e "s#$SCRATCH#SCRATCH#g"; }

# store NAME SEED [generator options]: CSV tables written by the generator, imported.
store() {
  local name=$1; shift
  $GEN "$SCRATCH/$name" "$@"
  "$BIN" import csv --db "$SCRATCH/$name.db" "$SCRATCH/$name"/{gemm,memory,collective,kernels}.csv >/dev/null
}
store base 1
store again 2
store slow 2 --slow memory
store slow_kernels 3 --slow kernels --factor 1.25
store wide_a 11 --noise 0.15 --iters 10
store wide_b 12 --noise 0.15 --iters 10
store sum_base 1 --no-samples
store sum_again 2 --no-samples
store sum_slow 2 --no-samples --slow gemm

# Same machine, fresh noise: nothing regressed.
expect_exit 0 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/again.db"
grep -q "result: 0 regressed, 0 improved, 0 inconclusive, 63 unchanged; 0 only in BASE, 0 only in NEW" <<<"$OUT" || fail "$OUT"
grep -q "^noise: .*63 rows moved .* together; run-to-run noise of one row ±" <<<"$OUT" || fail "no noise line: $OUT"

# 20 % slower memory: exit 1, every memory row named, nothing else.
expect_exit 1 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow.db"
[ "$(grep -c '^  memory  kind=' <<<"$OUT")" = 18 ] || fail "expected the 18 memory rows named: $OUT"
grep -q "kind=copy bytes=67108864" <<<"$OUT" || fail "row identity missing: $OUT"
grep -q "^REGRESSED (18)" <<<"$OUT" || fail "$OUT"
grep -Eq "^  (gemm|collective|kernels) " <<<"$OUT" && fail "an unchanged table was flagged: $OUT"
expect_exit 0 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow.db" --table gemm,collective,kernels
expect_exit 0 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow.db" --threshold 30%
expect_exit 1 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow.db" --threshold 0.5%
# A bare number has no unit (0.5 as a fraction is 50 %, a gate that never fails): refused.
for t in 0.3 30 0.05; do
  expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow.db" --threshold $t
  one_line_error
  case "$ERR" in *"has no unit; write it in percent"*) ;; *) fail "--threshold $t: $ERR";; esac
done

# Kernels from a trace: each event is a sample of its kernel's duration.
expect_exit 1 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/slow_kernels.db" --table kernels --format json
python3 - "$SCRATCH/out" <<'PY' || fail "kernels json: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["summary"]["regressed"] == 3 and j["summary"]["unchanged"] == 0, j["summary"]
for p in j["pairs"]:
    assert p["method"] == "mann-whitney" and p["base"]["samples"] == 120 and 0.15 < p["change"] < 0.35, p
PY

# Pure noise wider than the threshold: many medians move by more than 5 %, none is called a
# regression; the measurements cannot support a verdict at 5 %, and compare says so (exit 1,
# inconclusive); at a threshold above the noise the same runs pass.
expect_exit 1 "$BIN" compare "$SCRATCH/wide_a.db" "$SCRATCH/wide_b.db" --format json
python3 - "$SCRATCH/out" <<'PY' || fail "noise json: $OUT"
import json, sys
j = json.load(open(sys.argv[1]))
moved = [p for p in j["pairs"] if abs(p["change"]) > 0.05]
assert len(moved) >= 10, f"the noise should move medians past the threshold, moved {len(moved)}"
assert j["summary"]["regressed"] == 0 and j["summary"]["improved"] == 0, j["summary"]
assert j["summary"]["inconclusive"] == len(moved), (j["summary"], len(moved))
assert all(not p["significant"] and p["noise"] > 0.05 for p in moved), moved
assert j["noise"][0]["scatter"] > 0.05, j["noise"]
PY
case "$ERR" in *"inconclusive: noise ±"*"exceeds the threshold 5%"*) ;; *) fail "no inconclusive line: $ERR";; esac
expect_exit 0 "$BIN" compare "$SCRATCH/wide_a.db" "$SCRATCH/wide_b.db" --threshold 60%

# Summaries only (median, p10, p90, iterations): the z-test on medians.
expect_exit 0 "$BIN" compare "$SCRATCH/sum_base.db" "$SCRATCH/sum_again.db" --table gemm,memory,collective
expect_exit 1 "$BIN" compare "$SCRATCH/sum_base.db" "$SCRATCH/sum_slow.db" --format md
[ "$(grep -c '^| gemm |' <<<"$OUT")" = 10 ] || fail "expected the 10 gemm rows: $OUT"
grep -q "median-z" <<<"$OUT" || fail "summaries should use the median z-test: $OUT"
norm <"$SCRATCH/out" >"$SCRATCH/out.norm" && mv "$SCRATCH/out.norm" "$SCRATCH/out"
golden compare_gemm_slow.md

# Runs of one store: FILE:RUN by id or uuid prefix.
"$BIN" import csv --db "$SCRATCH/one.db" "$SCRATCH/base/memory.csv" "$SCRATCH/slow/memory.csv" >/dev/null
# Every row of the run 20 % slower together: with one run a side, a slower machine and a slower
# build look the same, so compare calls nothing regressed and says it cannot tell (exit 1).
expect_exit 1 "$BIN" compare "$SCRATCH/one.db:1" "$SCRATCH/one.db:2"
grep -q "^INCONCLUSIVE: moved past the threshold, within a noise wider than it (18)" <<<"$OUT" || fail "$OUT"
grep -q "^REGRESSED (0)" <<<"$OUT" || fail "$OUT"
grep -q "18 rows moved +19.[0-9]% together" <<<"$OUT" || fail "$OUT"
uuid=$("$BIN" export --db "$SCRATCH/one.db" --table runs | awk -F, 'NR==3 {print $1}')
expect_exit 1 "$BIN" compare "$SCRATCH/one.db:1" "$SCRATCH/one.db:${uuid:0:20}"
# Faster together: inconclusive too, and no gate fails on a speed-up.
expect_exit 0 "$BIN" compare "$SCRATCH/one.db:2" "$SCRATCH/one.db:1"
grep -q "^INCONCLUSIVE: moved past the threshold, within a noise wider than it (18)" <<<"$OUT" || fail "$OUT"
# A whole store against one of its runs: the newest row of each identity is compared.
expect_exit 0 "$BIN" compare "$SCRATCH/one.db" "$SCRATCH/one.db:2"
grep -q "18 older duplicate rows were replaced" <<<"$OUT" || fail "$OUT"

# JUnit: one testcase per matched row, a failure per regression; unmatched rows are skipped.
expect_exit 1 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/one.db:2" --format junit -o "$SCRATCH/junit.xml"
python3 - "$SCRATCH/junit.xml" <<'PY' || fail "junit"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
fails = [c for c in cases if c.find("failure") is not None]
skipped = [c for c in cases if c.find("skipped") is not None]
assert root.get("failures") == "18" and len(fails) == 18, root.attrib
assert len(cases) == 63 and len(skipped) == 45, (len(cases), len(skipped))
assert all(c.get("classname") == "shardcost.memory" for c in fails)
PY

# Real host measurements: a store and its CSV copy compare clean.
expect_exit 0 "$BIN" bench memory --device cpu -b 64K -e 256K -f 4 --iters 5 --warmup 1 --db "$SCRATCH/real.db"
"$BIN" export --db "$SCRATCH/real.db" --table memory -o "$SCRATCH/real.csv"
"$BIN" import csv --db "$SCRATCH/real_copy.db" "$SCRATCH/real.csv" >/dev/null
expect_exit 0 "$BIN" compare "$SCRATCH/real.db" "$SCRATCH/real_copy.db"
grep -q "result: 0 regressed" <<<"$OUT" || fail "$OUT"

# Bad input: exit 2, one line.
expect_exit 2 "$BIN" compare "$SCRATCH/missing.db" "$SCRATCH/base.db"; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/base/gemm.csv"; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/again.db" --threshold lots; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/again.db" --table runs; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/again.db" --format xml; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/base.db" "$SCRATCH/again.db" --alpha 2; one_line_error
expect_exit 2 "$BIN" compare "$SCRATCH/one.db:9" "$SCRATCH/base.db"; one_line_error
grep -q "no run '9'" <<<"$ERR" || fail "$ERR"
expect_exit 2 "$BIN" compare "$SCRATCH/real.db" "$SCRATCH/base.db"; one_line_error
grep -q "nothing to compare" <<<"$ERR" || fail "$ERR"
printf 'device,kind,bytes,time_ns,samples_ns\ncpu,copy,4096,100,1 2 x\n' >"$SCRATCH/bad.csv"
expect_exit 2 "$BIN" import csv --db "$SCRATCH/bad.db" "$SCRATCH/bad.csv"; one_line_error
echo "compare_regression: ok"
