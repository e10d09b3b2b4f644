#!/usr/bin/env bash
# Shown output is real output: every stateless `$ shardcost ...` command in README.md and docs/
# is run, and each line shown under it must be one the binary printed (tests/docs/shown_output.py;
# `--fix` rewrites the pages from a run). The checker itself must catch a changed line.
source "$(dirname "$0")/../e2e_lib.sh"

expect_exit 0 python3 "$SRC/tests/docs/shown_output.py" "$BIN" "$SRC"
case "$OUT" in *"commands checked"*", 0 failures") ;; *) fail "$OUT";; esac

# A page with one figure changed is caught, naming the page and the line.
mkdir -p "$SCRATCH/tree/docs"
cp -r "$SRC/data" "$SCRATCH/tree/" 2>/dev/null || true
cat >"$SCRATCH/tree/README.md" <<'MD'
```
$ shardcost estimate --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --strategy tp=8,gbs=64
gpt3-1.3b (1.3B parameters) on dgx-a100 (8 GPUs: 1 node x 8 a100-sxm4-80gb), software megatron-core
step time       0.001 s
...
```
MD
expect_exit 1 python3 "$SRC/tests/docs/shown_output.py" "$BIN" "$SCRATCH/tree"
case "$OUT" in *"README.md: \`shardcost estimate --model gpt3-1.3b"*"shows a line it does not print: 'step time       0.001 s'"*) ;;
  *) fail "a changed line passes: $OUT";; esac
# --fix writes what the binary printed; the page then passes.
expect_exit 0 python3 "$SRC/tests/docs/shown_output.py" "$BIN" "$SCRATCH/tree" --fix
expect_exit 0 python3 "$SRC/tests/docs/shown_output.py" "$BIN" "$SCRATCH/tree"
! grep -q "0.001 s" "$SCRATCH/tree/README.md" || fail "--fix: $(cat "$SCRATCH/tree/README.md")"
echo ok
