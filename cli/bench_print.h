#pragma once
// Benchmark reports as text tables and JSON (CSV is the export layout: db::export_table).
#include <string>

#include "format.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {

std::string render(const bench::GemmReport&, Format);
std::string render(const bench::MemoryReport&, Format);
std::string render(const bench::EmbeddingReport&, Format);
std::string render(const bench::CollectiveReport&, Format);
std::string render(const bench::P2pReport&, Format);

}  // namespace shardcost::cli
