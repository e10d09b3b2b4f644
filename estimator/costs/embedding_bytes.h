#pragma once
// The bytes an embedding-bag pass moves through memory: what the catalog prices at the
// streaming rate (embeddings/cost.cpp) and what the learned lookup model's prior scales
// (learned/embedding_model.cpp). docs/embeddings.md has the formulas.
#include <string_view>

#include "shardcost/hardware.h"

namespace shardcost::embedding_bytes {

// Rows are read and written in 32-byte sectors.
double sectors(double bytes);
// Expected distinct rows among `lookups` draws from `rows` rows: rows (1 - e^(-lookups/rows))
// when uniform; under Zipf the same summed over 96 log-spaced rank buckets; with a histogram,
// over its buckets (rows share r, lookups share a: R r (1 - e^(-lookups a / (R r)))).
double unique_rows(double rows, double zipf, double lookups, const AccessHistogram& = {});
// The share of draws that fall on the `k` most drawn rows of `rows` (uniform: k / rows; Zipf:
// their probability mass, over the same buckets).
double top_mass(double rows, double zipf, double k, const AccessHistogram& = {});
// The optimizer's state per row of `dim` columns: row-wise Adagrad one fp32, Adam two fp32
// moments per column, SGD none.
double state_bytes(std::string_view optimizer, double dim);
// Forward: every lookup's row in sectors, every bag's pooled row written. Backward: the
// pooled gradients read, every lookup's fp32 gradient row scattered, each distinct row and
// its optimizer state read and written once.
double pass_bytes(const EmbeddingPass&);

}  // namespace shardcost::embedding_bytes
