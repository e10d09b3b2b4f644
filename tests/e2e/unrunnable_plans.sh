#!/usr/bin/env bash
# Plans no one can run are refused, not priced (issue 37, item 8): more virtual stages than a
# stage has layers, tensor parallelism on a plain data-parallel stack, and a --fix that no plan
# of the GPUs can take (a bad --fix, exit 2, not "nothing fits", exit 1).
source "$(dirname "$0")/../e2e_lib.sh"

# gpt3-1.3b: 24 layers, 16 heads.
expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --strategy "tp=2,pp=4,vpp=8,gbs=64"
one_line_error
case "$ERR" in *"vpp=8 needs 8 layers on each stage (the embedding and the head counting as one), and stage 0 has 7"*) ;; *) fail "vpp: $ERR";; esac
expect_exit 0 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 16 --strategy "tp=2,pp=4,vpp=6,gbs=64"

for sw in pytorch-ddp chainermn; do
  expect_exit 2 "$BIN" estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --strategy "tp=8,gbs=64" --software $sw
  one_line_error
  case "$ERR" in *"$sw has no tensor parallelism"*) ;; *) fail "$sw tp=8: $ERR";; esac
  # rank on such a stack searches tp=1 only.
  expect_exit 0 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --gbs 64 --software $sw --format json
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["strategies"] and all(p["strategy"]["tp"] == 1 for p in j["strategies"]), j["strategies"]' "$SCRATCH/out" \
    || fail "$sw ranked tp>1"
done

expect_exit 2 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --gbs 64 --fix tp=3
one_line_error
case "$ERR" in *"--fix tp=3: no plan of 8 GPUs can take it (tp*pp*cp = 3 does not divide the 8 GPUs"*) ;; *) fail "fix tp=3 on 8: $ERR";; esac
expect_exit 2 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 6 --gbs 66 --fix tp=3
case "$ERR" in *"--fix tp=3: every plan of 6 GPUs that takes it is turned away"*"tp=3 does not divide the 16 heads"*) ;; *) fail "fix tp=3 on 6: $ERR";; esac
echo "unrunnable_plans: ok"
