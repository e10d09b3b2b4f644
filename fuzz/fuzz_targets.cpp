#include "fuzz_targets.h"

#include <cmath>
#include <stdexcept>
#include <string_view>

#include "learned/curve_model.h"
#include "learned/gemm_model.h"
#include "learned/kernel_model.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/varlen.h"

namespace shardcost::fuzz {
namespace {
std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}
}  // namespace

void model_json(const uint8_t* data, size_t size) {
  try {
    const Model m = parse_model_json(text(data, size), "fuzz");
    // What loads is a model: positive sizes and a positive, finite parameter count.
    if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.seq_len < 1 || m.vocab < 1 ||
        !(parameter_count(m) > 0) || !std::isfinite(parameter_count(m)))
      throw std::logic_error("a model parsed with a size that is not positive");
    // A model that loads must also price: one GPU, the simplest strategy, to a positive,
    // finite step and memory.
    const Cluster c = load_cluster("dgx-h100", 1);
    Strategy s;
    s.gbs = 1;
    if (!check_strategy(m, c, s)) {
      const Estimate e = estimate(m, c, s);
      if (!(e.step_time_s > 0) || !std::isfinite(e.step_time_s) || !(e.memory_per_gpu_bytes > 0))
        throw std::logic_error(
            "a priced model has a step or memory that is not positive and finite");
    }
  } catch (const InputError&) {
  }
}

void cluster_json(const uint8_t* data, size_t size) {
  try {
    const Cluster c = parse_cluster_json(text(data, size), "fuzz");
    // What loads is a cluster: GPUs in every group, links with positive bandwidth.
    if (c.total_gpus() < 1) throw std::logic_error("a cluster parsed without GPUs");
    for (const auto& g : c.groups)
      if (g.gpus_per_node < 1 || g.nodes < 1 || !(g.intra_node.bandwidth_Bps > 0))
        throw std::logic_error(
            "a cluster group parsed without GPUs or without intra-node bandwidth");
    if (c.groups.size() == 1 && c.total_gpus() <= 4096) {
      const Model m = load_model("gpt3-1.3b");
      Strategy s;
      s.dp = c.total_gpus();
      s.gbs = s.dp;
      if (!check_strategy(m, c, s)) (void)estimate(m, c, s);
    }
  } catch (const InputError&) {
  }
}

void strategy_text(const uint8_t* data, size_t size) {
  try {
    const Strategy s = parse_strategy(text(data, size), 64);
    (void)check_strategy(load_model("llama3-8b"), load_cluster("dgx-h100", 64), s);
  } catch (const InputError&) {
  }
}

void seq_dist_text(const uint8_t* data, size_t size) {
  // A --seq-dist spec: it parses into a distribution whose draws lie in its [min, max], or is
  // refused with an InputError.
  try {
    const LengthDistribution d = LengthDistribution::parse(text(data, size));
    std::mt19937_64 rng(1);
    for (int i = 0; i < 64; ++i) {
      const int64_t x = d.draw(rng);
      if (x < d.min_length() || x > d.max_length() || x < 1)
        throw std::logic_error("a draw outside the distribution's lengths");
    }
    (void)d.describe();
  } catch (const InputError&) {
  }
}

void fitted_model_json(const uint8_t* data, size_t size) {
  // A fitted_model row as a store may hold it, damaged or not: it loads or is refused with an
  // InputError, and what loads predicts without crashing or looping (LearnedCosts then drops
  // a time that is not positive and finite).
  static const Device a100 = find_device("a100-sxm4-80gb");
  const std::string json(text(data, size));
  try {
    const learned::GemmModel model(learned::GemmFit::from_json(json));
    (void)model.predict(a100, {{4096, 4096, 4096, 1}, {1, 1, 1, 1}});
  } catch (const InputError&) {
  }
  // Size curves: what loads is ascending and positive, and answers every size and rank count.
  try {
    const auto c = learned::CollectiveFit::from_json(json);
    for (double bytes : {1.0, 4096.0, 1e9, 1e15})
      for (int ranks : {1, 2, 3, 8, 1 << 20}) (void)c.predict(bytes, ranks);
  } catch (const InputError&) {
  }
  try {
    const auto m = learned::MemoryFit::from_json(json);
    for (double bytes : {1.0, 4096.0, 1e9, 1e15}) (void)m.predict(bytes);
  } catch (const InputError&) {
  }
  try {
    const auto k = learned::KernelFit::from_json(json);
    for (double threads : {0.0, 1.0, 1e6, 1e18}) (void)k.predict("void k<float>(float*)", threads);
  } catch (const InputError&) {
  }
}

void plan_json(const uint8_t* data, size_t size) {
  static const Cluster c = load_cluster("dgx-h100", 64);
  static const auto w = transformer_workload(load_model("llama3-70b"));
  try {
    const Plan p = parse_plan_json(text(data, size), "fuzz", c, w->layers());
    // What parses is a whole plan: one layer count per stage, adding up to the model's.
    int layers = 0;
    for (int n : p.stage_layers) layers += n;
    if (layers != w->layers() || static_cast<int>(p.stage_layers.size()) != p.strategy.pp ||
        static_cast<int>(p.stages.size()) != p.strategy.pp)
      throw std::logic_error("a plan parsed whose stages do not add up to the model");
    if (!check_strategy(*w, c, p.strategy)) (void)estimate(*w, c, p);
  } catch (const InputError&) {
  }
}

}  // namespace shardcost::fuzz
