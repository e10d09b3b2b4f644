#pragma once
// The fuzzed entry points, shared by the libFuzzer targets and the corpus regression test:
// any input must either parse or throw shardcost::InputError; nothing else may escape.
#include <cstddef>
#include <cstdint>

namespace shardcost::fuzz {
void model_json(const uint8_t* data, size_t size);
void cluster_json(const uint8_t* data, size_t size);
void strategy_text(const uint8_t* data, size_t size);
void plan_json(const uint8_t* data, size_t size);
void fitted_model_json(const uint8_t* data, size_t size);
void seq_dist_text(const uint8_t* data, size_t size);
// The store's importers: Kineto traces (streamed, fed in uneven chunks) and nccl-tests output.
void kineto_json(const uint8_t* data, size_t size);
void nccl_tests(const uint8_t* data, size_t size);
// Jobs files (schedule), and a small scheduling instance from raw bytes: the list schedule
// never holds more GPUs than the pool and is never worse than the brute-force optimum.
void jobs_file(const uint8_t* data, size_t size);
void job_instance(const uint8_t* data, size_t size);
// ONNX models: what loads is an operator graph of positive sizes, and plans of it price to a
// positive, finite step.
void onnx_model(const uint8_t* data, size_t size);
// Embedding tables files (shard-tables): what parses has rows, dims and pooling factors.
void tables_file(const uint8_t* data, size_t size);
// Measured runs: import runs' tables and Megatron-LM logs. What parses is a run with GPUs and a
// positive step, whose configuration reads back.
void runs_table(const uint8_t* data, size_t size);
void megatron_log(const uint8_t* data, size_t size);
void torchtitan_log(const uint8_t* data, size_t size);
void nemo_log(const uint8_t* data, size_t size);
}  // namespace shardcost::fuzz
