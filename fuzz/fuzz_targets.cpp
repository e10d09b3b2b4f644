#include "fuzz_targets.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "db/kineto.h"
#include "estimator/jobs/solver.h"
#include "learned/curve_model.h"
#include "learned/embedding_model.h"
#include "learned/gemm_model.h"
#include "learned/kernel_model.h"
#include "shardcost/calibration.h"
#include "shardcost/embeddings.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/importers.h"
#include "shardcost/jobs.h"
#include "shardcost/layerwise.h"
#include "shardcost/opgraph.h"
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

void onnx_model(const uint8_t* data, size_t size) {
  try {
    const OpGraph g = parse_onnx({reinterpret_cast<const char*>(data), size}, "fuzz");
    for (const GraphNode& n : g.nodes)
      if (!(n.out_elements > 0) || !(n.in_elements > 0) || n.params < 0 || !(n.flops() >= 0))
        throw std::logic_error("an operator parsed with a size that is not positive");
    LayerwiseOptions o;
    o.global_batch = 4;
    o.uniform = {"data", "spatial", "filter", "data+pipeline"};
    const LayerwiseResult r = plan_layerwise(g, load_cluster("abci-v100", 4), o);
    if (!(r.best.step_s > 0) || !std::isfinite(r.best.step_s))
      throw std::logic_error("a graph's plan has a step that is not positive and finite");
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
  // A strategy that parses, passes the checks and runs on the stack prices to a positive,
  // finite step (per-layer sharding masks and schedules through memory and the schedule).
  try {
    const Strategy s = parse_strategy(text(data, size), 64);
    const Model m = load_model("llama3-8b");
    const Cluster c = load_cluster("dgx-h100", 64);
    if (check_strategy(m, c, s) || unsupported(software_preset("megatron-core"), s)) return;
    const Estimate e = estimate(m, c, s);
    if (!(e.step_time_s > 0) || !std::isfinite(e.step_time_s) || !(e.memory_per_gpu_bytes > 0))
      throw std::logic_error("a strategy that passed its checks priced to no step or memory");
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
  // Embedding lookups: inside, at and far outside the fitted configurations, every skew.
  try {
    const auto e = learned::EmbeddingFit::from_json(json);
    for (double rows : {1.0, 1e5, 1e12})
      for (double zipf : {0.0, 1.05, 9.0}) {
        EmbeddingPass p{e.backward, 4, e.optimizer, rows, 64, 2.5, 4096, zipf, {}};
        (void)e.predict(p);
        p.histogram = {{0.01, 0.9}, {0.99, 0.1}};
        (void)e.predict(p);
      }
  } catch (const InputError&) {
  }
}

void jobs_file(const uint8_t* data, size_t size) {
  try {
    const auto jobs = parse_jobs(text(data, size), "fuzz");
    // What parses is a list of jobs, each with a model, a batch, a length and a weight.
    for (const JobSpec& j : jobs) {
      if (j.model.empty() || j.global_batch < 1 || (j.steps < 1 && !(j.tokens > 0)) ||
          !(j.priority > 0) || (j.deadline_s && !(*j.deadline_s > 0)))
        throw std::logic_error("a job parsed without a model, batch, length or weight");
      for (size_t i = 0; i < j.gpu_counts.size(); ++i)
        if (j.gpu_counts[i] < 1 || (i > 0 && j.gpu_counts[i] <= j.gpu_counts[i - 1]))
          throw std::logic_error("a job's GPU counts are not ascending and positive");
    }
  } catch (const InputError&) {
  }
}

void tables_file(const uint8_t* data, size_t size) {
  try {
    const auto tables = parse_tables(text(data, size), "fuzz");
    for (const EmbeddingTable& t : tables)
      if (t.rows < 1 || t.dim < 1 || !(t.pooling > 0) || !std::isfinite(t.pooling) ||
          !(t.zipf >= 0) || (t.dtype_bytes != 2 && t.dtype_bytes != 4))
        throw std::logic_error("a table parsed without rows, dim or pooling factor");
  } catch (const InputError&) {
  }
}

namespace {
void check_runs(const std::vector<db::Measurements>& runs) {
  for (const auto& m : runs) {
    if (!m.measured || m.measured->gpus < 1 || m.measured->step_time_ns < 1)
      throw std::logic_error("a measured run parsed without GPUs or a step");
    (void)resolve_measured(*m.measured, m.run.uuid);
  }
}
}  // namespace

void runs_table(const uint8_t* data, size_t size) {
  try {
    check_runs(import_runs_table(text(data, size), "fuzz"));
  } catch (const InputError&) {
  }
}

void megatron_log(const uint8_t* data, size_t size) {
  try {
    check_runs(import_megatron_log(text(data, size), "fuzz", "dgx-h100", "megatron-core"));
  } catch (const InputError&) {
  }
}

void torchtitan_log(const uint8_t* data, size_t size) {
  // The job config, a line "%%", then the log; without the line, all of it is the log of a
  // default config (which has no GPUs of its own: --gpus 8).
  const std::string all(text(data, size));
  LogImport o;
  o.cluster = "dgx-h100";
  o.software = "torchtitan";
  o.config_source = "fuzz.toml";
  std::string log = all;
  if (const size_t at = all.find("\n%%\n"); at != std::string::npos) {
    o.config_text = all.substr(0, at);
    log = all.substr(at + 4);
  } else {
    o.config_text = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";
    o.gpus = 8;
  }
  try {
    check_runs(import_torchtitan_log(log, "fuzz", o));
  } catch (const InputError&) {
  }
}

void nemo_log(const uint8_t* data, size_t size) {
  LogImport o;
  o.cluster = "dgx-h100";
  o.software = "nemo";
  o.model = "llama3-8b";
  o.gpus = 8;
  o.strategy = "tp=1,mbs=1,gbs=128,zero=1";
  try {
    check_runs(import_nemo_log(text(data, size), "fuzz", o));
  } catch (const InputError&) {
  }
}

void job_instance(const uint8_t* data, size_t size) {
  // Bytes: the pool (1-16 GPUs), then per job a mode count (1-3) and per mode its GPUs and
  // a duration (1-255 s); at most 5 jobs, so brute force stays small.
  size_t at = 0;
  auto next = [&]() -> int { return at < size ? data[at++] : -1; };
  jobs::Instance in;
  const int pool = next();
  if (pool < 0) return;
  in.capacity = pool % 16 + 1;
  while (in.jobs() < 5) {
    const int count = next();
    if (count < 0) break;
    std::vector<jobs::Mode> modes;
    for (int k = 0; k <= count % 3; ++k) {
      const int g = next(), d = next();
      if (g < 0 || d < 0) break;
      modes.push_back({g % in.capacity + 1, static_cast<double>(d % 255 + 1)});
    }
    if (modes.empty()) break;
    in.modes.push_back(modes);
    in.weight.push_back(1);
    in.deadline.push_back(jobs::kNoDeadline);
  }
  if (in.jobs() == 0) return;
  for (ScheduleObjective o : {ScheduleObjective::makespan, ScheduleObjective::completion}) {
    const jobs::Solution s = jobs::list_schedule(in, o);
    // Never more than the pool at any job's start (usage only rises at starts).
    for (size_t j = 0; j < in.jobs(); ++j) {
      int used = 0;
      for (size_t i = 0; i < in.jobs(); ++i)
        if (s.start[i] <= s.start[j] && s.end(in, i) > s.start[j])
          used += in.modes[i][static_cast<size_t>(s.mode[i])].gpus;
      if (used > in.capacity) throw std::logic_error("a list schedule holds more than the pool");
    }
    if (s.value(o) < jobs::brute_force(in, o).value(o) * (1 - 1e-9))
      throw std::logic_error("a list schedule beat the brute-force optimum");
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

namespace {
// What any importer's measurements must hold: times and sizes not negative, every index in
// range.
void check_measurements(const db::Measurements& m) {
  for (const auto& k : m.kernels) {
    if (k.duration_ns < 0 || k.start_ns < 0 || k.bytes < 0)
      throw std::logic_error("an imported event has a negative time or size");
    if (k.name < 0 || static_cast<size_t>(k.name) >= m.names.size() || k.device < 0 ||
        static_cast<size_t>(k.device) >= m.devices.size())
      throw std::logic_error("an imported event names a name or device that is not there");
  }
  for (const auto& st : m.steps)
    if (st.duration_ns <= 0) throw std::logic_error("an imported step has no duration");
  for (const auto& c : m.collectives)
    if (c.time_ns < 0 || c.bytes < 0 || c.ranks < 1)
      throw std::logic_error("an imported collective has a negative time or size");
}
}  // namespace

void kineto_json(const uint8_t* data, size_t size) {
  const std::string_view t = text(data, size);
  std::optional<db::Measurements> whole;
  try {
    whole = db::import_kineto(t, "fuzz");
    check_measurements(*whole);
  } catch (const InputError&) {
  }
  // Fed in uneven chunks it must say the same: the same events, or an error too.
  const size_t chunk = 1 + size % 13;
  try {
    const db::Measurements parts = db::import_kineto_chunks(t, "fuzz", chunk);
    if (!whole || parts.kernels.size() != whole->kernels.size() ||
        parts.steps.size() != whole->steps.size() || parts.names != whole->names)
      throw std::logic_error("a trace fed in chunks imports differently from the whole");
  } catch (const InputError&) {
    if (whole) throw std::logic_error("a trace fed in chunks fails where the whole imports");
  }
}

void nccl_tests(const uint8_t* data, size_t size) {
  try {
    check_measurements(db::import_nccl_tests(text(data, size), "fuzz", "all_reduce"));
  } catch (const InputError&) {
  }
}

}  // namespace shardcost::fuzz
