#pragma once
// compare's sinks: a terminal summary, a Markdown pull-request comment, JSON, JUnit XML.
#include <string>

#include "shardcost/compare.h"

namespace shardcost::cli {

// What the two sides were, for the headers.
struct CompareSides {
  std::string base, next;  // "base.db" or "store.db:3"
  std::string table;       // gemm | ... | all
};

std::string compare_text(const regress::Comparison&, const CompareSides&);
std::string compare_markdown(const regress::Comparison&, const CompareSides&);
std::string compare_json(const regress::Comparison&, const CompareSides&);
std::string compare_junit(const regress::Comparison&, const CompareSides&);

// "812 ns", "12.3 us", "4.56 ms", "1.23 s"
std::string duration_text(double ns);

}  // namespace shardcost::cli
