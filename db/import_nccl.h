#pragma once
// What the nccl-tests text and JSON importers share: rank lines, and turning one result row
// into collective records.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "shardcost/db.h"

namespace shardcost::db {

struct NcclRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string pci_bus;
  std::string name;
};

// One half (out-of-place or in-place) of a result row.
struct NcclHalf {
  double time_us = 0;
  std::optional<int64_t> wrong;
  std::optional<double> max_error;
};

struct NcclRow {
  int64_t bytes = 0, elements = 0;
  std::string dtype, redop = "none";
  int root = -1;
  std::optional<NcclHalf> out_of_place, in_place;
};

struct NcclRun {
  std::string op;
  int ranks = 0;  // 0: from the rank lines
  int64_t iterations = 0;
  std::vector<NcclRank> rank_lines;
  std::vector<NcclRow> rows;
};

// --op as the fallback for a file that names no op: a collective in any spelling nccl-tests
// uses, as the store names it ("AllGather" -> "all_gather"), or an InputError; empty: none.
std::string fallback_op(std::string_view op);

// Fills devices (one per rank line), run.host and the collective records.
// Throws InputError when the op or the rank count cannot be told.
void nccl_records(const NcclRun&, std::string_view source, Measurements& out);

}  // namespace shardcost::db
