#!/usr/bin/env bash
# A full disk is the machine's trouble, not bad input (issue 37, item 6): exit 1 with one line
# saying so, from every command that writes, as the README's exit codes promise. Files written
# whole go to /dev/full (every write fails with ENOSPC); stores go to a tiny tmpfs where this
# user may mount one (root on a machine that allows it), else that part is skipped.
source "$(dirname "$0")/../e2e_lib.sh"
F=$SRC/tests/fixtures
"$BIN" import kineto --db "$SCRATCH/k.db" "$F/kineto/train_step.json" >/dev/null

expect_exit 1 "$BIN" report --db "$SCRATCH/k.db" -o /dev/full
one_line_error
case "$ERR" in *"cannot write /dev/full: No space left on device; free some space and retry"*) ;; *) fail "report: $ERR";; esac
expect_exit 1 "$BIN" trace export --db "$SCRATCH/k.db" --perfetto /dev/full
one_line_error
expect_exit 1 "$BIN" export --db "$SCRATCH/k.db" --table kernels -o /dev/full
expect_exit 1 "$BIN" rank --model gpt3-1.3b --cluster dgx-a100 --gpus 8 --gbs 64 -o /dev/full
# A path that cannot be written is still bad input.
expect_exit 2 "$BIN" report --db "$SCRATCH/k.db" -o "$SCRATCH/no/such/folder/r.html"

mnt=$SCRATCH/tiny
mkdir -p "$mnt"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=96k tmpfs "$mnt" 2>/dev/null; then
  trap 'umount "$mnt" 2>/dev/null' EXIT
  dd if=/dev/zero of="$mnt/fill" bs=1k count=80 2>/dev/null || true
  expect_exit 1 "$BIN" import kineto --db "$mnt/s.db" "$F/kineto/train_step.json"
  case "$ERR" in *"the disk is full"*) ;; *) fail "import: $ERR";; esac
  expect_exit 1 "$BIN" db merge "$mnt/m.db" "$SCRATCH/k.db"
  case "$ERR" in *"the disk is full"*) ;; *) fail "merge: $ERR";; esac
  umount "$mnt"
  trap - EXIT
else
  echo "skipped: stores on a full disk (cannot mount a tmpfs here)"
fi
echo "full_disk: ok"
