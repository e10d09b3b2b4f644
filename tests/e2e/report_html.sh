# report: one self-contained HTML page whose SVG plots carry titles, labelled axes with units,
# legends naming every series in full, and data (bandwidth of devices far apart on a log axis);
# rendered by headless Chromium into a screenshot that is not blank. UPDATE_SCREENSHOT=1 also
# writes the whole page to docs/report-screenshot.png (the README's picture).
# Chromium is required (scripts/install-deps.sh installs Debian's package).
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures
DB=$SCRATCH/store.db

python3 "$SRC/tests/e2e/compare_gen.py" "$SCRATCH/gen" 5 --gpu
python3 "$SRC/tests/e2e/compare_gen.py" "$SCRATCH/host" 6
"$BIN" import csv --db "$DB" "$SCRATCH/gen"/{gemm,memory,collective}.csv >/dev/null
# A host's memory beside the GPU's: two devices some 100x apart on one bandwidth plot.
"$BIN" import csv --db "$DB" "$SCRATCH/host/memory.csv" >/dev/null
"$BIN" import kineto --db "$DB" "$F/kineto/train_step.json" >/dev/null
"$BIN" import nccl-tests --db "$DB" "$F/nccl/allgather_2node_old.txt" >/dev/null

expect_exit 0 "$BIN" report --db "$DB" --out "$SCRATCH/report.html" --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --gbs 64
grep -q "report.html: report of 6 runs" <<<"$OUT" || fail "$OUT"

# Checks every plot of a report (python3 plots.py FILE...): nothing loaded from outside, a title,
# both axes labelled, and every series named in full in visible text (a legend entry or a
# bar's label; tooltips do not count), a wrapped name's lines taken together.
cat >"$SCRATCH/plots.py" <<'PY'
import sys
from html.parser import HTMLParser

class Svgs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.cur, self.text, self.in_legend, self.in_title = [], None, None, False, 0
        self.external = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a: self.external.append((tag, a[k]))
        if tag in ("script", "link", "iframe", "img"): self.external.append((tag, a))
        if tag == "svg" and "plot" in a.get("class", ""):
            self.cur = {"title": a.get("aria-label"), "texts": [], "legend_texts": [], "names": [],
                        "circles": 0, "legend": False, "axis": {}, "y_ticks": []}
            self.plots.append(self.cur)
        elif self.cur is not None:
            cls = a.get("class", "")
            if tag == "g" and cls == "series": self.cur["names"].append(a.get("data-name"))
            if tag == "g" and cls == "legend": self.cur["legend"] = self.in_legend = True
            if tag == "circle": self.cur["circles"] += 1
            if tag == "title": self.in_title += 1
            if tag == "text": self.text = {"class": cls, "anchor": a.get("text-anchor"), "data": []}
    def handle_endtag(self, tag):
        if tag == "svg": self.cur = None
        if tag == "g": self.in_legend = False
        if tag == "title" and self.in_title: self.in_title -= 1
        if tag == "text" and self.text is not None and self.cur is not None:
            t, joined = self.text, " ".join(self.text["data"])
            self.cur["texts"].append(joined)
            if self.in_legend: self.cur["legend_texts"].append(joined)
            if t["class"].startswith("axis-label"): self.cur["axis"][t["class"].split()[-1]] = joined
            if t["class"] == "tick" and t["anchor"] == "end": self.cur["y_ticks"].append(joined)
            self.text = None
    def handle_data(self, data):
        if self.text is not None and not self.in_title: self.text["data"].append(data)

def squeeze(s):
    return "".join(s.split())

def parse(path):
    p = Svgs()
    p.feed(open(path, encoding="utf-8").read())
    assert not p.external, f"the report must not load anything: {p.external}"
    for plot in p.plots:
        assert plot["title"], plot
        for axis in ("x", "y"):
            assert plot["axis"].get(axis, "").strip(), (plot["title"], f"no {axis} axis label", plot["axis"])
        shown = {squeeze(t) for t in (plot["legend_texts"] if plot["legend"] else plot["texts"])}
        for name in plot["names"]:
            assert squeeze(name) in shown, (plot["title"], f"series '{name}' not shown in full", shown)
    return p.plots

if __name__ == "__main__":
    for f in sys.argv[1:]:
        print(f"{f}: {len(parse(f))} plots, every one with both axis labels and every series named")
PY

python3 - "$SCRATCH/report.html" <<'PY' || fail "report structure"
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from plots import parse
plots = parse(sys.argv[1])
titles = [x["title"] for x in plots]
expected = {
    "all_gather: bus bandwidth": ["message size (bytes, log scale)", "bus bandwidth (GB/s)"],
    "all_reduce: bus bandwidth": ["message size (bytes, log scale)", "bus bandwidth (GB/s)"],
    "GEMM throughput": ["GEMM size (GFLOP per call, log scale)", "throughput (TFLOP/s)"],
    "GEMM fraction of peak": ["GEMM size (GFLOP per call, log scale)", "fraction of datasheet peak"],
    "Memory bandwidth": ["buffer size (bytes, log scale)", "bandwidth (GB/s) (log)"],
    "Traced GPU time per kernel class": ["time (ms, summed over events)", "kernel class"],
    "gpt3-1.3b on dgx-a100 (16 GPUs, global batch 64)": ["memory per GPU (GiB)", "step time (s)"],
}
for title, axes in expected.items():
    plot = next((x for x in plots if x["title"] == title), None)
    assert plot, f"missing plot '{title}'; have {titles}"
    assert [plot["axis"]["x"], plot["axis"]["y"]] == axes, (title, plot["axis"])
    assert plot["names"], (title, "no series")
    if title.startswith("Traced"):
        assert {"gemm", "communication", "elementwise"} <= set(plot["texts"]), plot["texts"]
    else:
        assert plot["legend"] and plot["circles"] >= 5, (title, plot)
ag = next(x for x in plots if x["title"] == "all_gather: bus bandwidth")
# Each measured rank count and fabric level is its own series, named in the legend (one device
# in the store: the device is not repeated in every label).
assert {"16 ranks, inter-node", "4 ranks, intra-node", "8 ranks, intra-node"} <= set(ag["legend_texts"]), ag["legend_texts"]
plan = next(x for x in plots if x["title"].startswith("gpt3"))
assert "feasible frontier" in plan["legend_texts"] and "device memory" in plan["texts"], plan["texts"]
gemm = next(x for x in plots if x["title"] == "GEMM throughput")
assert {"bf16", "tf32", "fp32"} <= set(gemm["legend_texts"]), gemm["legend_texts"]
# The host's memory and the GPU's, 100x apart, on a log axis with decade ticks.
mem = next(x for x in plots if x["title"] == "Memory bandwidth")
assert {"copy · Generic Host CPU @ 3.0GHz", "copy_d2d · NVIDIA A100-SXM4-80GB"} <= set(mem["legend_texts"]), mem["legend_texts"]
assert len(mem["y_ticks"]) >= 2 and all(t in ("1", "10", "100", "1000", "10000") for t in mem["y_ticks"]), mem["y_ticks"]
print(f"{len(plots)} plots ok")
PY

# Collectives of two devices far apart: bus bandwidth on a log axis too.
"$BIN" import csv --db "$SCRATCH/mixed.db" "$SCRATCH/gen/collective.csv" "$SCRATCH/host/collective.csv" >/dev/null
expect_exit 0 "$BIN" report --db "$SCRATCH/mixed.db" -o "$SCRATCH/mixed.html"
python3 - "$SCRATCH/mixed.html" <<'PY' || fail "mixed-device collectives"
import sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from plots import parse
ar = next(x for x in parse(sys.argv[1]) if x["title"] == "all_reduce: bus bandwidth")
assert ar["axis"]["y"] == "bus bandwidth (GB/s) (log)", ar["axis"]
assert "4 ranks, intra-node · Generic Host CPU @ 3.0GHz" in ar["legend_texts"], ar["legend_texts"]
assert len(ar["y_ticks"]) >= 2 and all(t in ("0.1", "1", "10", "100", "1000") for t in ar["y_ticks"]), ar["y_ticks"]
PY

# A store with GEMMs only, on a device the catalog does not know: the other sections say so.
# Long device and kernel names are printed whole: the legend and the table wrap them.
LONG="Some CPU with a long marketing name, 64 cores @ 2.45 GHz (engineering sample, rev B0)"
KERNEL="void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"
printf 'device,dtype,m,n,k,time_ns\nSome CPU,fp32,256,256,256,90000\nSome CPU,fp32,512,512,512,700000\n' >"$SCRATCH/g.csv"
printf '"%s",fp32,256,256,256,80000\n"%s",fp32,512,512,512,600000\n' "$LONG" "$LONG" >>"$SCRATCH/g.csv"
printf 'device,stream,kind,name,start_ns,duration_ns\nSome CPU,7,kernel,"%s",0,52000\n' "$KERNEL" >"$SCRATCH/k.csv"
"$BIN" import csv --db "$SCRATCH/small.db" "$SCRATCH/g.csv" >/dev/null
"$BIN" import csv --db "$SCRATCH/small.db" "$SCRATCH/k.csv" >/dev/null
expect_exit 0 "$BIN" report --db "$SCRATCH/small.db" -o "$SCRATCH/small.html"
python3 - "$SCRATCH/small.html" "$LONG" "$KERNEL" <<'PY' || fail "long names"
import html, sys
sys.path.insert(0, sys.argv[1].rsplit("/", 1)[0])
from plots import parse, squeeze
gemm = next(x for x in parse(sys.argv[1]) if x["title"] == "GEMM throughput")
assert squeeze("fp32 · " + sys.argv[2]) in {squeeze(t) for t in gemm["legend_texts"]}, gemm["legend_texts"]
assert len(gemm["legend_texts"]) == 2, gemm["legend_texts"]
assert "<td class=\"name\">" + html.escape(sys.argv[3], quote=False) + "</td>" in open(sys.argv[1]).read(), "kernel name cut"
PY
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
python3 "$SCRATCH/plots.py" "$SCRATCH/steps.html" >/dev/null || fail "steps plots"
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
# UPDATE_SCREENSHOT=1: the whole page (a window taller than it, cut below its end) for the README.
if [ "${UPDATE_SCREENSHOT:-0}" = 1 ]; then
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$SCRATCH/chromium" \
    --screenshot="$SCRATCH/page.png" --window-size=1400,6000 "file://$SCRATCH/report.html" >"$SCRATCH/chromium.log" 2>&1 \
    || fail "chromium failed: $(tail -3 "$SCRATCH/chromium.log")"
  python3 "$SRC/tests/e2e/png_check.py" "$SCRATCH/page.png" --colour 0072B2 --trim-to "$SRC/docs/report-screenshot.png"
fi
echo "report_html: ok"
