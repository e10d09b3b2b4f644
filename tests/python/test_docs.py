"""docs/python.md's examples, run as written (doctest) in a scratch folder holding the store
its walk-through reads: shown output is real output."""
import doctest
import os
import shutil
import subprocess

import pytest

SRC = os.environ.get("SHARDCOST_SOURCE_DIR", ".")
BIN = os.path.abspath(os.environ.get("SHARDCOST_BINARY", "build/shardcost"))


def test_docs_python_md(tmp_path, monkeypatch):
    pytest.importorskip("pandas", reason="the walk-through shows DataFrames (python3-pandas)")
    pytest.importorskip("matplotlib", reason="the walk-through plots (python3-matplotlib)")
    import matplotlib
    matplotlib.use("Agg")
    page = os.path.abspath(os.path.join(SRC, "docs/python.md"))
    fixture = os.path.abspath(os.path.join(SRC, "tests/fixtures/measured/gemm_a100_excerpt.csv"))
    monkeypatch.chdir(tmp_path)
    subprocess.run([BIN, "import", "csv", "--db", "costs.db", fixture], check=True,
                   capture_output=True)
    # The other planners' inputs, beside it.
    for f in ("data/examples/criteo-kaggle-tables.csv", "data/onnx/resnet50.onnx"):
        shutil.copy(os.path.join(SRC, f), tmp_path)
    result = doctest.testfile(page, module_relative=False, optionflags=doctest.ELLIPSIS,
                              verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of docs/python.md's examples differ"
    assert (tmp_path / "top-plans.png").stat().st_size > 0
    # The request saved by the walk-through runs from the shell as it says.
    out = subprocess.run([BIN, "estimate", "--request", "plan.json", "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    assert out == (tmp_path / "plan.json").read_text() + "\n"
