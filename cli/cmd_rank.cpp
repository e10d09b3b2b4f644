// rank: search the space of strategies and print the best, as far as the evidence orders them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "format.h"
#include "graph_plan.h"
#include "plan_args.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/request.h"
#include "varlen_print.h"

namespace shardcost::cli {
namespace {

// Where the calibration applied, how far the best can be trusted, and which plans it cannot
// tell apart.
std::string trust_text(const TrustedRanking& t, size_t listed) {
  std::string out;
  for (const auto& k : t.calibrated_steps) {
    if (!k) continue;
    const std::string on =
        fmt::format("{} run{} of {} under {}", k->by.runs, k->by.runs == 1 ? "" : "s",
                    k->by.device.empty() ? "every device (pooled)" : k->by.device, k->by.software);
    if (t.calibrated == 0)
      out +=
          fmt::format("calibrated      not applied: {} (the calibration on {})\n", k->why_not, on);
    else if (!t.not_covered.empty())
      out += fmt::format(
          "calibrated      on {}: applied to {} of the search's {} best, not to every one ({}); "
          "their analytic order stands\n",
          on, t.calibrated, t.priced, t.not_covered);
    else
      out += fmt::format("calibrated      on {}: applied to the search's {} best, {}{}\n", on,
                         t.priced,
                         t.reordered ? "ordered by the calibrated step" : "in the same order",
                         t.over_calibrated_memory > 0
                             ? fmt::format("; {} left out, over memory with its allowance",
                                           t.over_calibrated_memory)
                             : "");
    break;
  }
  out += uncertainty_line(t.uncertainty);
  if (listed > 1 && t.indistinguishable >= static_cast<int>(listed))
    out += fmt::format(
        "within it       every plan listed (more past --top may be too): the estimate cannot "
        "order them\n");
  else if (t.indistinguishable > 1)
    out += fmt::format(
        "within it       plans 1-{}: the estimate cannot order them; plan {} is {:.1f} % slower "
        "than the best\n",
        t.indistinguishable, t.indistinguishable + 1, 100 * t.next_gap);
  else if (listed > 1)
    out += fmt::format(
        "within it       none: the best is ahead of plan 2 by {:.1f} %, more than the "
        "uncertainty\n",
        100 * t.next_gap);
  return out;
}

// The cp column: the degree (per sequence: dyn<=N or flex<=N), and the kind where it is not
// ring attention, so that plans that differ only in it do not read as the same plan.
std::string cp_text(const Strategy& s) {
  std::string out = s.cp_per_sequence()
                        ? fmt::format("{}<={}", s.cp_mode == CpMode::flex ? "flex" : "dyn", s.cp)
                        : fmt::format("{}", s.cp);
  if (s.cp > 1 && s.cp_kind != CpKind::ring) out += fmt::format("/{}", to_string(s.cp_kind));
  return out;
}

// rank's per-layer sharding: the fastest mixture beside its shape's uniform ZeRO stages.
void print_sharding(const RankResult::Sharding& sh) {
  const Estimate& m = sh.mixture;
  Strategy shape = m.strategy;
  shape.zero_layers.clear();
  fmt::print("\nper-layer sharding (zero_layers: s sharded, r replicated under zero={})\n",
             m.strategy.zero);
  fmt::print("  shape {}\n", to_string(shape));
  Table t({"zero", "step s", "GiB", ""}, {false, true, true, false});
  const Estimate* best_uniform = nullptr;
  for (const Estimate& u : sh.uniform) {
    t.add({fmt::format("{}", u.strategy.zero), fmt::format("{:.3f}", u.step_time_s),
           fmt::format("{:.1f}", u.memory_per_gpu_bytes / kGiB), u.feasible ? "" : "does not fit"});
    if (u.feasible && (!best_uniform || u.step_time_s < best_uniform->step_time_s))
      best_uniform = &u;
  }
  const bool mixed = m.strategy.zero_layers_mixed();
  if (mixed)
    t.add({zero_layers_text(m.strategy.zero_layers), fmt::format("{:.3f}", m.step_time_s),
           fmt::format("{:.1f}", m.memory_per_gpu_bytes / kGiB),
           best_uniform ? fmt::format("{:+.1f} % against zero={}",
                                      100 * (m.step_time_s / best_uniform->step_time_s - 1),
                                      best_uniform->strategy.zero)
                        : std::string()});
  fmt::print("{}", t.render(2));
  if (!mixed)
    fmt::print("  no mix of sharded and replicated layers is faster than a uniform stage\n");
}

// rank on variable-length data: the best plans with their step spread and imbalance.
void print_varlen_rank(const RankReport& rep) {
  const Model& m = rep.model;
  const Cluster& c = rep.cluster;
  const VarlenOptions& vo = *rep.varlen_options;
  const VarlenRank& r = *rep.varlen;
  fmt::print("{} on {} ({}), global batch {}, software {}\n", m.name, c.name, cluster_line(c),
             rep.request.gbs, rep.request.software);
  fmt::print("variable-length data: {}, {} batches (seed {})\n", vo.lengths.describe(), vo.batches,
             vo.seed);
  fmt::print(
      "{} fixed-length candidates searched; {} variable-length plans priced on the batches\n\n",
      thousands(static_cast<double>(r.fixed_evaluated)),
      thousands(static_cast<double>(r.evaluated)));
  std::vector<std::string> header{
      "#",  "step s", "p10", "p90", "imbalance",  "tokens/s", "MFU",       "GiB", "tp",
      "pp", "dp",     "cp",  "mbs", "max_tokens", "balance",  "recompute", "zero"};
  std::vector<bool> right{true, true, true,  true, true, true,  true,  true, true,
                          true, true, false, true, true, false, false, true};
  // A mixed cluster: each plan's layers per stage and the order its stages take the groups.
  const bool mixed = c.groups.size() > 1;
  if (mixed) {
    header.insert(header.end(), {"layers", "groups"});
    right.insert(right.end(), {false, false});
  }
  std::vector<std::string> file_order;
  for (const auto& g : c.groups) file_order.push_back(g.name);
  Table t(header, right);
  int i = 0;
  for (const auto& v : r.best) {
    const Estimate& e = v.estimate;
    const Strategy& s = e.strategy;
    std::vector<std::string> row{fmt::format("{}", ++i),
                                 fmt::format("{:.3f}", e.step_time_s),
                                 fmt::format("{:.3f}", v.step_time_p10_s),
                                 fmt::format("{:.3f}", v.step_time_p90_s),
                                 fmt::format("{:.3f}", v.imbalance),
                                 thousands(e.tokens_per_s),
                                 fmt::format("{:.1f}%", 100 * e.mfu),
                                 fmt::format("{:.1f}", e.memory_per_gpu_bytes / kGiB),
                                 tp_text(s),
                                 fmt::format("{}", s.pp),
                                 fmt::format("{}", s.dp),
                                 cp_text(s),
                                 fmt::format("{}", s.mbs),
                                 fmt::format("{}", s.max_tokens),
                                 std::string(to_string(s.balance)),
                                 std::string(to_string(s.recompute)),
                                 fmt::format("{}", s.zero)};
    if (mixed) {
      row.push_back(s.stage_layers.empty() ? "even" : join_layers(s.stage_layers));
      row.push_back(
          fmt::format("{}", fmt::join(e.group_order.empty() ? file_order : e.group_order, ",")));
    }
    t.add(row);
  }
  fmt::print("{}", t.render());
  fmt::print(stderr, "ranked in {:.2f} s\n", r.elapsed_s);
}

void print_replan(const RankReport& rep) {
  const ReplanResult& r = *rep.replanned;
  const Model& m = rep.model;
  const Cluster& c = rep.cluster;
  fmt::print("{} on {} ({}), software {}: the best plan of each segment of the network trace\n\n",
             m.name, c.name, cluster_line(c), rep.request.software);
  Table t({"from s", "to s", "bandwidths", "best plan", "step s", "single plan's step s"},
          {true, true, false, false, true, true});
  for (size_t i = 0; i < r.best.size(); ++i)
    t.add({fmt::format("{:.0f}", r.best[i].start_s), fmt::format("{:.0f}", r.best[i].end_s),
           r.best[i].bandwidths, to_string(r.best[i].estimate.strategy),
           fmt::format("{:.3f}", r.best[i].estimate.step_time_s),
           r.single_step_s[i] > 0 ? fmt::format("{:.3f}", r.single_step_s[i]) : "does not fit"});
  fmt::print("{}\nbest single plan: {}\n", t.render(), to_string(r.single));
  std::string switches;
  for (double s : r.switches_s)
    switches += fmt::format("{}{:.0f} s", switches.empty() ? "" : ", ", s);
  fmt::print("replanning switches at {}\n",
             switches.empty() ? "no point (one plan is best throughout)" : switches);
  const double gain = r.single_steps > 0 ? r.replan_steps / r.single_steps - 1 : 0;
  fmt::print(
      "over {:.0f} s: {:.0f} steps replanned against {:.0f} with the single plan ({:+.1f} %), "
      "{:.0f} s saved for the single plan's steps (switching itself not priced)\n",
      r.duration_s, r.replan_steps, r.single_steps, 100 * gain,
      r.replan_steps > 0 ? r.duration_s * (1 - r.single_steps / r.replan_steps) : 0);
}

void print_fixed_rank(const RankReport& rep, Format format) {
  const Model& m = rep.model;
  const Cluster& c = rep.cluster;
  const RankResult& r = *rep.fixed;
  const std::optional<TrustedRanking>& trusted = rep.trusted;
  // The calibrated step beside a plan, where the calibration applied to it.
  const auto calibrated_step = [&](size_t i) -> std::optional<double> {
    if (!trusted || !trusted->calibrated_steps[i] || !trusted->calibrated_steps[i]->applied)
      return std::nullopt;
    return trusted->calibrated_steps[i]->step_s;
  };
  const bool any_calibrated = trusted && trusted->calibrated > 0;
  const auto print = [&] {
    if (format == Format::csv) {
      fmt::print(
          "rank,step_time_s,tokens_per_s,tflops_per_gpu,mfu,memory_per_gpu_gib,tp,pp,dp,cp,"
          "ep,mbs,gbs,vpp,recompute,recompute_modules,sp,zero,etp,schedule,layers,zero_layers,"
          "calibrated_step_time_s,"
          "within_uncertainty\n");
      for (size_t i = 0; i < r.best.size(); ++i) {
        const Estimate& e = r.best[i];
        const Strategy& s = e.strategy;
        const auto k = calibrated_step(i);
        fmt::print(
            "{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
            "{},{}\n",
            i + 1, e.step_time_s, e.tokens_per_s, e.tflops_per_gpu, e.mfu,
            e.memory_per_gpu_bytes / kGiB, tp_text(s), s.pp, s.dp, s.cp, s.ep, s.mbs, s.gbs, s.vpp,
            to_string(s.recompute),
            s.recompute == Recompute::selective ? recompute_modules_text(s.selective_modules())
                                                : "",
            s.sp, s.zero, s.expert_tp(), to_string(s.schedule),
            s.stage_layers.empty() ? "" : join_layers(s.stage_layers),
            zero_layers_text(s.zero_layers), k ? fmt::format("{:.6g}", *k) : "",
            trusted ? (static_cast<int>(i) < trusted->indistinguishable ? "true" : "false") : "");
      }
      return;
    }
    fmt::print("{} on {} ({}), global batch {}, software {}\n", m.name, c.name, cluster_line(c),
               rep.request.gbs, rep.request.software);
    fmt::print("{} candidates evaluated, {} feasible\n\n",
               thousands(static_cast<double>(r.evaluated)),
               thousands(static_cast<double>(r.feasible)));
    // Layers per stage where a plan sets its own split (a mixed cluster's balanced ones).
    const bool split = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return !e.strategy.stage_layers.empty();
    });
    std::vector<std::string> header{"#",   "step s",    "tokens/s", "TFLOP/s", "MFU", "GiB",
                                    "tp",  "pp",        "dp",       "cp",      "ep",  "mbs",
                                    "vpp", "recompute", "sp",       "zero"};
    std::vector<bool> right{true, true, true, true, true, true,  true,  true,
                            true, true, true, true, true, false, false, true};
    if (any_calibrated) header.insert(header.begin() + 2, "calibrated"), right.push_back(true);
    if (split) header.emplace_back("layers"), right.push_back(false);
    // The experts' own TP degree where a plan folds them (MoE parallel folding).
    const bool folded = std::any_of(r.best.begin(), r.best.end(),
                                    [](const Estimate& e) { return e.strategy.etp > 0; });
    if (folded) header.emplace_back("etp"), right.push_back(true);
    const bool dualpipe = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return e.strategy.schedule != PipeSchedule::one_f_one_b;
    });
    if (dualpipe) header.emplace_back("schedule"), right.push_back(false);
    // What selective recomputation recomputes where some plan recomputes more than
    // attention's core (Megatron-core's default).
    const bool modules = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return e.strategy.recompute == Recompute::selective &&
             e.strategy.selective_modules() != kRecomputeCoreAttn;
    });
    if (modules) header.emplace_back("modules"), right.push_back(false);
    // Per-layer sharding where a plan mixes sharded and replicated layers.
    const bool masked = std::any_of(r.best.begin(), r.best.end(), [](const Estimate& e) {
      return !e.strategy.zero_layers.empty();
    });
    if (masked) header.emplace_back("zero_layers"), right.push_back(false);
    // A mixed cluster: the order its groups take the stages in (the file's, or another).
    const bool mixed = c.groups.size() > 1;
    if (mixed) header.emplace_back("groups"), right.push_back(false);
    // --data-loading: what each plan waits for its loaders.
    const bool loading = !r.best.empty() && r.best.front().input;
    if (loading) header.emplace_back("input wait s"), right.push_back(true);
    std::vector<std::string> file_order;
    for (const auto& g : c.groups) file_order.push_back(g.name);
    Table t(header, right);
    for (size_t i = 0; i < r.best.size(); ++i) {
      const Estimate& e = r.best[i];
      const Strategy& s = e.strategy;
      std::vector<std::string> row{fmt::format("{}", i + 1),
                                   fmt::format("{:.3f}", e.step_time_s),
                                   thousands(e.tokens_per_s),
                                   fmt::format("{:.1f}", e.tflops_per_gpu),
                                   fmt::format("{:.1f}%", 100 * e.mfu),
                                   fmt::format("{:.1f}", e.memory_per_gpu_bytes / kGiB),
                                   tp_text(s),
                                   fmt::format("{}", s.pp),
                                   fmt::format("{}", s.dp),
                                   cp_text(s),
                                   fmt::format("{}", s.ep),
                                   fmt::format("{}", s.mbs),
                                   fmt::format("{}", s.vpp),
                                   std::string(to_string(s.recompute)),
                                   s.sp ? "yes" : "no",
                                   fmt::format("{}", s.zero)};
      if (any_calibrated) {
        const auto k = calibrated_step(i);
        row.insert(row.begin() + 2, k ? fmt::format("{:.3f}", *k) : "-");
      }
      if (split) row.push_back(s.stage_layers.empty() ? "even" : join_layers(s.stage_layers));
      if (folded) row.push_back(fmt::format("{}", s.expert_tp()));
      if (dualpipe) row.emplace_back(to_string(s.schedule));
      if (modules)
        row.push_back(s.recompute == Recompute::selective
                          ? recompute_modules_text(s.selective_modules())
                          : "-");
      if (masked) row.push_back(s.zero_layers.empty() ? "-" : zero_layers_text(s.zero_layers));
      if (mixed)
        row.push_back(
            fmt::format("{}", fmt::join(e.group_order.empty() ? file_order : e.group_order, ",")));
      if (loading) row.push_back(e.input ? fmt::format("{:.3f}", e.input->wait_s) : "-");
      t.add(row);
    }
    fmt::print("{}", t.render());
    if (loading) fmt::print("\n{}", input_text(r.best.front().input->loading));
    // Pinned asynchronous or local updates: every plan listed runs them (--fix dp_sync=...).
    if (!r.best.empty() && r.best.front().dp_sync) {
      const Estimate& b = r.best.front();
      const DataParallelSync& d = *b.dp_sync;
      fmt::print(
          "\ndata parallel   {} in every plan (pinned): {}; the times are per update, and what "
          "the updates train to is not priced\n",
          dp_sync_text(b.strategy),
          d.mode == DpSync::async
              ? fmt::format("replicas update without waiting, gradients up to {} steps stale",
                            d.bound_steps)
              : fmt::format("replicas train alone, parameters averaged every {} steps",
                            d.bound_steps));
    }
    // Pinned LoRA fine-tuning: every plan listed trains the adapters alone (--fix lora=R).
    if (!r.best.empty() && r.best.front().strategy.lora > 0) {
      const Strategy& b = r.best.front().strategy;
      fmt::print(
          "\nLoRA            rank-{} adapters on {} in every plan (pinned); every other weight is "
          "frozen\n",
          b.lora, lora_targets_text(b.lora_linears()));
    }
    if (trusted && !r.best.empty()) fmt::print("\n{}", trust_text(*trusted, r.best.size()));
    if (r.sharding) print_sharding(*r.sharding);
    if (!r.rejected.empty()) {
      fmt::print("\nrejected\n");
      for (const auto& [reason, count] : r.rejected)
        fmt::print("  {:>10}  {}\n", thousands(static_cast<double>(count)), reason);
    }
    fmt::print(stderr, "ranked in {:.2f} s\n", r.elapsed_s);
  };
  print();
}

void render_rank(const RankReport& r, Format format) {
  say_warnings(r.warnings);
  if (format == Format::json) {
    fmt::print("{}\n", json_text(to_json(r)));
  } else if (r.graph) {
    fmt::print("{}", graph_rank_text(*r.graph, r.cluster, r.request.software));
  } else if (r.replanned) {
    print_replan(r);
  } else if (r.varlen) {
    print_varlen_rank(r);
  } else {
    print_fixed_rank(r, format);
  }
  end_with(r.verdict);
}

}  // namespace

void add_rank_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  o->request.command = "rank";
  auto* rk = app.add_subcommand("rank", "Search every strategy and print the best");
  add_plan_options(rk, *o);
  PlanRequest& r = o->request;
  rk->add_option("--gbs", r.gbs, "global batch size in sequences (required)");
  rk->add_option("--top", r.top, "how many strategies to print (default 10)");
  rk->add_option("--fix", r.fix, "pin strategy keys, e.g. \"tp=8,recompute=full\"");
  rk->add_option("--objective", r.objective, "time (default) or memory");
  rk->add_option("--format", o->format, "text, json or csv");
  rk->add_flag("--replan", r.replan,
               "with a bandwidth trace: the best plan of each segment, where it changes, and "
               "the steps gained over the best single plan");
  add_varlen_options(rk, r.varlen);
  rk->callback([o, rk] {
    const PlanRequest request = request_of(*rk, *o);
    if (request.gbs == 0 && rk->count("--gbs") == 0)
      throw InputError("--gbs is required: the global batch in sequences, e.g. --gbs 512");
    const Format format = parse_format(o->format, {Format::text, Format::json, Format::csv});
    // CSV rows are the fixed-length search's plans.
    if (format == Format::csv && is_onnx_path(request.model))
      throw InputError("rank of operator graphs (.onnx) prints text or json");
    if (format == Format::csv && request.varlen.given())
      throw InputError("rank on variable-length data prints text or json");
    if (format == Format::csv && request.replan)
      throw InputError("rank --replan prints text or json");
    render_rank(run_rank(request), format);
  });
}

}  // namespace shardcost::cli
