// Enumerates the strategy space of a workload on a cluster; pruning, counting and the best K
// are the shared tally's (tally.h), pricing the plan layer's.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "group_order.h"
#include "plan/strategy_text.h"
#include "plan/times.h"
#include "shardcost/divisors.h"
#include "shardcost/error.h"
#include "sharding_mask.h"
#include "tally.h"

namespace shardcost {
namespace {

// Values a key may take: pinned by --fix, or the candidates.
std::vector<int> choices(bool pinned, int pinned_value, std::vector<int> candidates) {
  if (pinned) return {pinned_value};
  return candidates;
}

bool contains(const std::vector<std::string>& v, const char* key) {
  return std::find(v.begin(), v.end(), key) != v.end();
}

struct Ranker {
  const Workload& w;
  const Cluster& c;
  const RankOptions& opt;
  Strategy fixed;
  std::vector<std::string> pinned;
  SearchTally tally;
  GraphCache graphs;

  // Whether it fits (a mixed cluster's: not said).
  bool consider(const Strategy& s, const EstimateOptions& eopt) {
    const Graph& graph = graphs.get(w, s, eopt.software.attention);
    if (c.groups.size() > 1) {
      consider_mixed(s, graph, eopt);
      return false;
    }
    // One node group, a pipeline under 1F1B: the plan again with the layers per stage that
    // balance its stages' priced time (the first and last stages' embedding, head and MTP
    // counted), as Megatron's pipeline layouts and account_for_*_in_pipeline_split place
    // them, found while the even split is priced. Only where it could be among the best: no
    // split runs the pace below the stages' mean, so the even split's step scaled by mean
    // over pace is a floor (the fill and drain, and what does not scale, only grow from
    // there).
    StageBalance balance;
    const bool balancing =
        opt.balance_stages && opt.objective == Objective::time && s.stage_layers.empty();
    if (balancing)
      balance.worth = [&](double mean, double pace, double step) {
        return pace > 0 && tally.could_keep(step * mean / pace);
      };
    if (!tally.consider(w, graph, c, s, StageLayout(w.layers(), s.pp), eopt,
                        balancing ? &balance : nullptr))
      return false;
    if (!balance.layers.empty()) consider_balanced(s, graph, eopt, std::move(balance.layers));
    return true;
  }

  void consider_balanced(const Strategy& s, const Graph& graph, const EstimateOptions& eopt,
                         std::vector<int> layers) {
    Strategy b = s;
    b.stage_layers = std::move(layers);
    if (auto why = check_strategy(w, c, b)) {
      tally.reject(classify(*why));
      return;
    }
    tally.consider(w, graph, c, b, StageLayout(w.layers(), b.pp, &b.stage_layers), eopt);
  }

  // Per-layer sharding for a shape whose uniform ZeRO-3 fits and a lower stage does not: each
  // mask sharding_masks proposes over the stages `bases`, priced; the fastest is the shape's
  // candidate (unless it is a uniform stage, priced already) and is reported beside them.
  std::optional<RankResult::Sharding> sharding;
  void consider_masks(const Strategy& shape, const std::vector<int>& bases,
                      const EstimateOptions& eopt) {
    const Software& sw = eopt.software;
    {
      // Stacks that shard layers only at pp=1 (every preset): no mask to price elsewhere.
      Strategy probe = shape;
      probe.zero_layers.assign(static_cast<size_t>(w.layers()) + 2, 1);
      if (unsupported(sw, probe)) return;
    }
    const Graph& graph = graphs.get(w, shape, sw.attention);
    const StageLayout layout(w.layers(), shape.pp);
    const double capacity = tally.usable(c.groups.front().device.memory_bytes);
    // No mask beats the shape's compute (uniform ZeRO-3's step less its data-parallel
    // collectives and optimizer step, which are all a mask changes): a shape that cannot
    // reach the best K is not searched.
    {
      Strategy three = shape;
      three.zero = 3;
      EstimateOptions parts = eopt;
      parts.breakdown = true;
      const Estimate e = estimate_graph(w, graph, c, three, layout, parts);
      double floor = e.step_time_s;
      for (const TimePart& p : e.time)
        if (p.name == kPartNames[kDpComm] || p.name == kPartNames[kOptimizer]) floor -= p.seconds;
      if (!tally.could_keep(floor)) return;
    }
    std::optional<Estimate> best;
    auto price = [&](const Strategy& m) {
      Estimate e = estimate_graph(w, graph, c, m, layout, eopt);
      // Memory need not grow with every layer replicated (a sharded one adds to the gathered
      // working set): a count between two that fit may not.
      if (!tally.fits(e)) {
        tally.reject("exceeds device memory");
        return std::numeric_limits<double>::infinity();
      }
      ++tally.result().evaluated;
      ++tally.result().feasible;
      const double seconds = e.step_time_s;
      if (!best || tally.better(e, *best)) best = std::move(e);
      return seconds;
    };
    for (int base : bases)
      for (const MaskFamily& f : sharding_families(graph, shape, base, sw, layout, capacity)) {
        if (auto why = check_strategy(w, c, f.first)) {
          tally.reject(classify(*why));
          continue;
        }
        if (auto why = unsupported(sw, f.first)) {
          tally.reject(*why);
          continue;
        }
        fastest_mask(f, price);
      }
    if (!best) return;
    // The shape's best mask is its one candidate (the others differ in a unit or two), unless
    // it marks every unit alike: a uniform stage, priced already.
    const bool mixed = best->strategy.zero_layers_mixed();
    if (mixed) tally.keep(*best);
    // The report: the fastest mixture (a shape where none is faster than a uniform stage only
    // while no other shape has one).
    if (sharding && (sharding->mixture.strategy.zero_layers_mixed() > mixed ||
                     (mixed == sharding->mixture.strategy.zero_layers_mixed() &&
                      !tally.better(*best, sharding->mixture))))
      return;
    RankResult::Sharding report{*best, {}};
    for (int z = 0; z <= 3; ++z) {
      if (!sw.has_zero(z)) continue;
      Strategy u = shape;
      u.zero = z;
      u.zero_layers.clear();
      report.uniform.push_back(estimate_graph(w, graph, c, u, layout, eopt));
    }
    sharding = std::move(report);
  }

  // A mixed cluster: each candidate where rank order places it (a replica must sit in one
  // group), with the default split of the layers and with one balanced by each stage's speed
  // there (layers in proportion to how fast its slowest replica runs a layer).
  void consider_mixed(const Strategy& s, const Graph& graph, const EstimateOptions& eopt) {
    std::vector<ReplicaPlacement> placed;
    try {
      placed = place(plan_of(s), c);
    } catch (const InputError&) {
      tally.reject("a replica's ranks span node groups");
      return;
    }
    const int layers = w.layers();
    const StageLayout even(layers, s.pp);
    // Where every stage of the even split exceeds its devices, no split of the layers fits:
    // of two splits of the same layers, some stage's span in one contains its span in the
    // other (walk the boundaries' shifts from the first stage: the first stage whose start
    // moved no later and whose end moved no earlier), and a stage holding more of the same
    // layers needs no less memory. Such a plan (three in four of a mixed cluster's) is not
    // priced, and neither is its balanced split.
    const MemoryGate some_stage_fits = [&](const std::vector<double>& need,
                                           const std::vector<double>& capacity) {
      for (size_t st = 0; st < need.size(); ++st)
        if (tally.fits(need[st], capacity[st])) return true;
      return false;
    };
    Estimate e = estimate_graph(w, graph, c, s, even, eopt, &placed, nullptr, &some_stage_fits);
    keep_if_fits(e);
    if (!std::isfinite(e.step_time_s)) return;
    if (s.pp == 1 || e.stages.size() != static_cast<size_t>(s.pp)) return;
    std::vector<double> speed;
    double total = 0;
    for (int st = 0; st < s.pp; ++st) {
      const double per_layer = e.stages[static_cast<size_t>(st)].seconds / even.units(st);
      speed.push_back(1 / per_layer);
      total += speed.back();
    }
    std::vector<int> split = balanced(speed, total, layers, std::max(1, s.vpp));
    if (split == default_stage_layers(layers, s.pp)) return;
    Strategy b = s;
    b.stage_layers = split;
    if (auto why = check_strategy(w, c, b)) {
      tally.reject(classify(*why));
      return;
    }
    const StageLayout layout(layers, s.pp, &b.stage_layers);
    keep_if_fits(estimate_graph(w, graph, c, b, layout, eopt, &placed));
  }

  // A TP degree per group (issue 14): around the best plans found (the seeds), each group's
  // stages take a degree of their own, and the pipeline as many stages as each group then
  // holds (its GPUs over dp*cp*degree); layers even and balanced by speed as above. Stages
  // on one group share its degree. Bounded: kSeeds seeds, each degree of each group.
  static constexpr int kSeeds = 8;
  void refine_tp(const EstimateOptions& eopt) {
    if (c.groups.size() < 2 || contains(pinned, "tp") || contains(pinned, "pp")) return;
    const Software& sw = eopt.software;
    std::vector<std::vector<int>> degrees;  // per group, the degrees a node of it admits
    for (const NodeGroup& g : c.groups) degrees.push_back(w.tp_candidates(g.domain_gpus()));
    const std::vector<Estimate> seeds = tally.best();
    std::vector<std::string> tried;
    for (const Estimate& seed : seeds) {
      std::vector<size_t> pick(c.groups.size(), 0);  // an odometer over the groups' degrees
      while (true) {
        Strategy s = seed.strategy;
        s.stage_layers.clear();
        s.stage_tp.clear();
        bool fits = true, any_tp = false;
        for (size_t gi = 0; gi < c.groups.size() && fits; ++gi) {
          const int t = degrees[gi][pick[gi]];
          const int64_t width = int64_t{s.dp} * s.cp * t;
          const int gpus = c.groups[gi].gpus();
          fits = gpus % width == 0;
          any_tp = any_tp || t > 1;
          for (int64_t k = 0; fits && k < gpus / width; ++k) s.stage_tp.push_back(t);
        }
        if (fits && !s.stage_tp.empty()) {
          s.pp = static_cast<int>(s.stage_tp.size());
          s.tp = s.stage_tp.front();
          s.sp = s.sp && any_tp;
          // The seed's interleaving where the new depth allows it.
          if (s.vpp > 1 &&
              (s.pp == 1 || s.micro_batches() % s.pp != 0 || w.layers() / s.pp < s.vpp))
            s.vpp = 1;
          const bool uniform =
              std::all_of(s.stage_tp.begin(), s.stage_tp.end(), [&](int x) { return x == s.tp; });
          const std::string key = to_string(s);
          if (!uniform && std::find(tried.begin(), tried.end(), key) == tried.end()) {
            tried.push_back(key);
            if (s.pp > 1 && s.zero > sw.max_zero_with_pipeline) {
              tally.reject("ZeRO-2/3 with pipeline parallelism");
            } else if (auto why = check_strategy(w, c, s)) {
              tally.reject(classify(*why));
            } else {
              consider_mixed(s, graphs.get(w, s, sw.attention), eopt);
            }
          }
        }
        size_t gi = 0;
        while (gi < pick.size() && ++pick[gi] == degrees[gi].size()) pick[gi++] = 0;
        if (gi == pick.size()) break;
      }
    }
  }

  void keep_if_fits(Estimate e) {
    if (!tally.fits(e)) {
      tally.reject("exceeds device memory");
      return;
    }
    ++tally.result().evaluated;
    ++tally.result().feasible;
    tally.keep(std::move(e));
  }

  // Layers in proportion to each stage's speed, each at least `least`, summing to `layers`
  // (largest remainders first).
  static std::vector<int> balanced(const std::vector<double>& speed, double total, int layers,
                                   int least) {
    const size_t n = speed.size();
    if (layers < static_cast<int>(n) * least)
      return default_stage_layers(layers, static_cast<int>(n));
    std::vector<int> out(n);
    std::vector<std::pair<double, size_t>> rest;  // remainders, largest first
    int given = 0;
    for (size_t i = 0; i < n; ++i) {
      const double want = layers * speed[i] / total;
      out[i] = std::max(least, static_cast<int>(want));
      given += out[i];
      rest.emplace_back(want - static_cast<int>(want), i);
    }
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a > b; });
    for (size_t k = 0; given < layers; k = (k + 1) % n) ++out[rest[k].second], ++given;
    // Over (stages raised to `least`): take back from the smallest remainders first.
    for (size_t k = n - 1; given > layers; k = (k + n - 1) % n)
      if (out[rest[k].second] > least) --out[rest[k].second], --given;
    return out;
  }

  void run() {
    // Tensor parallelism within a node (an NVLink domain) of every group.
    int per_node = c.groups.front().domain_gpus();
    for (const auto& grp : c.groups) per_node = std::min(per_node, grp.domain_gpus());
    const int gpus = c.total_gpus();
    const int gbs = opt.global_batch;
    EstimateOptions eopt = opt.estimate;
    eopt.breakdown = false;
    const int layers = w.layers();

    // Only what the software stack can run is searched (Software's supports).
    const Software& sw = eopt.software;
    // Tensor-parallel sizes within a node that the model admits.
    const auto tps = choices(contains(pinned, "tp"), fixed.tp, [&] {
      std::vector<int> v;
      for (int t : w.tp_candidates(per_node))
        if (gpus % t == 0 && (t == 1 || sw.tensor_parallel)) v.push_back(t);
      return v;
    }());
    const auto cps = choices(contains(pinned, "cp"), fixed.cp,
                             sw.context_parallel ? w.cp_candidates(gpus) : std::vector<int>{1});
    // Every pipeline depth up to the layer count; uneven splits price their longest stage.
    const auto pps = choices(contains(pinned, "pp"), fixed.pp, [&] {
      std::vector<int> v;
      for (int p = 1; p <= layers; ++p) v.push_back(p);
      return v;
    }());
    // What selective recomputes: the pinned modules, or the preset's and, where the model has
    // them, the modules Megatron-core's MoE and MLA recipes recompute (MLA's up projections,
    // the experts' activation, both), and the checkpoint that saves the most short of full
    // recomputation: the MoE layers whole in an MoE model, the MLPs in a dense one (an MoE
    // model's few dense MLPs alone would double the search for plans within a few per cent of
    // the ones it has). A set that marks nothing in this model (attention's core under fused
    // attention) prices exactly as none, so the search skips it.
    std::vector<std::pair<Recompute, unsigned>> recomputes;
    if (contains(pinned, "recompute")) {
      recomputes.emplace_back(fixed.recompute, fixed.recompute_modules != 0
                                                   ? fixed.recompute_modules
                                                   : sw.recompute_modules);
    } else {
      recomputes.emplace_back(Recompute::none, 0u);
      std::vector<unsigned> sets{fixed.recompute_modules != 0 ? fixed.recompute_modules
                                                              : sw.recompute_modules};
      if (fixed.recompute_modules == 0 && sw.recompute_modules != kRecomputeOps)
        for (unsigned m :
             {unsigned{kRecomputeMlaUpProj}, unsigned{kRecomputeMoeAct},
              unsigned{kRecomputeMlaUpProj | kRecomputeMoeAct},
              w.has_selective_recompute(sw.attention, kRecomputeMoe) ? unsigned{kRecomputeMoe}
                                                                     : unsigned{kRecomputeMlp}})
          sets.push_back(m);
      // The modules of a set that mark something in this model: two sets that mark the same
      // (MLA's and the experts' on a model without MLA, and the experts' alone) price alike,
      // so only the first is searched.
      const auto marked = [&](unsigned m) {
        const unsigned set =
            m != 0 ? m : kRecomputeCoreAttn;  // 0: the default, as selective_modules
        unsigned out = 0;
        for (unsigned bit = 1; bit != 0 && bit <= set; bit <<= 1)
          if ((set & bit) && w.has_selective_recompute(sw.attention, bit)) out |= bit;
        return out;
      };
      std::vector<unsigned> searched;
      for (unsigned m : sets) {
        const unsigned marks = marked(m);
        if (!sw.selective_recompute || marks == 0) continue;
        if (std::find(searched.begin(), searched.end(), marks) != searched.end()) continue;
        searched.push_back(marks);
        recomputes.emplace_back(Recompute::selective, m);
      }
      recomputes.emplace_back(Recompute::full, 0u);
    }
    // Per-layer sharding masks: searched unless the stage is pinned, on one node group, with
    // a stack that has ZeRO-3 (consider_masks asks the stack about each shape's pp).
    const bool masks = !contains(pinned, "zero") && opt.objective == Objective::time &&
                       c.groups.size() == 1 && sw.has_zero(3);
    std::vector<int> stages, pipelined;
    for (int z = 0; z <= sw.max_zero; ++z) {
      if (!sw.has_zero(z)) continue;
      stages.push_back(z);
      if (z <= sw.max_zero_with_pipeline) pipelined.push_back(z);
    }

    for (int tp : tps) {
      for (int cp : cps) {
        for (int pp : pps) {
          const int64_t inner = static_cast<int64_t>(tp) * cp * pp;
          if (inner > gpus || gpus % inner != 0) continue;  // not a factorisation: not a candidate
          const int dp = static_cast<int>(gpus / inner);
          if (contains(pinned, "dp") && dp != fixed.dp) continue;
          if (gbs % dp != 0) {
            tally.reject("gbs not divisible by dp");
            continue;
          }
          const int per_replica = gbs / dp;
          const auto eps = choices(contains(pinned, "ep"), fixed.ep,
                                   sw.expert_parallel ? w.ep_candidates() : std::vector<int>{1});
          const auto mbss = choices(contains(pinned, "mbs"), fixed.mbs,
                                    divisors(per_replica, std::min(per_replica, kMaxMicroBatch)));
          // Interleaving: chunk counts that divide the smallest stage's layers (the default
          // split gives some stages one more; their chunks come out uneven, as real runs').
          // Asynchronous or local updates keep each replica's optimizer whole: ZeRO 0.
          const auto zeros =
              fixed.dp_sync != DpSync::sync
                  ? std::vector<int>{0}
                  : choices(contains(pinned, "zero"), fixed.zero, pp > 1 ? pipelined : stages);
          const int smallest = layers / pp;
          const auto vpps = choices(
              contains(pinned, "vpp"), fixed.vpp,
              pp > 1 && sw.interleaving ? divisors(smallest, smallest) : std::vector<int>{1});
          // Experts' own TP degree (MoE parallel folding): the attention's, or whole experts
          // (etp=1) beside tp > 1.
          const auto etps =
              choices(contains(pinned, "etp"), fixed.etp,
                      eps.size() > 1 && tp > 1 && sw.expert_parallel ? std::vector<int>{0, 1}
                                                                     : std::vector<int>{0});
          const auto sps =
              contains(pinned, "sp")
                  ? std::vector<int>{fixed.sp ? 1 : 0}
                  : (tp > 1 && sw.sequence_parallel ? std::vector<int>{0, 1} : std::vector<int>{0});
          // Schedules: 1F1B at each interleaving, and DualPipe where the pipeline pairs its
          // stages (an even pp, no interleaving, one node group). Local updates change what is
          // trained (each stage its own loss), so only a pinned schedule=local searches them
          // (pp >= 2, no interleaving).
          std::vector<std::pair<int, PipeSchedule>> pipes;
          for (int vpp : vpps) {
            const bool dualpipe_fits =
                sw.dualpipe && pp >= 2 && pp % 2 == 0 && vpp == 1 && c.groups.size() == 1;
            if (contains(pinned, "schedule")) {
              const bool local_fits = pp >= 2 && vpp == 1;
              if (fixed.schedule == PipeSchedule::one_f_one_b || dualpipe_fits ||
                  (fixed.schedule == PipeSchedule::local && local_fits))
                pipes.emplace_back(vpp, fixed.schedule);
              continue;
            }
            pipes.emplace_back(vpp, PipeSchedule::one_f_one_b);
            if (dualpipe_fits) pipes.emplace_back(vpp, PipeSchedule::dualpipe);
          }
          for (int ep : eps) {
            for (int etp : etps) {
              for (int mbs : mbss) {
                for (const auto& [vpp, schedule] : pipes) {
                  for (const auto& [rc, modules] : recomputes) {
                    for (int sp : sps) {
                      // Per uniform stage: 1 fits, 0 does not, -1 not a candidate.
                      int fit[4] = {-1, -1, -1, -1};
                      Strategy shape;
                      for (int zero : zeros) {
                        Strategy s;
                        s.tp = tp, s.cp = cp, s.pp = pp, s.dp = dp, s.ep = ep, s.mbs = mbs;
                        s.etp = etp;
                        s.schedule = schedule;
                        s.gbs = gbs, s.vpp = vpp, s.recompute = rc, s.sp = sp != 0, s.zero = zero;
                        if (rc == Recompute::selective) s.recompute_modules = modules;
                        s.offload = fixed.offload;
                        // DualPipe's micro-batches: an even count of at least pp; other counts
                        // are not DualPipe candidates (1F1B prices them).
                        if (schedule == PipeSchedule::dualpipe &&
                            (s.micro_batches() % 2 != 0 || s.micro_batches() < pp))
                          continue;
                        s.precision = fixed.precision;
                        s.tf32_math = fixed.tf32_math;
                        s.fp8_any_layout = fixed.fp8_any_layout;
                        s.fp8_current_scaling = fixed.fp8_current_scaling;
                        s.quantized_moe_act_input = fixed.quantized_moe_act_input;
                        s.torchao = fixed.torchao;
                        // Asynchronous or local updates change what is trained: searched only
                        // when pinned (dp_sync=async:S or local:H), never by default.
                        s.dp_sync = fixed.dp_sync;
                        s.dp_sync_steps = fixed.dp_sync_steps;
                        // LoRA changes what is trained: pinned, never searched.
                        s.lora = fixed.lora;
                        s.lora_targets = fixed.lora_targets;
                        s.lora_dropout = fixed.lora_dropout;
                        // A pinned all-to-all overlap where Megatron-core runs it: all-to-alls
                        // under 1F1B, without a pipeline or interleaved, without full
                        // recomputation or the MoE layer's (check_strategy).
                        s.ep_overlap = fixed.ep_overlap && ep > 1 &&
                                       schedule == PipeSchedule::one_f_one_b &&
                                       (pp == 1 || vpp > 1) && rc != Recompute::full &&
                                       (s.selective_modules() & kRecomputeMoe) == 0;
                        if (auto why = check_strategy(w, c, s)) {
                          tally.reject(classify(*why));
                          continue;
                        }
                        if (s.pp > 1 && s.zero > sw.max_zero_with_pipeline) {
                          tally.reject("ZeRO-2/3 with pipeline parallelism");
                          continue;
                        }
                        fit[zero] = consider(s, eopt) ? 1 : 0;
                        shape = s;
                      }
                      // Per-layer sharding where memory binds: ZeRO-3 fits, a lower stage
                      // does not.
                      if (masks && fit[3] == 1 && (fit[0] == 0 || fit[1] == 0 || fit[2] == 0)) {
                        std::vector<int> bases;
                        for (int z = 0; z < 3; ++z)
                          if (fit[z] >= 0) bases.push_back(z);
                        consider_masks(shape, bases, eopt);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  // Folds specific reasons ("tp=3 does not divide ...") into countable classes.
  static std::string classify(const std::string& why) {
    if (why.find("interleaved") != std::string::npos)
      return "interleaving needs micro-batches divisible by pp";
    if (why.find("ep=") != std::string::npos || why.find("ep*etp") != std::string::npos ||
        why.find("etp=") != std::string::npos)
      return "ep (etp) does not divide experts or dp*cp";
    if (why == "sp=true needs tp>1") return "sp needs tp>1";
    if (why.find("splits Mamba heads") != std::string::npos)
      return "cp does not divide the Mamba heads and groups per TP rank";
    return why;
  }
};

}  // namespace

RankResult rank(const Workload& w, const Cluster& c, const RankOptions& opt) {
  if (opt.global_batch < 1)
    throw InputError("--gbs must be a positive integer (the global batch in sequences)");
  if (opt.global_batch > kMaxGlobalBatch)
    throw InputError(fmt::format(
        "--gbs {} is above the largest global batch rank searches ({} sequences); a global batch "
        "counts sequences, not tokens",
        opt.global_batch, kMaxGlobalBatch));
  if (opt.top < 1) throw InputError("--top must be at least 1");
  const auto start = std::chrono::steady_clock::now();
  // A mixed cluster: the orders of its groups to search (which stages take which devices).
  // Up to four groups, every order; more, the file's and the groups by speed either way
  // (the slowest first, the fastest first).
  std::vector<std::vector<size_t>> orders;
  {
    std::vector<size_t> order(c.groups.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (c.groups.size() <= 4) {
      do orders.push_back(order);
      while (c.groups.size() > 1 && std::next_permutation(order.begin(), order.end()));
    } else {
      orders.push_back(order);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return c.groups[a].device.peak16() < c.groups[b].device.peak16();
      });
      for (int way = 0; way < 2; ++way) {
        if (std::find(orders.begin(), orders.end(), order) == orders.end()) orders.push_back(order);
        std::reverse(order.begin(), order.end());
      }
    }
  }
  Strategy fixed;
  const std::vector<std::string> pinned = apply_strategy_text(opt.fixed, fixed);
  // Precision is a numerics choice, not a searched one: the pinned one or the preset's (the
  // same whatever order the groups take).
  fixed = with_precision(fixed, opt.estimate.software, c);
  if (contains(pinned, "layers") || contains(pinned, "stage_tp"))
    throw InputError(
        "--fix layers= or stage_tp=: rank searches each stage's layers and degrees; price a "
        "split of your own with estimate --strategy");
  if (contains(pinned, "zero_layers"))
    throw InputError(
        "--fix zero_layers=: rank searches the per-layer sharding; price a mask of your own with "
        "estimate --strategy");
  if (contains(pinned, "gbs") && fixed.gbs != opt.global_batch)
    throw InputError("--fix gbs differs from --gbs; give the global batch once, with --gbs");
  if (auto why = unsupported(opt.estimate.software, fixed))
    throw InputError(fmt::format("--fix {}: {}", opt.fixed, *why));
  SearchTally merged{opt.top, opt.objective};
  RankResult result;
  std::vector<std::pair<std::vector<size_t>, Estimate>> winners;
  for (const std::vector<size_t>& order : orders) {
    const Cluster reordered = c.groups.size() > 1 ? reorder(c, order) : c;
    // A mixed cluster keeps a few more than asked: the seeds of a TP degree per group.
    const int keep = c.groups.size() > 1 ? std::max(opt.top, Ranker::kSeeds) : opt.top;
    const double slack = opt.near_limit_fits ? kMemoryVerdictUncertainty : 0.0;
    Ranker r{w, reordered, opt, fixed, pinned, {keep, opt.objective, slack}, {}, {}};
    r.run();
    EstimateOptions totals = opt.estimate;
    totals.breakdown = false;
    r.refine_tp(totals);
    const RankResult& part = r.tally.result();
    result.evaluated += part.evaluated;
    result.feasible += part.feasible;
    for (const auto& [reason, count] : part.rejected) result.rejected[reason] += count;
    for (const Estimate& e : r.tally.best()) winners.emplace_back(order, e);
    if (r.sharding) result.sharding = std::move(r.sharding);
  }
  // The best over every order, in the tally's order (ties: the file's order first).
  std::stable_sort(winners.begin(), winners.end(),
                   [&](const auto& a, const auto& b) { return merged.better(a.second, b.second); });
  if (static_cast<int>(winners.size()) > opt.top) winners.resize(static_cast<size_t>(opt.top));
  result.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The winners again, with their breakdowns.
  EstimateOptions full = opt.estimate;
  full.breakdown = true;
  for (const auto& [o, e] : winners) {
    const Cluster reordered = c.groups.size() > 1 ? reorder(c, o) : c;
    Estimate again = estimate(w, reordered, plan_of(e.strategy), full);
    bool file_order = true;
    for (size_t i = 0; i < o.size(); ++i) file_order = file_order && o[i] == i;
    if (!file_order)
      for (size_t i : o) again.group_order.push_back(c.groups[i].name);
    result.best.push_back(std::move(again));
  }
  return result;
}

}  // namespace shardcost
