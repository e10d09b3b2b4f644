#pragma once
// Importers: pure functions from the text of a file people already have to the records the
// store writes. `source` names the file in errors ("file:line: ...") and in the run.
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/db.h"

namespace shardcost::db {

// nccl-tests stdout (every *_perf test; the older `error` and newer `#wrong` layouts, with or
// without `root`) or its JSON file (-J), told apart by the first character. `op` names the
// collective when the file does not ("all_reduce", ...); empty: from the file, then its name.
Measurements import_nccl_tests(std::string_view text, std::string_view source,
                               std::string_view op = "");
// A file may hold several nccl-tests runs one after another (a log of several *_perf
// programs): one Measurements per run, each with its own op, host and content id. The op
// comes from the run's "# Collective test starting" line, else the file name, else `op`
// (which must name a collective).
std::vector<Measurements> import_nccl_tests_runs(std::string_view text, std::string_view source,
                                                 std::string_view op = "");
Measurements import_nccl_tests_text(std::string_view text, std::string_view source,
                                    std::string_view op = "");
Measurements import_nccl_tests_json(std::string_view text, std::string_view source,
                                    std::string_view op = "");

// PyTorch profiler / Kineto Chrome trace: GPU kernel, memcpy and memset events, and
// ProfilerStep#N spans as steps. The file form streams it in chunks (memory flat in its size).
Measurements import_kineto(std::string_view text, std::string_view source);
Measurements import_kineto_file(const std::string& path);
// The traces of the ranks of one job (one file per rank), read on up to `threads` threads at
// once and merged into one run: every rank's GPUs (told apart by host "rank N" when the trace
// names no host: N from its distributedInfo, else the file's position), kernels and copies;
// each step spans its earliest start to its latest end over the ranks (the job's step). Two
// files of one rank are an error; so is any bad file (nothing is returned).
Measurements import_kineto_ranks(const std::vector<std::string>& paths, int threads);

// An Nsight Systems report exported to SQLite (nsys export --type sqlite): its GPU kernels
// (NCCL's among them), copies and sets with their devices and streams, each CUDA device with
// TARGET_INFO_GPU's properties, and NVTX ranges named <step_prefix><number> as steps. Tables
// and columns are looked up, so the layouts of nsys 2021 and later read alike.
Measurements import_nsys_file(const std::string& path,
                              std::string_view step_prefix = "ProfilerStep#");

// A table written by `shardcost export --format csv` (gemm, memory, collective or kernels):
// one Measurements per run_uuid the rows name, each adds_to_run (it joins that run when the
// store holds it); rows without a run_uuid are one run named by the file's content.
std::vector<Measurements> import_cost_csv_runs(std::string_view text, std::string_view source);
// The same for a table of one run; an InputError when it holds rows of several.
Measurements import_cost_csv(std::string_view text, std::string_view source);

// A file's whole text, or an InputError in one line: "no such file", "it is a directory",
// "Permission denied".
std::string read_input_file(const std::string& path);

// "import-<kind>-<hash of the content>": importing the same file twice adds nothing.
std::string content_uuid(std::string_view kind, std::string_view text);

}  // namespace shardcost::db
