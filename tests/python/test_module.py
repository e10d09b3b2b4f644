"""import shardcost against the command line: the same request gives the same JSON, byte for
byte; errors are exceptions with the command line's one-line message; the store's tables read
as export writes them. Run by ctest (python.module) with PYTHONPATH=build/python and
SHARDCOST_BINARY set."""
import csv
import io
import json
import os
import re
import subprocess

import pytest

import shardcost

BIN = os.environ.get("SHARDCOST_BINARY", "build/shardcost")
SRC = os.environ.get("SHARDCOST_SOURCE_DIR", ".")

LLAMA = dict(model="llama3-8b", cluster="dgx-h100", gpus=16)
STRATEGY = "tp=2,pp=1,dp=8,mbs=1,gbs=128,recompute=selective,sp=true,zero=1"


def cli(*args, check=True):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"shardcost {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


def no_elapsed(text):
    # The search's wall time differs run to run; nothing else may.
    return re.sub(r'"elapsed_s": [0-9.e+-]+', '"elapsed_s": 0', text)


def test_estimate_json_is_the_command_lines_byte_for_byte():
    r = shardcost.estimate(LLAMA["model"], LLAMA["cluster"], STRATEGY, gpus=16)
    out = cli("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16",
              "--strategy", STRATEGY, "--format", "json").stdout
    assert r.json + "\n" == out
    assert r.ok and r["feasible"] is True
    assert r["step_time_s"] > 0
    assert r.request == {"command": "estimate", "model": "llama3-8b", "cluster": "dgx-h100",
                         "gpus": 16, "software": "megatron-core", "strategy": STRATEGY}


def test_a_data_loader_is_an_option_as_on_the_command_line():
    r = shardcost.estimate("gpt3-1.3b", "dgx-h100", "tp=2,dp=4,mbs=1,gbs=64,zero=1", gpus=8,
                           data_loading="cores=1,rate=20")
    out = cli("estimate", "--model", "gpt3-1.3b", "--cluster", "dgx-h100", "--gpus", "8",
              "--strategy", "tp=2,dp=4,mbs=1,gbs=64,zero=1", "--data-loading", "cores=1,rate=20",
              "--format", "json").stdout
    assert r.json + "\n" == out
    assert r["input"]["input_bound"] is True and r["step_time_s"] == r["input"]["load_s"]


def test_rank_json_is_the_command_lines_but_for_elapsed_time():
    r = shardcost.rank_report("llama3-8b", "dgx-h100", 256, gpus=16, top=5, seq_len=4096)
    out = cli("rank", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16",
              "--gbs", "256", "--top", "5", "--seq-len", "4096", "--format", "json").stdout
    assert no_elapsed(r.json + "\n") == no_elapsed(out)
    assert len(r["strategies"]) == 5


def test_variable_length_rank_and_a_store_give_the_same_json(tmp_path):
    db = tmp_path / "s.db"
    cli("import", "csv", "--db", str(db), f"{SRC}/tests/fixtures/measured/gemm_a100_excerpt.csv")
    keys = dict(gpus=16, top=3, seq_dist="lognormal:median=1024,sigma=1", batches=10,
                db=str(db))
    r = shardcost.rank_report("llama3-8b", "dgx-a100", 128, **keys)
    out = cli("rank", "--model", "llama3-8b", "--cluster", "dgx-a100", "--gpus", "16", "--gbs",
              "128", "--top", "3", "--seq-dist", "lognormal:median=1024,sigma=1", "--batches",
              "10", "--db", str(db), "--format", "json").stdout
    assert no_elapsed(r.json + "\n") == no_elapsed(out)
    assert "imbalance" in r["strategies"][0]


def test_operator_graph_estimate_is_the_command_lines():
    onnx = f"{SRC}/tests/data/onnx/cnn-dynamic.onnx"
    r = shardcost.estimate(onnx, "dgx-a100", "data,gbs=64", gpus=8)
    out = cli("estimate", "--model", onnx, "--cluster", "dgx-a100", "--gpus", "8",
              "--strategy", "data,gbs=64", "--format", "json").stdout
    assert r.json + "\n" == out
    assert r["plan"]["strategy"] == "data"


def test_rank_is_a_frame_of_plans_best_first():
    plans = shardcost.rank("llama3-8b", "dgx-h100", 256, gpus=16, top=4)
    rows = plans.to_dict("records") if hasattr(plans, "to_dict") else plans
    assert [p["rank"] for p in rows] == [1, 2, 3, 4]
    steps = [p["step_time_s"] for p in rows]
    assert steps == sorted(steps)
    assert {"tp", "pp", "dp", "mbs", "step_time_s", "mfu", "memory_per_gpu_gib"} <= set(rows[0])
    # The command line's CSV lists the same plans in the same order.
    out = cli("rank", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--gbs",
              "256", "--top", "4", "--format", "csv").stdout
    table = list(csv.DictReader(io.StringIO(out)))
    assert [(int(t["tp"]), int(t["pp"]), int(t["mbs"])) for t in table] == \
        [(p["tp"], p["pp"], p["mbs"]) for p in rows]


def test_bad_input_is_an_exception_with_the_command_lines_line():
    with pytest.raises(shardcost.InputError) as e:
        shardcost.estimate("llama-nine", "dgx-h100", "tp=8", gpus=8)
    p = cli("estimate", "--model", "llama-nine", "--cluster", "dgx-h100", "--gpus", "8",
            "--strategy", "tp=8", check=False)
    assert p.returncode == 2
    assert p.stderr.strip() == f"shardcost: {e.value}"
    assert isinstance(e.value, shardcost.Error)
    with pytest.raises(TypeError, match="gbs_typo"):
        shardcost.rank("llama3-8b", "dgx-h100", 64, gbs_typo=3)


def test_a_plan_that_does_not_fit_is_a_result_not_an_exception():
    r = shardcost.estimate("llama3-70b", "dgx-h100", "tp=1,pp=1,dp=8,mbs=1,gbs=64", gpus=8)
    assert r["feasible"] is False and r.exit_code == 1
    p = cli("estimate", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8",
            "--strategy", "tp=1,pp=1,dp=8,mbs=1,gbs=64", check=False)
    assert p.returncode == 1
    assert p.stderr.strip() == f"shardcost: {r.message}"


def test_a_report_runs_again_from_python_and_from_the_command_line(tmp_path):
    r = shardcost.estimate("gpt3-13b", "dgx-a100", "tp=8,pp=2,mbs=1,gbs=256", gpus=32)
    again = shardcost.run(r.request)
    assert again.json == r.json
    assert shardcost.run(r).json == r.json  # a report runs its request
    saved = tmp_path / "r.json"
    saved.write_text(r.json)
    assert shardcost.run(saved).json == r.json
    out = cli("estimate", "--request", str(saved), "--format", "json").stdout
    assert out == r.json + "\n"
    # Options beside --request replace its keys: a what-if on twice the GPUs.
    wider = cli("estimate", "--request", str(saved), "--gpus", "64", "--strategy",
                "tp=8,pp=2,mbs=1,gbs=256", "--format", "json").stdout
    assert json.loads(wider)["gpus"] == 64
    assert json.loads(wider)["strategy"]["dp"] == 4


def test_a_request_with_an_unknown_key_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"command": "estimate", "model": "gpt3-13b", "cluster": "dgx-a100",
                               "strategy": "tp=8", "gpu": 8}))
    with pytest.raises(shardcost.InputError, match="gpu"):
        shardcost.run(bad)
    p = cli("estimate", "--request", str(bad), check=False)
    assert p.returncode == 2 and "'gpu'" in p.stderr


def test_store_tables_read_as_export_writes_them(tmp_path):
    db = tmp_path / "s.db"
    cli("import", "csv", "--db", str(db), f"{SRC}/tests/fixtures/measured/gemm_a100_excerpt.csv")
    store = shardcost.Store(db)
    gemm = store.gemm
    rows = gemm.to_dict("records") if hasattr(gemm, "to_dict") else gemm
    exported = list(csv.DictReader(io.StringIO(
        cli("export", "--db", str(db), "--table", "gemm", "--format", "csv").stdout)))
    assert len(rows) == len(exported) > 0
    assert list(rows[0]) == list(exported[0])
    assert store.counts()["gemm"] == len(rows)
    with pytest.raises(shardcost.InputError):
        shardcost.Store(tmp_path / "missing.db")


def test_validate_and_catalog():
    rows = shardcost.validate()
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    tables = {r["table"] for r in rows}
    assert {"korthikanti2022", "megatron2021"} <= tables
    out = json.loads(cli("validate", "--format", "json").stdout)
    # Each table's rows and mean |error| are the command line's.
    for table in tables:
        mine = [r for r in rows if r["table"] == table]
        assert len(mine) == len(out[table]["rows"]), table
        mean = sum(abs(r["error"]) for r in mine) / len(mine)
        assert mean == pytest.approx(out[table]["mean_abs_error"], abs=1e-4), table
    cat = shardcost.catalog()
    assert {"devices", "systems", "models"} <= set(cat)
    assert "megatron-core" in shardcost.software_presets()


def test_the_sibling_planners_give_the_command_lines_json():
    onnx = f"{SRC}/tests/data/onnx/cnn-dynamic.onnx"
    r = shardcost.place(onnx, "dgx-a100", gpus=4)
    assert r.json + "\n" == cli("place", "--model", onnx, "--cluster", "dgx-a100", "--gpus", "4",
                                "--format", "json").stdout
    assert r.ok and r["feasible"] and r.request == {"command": "place", "model": onnx,
                                                    "cluster": "dgx-a100", "gpus": 4}
    assert shardcost.run(r).json == r.json  # a planner's report runs again from its request

    resnet, devices = f"{SRC}/data/onnx/resnet50.onnx", f"{SRC}/data/examples/edge-devices.json"
    r = shardcost.split_learning(resnet, devices, "a100-sxm4-80gb", inference=True)
    assert r.json + "\n" == cli("split-learning", "--model", resnet, "--devices", devices,
                                "--server", "a100-sxm4-80gb", "--inference",
                                "--format", "json").stdout

    tables = f"{SRC}/data/examples/criteo-kaggle-tables.csv"
    r = shardcost.shard_tables(tables, "dgx-a100", 4096, gpus=8,
                               dense_mlp=[[13, 512, 256, 64], "415,512,256,1"])
    out = cli("shard-tables", "--tables", tables, "--cluster", "dgx-a100", "--gpus", "8",
              "--batch", "4096", "--dense-mlp", "13,512,256,64", "--dense-mlp", "415,512,256,1",
              "--format", "json").stdout
    assert no_elapsed(r.json + "\n") == no_elapsed(out)
    assert r["dense"]["parameters"] > 0

    jobs = f"{SRC}/tests/fixtures/jobs/sweep.json"
    r = shardcost.schedule("dgx-h100", jobs=jobs, gpus=64, solver="heuristic")
    out = cli("schedule", "--jobs", jobs, "--cluster", "dgx-h100", "--gpus", "64", "--solver",
              "heuristic", "--format", "json").stdout
    assert no_elapsed(r.json + "\n") == no_elapsed(out)
    search = f"{SRC}/tests/fixtures/search/llama8b.json"
    r = shardcost.schedule("dgx-h100", search=search, gpus=64)
    out = cli("schedule", "--search", search, "--cluster", "dgx-h100", "--gpus", "64",
              "--format", "json").stdout
    assert no_elapsed(r.json + "\n") == no_elapsed(out)


def test_the_sibling_planners_refuse_what_their_commands_refuse():
    onnx = f"{SRC}/tests/data/onnx/cnn-dynamic.onnx"
    with pytest.raises(shardcost.InputError, match="did you mean 'gpus'"):
        shardcost.run({"command": "place", "model": onnx, "cluster": "dgx-a100", "gpu": 4})
    with pytest.raises(shardcost.InputError, match="--solver bogus"):
        shardcost.place(onnx, "dgx-a100", gpus=4, solver="bogus")
    with pytest.raises(TypeError, match="unexpected keyword argument 'spill'"):
        shardcost.schedule("dgx-h100", search="x.json", spill=True)
    with pytest.raises(TypeError, match="jobs=FILE"):
        shardcost.schedule("dgx-h100")
    with pytest.raises(shardcost.InputError, match="dense_mlp"):
        shardcost.shard_tables(f"{SRC}/data/examples/criteo-kaggle-tables.csv", "dgx-a100",
                               4096, gpus=8, dense_mlp="13,x")
    with pytest.raises(shardcost.InputError, match="not a command a request runs.*shard-tables"):
        shardcost.run({"command": "train", "model": onnx, "cluster": "dgx-a100"})


def test_an_operator_graphs_notes_are_warnings_as_the_command_line_says_them():
    onnx = f"{SRC}/tests/data/onnx/computed-weight.onnx"
    with pytest.warns(RuntimeWarning, match="note: "):
        r = shardcost.place(onnx, "dgx-a100", gpus=4)
    err = cli("place", "--model", onnx, "--cluster", "dgx-a100", "--gpus", "4",
              "--format", "json").stderr
    note = next(w for w in r.warnings if w.startswith("note: "))
    assert note in err
    request = {"command": "place", "model": onnx, "cluster": "dgx-a100", "gpus": 4}
    with pytest.warns(RuntimeWarning, match="note: "):
        r = shardcost.run(request)
    request["gpus"] = 8  # the report keeps the request it ran
    assert r.request["gpus"] == 4
