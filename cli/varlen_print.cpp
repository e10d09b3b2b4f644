#include "varlen_print.h"

#include <fmt/format.h>

#include "format.h"
#include "shardcost/error.h"

namespace shardcost::cli {

void add_varlen_options(CLI::App* cmd, VarlenRequest& va) {
  auto* lengths_opt =
      cmd->add_option("--seq-lengths", va.lengths_file,
                      "sequence lengths: one per line (.gz too), or CSV length,count; the model's "
                      "seq_len becomes the longest (docs/variable-length.md)");
  cmd->add_option("--seq-dist", va.dist,
                  "or a named distribution: lognormal:median=1024,sigma=1.5[,min=..,max=..], "
                  "uniform:min=..,max=.., fixed:N")
      ->excludes(lengths_opt);
  cmd->add_option("--seed", va.seed, "seed of the sampled global batches (default 0)");
  cmd->add_option("--batches", va.batches, "global batches sampled (default 100)");
  cmd->add_option("--long-seqs", va.long_seqs,
                  "sequences above seq_len: drop (default) or truncate");
  cmd->add_option("--pad-to", va.pad_to,
                  "pad every sequence to a multiple of this many tokens (default: none)");
  cmd->add_option(
      "--batch-tokens", va.batch_tokens,
      "global batches of this many tokens (sequences drawn until they reach it) instead of gbs "
      "sequences");
}

namespace {

// "1.40x faster", or "0.83x: slower than the baseline".
std::string speedup(double baseline_s, double step_s) {
  const double x = baseline_s / step_s;
  return x >= 1 ? fmt::format("{:.2f}x faster", x)
                : fmt::format("{:.2f}x: slower than the baseline", x);
}

}  // namespace

std::string varlen_text(const VarlenEstimate& v, const VarlenOptions& o, const Strategy& s) {
  std::string out = fmt::format("variable-length data: {}\n", o.lengths.describe());
  const int64_t kept = v.drawn - v.dropped;
  const std::string size =
      o.batch_tokens > 0 ? fmt::format("{} tokens", thousands(static_cast<double>(o.batch_tokens)))
                         : fmt::format("{} sequences", s.gbs);
  out += fmt::format("  {} global batches of {} (seed {}): {} kept of {} drawn", o.batches, size,
                     o.seed, thousands(static_cast<double>(kept)),
                     thousands(static_cast<double>(v.drawn)));
  if (v.dropped > 0)
    out += fmt::format(", {} above seq_len dropped", thousands(static_cast<double>(v.dropped)));
  if (v.truncated > 0)
    out += fmt::format(", {} truncated to seq_len", thousands(static_cast<double>(v.truncated)));
  out += fmt::format(
      "\n  longest {} tokens; {} tokens per step; up to {} micro-batches on a rank\n",
      thousands(static_cast<double>(v.longest)), thousands(v.tokens_per_step), v.max_micro_batches);
  out += fmt::format("  step time  mean {:.3f} s, p10 {:.3f} s, p90 {:.3f} s\n",
                     v.estimate.step_time_s, v.step_time_p10_s, v.step_time_p90_s);
  out += fmt::format(
      "  imbalance  {:.3f} ({})\n", v.imbalance,
      s.cp_per_sequence()
          ? "the slowest CP domain's time over its time with every CP size's groups equally loaded"
          : "the slowest data-parallel rank's work over the ranks' mean");
  if (!v.cp_sequences.empty()) {
    std::string sizes;
    for (const auto& [k, n] : v.cp_sequences)
      sizes += fmt::format("{}cp={}: {}", sizes.empty() ? "" : ", ", k,
                           thousands(static_cast<double>(n)));
    out += fmt::format("  sequences  {}\n", sizes);
  }
  if (s.cp_per_sequence()) {
    if (v.baseline_step_time_s > 0)
      out += fmt::format("  baseline   {:.3f} s static, sized for the longest ({}): {}\n",
                         v.baseline_step_time_s, v.baseline,
                         speedup(v.baseline_step_time_s, v.estimate.step_time_s));
    else
      out += fmt::format("  baseline   {}\n", v.baseline);
  } else if (s.balance != Balance::none) {
    out += fmt::format("  baseline   {:.3f} s with sequences spread as drawn (balance=none): {}\n",
                       v.baseline_step_time_s,
                       speedup(v.baseline_step_time_s, v.estimate.step_time_s));
  }
  return out;
}

}  // namespace shardcost::cli
