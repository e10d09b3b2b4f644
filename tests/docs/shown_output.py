#!/usr/bin/env python3
"""Shown output is real output: every `$ shardcost ...` command in README.md and docs/*.md that
needs no state of its own (no store, no written files, no traces or benchmarks) is run, and each
line the page shows under it must be a line the binary printed (a page may cut output short with
'...'). With --fix, the lines under each command are rewritten from the real output (the lines a
page kept before its '...', the whole output otherwise).

usage: shown_output.py BIN SRC [--fix]"""
import os
import re
import shlex
import subprocess
import sys

STATEFUL = ("--db", " import ", " fit ", " trace ", " bench ", " db ", " export ", " report ",
            " compare ", " -o ", "--output", " predict ", " devices ")


def blocks(text):
    """(command, first line index, end line index) of each `$ shardcost` command in a page."""
    lines = text.split("\n")
    out = []
    fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = not fence
            i += 1
            continue
        if fence and line.startswith("$ shardcost"):
            cmd = line[2:]
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            start = i + 1
            end = start
            while end < len(lines) and not lines[end].startswith("```") and not lines[end].startswith("$ "):
                end += 1
            out.append((cmd, start, end))
            i = end
            continue
        i += 1
    return lines, out


def main():
    binary, src = sys.argv[1], sys.argv[2]
    fix = "--fix" in sys.argv[3:]
    pages = [os.path.join(src, "README.md")] + sorted(
        os.path.join(src, "docs", f) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    failures, checked, skipped = [], 0, 0
    for page in pages:
        text = open(page).read()
        lines, found = blocks(text)
        replacements = []
        for cmd, start, end in found:
            if any(s in f" {cmd} " for s in STATEFUL) or ">" in cmd:
                continue
            # The exact scheduler stops at a time limit: its best depends on the machine's speed.
            if " schedule " in f" {cmd} " and "--solver heuristic" not in cmd and "--search" not in cmd:
                continue
            # Data outside the repository (../shared) where this checkout has it.
            if any(a.startswith("../") and not os.path.exists(os.path.join(src, a))
                   for a in shlex.split(cmd)):
                skipped += 1
                continue
            argv = shlex.split(cmd)
            argv[0] = binary
            run = subprocess.run(argv, cwd=src, capture_output=True, text=True, timeout=120)
            if run.returncode not in (0, 1):
                failures.append(f"{os.path.relpath(page, src)}: `{cmd}` exits {run.returncode}: "
                                f"{run.stderr.strip()[:200]}")
                continue
            checked += 1
            real = run.stdout.rstrip("\n").split("\n")
            shown = lines[start:end]
            while shown and shown[-1] == "":
                shown = shown[:-1]
            cut = any(l.strip() == "..." for l in shown)
            real_set = set(real) | set(run.stderr.rstrip("\n").split("\n"))
            missing = [l for l in shown if l.strip() != "..." and l not in real_set]
            if missing and not fix:
                failures.append(f"{os.path.relpath(page, src)}: `{cmd}` shows a line it does not "
                                f"print: {missing[0]!r}")
            if fix and missing:
                at = next(i for i, l in enumerate(shown) if l.strip() == "...") if cut else 0
                # Cut at the top: the page shows the output's last lines.
                if cut and at == 0:
                    keep = [shown[0]] + real[-(len(shown) - 1):]
                else:
                    keep = real[:at] + [shown[at]] if cut else real
                replacements.append((start, start + len(shown), keep))
        for start, end, keep in reversed(replacements):
            lines[start:end] = keep
        if replacements:
            open(page, "w").write("\n".join(lines))
    for f in failures:
        print(f"FAIL: {f}")
    print(f"shown output: {checked} commands checked, {skipped} skipped (no ../shared), "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
