#!/usr/bin/env bash
# Files that would store garbage or drop rows with exit 0 are refused, one line naming the file
# and line (issue 37, item 5): nccl-tests rows with a negative size, cut short, with a time of
# 0 us, a size past any buffer, a header that does not name the rows' columns, a NUL byte; -J
# JSON with a time as text or 0; CSV tables with a column twice, a 0 ns time, percentiles out
# of order.
source "$(dirname "$0")/../e2e_lib.sh"
N=$SRC/tests/fixtures/nccl
A=$N/all_reduce_8gpu_v2.13.txt

sed 's/^           8             2/          -8             2/' "$A" >"$SCRATCH/neg.txt"
awk 'NR==18{print "          16             4     float     sum      -1    24.10    0.00"; next} {print}' "$A" >"$SCRATCH/cut.txt"
sed 's/    24.10    0.00    0.00       0    23.74/     0.00    0.00    0.00       0    23.74/' "$A" >"$SCRATCH/zero.txt"
sed 's/^           8             2/9223372036854775807             2/' "$A" >"$SCRATCH/huge.txt"
sed 's/ #wrong     time   algbw   busbw  #wrong/     time   algbw   busbw/' "$A" >"$SCRATCH/header.txt"
{ printf 'x\0y\n'; cat "$A"; } >"$SCRATCH/nul.txt"
for case in "neg:size -8 is negative" "cut:7 values under a header of 13 columns (a row cut short)" \
            "zero:time 0 us is not a measurement" "huge:beyond any GPU's buffers" \
            "header:13 values under a header of 11 columns" "nul:a NUL byte"; do
  name=${case%%:*}; want=${case#*:}
  expect_exit 2 "$BIN" import nccl-tests --db "$SCRATCH/never.db" "$SCRATCH/$name.txt"
  one_line_error
  case "$ERR" in *"$name.txt:"*"$want"*) ;; *) fail "$name: $ERR";; esac
done
# A file refused at the door leaves no store behind (an empty one was made before).
[ ! -e "$SCRATCH/never.db" ] || fail "a refused import made $SCRATCH/never.db"
expect_exit 2 "$BIN" db delete-run "$SCRATCH/nowhere.db" 1
one_line_error
[ ! -e "$SCRATCH/nowhere.db" ] || fail "db delete-run made an empty store"

python3 - "$N/reduce_scatter_2node.json" "$SCRATCH" <<'PY'
import json, sys
src, out = sys.argv[1], sys.argv[2]
for name, value in (("text", "as text"), ("zero", 0)):
    j = json.load(open(src))
    first = j["results"][0]["out_of_place"]
    first["time"] = str(first["time"]) if value == "as text" else 0
    json.dump(j, open(f"{out}/json_{name}.json", "w"))
PY
expect_exit 2 "$BIN" import nccl-tests --db "$SCRATCH/never.db" "$SCRATCH/json_text.json"
case "$ERR" in *"results[0].out_of_place: time \""*"\" is not a number of microseconds"*) ;; *) fail "json text: $ERR";; esac
expect_exit 2 "$BIN" import nccl-tests --db "$SCRATCH/never.db" "$SCRATCH/json_zero.json"
case "$ERR" in *"time 0 us is not a measurement"*) ;; *) fail "json zero: $ERR";; esac

"$BIN" import nccl-tests --db "$SCRATCH/ok.db" "$A" >/dev/null
"$BIN" export --db "$SCRATCH/ok.db" --table collective --format csv -o "$SCRATCH/c.csv"
python3 - "$SCRATCH" <<'PY'
import csv, sys
d = sys.argv[1]
rows = list(csv.reader(open(f"{d}/c.csv")))
h = rows[0]
t, p10, p90 = h.index("time_ns"), h.index("time_p10_ns"), h.index("time_p90_ns")
def write(name, header, body):
    with open(f"{d}/{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(body)
write("dup", h + ["time_ns"], [r + ["5"] for r in rows[1:]])
zero = [r[:] for r in rows[1:]]; zero[0][t] = "0"; write("zero", h, zero)
order = [r[:] for r in rows[1:]]; order[0][p10] = "900"; order[0][p90] = "100"; write("order", h, order)
PY
expect_exit 2 "$BIN" import csv --db "$SCRATCH/never2.db" "$SCRATCH/dup.csv"
case "$ERR" in *"column 'time_ns' appears twice in the header"*) ;; *) fail "dup: $ERR";; esac
expect_exit 2 "$BIN" import csv --db "$SCRATCH/never2.db" "$SCRATCH/zero.csv"
case "$ERR" in *"zero.csv:2: time_ns is 0, not a measured time"*) ;; *) fail "csv zero: $ERR";; esac
expect_exit 2 "$BIN" import csv --db "$SCRATCH/never2.db" "$SCRATCH/order.csv"
case "$ERR" in *"order.csv:2: time_p10_ns 900, time_ns 24100 and time_p90_ns 100 are not in order"*) ;; *) fail "order: $ERR";; esac
expect_exit 0 "$BIN" import csv --db "$SCRATCH/again.db" "$SCRATCH/c.csv"
[ ! -e "$SCRATCH/never.db" ] && [ ! -e "$SCRATCH/never2.db" ] || fail "a refused import made a store"
echo "import_garbage: ok"
