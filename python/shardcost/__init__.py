"""shardcost from Python: price a training plan, rank every plan, read a cost store.

The same requests as the command line, run in-process by the same C++ (shardcost/request.h):
keyword arguments take the command line's option names with '_' for '-' (``--seq-len`` is
``seq_len``), reports are the JSON ``--format json`` prints, and errors carry the same one-line
messages. See docs/python.md.

    >>> import shardcost
    >>> r = shardcost.estimate("llama3-8b", "dgx-h100", "tp=1,pp=1,dp=8,mbs=1,gbs=64", gpus=8)
    >>> r["step_time_s"], r["feasible"]
"""
from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Optional, Union

from . import _core
from ._core import Error, InputError

__all__ = [
    "Error",
    "InputError",
    "Report",
    "Store",
    "catalog",
    "estimate",
    "place",
    "rank",
    "rank_report",
    "run",
    "schedule",
    "shard_tables",
    "software_presets",
    "split_learning",
    "validate",
]

# The request keys each call takes, beside model and cluster (docs/python.md lists them).
_COMMON = (
    "gpus", "software", "attention", "memory_headroom", "seq_len", "db", "network_trace",
    "data_loading", "seq_lengths", "seq_dist", "seed", "batches", "long_seqs", "pad_to", "batch_tokens",
    "epoch_samples", "optimizer",
)
_RANK = ("top", "fix", "objective", "replan")
# The sibling planners' keys beside their required arguments.
_PLACE = ("gpus", "micro_batch", "micro_batches", "precision", "optimizer", "db", "solver",
          "max_ideals", "solver_time")
_SPLIT = ("precision", "db", "inference")
_SHARD = ("gpus", "optimizer", "beam", "dense_mlp", "dense_precision", "db")
_SCHEDULE = ("gpus", "software", "objective", "solver", "time_limit", "spill")
_SEARCH = ("gpus", "software")


def _have_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


class Report(dict):
    """A report as a dict (the JSON the command line prints), with how it ended.

    ``json``: the exact text ``--format json`` prints for the same request.
    ``exit_code``: 0; 1 when the answer is a failure (the plan does not fit, nothing fits).
    ``message``: that failure in the command line's words. ``warnings``: as the command line
    says them on stderr (they are also issued as Python warnings).
    """

    def __init__(self, result: Any, request: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(json.loads(result.json))
        self.json: str = result.json
        self.exit_code: int = result.exit_code
        self.message: str = result.message
        self.warnings: List[str] = list(result.warnings)
        # A copy: the caller's dict may change after the run.
        self._request = json.loads(json.dumps(request)) if request is not None else None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def request(self) -> Dict[str, Any]:
        """The request that reproduces this report (``shardcost.run(report.request)``): the
        report's own where it states one (estimate, rank), else the one it was run from."""
        if "request" in self:
            return self["request"]
        if self._request is None:
            raise KeyError("request")
        return json.loads(json.dumps(self._request))


def _request(command: str, model: str, cluster: str, keys: Dict[str, Any]) -> Dict[str, Any]:
    request: Dict[str, Any] = {"command": command, "model": os.fspath(model),
                               "cluster": os.fspath(cluster)}
    for key, value in keys.items():
        if value is None:
            continue
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        request[key] = value
    return request


def run(request: Union[Dict[str, Any], str, os.PathLike]) -> Report:
    """Runs a request: a dict of request keys (``"command"``: estimate, rank, place,
    split-learning, shard-tables or schedule), a report (its request is run again), or a file
    holding an estimate's or rank's request or the JSON they printed."""
    if isinstance(request, Report):  # a report: run its request again
        request = request.request
    elif not isinstance(request, dict):
        request = json.loads(_core.request_file(os.fspath(request)))
    elif isinstance(request.get("request"), dict):  # a report's JSON: run its request again
        request = request["request"]
    report = Report(_core.run(json.dumps(request)), request)
    for w in report.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    if report.exit_code == 2:
        raise InputError(report.message)
    return report


def estimate(model: str, cluster: str, strategy: Optional[str] = None, *,
             plan: Optional[str] = None, **options: Any) -> Report:
    """Prices one plan: a strategy string ("tp=8,pp=2,mbs=1,gbs=512") or a plan file.

    Options: gpus, software, attention, memory_headroom, seq_len, db, network_trace,
    data_loading ("cores=N,rate=R": each rank's loader), the variable-length data's seq_lengths or seq_dist with seed, batches, long_seqs, pad_to,
    batch_tokens, and for operator graphs epoch_samples and optimizer. A plan that does not fit
    is a result: ``report["feasible"]`` is False and ``report.message`` says why.
    """
    _check(options, _COMMON, "estimate")
    return run(_request("estimate", model, cluster,
                        dict(options, strategy=strategy, plan=plan)))


def rank_report(model: str, cluster: str, gbs: int, **options: Any) -> Report:
    """Searches every plan and returns the whole report (rank --format json)."""
    _check(options, _COMMON + _RANK, "rank")
    return run(_request("rank", model, cluster, dict(options, gbs=gbs)))


def rank(model: str, cluster: str, gbs: int, **options: Any):
    """The best plans, best first: a pandas DataFrame when pandas is installed, else a list of
    dicts; one row per plan, its strategy keys beside its figures. Options as rank_report's
    (top, fix, objective, replan beside estimate's)."""
    report = rank_report(model, cluster, gbs, **options)
    return _frame(_plan_rows(report))


def _planner(command: str, required: Dict[str, Any], options: Dict[str, Any],
             allowed: tuple, name: str) -> Report:
    _check(options, allowed, name)
    request: Dict[str, Any] = {"command": command}
    for key, value in {**required, **options}.items():
        if value is None:
            continue
        request[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    return run(request)


def place(model: str, cluster: str, **options: Any) -> Report:
    """Places an operator graph's operators (an ONNX file) on a cluster's devices for
    pipelined training (``shardcost place``). Options: gpus, micro_batch, micro_batches,
    precision, optimizer, db, solver, max_ideals, solver_time. No placement that fits is a
    result: ``report.exit_code`` is 1 and ``report.message`` says why."""
    return _planner("place", dict(model=model, cluster=cluster), options, _PLACE, "place")


def split_learning(model: str, devices: str, server: str, **options: Any) -> Report:
    """Splits an operator graph between edge devices and a server (``shardcost
    split-learning``): each device's cut and uplink share. Options: precision, db, inference
    (True: a forward pass per request batch)."""
    return _planner("split-learning", dict(model=model, devices=devices, server=server),
                    options, _SPLIT, "split_learning")


def shard_tables(tables: str, cluster: str, batch: int, **options: Any) -> Report:
    """Shards embedding tables (a JSON or CSV file) over a cluster's GPUs (``shardcost
    shard-tables``), beside TorchRec's greedy plan. Options: gpus, optimizer, beam,
    dense_mlp (one MLP's widths, ``[13, 512, 256]`` or ``"13,512,256"``, or a list of them),
    dense_precision, db."""
    return _planner("shard-tables", dict(tables=tables, cluster=cluster, batch=batch), options,
                    _SHARD, "shard_tables")


def schedule(cluster: str, *, jobs: Optional[str] = None, search: Optional[str] = None,
             **options: Any) -> Report:
    """Schedules many jobs on one cluster (``jobs``: a JSON or CSV file; options gpus,
    software, objective, solver, time_limit, spill), or plans one hyperparameter search both
    ways at each GPU count per trial (``search``: its file; options gpus, software), as
    ``shardcost schedule`` does. Jobs left out or late: ``report.exit_code`` is 1."""
    if (jobs is None) == (search is None):
        raise TypeError("schedule() takes jobs=FILE (many jobs) or search=FILE (one search)")
    if search is not None:
        return _planner("schedule", dict(search=search, cluster=cluster), options, _SEARCH,
                        "schedule")
    return _planner("schedule", dict(jobs=jobs, cluster=cluster), options, _SCHEDULE,
                    "schedule")


def _check(options: Dict[str, Any], allowed: tuple, command: str) -> None:
    for key in options:
        if key not in allowed:
            raise TypeError(f"{command}() got an unexpected keyword argument '{key}' "
                            f"(it takes {', '.join(allowed)})")


# A plan's row: its figures first, then its strategy keys in the strategy string's order.
_FIGURES = ("step_time_s", "step_time_p10_s", "step_time_p90_s", "imbalance",
            "calibrated_step_time_s", "tokens_per_s", "samples_per_s", "tflops_per_gpu", "mfu",
            "memory_per_gpu_gib", "memory_capacity_gib", "feasible")
_KEYS = ("tp", "pp", "dp", "cp", "ep", "mbs", "gbs", "vpp", "recompute", "sp", "zero")


def _flat(plan: Dict[str, Any]) -> Dict[str, Any]:
    flat: Dict[str, Any] = {}
    strategy = plan.get("strategy")
    if isinstance(strategy, dict):
        flat.update(strategy)
    elif strategy is not None:
        flat["strategy"] = strategy
    for key, value in plan.items():
        if key == "calibrated" and isinstance(value, dict):
            flat["calibrated_step_time_s"] = value.get("step_time_s")
        elif not isinstance(value, (dict, list)) and key != "strategy":
            flat[key] = value
    first = [k for k in _FIGURES if k in flat] + [k for k in ("strategy",) + _KEYS if k in flat]
    return {**{k: flat[k] for k in first}, **{k: v for k, v in flat.items() if k not in first}}


def _plan_rows(report: Report) -> List[Dict[str, Any]]:
    if "strategies" in report:  # transformers, fixed or variable-length
        plans = report["strategies"]
    elif "segments" in report:  # --replan: each segment's best plan
        return [dict(_flat(s["best"]), start_s=s["start_s"], end_s=s["end_s"],
                     bandwidths=s["bandwidths"]) for s in report["segments"]]
    else:  # operator graphs: the layer-wise best, then the uniform strategies
        plans = [report["best"]] + report["uniform"]
    return [dict(rank=i + 1, **_flat(p)) for i, p in enumerate(plans)]


def _frame(rows: List[Dict[str, Any]]):
    if not _have_pandas():
        return rows
    import pandas
    return pandas.DataFrame(rows)


def validate(db: Optional[str] = None):
    """Every published training row priced (validate): table, label, model, cluster, gpus,
    strategy, published_s, predicted_s, error, fits; a DataFrame with pandas."""
    rows, problems = _core.validate_rows(os.fspath(db) if db else "")
    for w in problems:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return _frame(rows)


def catalog() -> Dict[str, Any]:
    """The built-in catalog: devices, systems and models, as the catalog files hold them."""
    return json.loads(_core.catalog_json())


def software_presets() -> List[str]:
    """The software presets' names (the first is the default)."""
    return list(_core.software_presets())


class Store:
    """A cost store (SQLite) read-only: each table as `shardcost export --table` gives it, a
    DataFrame with pandas, else a list of dicts."""

    def __init__(self, path: Union[str, os.PathLike]) -> None:
        self.path = os.fspath(path)
        self.counts()  # opens it once: a missing or damaged file is an InputError here

    def tables(self) -> List[str]:
        return list(_core.store_tables())

    def counts(self) -> Dict[str, int]:
        return dict(_core.store_counts(self.path))

    def table(self, name: str, device: str = "", op: str = ""):
        """One table; device: a substring of the device name; op: a collective or memory kind."""
        columns, rows = _core.store_table(self.path, name, device, op)
        if _have_pandas():
            import pandas
            return pandas.DataFrame(rows, columns=columns)
        return [dict(zip(columns, r)) for r in rows]

    @property
    def gemm(self):
        return self.table("gemm")

    @property
    def collective(self):
        return self.table("collective")

    @property
    def memory(self):
        return self.table("memory")

    @property
    def kernels(self):
        return self.table("kernels")

    @property
    def embedding(self):
        return self.table("embedding")

    @property
    def runs(self):
        return self.table("runs")

    @property
    def measured(self):
        """Measured training steps (import megatron-log, torchtitan-log, runs ...)."""
        return self.table("measured")

    def __repr__(self) -> str:
        return f"shardcost.Store({self.path!r})"
