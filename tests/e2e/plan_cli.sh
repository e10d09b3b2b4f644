#!/usr/bin/env bash
# estimate, rank, catalog and validate through the real binary: golden text, JSON contract,
# exit codes.
source "$(dirname "$0")/../e2e_lib.sh"

# Golden: human output of estimate (deterministic: no timing in it).
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 \
  --strategy "tp=8,pp=4,dp=2,mbs=1,gbs=512,vpp=5,recompute=selective,sp=true,zero=1"
golden estimate_llama3_70b.txt

expect_exit 0 "$BIN" estimate --model "$SRC/tests/fixtures/models/gpt-paper-175b.json" \
  --cluster dgx-a100 --gpus 64 --software megatron-lm-2021 \
  --strategy "tp=8,pp=8,mbs=1,gbs=64,vpp=3,recompute=full"
golden estimate_gpt175b_2021.txt
# ... and that stack had no sequence parallelism: one line, exit 2.
expect_exit 2 "$BIN" estimate --model "$SRC/tests/fixtures/models/gpt-paper-175b.json" \
  --cluster dgx-a100 --gpus 64 --software megatron-lm-2021 \
  --strategy "tp=8,pp=8,mbs=1,gbs=64,vpp=3,recompute=full,sp=true"
one_line_error
case "$ERR" in *"megatron-lm-2021 has no sequence parallelism"*) ;; *) fail "preset check: $ERR";; esac

# A plan file that spells out the same strategy prices the same, line for line (it adds the
# stages' layers); an uneven split moves the numbers.
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 \
  --plan "$SRC/tests/fixtures/plans/llama3-70b-pp4.json"
grep -q '^stage layers    20/20/20/20$' "$SCRATCH/out" || fail "plan output names its stages"
grep -v '^stage layers' "$SCRATCH/out" >"$SCRATCH/plan.txt"
diff -u "$GOLDEN/estimate_llama3_70b.txt" "$SCRATCH/plan.txt" || fail "plan and strategy differ"
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 \
  --plan "$SRC/tests/fixtures/plans/uneven-pp4.json" --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["stage_layers"] == [18, 22, 22, 18], j["stage_layers"]
assert j["strategy"]["pp"] == 4 and j["strategy"]["dp"] == 2 and j["strategy"]["tp"] == 8
PY
expect_exit 2 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 \
  --plan "$SRC/tests/fixtures/plans/llama3-70b-pp4.json" --strategy tp=8

# rank on one node group balances a pipeline's stages (the last holds the head): the split is
# in the text, the CSV and the JSON, and estimate prices it as rank did.
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 256 --fix pp=4 \
  --top 1 --format csv
split=$(python3 - "$SCRATCH/out" <<'PY'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
layers = [int(x) for x in row["layers"].split("/")]
assert len(layers) == 4 and sum(layers) == 32 and layers != [8, 8, 8, 8], layers
assert layers[-1] < 8, layers  # the head's stage holds fewer
print(row["layers"], row["step_time_s"], row["tp"], row["dp"], row["cp"], row["mbs"], row["vpp"])
PY
) || fail "rank's CSV lacks a balanced split"
read -r layers step tp dp cp mbs vpp <<<"$split"
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 256 --fix pp=4 \
  --top 1 --format json
python3 - "$SCRATCH/out" "$layers" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert "/".join(map(str, j["strategies"][0]["strategy"]["layers"])) == sys.argv[2], j
PY
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 64 --format json \
  --strategy "tp=$tp,pp=4,dp=$dp,cp=$cp,mbs=$mbs,gbs=256,vpp=$vpp,zero=1,layers=$layers"
python3 - "$SCRATCH/out" "$step" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert abs(j["step_time_s"] - float(sys.argv[2])) <= 1e-5 * float(sys.argv[2]), j["step_time_s"]
PY

# JSON contract of estimate.
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 \
  --strategy "tp=2,mbs=1,gbs=64,zero=1" --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ["step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_gib",
          "feasible", "reason", "breakdown"]:
    assert k in j, k
assert j["strategy"]["dp"] == 4 and j["strategy"]["gbs"] == 64, j["strategy"]
parts = j["breakdown"]["time"]
assert abs(sum(p["seconds"] for p in parts) - j["step_time_s"]) < 1e-3 * j["step_time_s"]
assert all(p["source"] in ("catalog", "interpolated", "measured") for p in parts)
# Each part's seconds per origin add up to the part (rounded to 6 significant digits).
assert all(abs(sum(p["sources"].values()) - p["seconds"]) <= 1e-5 * max(1, p["seconds"]) for p in parts)
assert j["feasible"] is True and j["reason"] == ""
PY

# rank: the issue's acceptance command.
expect_exit 0 "$BIN" rank --model llama3-70b --cluster dgx-h100 --gpus 64 --gbs 512 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ["evaluated", "feasible", "elapsed_s", "rejected", "strategies"]:
    assert k in j, k
s = j["strategies"]
assert len(s) >= 5, len(s)
assert all(x["feasible"] and x["memory_per_gpu_gib"] <= x["memory_capacity_gib"] <= 80 for x in s)
assert j["evaluated"] == j["feasible"] + sum(j["rejected"].values())
times = [x["step_time_s"] for x in s]
assert times == sorted(times)
PY

# rank text and CSV (golden: the elapsed time goes to stderr only).
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 128 --top 5 \
  --fix "tp=2,zero=1"
golden rank_llama3_8b.txt
expect_exit 0 "$BIN" rank --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 128 --top 3 --format csv
[ "$(wc -l <"$SCRATCH/out")" = 4 ] || fail "csv should have a header and 3 rows"
head -1 "$SCRATCH/out" | grep -q '^rank,step_time_s,' || fail "csv header"

# catalog
expect_exit 0 "$BIN" catalog
golden catalog.txt
expect_exit 0 "$BIN" catalog --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
names = {d["name"] for d in j["devices"]}
assert {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb",
        "b200-sxm-180gb", "l40s"} <= names, names
assert {s["name"] for s in j["systems"]} == {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200",
    "hgx-h800", "gb200-nvl72", "gb300-nvl72", "dgx-b300", "mi300x-8x", "abci-v100"}
# Rack-scale systems: NVLink domains of whole 4-GPU trays.
for s in j["systems"]:
    if s["name"].endswith("nvl72"):
        assert s["gpus_per_node"] == 4 and s["nvlink_domain_gpus"] == 72, s
for kind in ("devices", "systems", "models"):
    for e in j[kind]:
        assert e.get("sources"), (kind, e["name"])
PY
cp "$SCRATCH/out" "$SCRATCH/catalog.json"
# Every on/off key --software takes is in the catalog's JSON, a true or false for each preset
# (the keys from the refusal of an unknown one; torchtitan's own switches checked by value).
expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --strategy tp=1,pp=1 \
  --software torchtitan:bogus=1
python3 - "$SCRATCH/err" "$SCRATCH/catalog.json" <<'PY' || fail "catalog --format json lacks a --software key"
import json, re, sys
line = open(sys.argv[1]).read()
keys = re.search(r"the keys are (.*)", line).group(1).split(", ")
switches = [k for k in keys
            if k not in ("attention", "cross_entropy", "cudnn", "ep_dispatcher",
                         "float8_recipe", "memory_headroom_gib", "mx_dim1_cast")]
assert {"fsdp_copy_out", "eager_elementwise", "fp16_grads"} <= set(switches), switches
sw = {s["name"]: s for s in json.load(open(sys.argv[2]))["software"]}
for k in switches:
    for name, s in sw.items():
        assert isinstance(s.get(k), bool), (name, k)
assert sw["torchtitan"]["eager_elementwise"] and sw["torchtitan"]["fsdp_copy_out"]
assert not sw["megatron-core"]["eager_elementwise"]
# Megatron-Bridge's recipes fuse the loss in Transformer Engine and run 2025-26 images' cuDNN;
# no other preset names a cuDNN release (each part's earliest curves price it).
assert all(s["cross_entropy"] == ("te" if n == "megatron-bridge" else "unfused")
           for n, s in sw.items()), sw
assert all(s["cudnn"] == ("9.13" if n == "megatron-bridge" else "") for n, s in sw.items()), sw
assert sw["megatron-deepspeed"]["zero3_list_collectives"]
assert not sw["megatron-core"]["zero3_list_collectives"]
# torchtitan's float8 is torchao's (tensorwise by default), the Megatron presets' TE's.
assert sw["torchtitan"]["fp8_library"] == "torchao" and sw["torchtitan"]["float8_recipe"] == "tensorwise"
assert sw["torchtitan"]["mx_dim1_cast"] == "triton" and not sw["torchtitan"]["quantize_experts"]
assert sw["megatron-core"]["fp8_library"] == "transformer_engine"
assert sw["megatron-lm-2021"]["fp8_library"] == ""
PY
# DeepSpeed's ZeRO-3 of 2021 through list collectives: every gathered and reduced tensor costs
# the host a view and a copy per rank (docs/estimator.md); off, the same plan is the
# gathers' and reductions' bytes alone.
zero3=(estimate --model gpt3-175b --cluster dgx-a100 --gpus 1536 --format json
  --strategy tp=1,pp=1,dp=1536,mbs=1,gbs=1536,recompute=full,zero=3,precision=fp16)
expect_exit 0 "$BIN" "${zero3[@]}" --software megatron-deepspeed
cp "$SCRATCH/out" "$SCRATCH/lists.json"
expect_exit 0 "$BIN" "${zero3[@]}" --software megatron-deepspeed:zero3_list_collectives=false
python3 - "$SCRATCH/lists.json" "$SCRATCH/out" <<'PY' || fail "ZeRO-3's list collectives not priced"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
dp = lambda e: next(t["seconds"] for t in e["breakdown"]["time"] if t["part"] == "dp_comm")
assert a["software"] == "megatron-deepspeed" and dp(a) > 20 > 5 > dp(b), (dp(a), dp(b))
assert a["step_time_s"] > 2 * b["step_time_s"], (a["step_time_s"], b["step_time_s"])
PY

# validate
expect_exit 0 "$BIN" validate
golden validate.txt
# docs/validation.md shows this output: it must be the output.
python3 -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' \
  "$SCRATCH/out" "$SRC/docs/validation.md" || fail "docs/validation.md does not show validate's output"
# The README shows each table's last line.
python3 - "$SCRATCH/out" "$SRC/README.md" <<'PY' || fail "README.md shows a validate figure validate does not print"
import sys
out = set(open(sys.argv[1]).read().split("\n"))
shown = [l for l in open(sys.argv[2]).read().split("\n") if l.startswith("mean absolute error")]
assert len(shown) >= 10 and all(l in out for l in shown), [l for l in shown if l not in out]
PY
expect_exit 0 "$BIN" validate --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["korthikanti2022"]["rows"]) == 8
assert len(j["megatron2021"]["rows"]) == 10
# The project's fixed target per table (as estimator/validate/validate_test.cpp holds it).
assert j["korthikanti2022"]["mean_abs_error"] <= 0.05 and j["megatron2021"]["mean_abs_error"] <= 0.05, j
assert len(j["megatron2021_fixed_rule"]["rows"]) == 10
PY

# A mixed cluster (issue 14): each stage on its own group's devices, the breakdown naming
# every stage's slowest replica and the links crossed; golden text, JSON, a bad link.
MIXED="$SRC/tests/fixtures/clusters/a100-h100.json"
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster "$MIXED" \
  --strategy "tp=8,pp=4,mbs=1,gbs=64,vpp=2,recompute=selective,sp=true,zero=1,layers=14/14/26/26"
golden estimate_mixed.txt
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster "$MIXED" \
  --strategy "tp=8,pp=4,mbs=1,gbs=64,vpp=2,recompute=selective,sp=true,zero=1" --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert [s["device"] for s in j["stages"]] == ["a100-sxm4-80gb"] * 2 + ["h100-sxm5-80gb"] * 2, j["stages"]
# Interleaved, the last stage sends its chunks on to the first: that boundary crosses too.
assert j["links"] == ["stage 1 -> 2: a100 <-> h100, 11.2 GB/s, 30 us",
                      "stage 3 -> 0: h100 <-> a100, 11.2 GB/s, 30 us"], j["links"]
PY
# A TP degree per stage (tp=8 on the A100s, tp=4 on the H100s): the activation is resharded
# between the meshes, in its own line; the stage table gives each stage's degree.
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster "$MIXED" \
  --plan "$SRC/tests/fixtures/plans/a100-h100-tp8-tp4.json"
golden estimate_reshard.txt
# The same plan as a strategy string (stage_tp, what rank prints) prices the same.
STEP=$(grep '^step time' "$SCRATCH/out")
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster "$MIXED" --strategy \
  "stage_tp=8/8/4/4/4/4,layers=10/11/15/15/15/14,mbs=1,gbs=64,recompute=full,sp=true,zero=1"
[ "$(grep '^step time' "$SCRATCH/out")" = "$STEP" ] || fail "stage_tp and the plan file differ"
# Part of the cluster (issue 35): one H100 node of the four, its stages first, the embedding
# on a stage of its own; the output says how much of the cluster the plan takes.
printf '%s\n' '{"strategy": "mbs=1,gbs=32,recompute=full,sp=true,zero=1", "stages": [' \
  '{"layers": 0, "replicas": [{"group": "h100", "tp": 4}]},' \
  '{"layers": 32, "replicas": [{"group": "h100", "tp": 4}]}]}' >"$SCRATCH/part.json"
expect_exit 0 "$BIN" estimate --model llama3-8b --cluster "$MIXED" --plan "$SCRATCH/part.json"
grep -q "^llama3-8b (8.0B parameters) on a100+h100 (8 GPUs: 1 node x 8 h100-sxm5-80gb)" "$SCRATCH/out" || fail "part: $OUT"
grep -q "^cluster part    the plan runs on 8 of the cluster file's 32 GPUs" "$SCRATCH/out" || fail "part line: $OUT"
grep -q "^stage layers    0/32$" "$SCRATCH/out" || fail "embedding stage: $OUT"
sed 's/"tp": 4}]}]}/"tp": 3}]}]}/' "$SRC/tests/fixtures/plans/a100-h100-tp8-tp4.json" >"$SCRATCH/tp3.json"
expect_exit 2 "$BIN" estimate --model llama3-70b --cluster "$MIXED" --plan "$SCRATCH/tp3.json"
one_line_error
case "$ERR" in *"plan stages[5] replicas[0]: tp=3 cannot run"*) ;; *) fail "bad tp: $ERR";; esac
sed 's/"h100"\]/"h200"]/' "$MIXED" >"$SCRATCH/badlink.json"
expect_exit 2 "$BIN" estimate --model llama3-70b --cluster "$SCRATCH/badlink.json" --strategy "tp=8,pp=4,gbs=64"
one_line_error
case "$ERR" in *"links[0]"*"names 'h200', which is not a node group"*) ;; *) fail "bad link: $ERR";; esac
# A latency measured on a group past the 8 GPUs its scaling was measured on: one line, exit 2.
cat >"$SCRATCH/widelat.json" <<'JSON'
{"name": "x", "device": "gb200", "gpus_per_node": 4, "nodes": 18, "nvlink_domain_gpus": 72,
 "intra_node_latency_ranks": 72, "intra_node_bandwidth_GBps": 900, "inter_node_bandwidth_GBps": 50}
JSON
expect_exit 2 "$BIN" estimate --model llama3-8b --cluster "$SCRATCH/widelat.json" --gpus 8 --strategy tp=1
one_line_error
case "$ERR" in *"field 'intra_node_latency_ranks' must be an integer <= 8 (got 72)"*) ;; *) fail "wide latency group: $ERR";; esac
# Variable-length data on the mixed cluster: priced stage by stage as the fixed estimate is.
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster "$MIXED" --seq-dist \
  lognormal:median=2000,sigma=1.0 --batches 10 \
  --strategy "tp=8,pp=4,mbs=1,gbs=64,vpp=2,recompute=selective,sp=true,zero=1,layers=14/14/26/26"
grep -q '^  step time  mean' "$SCRATCH/out" || fail "variable-length estimate on a mixed cluster"
grep -q '^    3  h100 ' "$SCRATCH/out" || fail "variable-length estimate lists the stages"
# rank on the mixed cluster: the best plan balances its layers by each stage's speed.
expect_exit 0 "$BIN" rank --model llama3-70b --cluster "$MIXED" --gbs 64 --top 3 --format json
python3 - "$SCRATCH/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
best = j["strategies"][0]
layers = best["strategy"]["layers"]
assert len(layers) == best["strategy"]["pp"] and layers[-1] > layers[0], best["strategy"]
assert [s["device"] for s in best["stages"]][-1] == "h100-sxm5-80gb", best["stages"]
PY
# --attention overrides the preset's fused kernel: on H100 the measured FA2 < cuDNN < FA3
# rates order the step times; a kernel it does not know is one line with exit 2.
step_of() {
  expect_exit 0 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 --format json \
    --strategy tp=1,pp=1,dp=8,mbs=1,gbs=8,zero=1,recompute=full "$@"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$SCRATCH/out"
}
fa2=$(step_of --attention fa2); cudnn=$(step_of); fa3=$(step_of --attention fa3)
python3 -c "import sys; a,b,c=map(float,sys.argv[1:]); assert a > b > c, (a,b,c)" \
  "$fa2" "$cudnn" "$fa3" || fail "attention kernels do not order fa2 > cudnn > fa3: $fa2 $cudnn $fa3"
expect_exit 2 "$BIN" estimate --model llama3-8b --cluster dgx-h100 --gpus 8 \
  --strategy tp=1,pp=1,dp=8,mbs=1,gbs=8 --attention flash
one_line_error
expect_exit 2 "$BIN" rank --model "$SRC/data/onnx/resnet50.onnx" --cluster dgx-h100 --gpus 8 \
  --gbs 64 --attention fa3
one_line_error
grep -q -- '--attention and --seq-len apply to transformer models' "$SCRATCH/err" ||
  fail "--attention on an operator graph is not refused for what it is"
# Memory verdicts near the limit say so; --memory-headroom sets the allowance (issue 32, item 9).
s405="tp=8,pp=9,cp=2,dp=4,vpp=7,mbs=1,gbs=252,sp=true,zero=1,precision=bf16"
expect_exit 1 "$BIN" estimate --model llama3-405b --cluster dgx-h100 --gpus 576 --strategy "$s405"
grep -q 'does not fit: .*within 3 % of the limit.*may fit' "$SCRATCH/out" ||
  fail "a need within 3 % of the limit does not say so"
expect_exit 0 "$BIN" estimate --model llama3-405b --cluster dgx-h100 --gpus 576 --strategy "$s405" \
  --memory-headroom 3
grep -q '(fits; within 3 % of the limit' "$SCRATCH/out" || fail "--memory-headroom 3 does not fit"
expect_exit 2 "$BIN" estimate --model llama3-405b --cluster dgx-h100 --gpus 576 --strategy "$s405" \
  --memory-headroom -1
one_line_error
# validate --db prices the tables from a store: the A100 excerpts move the A100 tables (the
# collectives of the fixed-rule rows most) and leave the H100 ones as the catalog prices them.
"$BIN" import csv --db "$SCRATCH/a100.db" "$SRC/tests/fixtures/measured/collective_a100_curves.csv" \
  "$SRC/tests/fixtures/measured/gemm_a100_sample.csv" >/dev/null || fail "importing the A100 excerpts"
expect_exit 0 "$BIN" validate --format json
cp "$SCRATCH/out" "$SCRATCH/catalog.json"
expect_exit 0 "$BIN" validate --format json --db "$SCRATCH/a100.db"
python3 - "$SCRATCH/catalog.json" "$SCRATCH/out" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
moved = [t for t in ("korthikanti2022", "megatron2021_fixed_rule")
         if a[t]["mean_abs_error"] != b[t]["mean_abs_error"]]
assert moved, "the A100 store moved no A100 table"
for t in ("megatron_core_h100_2024", "nemo_2407_h100_fp8", "megatron_bridge_h100"):
    assert a[t] == b[t], t
PY
expect_exit 2 "$BIN" validate --db "$SCRATCH/missing.db"
one_line_error
# FP8 current scaling (issue 32, item 6) is a software key: the amax passes and all-reduces
# make the same plan slower, and the JSON's software says which recipe priced it.
s70="tp=4,pp=8,dp=2,vpp=5,mbs=1,gbs=256,sp=true,zero=1,precision=fp8"
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 --strategy "$s70" \
  --software nemo --format json
cp "$SCRATCH/out" "$SCRATCH/delayed.json"
expect_exit 0 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 --strategy "$s70" \
  --software nemo:fp8_current_scaling=true --format json
python3 - "$SCRATCH/delayed.json" "$SCRATCH/out" <<'PY'
import json, sys
d, c = (json.load(open(f)) for f in sys.argv[1:3])
assert 1.0 < c["step_time_s"] / d["step_time_s"] < 1.1, (d["step_time_s"], c["step_time_s"])
assert "fp8_current_scaling=true" in json.dumps(c["software"]), c["software"]
PY
expect_exit 2 "$BIN" estimate --model llama3-70b --cluster dgx-h100 --gpus 64 --strategy "$s70" \
  --software nemo:fp8_current_scaling=yes
one_line_error
echo "plan_cli: ok"
