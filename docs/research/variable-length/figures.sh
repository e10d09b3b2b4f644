#!/usr/bin/env bash
# The figures of docs/variable-length.md, from the built binary (catalog costs):
#   docs/research/variable-length/figures.sh [build/shardcost]
# Each line: the case, the mean step, p10, p90, imbalance, the baseline step and the speedup.
set -euo pipefail
BIN=${1:-build/shardcost}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
WIKI=${WIKI:-$ROOT/../shared/data/workloads/wikipedia_seqlens.txt.gz}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '{"name": "llama3-8b-64k", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 128256, "seq_len": 65536, "activation": "swiglu"}\n' >"$TMP/llama64k.json"
GPT=$ROOT/tests/fixtures/models/gpt-6656x60.json

row() {  # name model batches strategy
  local name=$1 model=$2 batches=$3 strategy=$4
  "$BIN" estimate --model "$model" --cluster dgx-h100 --gpus 64 --format json --strategy "$strategy" \
    --seq-lengths "$WIKI" --batches "$batches" >"$TMP/out.json"
  python3 - "$name" "$TMP/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))
base = j.get("baseline_step_time_s") or float("nan")
print(f"{sys.argv[1]:<44} {j['step_time_s']:.3f} s  p10 {j['step_time_p10_s']:.3f}  p90 "
      f"{j['step_time_p90_s']:.3f}  imbalance {j['imbalance']:.3f}  tokens/s {j['tokens_per_s']:,.0f}  MFU {100 * j['mfu']:.1f} %  "
      f"baseline {base:.3f} s  {base / j['step_time_s']:.2f}x")
PY
}

L8="tp=2,mbs=1,gbs=512,zero=1,max_tokens=8192"
for b in none count tokens cost; do row "llama3-8b $L8 balance=$b" llama3-8b 1000 "$L8,balance=$b"; done
G="tp=4,mbs=1,gbs=512,zero=1,recompute=full,max_tokens=16384"
for b in none cost; do row "gpt-6656 $G balance=$b" "$GPT" 200 "$G,balance=$b"; done
for b in none cost; do row "gpt-6656 pp=2 balance=$b" "$GPT" 200 "$G,pp=2,balance=$b"; done
G8="tp=4,mbs=1,gbs=512,zero=1,recompute=full,max_tokens=8192"
row "gpt-6656 cp=2 static balance=none" "$GPT" 200 "$G8,cp=2,balance=none"
row "gpt-6656 cp=2 static balance=cost" "$GPT" 200 "$G8,cp=2,balance=cost"
row "gpt-6656 cp=dynamic,cp_max=2 balance=cost" "$GPT" 200 "$G8,cp=dynamic,cp_max=2,balance=cost"
row "gpt-6656 cp=flex,cp_max=2 balance=cost" "$GPT" 200 "$G8,cp=flex,cp_max=2,balance=cost"
D="tp=8,mbs=1,gbs=1024,max_tokens=8192,zero=1"
row "llama-64k cp=8 static" "$TMP/llama64k.json" 100 "$D,cp=8"
row "llama-64k cp=8 static balance=cost" "$TMP/llama64k.json" 100 "$D,cp=8,balance=cost"
row "llama-64k cp=dynamic,cp_max=8" "$TMP/llama64k.json" 100 "$D,cp=dynamic,cp_max=8"
row "llama-64k cp=dynamic,cp_max=8 balance=cost" "$TMP/llama64k.json" 100 "$D,cp=dynamic,cp_max=8,balance=cost"
row "llama-64k cp=flex,cp_max=8 balance=cost" "$TMP/llama64k.json" 100 "$D,cp=flex,cp_max=8,balance=cost"
P="tp=4,pp=2,mbs=1,gbs=1024,max_tokens=8192,zero=1"
row "llama-64k pp=2 cp=8 static" "$TMP/llama64k.json" 100 "$P,cp=8"
row "llama-64k pp=2 cp=dynamic,cp_max=8 balance=cost" "$TMP/llama64k.json" 100 "$P,cp=dynamic,cp_max=8,balance=cost"
U="tp=4,mbs=1,gbs=1024,max_tokens=16384,zero=1,balance=cost"
for k in ring ulysses; do
  row "llama-64k cp=8 $k" "$TMP/llama64k.json" 50 "$U,cp=8,cp_kind=$k"
  row "llama-64k cp=dynamic,cp_max=8 $k" "$TMP/llama64k.json" 50 "$U,cp=dynamic,cp_max=8,cp_kind=$k"
done
