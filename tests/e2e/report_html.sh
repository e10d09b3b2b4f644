# report: one self-contained HTML page whose SVG plots carry titles, labelled axes with units,
# legends and data; rendered by headless Chromium into a screenshot that is not blank.
# Chromium is required (scripts/install-deps.sh installs Debian's package).
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures
DB=$SCRATCH/store.db

python3 "$SRC/tests/e2e/compare_gen.py" "$SCRATCH/gen" 5 --gpu
"$BIN" import csv --db "$DB" "$SCRATCH/gen"/{gemm,memory,collective}.csv >/dev/null
"$BIN" import kineto --db "$DB" "$F/kineto/train_step.json" >/dev/null
"$BIN" import nccl-tests --db "$DB" "$F/nccl/allgather_2node_old.txt" >/dev/null

expect_exit 0 "$BIN" report --db "$DB" --out "$SCRATCH/report.html" --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --gbs 64
grep -q "report.html: report of 5 runs" <<<"$OUT" || fail "$OUT"

python3 - "$SCRATCH/report.html" <<'PY' || fail "report structure"
import sys
from html.parser import HTMLParser

class Svgs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.cur, self.text_of = [], None, None
        self.external = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a: self.external.append((tag, a[k]))
        if tag in ("script", "link", "iframe", "img"): self.external.append((tag, a))
        if tag == "svg" and "plot" in a.get("class", ""):
            self.cur = {"title": a.get("aria-label"), "texts": [], "series": 0, "circles": 0, "lines": 0,
                        "legend": False, "axis": []}
            self.plots.append(self.cur)
        elif self.cur is not None:
            cls = a.get("class", "")
            if tag == "g" and cls == "series": self.cur["series"] += 1
            if tag == "g" and cls == "legend": self.cur["legend"] = True
            if tag == "circle": self.cur["circles"] += 1
            if tag in ("polyline", "rect") and self.cur["series"]: self.cur["lines"] += 1
            if tag == "text": self.text_of = cls
    def handle_endtag(self, tag):
        if tag == "svg": self.cur = None
        if tag == "text": self.text_of = None
    def handle_data(self, data):
        if self.cur is not None and self.text_of is not None:
            self.cur["texts"].append(data)
            if self.text_of.startswith("axis-label"): self.cur["axis"].append(data)

p = Svgs()
p.feed(open(sys.argv[1], encoding="utf-8").read())
assert not p.external, f"the report must not load anything: {p.external}"
titles = [x["title"] for x in p.plots]
expected = {
    "all_gather: bus bandwidth": ["message size (bytes, log scale)", "bus bandwidth (GB/s)"],
    "all_reduce: bus bandwidth": ["message size (bytes, log scale)", "bus bandwidth (GB/s)"],
    "GEMM throughput": ["GEMM size (GFLOP per call, log scale)", "throughput (TFLOP/s)"],
    "GEMM fraction of peak": ["GEMM size (GFLOP per call, log scale)", "fraction of datasheet peak"],
    "Memory bandwidth": ["buffer size (bytes, log scale)", "bandwidth (GB/s)"],
    "Traced GPU time per kernel class": ["time (ms, summed over events)"],
    "gpt3-1.3b on dgx-a100 (16 GPUs, global batch 64)": ["memory per GPU (GiB)", "step time (s)"],
}
for title, axes in expected.items():
    plot = next((x for x in p.plots if x["title"] == title), None)
    assert plot, f"missing plot '{title}'; have {titles}"
    assert plot["axis"] == axes, (title, plot["axis"])
    assert plot["series"] >= 1, (title, "no series")
    if title.startswith("Traced"):
        assert {"gemm", "communication", "elementwise"} <= set(plot["texts"]), plot["texts"]
    else:
        assert plot["legend"] and plot["circles"] >= 5, (title, plot)
ag = next(x for x in p.plots if x["title"] == "all_gather: bus bandwidth")
# Each measured rank count and fabric level is its own series, named in the legend (one device
# in the store: the device is not repeated in every label).
assert {"16 ranks, inter-node", "4 ranks, intra-node", "8 ranks, intra-node"} <= set(ag["texts"]), ag["texts"]
plan = next(x for x in p.plots if x["title"].startswith("gpt3"))
assert "feasible frontier" in plan["texts"] and "device memory" in plan["texts"], plan["texts"]
gemm = next(x for x in p.plots if x["title"] == "GEMM throughput")
assert {"bf16", "tf32", "fp32"} <= set(gemm["texts"]), gemm["texts"]
print(f"{len(p.plots)} plots ok")
PY

# A store with GEMMs only, on a device the catalog does not know: the other sections say so.
printf 'device,dtype,m,n,k,time_ns\nSome CPU,fp32,256,256,256,90000\nSome CPU,fp32,512,512,512,700000\n' >"$SCRATCH/g.csv"
"$BIN" import csv --db "$SCRATCH/small.db" "$SCRATCH/g.csv" >/dev/null
expect_exit 0 "$BIN" report --db "$SCRATCH/small.db" -o "$SCRATCH/small.html"
grep -q "No collective measurements" "$SCRATCH/small.html" || fail "empty sections are not explained"
grep -q "No catalog device matches Some CPU" "$SCRATCH/small.html" || fail "unmatched device not explained"
grep -q "GEMM throughput" "$SCRATCH/small.html" || fail "GEMM plot missing"

# Bad input: exit 2, one line.
expect_exit 2 "$BIN" report --db "$SCRATCH/missing.db"; one_line_error
expect_exit 2 "$BIN" report --db "$DB" --model gpt3-1.3b; one_line_error
expect_exit 2 "$BIN" report --db "$DB" --model gpt3-1.3b --cluster dgx-a100; one_line_error
expect_exit 2 "$BIN" report --db "$DB" --model nope --cluster dgx-a100 --gbs 8; one_line_error
expect_exit 2 "$BIN" report --db "$DB" -o "$SCRATCH/no/such/dir/r.html"; one_line_error

# Training steps: a trace's ProfilerStep spans beside the steps a plan is priced at on sampled
# variable-length batches, and the lengths drawn.
"$BIN" import kineto --db "$SCRATCH/steps.db" "$F/kineto/profiler_steps.json" >/dev/null
expect_exit 0 "$BIN" db info "$SCRATCH/steps.db"
grep -q "step 3" <<<"$OUT" || fail "no steps stored: $OUT"
expect_exit 0 "$BIN" report --db "$SCRATCH/steps.db" -o "$SCRATCH/steps.html" --model llama3-8b --cluster dgx-h100 \
  --gpus 8 --strategy "tp=8,mbs=1,gbs=64,max_tokens=8192" --seq-dist "lognormal:median=800,sigma=1,max=8192" --batches 20
python3 - "$SCRATCH/steps.html" <<'PY' || fail "steps section"
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
assert 'aria-label="Step times"' in html and 'aria-label="Sequence lengths"' in html, "no step plots"
assert "measured: " in html and "(3 steps)" in html, "no measured steps"
assert "predicted: llama3-8b on dgx-h100" in html and "(20 batches)" in html, "no prediction"
PY
expect_exit 2 "$BIN" report --db "$SCRATCH/steps.db" --model llama3-8b --cluster dgx-h100 --strategy "tp=8"
case "$ERR" in *"--strategy and --seq-lengths (or --seq-dist) go together"*) ;; *) fail "pairing: $ERR";; esac

# Headless Chromium renders it: a screenshot with colours and ink, the series colours in it.
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || fail "chromium is not installed: the report's rendering test needs it (apt-get install chromium; scripts/install-deps.sh)"
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$SCRATCH/chromium" \
  --screenshot="$SCRATCH/report.png" --window-size=1400,2400 "file://$SCRATCH/report.html" >"$SCRATCH/chromium.log" 2>&1 \
  || fail "chromium failed: $(tail -3 "$SCRATCH/chromium.log")"
[ -s "$SCRATCH/report.png" ] || fail "chromium wrote no screenshot: $(tail -3 "$SCRATCH/chromium.log")"
python3 "$SRC/tests/e2e/png_check.py" "$SCRATCH/report.png" --colour 0072B2 --colour D55E00 || fail "the screenshot looks blank"
echo "report_html: ok"
