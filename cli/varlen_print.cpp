#include "varlen_print.h"

#include <fmt/format.h>

#include "format.h"
#include "shardcost/error.h"

namespace shardcost::cli {

VarlenOptions VarlenArgs::options() const {
  VarlenOptions o;
  o.lengths = !lengths_file.empty() ? LengthDistribution::load(lengths_file)
                                    : LengthDistribution::parse(dist);
  o.seed = seed;
  o.batches = batches;
  if (batch_tokens < 0)
    throw InputError(fmt::format("--batch-tokens {}: give a positive token count", batch_tokens));
  o.batch_tokens = batch_tokens;
  if (pad_to < 0)
    throw InputError(fmt::format("--pad-to {}: give a positive token multiple", pad_to));
  o.pad_to = pad_to;
  if (long_seqs == "drop")
    o.long_sequences = LongSequences::drop;
  else if (long_seqs == "truncate")
    o.long_sequences = LongSequences::truncate;
  else
    throw InputError(fmt::format("--long-seqs '{}': use drop or truncate", long_seqs));
  return o;
}

void add_varlen_options(CLI::App* cmd, VarlenArgs& va) {
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

void add_varlen_json(nlohmann::json& j, const VarlenEstimate& v, const VarlenOptions& o) {
  j["step_time_p10_s"] = round6(v.step_time_p10_s);
  j["step_time_p90_s"] = round6(v.step_time_p90_s);
  j["imbalance"] = round6(v.imbalance);
  j["baseline_step_time_s"] = round6(v.baseline_step_time_s);
  j["baseline"] = v.baseline;
  if (!v.cp_sequences.empty()) {
    nlohmann::json sizes = nlohmann::json::object();
    for (const auto& [k, n] : v.cp_sequences) sizes[std::to_string(k)] = n;
    j["cp_sequences"] = sizes;
  }
  j["sequences"] = {{"distribution", o.lengths.describe()},
                    {"batches", o.batches},
                    {"batch_tokens", o.batch_tokens},
                    {"seed", o.seed},
                    {"drawn", v.drawn},
                    {"dropped", v.dropped},
                    {"truncated", v.truncated},
                    {"longest", v.longest},
                    {"tokens_per_step", round6(v.tokens_per_step)},
                    {"max_micro_batches", v.max_micro_batches}};
}

}  // namespace shardcost::cli
