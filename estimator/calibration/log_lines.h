#pragma once
// What the training-log importers share (Megatron-LM, torchtitan, NeMo): lines with the
// launcher's rank prefix and colour codes taken off, numbers read after a key, the warm-up rule,
// and a measured run made of a configuration and its kept step times.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/calibration.h"

namespace shardcost::logs {

// Steps the warm-up takes: no interval that includes one of these is kept, nor the first
// interval logged after a start or a restart (it holds the allocator's, the compiler's and
// NCCL's first work).
constexpr int64_t kWarmupSteps = 10;

std::string_view trim(std::string_view);
// What launchers and loggers put before a rank's line: srun -l's "12: ", torchrun's
// "[default3]:" or "[rank3]:"; ANSI colour codes anywhere are dropped too.
std::string clean_line(std::string_view raw);
// The launcher's rank, where the line names one ("[rank3]:", "3: "); nullopt otherwise.
std::optional<int> line_rank(std::string_view raw);
// The number after `key` (spaces skipped); thousands separators taken where `commas`.
std::optional<double> number_after(std::string_view line, std::string_view key,
                                   bool commas = false);

// Each line with its number (from 1), and whether it is the text's last (a log cut off mid-line
// ends with part of one).
void for_each_line(std::string_view text,
                   const std::function<void(int line_no, std::string_view raw, bool last)>&);

// One logged interval: the step it ends at and the mean seconds per step over it.
struct Interval {
  int64_t step = 0;
  double seconds = 0;
  int line = 0;
  bool restart = false;  // the first interval after a (re)start, whatever its step
};
// The intervals past the warm-up, a restart being a step at or below the one before it or an
// interval marked so; their step times and the steps they cover.
struct Kept {
  std::vector<double> seconds;
  int64_t steps = 0;
};
Kept past_warmup(const std::vector<Interval>&);

// A measured run from a configuration and its kept steps: the step the median (p10/p90 with 3
// or more intervals), priced to check that the configuration is one the estimator takes.
// `where` names the file and line errors point at; `kind` the importer; `salt` tells runs of
// one file apart.
struct LogRun {
  Model model;
  std::string cluster;  // a catalog system or a cluster file
  int gpus = 0;
  std::string strategy;
  std::string software;
  Kept kept;
  std::optional<double> peak_memory_bytes;
  std::string label;  // empty: `where`
};
db::Measurements measured_run(const LogRun&, const std::string& where, std::string_view kind,
                              std::string_view source, const std::string& salt,
                              std::string_view whole_text);

}  // namespace shardcost::logs
