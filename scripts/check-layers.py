#!/usr/bin/env python3
"""Holds the architecture's dependency rules against the code (docs/architecture.md): layers,
public headers, and one door per C API (CUDA runtime, NCCL, cuBLASLt, CUPTI, SQLite, MPI,
XGBoost).

Run from anywhere: check-layers.py SOURCE_DIR. Prints each violation and exits 1, or
prints a one-line summary and exits 0. Tests (*_test.cpp) may reach across layers.
"""
import pathlib
import re
import sys

# estimator/<layer> may include "<other>/..." only for the layers listed.
ALLOWED = {
    "core": set(),
    "inputs": {"core"},
    "workload": {"core"},
    "graphs": {"core", "workload"},
    "layerwise": {"core", "inputs", "costs", "graphs", "workload"},
    "edge": {"core", "inputs", "costs", "graphs", "workload", "layerwise"},
    "devplace": {"core", "inputs", "costs", "graphs", "workload", "layerwise", "mip"},
    "mip": set(),
    "costs": {"core", "inputs"},
    "learned": {"core", "inputs", "costs"},
    "sequences": {"core"},
    "plan": {"core", "inputs", "workload", "costs", "sequences"},
    "search": {"core", "inputs", "workload", "costs", "plan", "sequences"},
    "entry": {"core", "inputs", "workload", "costs", "plan", "search", "learned", "sequences"},
    "validate": {"core", "inputs", "workload", "costs", "plan", "search", "entry"},
    "calibration": {"core", "inputs", "workload", "costs", "plan", "search", "entry"},
    "jobs": {"core", "inputs", "workload", "costs", "plan", "search", "sequences", "mip"},
    "embeddings": {"core", "inputs", "costs"},
    "request": {"core", "inputs", "workload", "graphs", "layerwise", "costs", "learned",
                "sequences", "plan", "search", "entry", "validate", "calibration", "devplace",
                "edge", "embeddings", "jobs", "mip"},
}
# Layers that consume graphs must not know which producer made one.
PRODUCER_BLIND = ["plan", "costs", "search", "learned"]
# The parts of shardcost outside the estimator, and which libraries' headers each may use.
OUTSIDE = {
    "base": set(),
    "db": {"base"},
    "compare": {"base", "db"},
    "profiler": {"base", "db"},
    "estimator": {"base", "db"},
    "python": {"base", "db", "estimator"},
}
PUBLIC = {
    "base": {"error.h", "units.h", "quantiles.h", "divisors.h", "progress.h"},
    "db": {"db.h", "importers.h", "measures.h"},
    "compare": {"compare.h"},
    "estimator": {"estimator.h", "costs.h", "hardware.h", "model.h", "plan.h", "strategy.h",
                  "workload.h", "store_costs.h", "predict.h", "learned.h", "varlen.h", "jobs.h", "embeddings.h",
                  "opgraph.h", "layerwise.h", "split_learning.h", "device_placement.h",
                  "calibration.h", "request.h", "planner_requests.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# One door per C API: only these files call it (the fakes and tests drive the doors).
DOORS = {
    "CUDA runtime": (re.compile(r"\bcuda[A-Z]\w*\s*\("), {"profiler/cuda/cuda_api.cpp",
                                                         "profiler/cuda/kernels.cu",
                                                         "profiler/cuda/embedding_kernels.cu",
                                                         "profiler/trace/probe/cudart_probe.cpp"}),
    "NCCL": (re.compile(r"\bnccl[A-Z]\w*\s*\("), {"profiler/cuda/nccl_api.cpp"}),
    "cuBLASLt": (re.compile(r"\bcublasLt[A-Z]\w*\s*\("), {"profiler/cuda/cublaslt_api.cpp"}),
    "CUPTI": (re.compile(r"\bcupti[A-Z]\w*\s*\("), {"profiler/trace/inject/injection.cpp"}),
    "SQLite": (re.compile(r"\bsqlite3_\w+\s*\("), {"db/sqlite.cpp"}),
    "MPI": (re.compile(r"\bMPI_[A-Z]\w*\s*\("), {"profiler/mpi_api.cpp"}),
    "XGBoost": (re.compile(r"\bXG(?:Booster|DMatrix)\w*\s*\("), {"estimator/learned/xgboost_api.cpp"}),
    "GLPK": (re.compile(r"\bglp_\w+\s*\("), {"estimator/mip/glpk_api.cpp"}),
    "ONNX": (re.compile(r"\bonnx::\w+"), {"estimator/graphs/onnx_api.cpp"}),
    "Python C API (pybind11)": (re.compile(r"\bpy::\w+|\bPy[A-Z]\w*_\w+\s*\("),
                                {"python/core_module.cpp"}),
}
# The command line parses and renders: the pricing paths of an estimate or a rank, and the
# sibling planners (which of them runs, with what) are decided in estimator/request
# (shardcost/request.h, planner_requests.h), so no cli/ file calls them.
PRICING = re.compile(r"(?<![\w.:>])(estimate|rank|rank_varlen|estimate_varlen|replan|"
                     r"estimate_over_trace|trusted_ranking|calibrate|step_uncertainty|"
                     r"plan_layerwise|price_uniform|price_splits|place_graph|"
                     r"plan_split_learning|shard_tables|job_curves|schedule_jobs|simulate_halving)\s*\(")


def sources(folder):
    for p in sorted(folder.rglob("*")):
        if p.suffix in (".cpp", ".h", ".cu") and p.is_file():
            yield p


def code_of(f):
    """A source's code: comments and strings name calls too, and only code counts."""
    code = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', f.read_text())
    return re.sub(r"//[^\n]*", "", code)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    owner = {h: lib for lib, hs in PUBLIC.items() for h in hs}
    problems = []
    checked = 0
    est = root / "estimator"
    for layer, allowed in ALLOWED.items():
        for f in sources(est / layer):
            if f.name.endswith("_test.cpp"):
                continue
            checked += 1
            text = f.read_text()
            for inc in INCLUDE.findall(text):
                head = inc.split("/")[0]
                if head in ALLOWED and head != layer and head not in allowed:
                    problems.append(f"{f.relative_to(root)}: includes {inc}; {layer} may use "
                                    f"{', '.join(sorted(allowed)) or 'no other layer'}")
            if layer in PRODUCER_BLIND and re.search(r"\bModel\b|transformer", text):
                problems.append(f"{f.relative_to(root)}: names a producer (Model or transformer); "
                                f"{layer} reads graphs only")
    for f in sources(est / "include"):
        checked += 1
        for inc in INCLUDE.findall(f.read_text()):
            if not inc.startswith("shardcost/"):
                problems.append(f"{f.relative_to(root)}: public header includes private {inc}")
    for part, allowed in OUTSIDE.items():
        for f in sources(root / part):
            if f.name.endswith("_test.cpp"):
                continue
            checked += 1
            for inc in INCLUDE.findall(f.read_text()):
                if not inc.startswith("shardcost/"):
                    continue
                lib = owner.get(inc.split("/", 1)[1])
                if lib and lib != part and lib not in allowed:
                    problems.append(f"{f.relative_to(root)}: includes {inc} ({lib}); {part} may "
                                    f"use {', '.join(sorted(allowed)) or 'nothing'}")
    for api, (call, doors) in DOORS.items():
        for part in [*OUTSIDE, "cli", "bench", "fuzz"]:
            for f in sources(root / part):
                rel = str(f.relative_to(root))
                if f.name.endswith("_test.cpp") or rel in doors:
                    continue
                m = call.search(code_of(f))
                if m:
                    problems.append(f"{rel}: calls {m.group(0).rstrip('(').strip()} directly; the "
                                    f"{api} is called only through {', '.join(sorted(doors))}")
    for f in sources(root / "cli"):
        rel = str(f.relative_to(root))
        if f.name.endswith("_test.cpp"):
            continue
        m = PRICING.search(code_of(f))
        if m:
            problems.append(f"{rel}: calls {m.group(1)}() itself; estimate and rank run through "
                            f"shardcost/request.h (run_estimate, run_rank)")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {checked} files follow the dependency rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
