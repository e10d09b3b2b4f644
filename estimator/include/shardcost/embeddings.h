#pragma once
// Embedding tables of recommendation models sharded over a cluster's GPUs, as TorchRec names
// the ways (table-wise, row-wise, column-wise, table-row-wise, data-parallel): each shard's
// lookup and update priced on its GPU, the all-to-alls and reductions the plan needs, and a
// search for the plan whose slowest GPU finishes first within every GPU's memory, beside
// TorchRec's greedy baseline (docs/embeddings.md). Records only; printing belongs to cli/.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/estimator.h"
#include "shardcost/progress.h"

namespace shardcost {

struct EmbeddingTable {
  std::string name;
  int64_t rows = 0;
  int dim = 0;
  double pooling = 1;         // lookups per sample (pooling factor)
  int dtype_bytes = 4;        // fp32 (4) or fp16/bf16 (2)
  double zipf = 0;            // access skew: rank r drawn with weight r^-zipf; 0: uniform
  AccessHistogram histogram;  // or the skew as a histogram (shardcost/hardware.h)
};

// Tables files: JSON ({"tables": [{"name", "rows", "dim", "pooling_factor", "dtype", "zipf",
// "histogram"}, ...]}) or CSV with those columns; a histogram is [[share of rows, share of
// lookups], ...] hottest first in JSON, "0.01:0.6;0.99:0.4" in CSV. Throws InputError naming
// the table and the field.
std::vector<EmbeddingTable> parse_tables(std::string_view text, std::string_view origin);
std::vector<EmbeddingTable> load_tables(std::string_view path);

enum class ShardingType { table_wise, column_wise, row_wise, table_row_wise, data_parallel };
std::string_view to_string(ShardingType);

enum class EmbeddingOptimizer { rowwise_adagrad, adam, sgd };

struct ShardingOptions {
  int batch = 0;  // global batch, samples
  // The dense part beside the tables, data-parallel on every GPU: MLP chains of layer widths
  // (DLRM's bottom MLP 13,512,256,128 and top MLP 479,1024,1024,512,256,1), each layer a
  // GEMM forward and two backward at the cluster's prices, its gradients all-reduced.
  std::vector<std::vector<int>> dense_mlps;
  DType dense_dtype = DType::fp32;
  EmbeddingOptimizer optimizer = EmbeddingOptimizer::rowwise_adagrad;
  int beam = 8;  // partial plans kept while tables are placed
  // Of each GPU's memory, what the tables may take (the dense model, activations and
  // buffers take the rest).
  double memory_fraction = 0.7;
  Progress progress;  // tables placed, said as the search goes
};

// One table's choice and where its shards went.
struct TablePlacement {
  size_t table = 0;
  ShardingType type = ShardingType::table_wise;
  std::vector<int> gpus;  // one per shard (every GPU for row-wise and data-parallel)
  double compute_s = 0;   // lookups and updates, over its shards
  double memory_bytes = 0;
};

// One shard's lookups as an embedding-bag pass: the GPU, the rows and columns it holds, the
// bags it serves and their mean lookups (a row-wise shard serves every bag with pooling/W of
// its lookups; a data-parallel one its GPU's batch/W bags whole).
struct ShardPass {
  int gpu = 0;
  double rows = 0;
  int dim = 0;
  double pooling = 0, batch = 0;
};
// The passes of a table placed on the cluster `shard_tables` planned, at its global batch.
std::vector<ShardPass> shard_passes(const TablePlacement&, const EmbeddingTable&, const Cluster&,
                                    int batch);

struct GpuLoad {
  double compute_s = 0;     // its shards' forward lookups, backward and sparse updates
  double memory_bytes = 0;  // its shards' weights and optimizer state
  double send_bytes = 0;    // pooled embeddings it sends in the forward all-to-all
  int shards = 0;
};

struct ShardingPlan {
  std::vector<TablePlacement> tables;
  std::vector<GpuLoad> gpus;
  double slowest_compute_s = 0, mean_compute_s = 0;  // the tables' lookups and updates
  double comm_s = 0;  // all-to-alls (forward and backward), reductions
  // The dense MLPs on every GPU: forward and backward GEMMs, and their gradients' all-reduce.
  double dense_s = 0, dense_comm_s = 0;
  // Slowest GPU's lookups plus the dense compute, plus the tables' and the dense part's
  // communication.
  double step_s = 0;
  double balance() const { return mean_compute_s > 0 ? slowest_compute_s / mean_compute_s : 1; }
  int count(ShardingType) const;
};

// The dense part's parameters (weights and biases) and its memory per GPU (weights, fp32
// gradients, Adam's two moments, and the activations kept for the backward of batch/W rows).
struct DenseCost {
  double parameters = 0, memory_bytes = 0;
  double compute_s = 0, all_reduce_s = 0;
};

struct ShardingResult {
  ShardingPlan plan;          // the search's, never worse than the greedy one
  ShardingPlan greedy;        // TorchRec's baseline: table-wise where a table fits, else row-wise,
                              // the costliest shards first onto the least-loaded GPU with room
  std::string greedy_failed;  // the table the baseline found no room for (greedy is empty)
  int64_t evaluated = 0;
  double elapsed_s = 0;
  // What priced the shards' lookups: "learned" or "extrapolated" (a model fitted on bench
  // embedding's rows), "store read bandwidth", or "catalog" (the streaming rate).
  std::string lookup_costs;
  DenseCost dense;
};

// Throws InputError when the batch is not positive or a table fits no sharding (it names the
// table, its size and the most a GPU may hold). The baseline may fail where the search does
// not (greedy_failed).
ShardingResult shard_tables(const std::vector<EmbeddingTable>&, const Cluster&,
                            const ShardingOptions&, const EstimateOptions& = {});

}  // namespace shardcost
