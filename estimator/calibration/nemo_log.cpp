// NeMo 2 / Megatron-Bridge runs as measured runs: the log's per-step lines ("Training epoch 0,
// iteration 120/149 | ... | global_batch_size: 128 | global_step: 120 | ... | train_step_timing
// in s: 1.234", or the progress bar's "train_step_timing in s=1.234") give the steps; the recipe's
// model and parallel sizes are given (--model, --strategy), as the log does not print them.
#include <fmt/format.h>

#include "calibration/log_lines.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"

namespace shardcost {

std::vector<db::Measurements> import_nemo_log(std::string_view log, std::string_view source,
                                              const LogImport& opt) {
  if (opt.model.empty() || opt.strategy.empty() || !opt.gpus)
    throw InputError(fmt::format(
        "{}: a NeMo log does not print its recipe: give --model, --gpus and --strategy as the "
        "recipe set them",
        source));
  const Model model = load_model(opt.model);
  const Strategy plan = parse_strategy(opt.strategy, *opt.gpus);
  struct Run {
    int line = 0;
    std::vector<logs::Interval> intervals;
  };
  std::vector<Run> runs;
  bool stop = false;
  logs::for_each_line(log, [&](int line_no, std::string_view raw, bool last) {
    if (stop) return;
    const std::string line = logs::clean_line(raw);
    const size_t at = line.find("train_step_timing in s");
    if (at == std::string::npos) return;
    const std::string where = fmt::format("{}:{}", source, line_no);
    auto seconds = logs::number_after(line, "train_step_timing in s:");
    if (!seconds) seconds = logs::number_after(line, "train_step_timing in s=");
    auto step = logs::number_after(line, "global_step:");
    if (!step) step = logs::number_after(line, "global_step=");
    if (!seconds || !step || *seconds <= 0 || *step < 0 || *step > 1e12) {
      if (last) {  // a log cut off mid-line
        stop = true;
        return;
      }
      throw InputError(fmt::format(
          "{}: a step line without its global_step and a positive train_step_timing; fix or "
          "remove the line",
          where));
    }
    if (const auto gbs = logs::number_after(line, "global_batch_size:");
        gbs && static_cast<int64_t>(*gbs) != plan.gbs)
      throw InputError(fmt::format(
          "{}: the run's global_batch_size is {:.0f}, the --strategy's gbs {}; give the recipe's",
          where, *gbs, plan.gbs));
    const auto s = static_cast<int64_t>(*step);
    // A start from scratch (the steps begin again at 0 or 1) is another run; a resume from a
    // checkpoint (a step at or below the last one, past the start) restarts this one.
    if (runs.empty() ||
        (s <= 1 && !runs.back().intervals.empty() && s <= runs.back().intervals.back().step))
      runs.push_back({line_no, {}});
    runs.back().intervals.push_back({s, *seconds, line_no, false});
  });
  if (runs.empty())
    throw InputError(
        fmt::format("{}: no step line with 'train_step_timing in s'; is it the log of a NeMo or "
                    "Megatron-Bridge training run (exp_manager's log_step_timing on)?",
                    source));
  std::vector<db::Measurements> out;
  for (const Run& run : runs) {
    logs::LogRun r;
    r.model = model;
    r.cluster = opt.cluster;
    r.gpus = *opt.gpus;
    r.strategy = opt.strategy;
    r.software = opt.software;
    r.kept = logs::past_warmup(run.intervals);
    r.label = fmt::format("{} (line {})", source, run.line);
    out.push_back(logs::measured_run(r, fmt::format("{}:{}", source, run.line), "nemo-log", source,
                                     std::to_string(run.line),
                                     std::string(log) + opt.model + opt.strategy));
  }
  return out;
}

}  // namespace shardcost
