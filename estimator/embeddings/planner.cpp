// shard_tables: TorchRec's greedy baseline and a beam search over each table's sharding and
// placement, minimising the slowest GPU's compute plus the plan's communication within every
// GPU's memory (docs/embeddings.md).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>

#include "cost.h"
#include "shardcost/error.h"
#include "shardcost/hardware.h"
#include "shardcost/units.h"

namespace shardcost {

std::string_view to_string(ShardingType t) {
  switch (t) {
    case ShardingType::table_wise:
      return "table_wise";
    case ShardingType::column_wise:
      return "column_wise";
    case ShardingType::row_wise:
      return "row_wise";
    case ShardingType::table_row_wise:
      return "table_row_wise";
    case ShardingType::data_parallel:
      return "data_parallel";
  }
  return "?";
}

int ShardingPlan::count(ShardingType t) const {
  return static_cast<int>(std::count_if(tables.begin(), tables.end(),
                                        [&](const TablePlacement& p) { return p.type == t; }));
}

namespace {

using embeddings::CostModel;

// One way to shard a table: its shards' sizes and work, and what it adds to the plan's
// communication.
struct Candidate {
  ShardingType type = ShardingType::table_wise;
  int shards = 1;           // table-wise 1, column-wise k, row-wise W, table-row-wise a node
  double compute_s = 0;     // per shard
  double memory_bytes = 0;  // per shard
  double send_bytes = 0;    // per shard, forward all-to-all
  double index_bytes = 0;   // per shard, received in the index all-to-all
  double reductions_s = 0;  // row-wise and data-parallel collectives
};

std::vector<Candidate> candidates(const EmbeddingTable& t, const CostModel& m, bool search) {
  const double B = m.batch(), W = m.gpus(), n = m.per_node();
  const double lookups = B * t.pooling, row = t.dim * static_cast<double>(t.dtype_bytes);
  const double a2a = (W - 1) / W;
  std::vector<Candidate> out;
  auto add = [&](ShardingType type, int shards, double row_share, int dim, double looked,
                 double outputs, double rows, double send, double index, double reductions) {
    out.push_back({type, shards, m.compute_s(t, row_share, dim, looked, outputs),
                   m.memory_bytes(t, rows, dim), send, index, reductions});
  };
  const double R = static_cast<double>(t.rows);
  add(ShardingType::table_wise, 1, 1, t.dim, lookups, B, R, B * row * a2a, lookups * 8 * a2a, 0);
  add(ShardingType::row_wise, m.gpus(), 1 / W, t.dim, lookups / W, B, R / W, 0,
      lookups * 8 / W * a2a, m.row_wise_s(B * row, m.gpus()));
  if (!search) return out;
  for (int k = 2; k <= m.gpus() && t.dim % k == 0 && t.dim / k >= 4; k *= 2)
    add(ShardingType::column_wise, k, 1, t.dim / k, lookups, B, R, B * row / k * a2a,
        lookups * 8 * a2a, 0);
  if (m.gpus() > m.per_node() && m.per_node() > 1)
    add(ShardingType::table_row_wise, m.per_node(), 1 / n, t.dim, lookups / n, B, R / n,
        B * row / n * a2a, lookups * 8 / n * a2a, m.row_wise_s(B * row, m.per_node()));
  // Replicated only where it is small: its dense gradient is all-reduced every step.
  if (m.memory_bytes(t, R, t.dim) < 0.01 * m.budget_bytes())
    add(ShardingType::data_parallel, m.gpus(), 1, t.dim, lookups / W, B / W, R, 0, 0,
        m.data_parallel_s(R * t.dim * 4.0));
  return out;
}

struct Decision {
  TablePlacement placement;
  std::shared_ptr<const Decision> parent;
};

struct State {
  std::vector<GpuLoad> gpus;
  std::vector<double> index_bytes;
  double reductions_s = 0;
  std::shared_ptr<const Decision> chain;
  double score = 0, total = 0;
};

double comm_s(const State& s, const CostModel& m) {
  double send = 0, index = 0;
  for (size_t g = 0; g < s.gpus.size(); ++g) {
    send = std::max(send, s.gpus[g].send_bytes);
    index = std::max(index, s.index_bytes[g]);
  }
  return m.all_to_all_s(send, index) + s.reductions_s;
}

void rescore(State& s, const CostModel& m) {
  double slowest = 0, total = 0;
  for (const GpuLoad& g : s.gpus) slowest = std::max(slowest, g.compute_s), total += g.compute_s;
  s.score = slowest + comm_s(s, m);
  s.total = total;
}

// Where a candidate's shards go in a state (the least-loaded GPUs with room), or nothing.
// torchrec: as TorchRec's greedy partitioner places, each shard onto the GPU of least
// compute with room.
std::optional<std::vector<int>> place(const State& s, const Candidate& c, const CostModel& m,
                                      bool torchrec = false) {
  const int W = m.gpus();
  auto room = [&](int g) { return s.gpus[g].memory_bytes + c.memory_bytes <= m.budget_bytes(); };
  std::vector<int> out;
  if (c.shards == W) {  // row-wise, data-parallel: every GPU
    for (int g = 0; g < W; ++g) {
      if (!room(g)) return std::nullopt;
      out.push_back(g);
    }
    return out;
  }
  if (c.type == ShardingType::table_row_wise) {
    // The node whose busiest GPU is least busy, with room on every GPU of it.
    const int n = m.per_node();
    int best = -1;
    double best_load = 0;
    for (int node = 0; node < W / n; ++node) {
      double load = 0;
      bool fits = true;
      for (int g = node * n; g < (node + 1) * n; ++g) {
        fits = fits && room(g);
        load = std::max(load, s.gpus[g].compute_s);
      }
      if (fits && (best < 0 || load < best_load)) best = node, best_load = load;
    }
    if (best < 0) return std::nullopt;
    for (int g = best * n; g < (best + 1) * n; ++g) out.push_back(g);
    return out;
  }
  // Table- and column-wise: each shard onto the GPU with room where it raises the plan's
  // slowest GPU and busiest sender least (the all-to-all's marginal seconds per byte weigh the
  // sends), fewest loaded first on ties.
  double slowest = 0, busiest = 0;
  for (const GpuLoad& g : s.gpus)
    slowest = std::max(slowest, g.compute_s), busiest = std::max(busiest, g.send_bytes);
  std::vector<char> taken(static_cast<size_t>(W), 0);
  while (static_cast<int>(out.size()) < c.shards) {
    int best = -1;
    double best_score = 0;
    for (int g = 0; g < W; ++g) {
      if (taken[static_cast<size_t>(g)] || !room(g)) continue;
      const GpuLoad& l = s.gpus[static_cast<size_t>(g)];
      const double score =
          torchrec ? l.compute_s
                   : std::max(slowest, l.compute_s + c.compute_s) +
                         m.a2a_s_per_byte() * std::max(busiest, l.send_bytes + c.send_bytes);
      if (best < 0 || score < best_score ||
          (score == best_score && l.compute_s < s.gpus[static_cast<size_t>(best)].compute_s))
        best = g, best_score = score;
    }
    if (best < 0) return std::nullopt;
    taken[static_cast<size_t>(best)] = 1;
    out.push_back(best);
    const GpuLoad& l = s.gpus[static_cast<size_t>(best)];
    slowest = std::max(slowest, l.compute_s + c.compute_s);
    busiest = std::max(busiest, l.send_bytes + c.send_bytes);
  }
  return out;
}

State apply(const State& s, size_t table, const Candidate& c, const std::vector<int>& gpus,
            const CostModel& m) {
  State n = s;
  for (int g : gpus) {
    GpuLoad& l = n.gpus[static_cast<size_t>(g)];
    if (l.shards == 0) l.compute_s += m.launch_s();  // its fused kernels' launches
    l.compute_s += c.compute_s;
    l.memory_bytes += c.memory_bytes;
    l.send_bytes += c.send_bytes;
    ++l.shards;
    n.index_bytes[static_cast<size_t>(g)] += c.index_bytes;
  }
  n.reductions_s += c.reductions_s;
  TablePlacement p;
  p.table = table;
  p.type = c.type;
  p.gpus = gpus;
  p.compute_s = c.compute_s * static_cast<double>(gpus.size());
  p.memory_bytes = c.memory_bytes * static_cast<double>(gpus.size());
  n.chain = std::make_shared<const Decision>(Decision{std::move(p), s.chain});
  rescore(n, m);
  return n;
}

ShardingPlan plan_of(const State& s, const CostModel& m) {
  ShardingPlan p;
  for (const Decision* d = s.chain.get(); d; d = d->parent.get()) p.tables.push_back(d->placement);
  std::sort(p.tables.begin(), p.tables.end(),
            [](const TablePlacement& a, const TablePlacement& b) { return a.table < b.table; });
  p.gpus = s.gpus;
  for (const GpuLoad& g : p.gpus) {
    p.slowest_compute_s = std::max(p.slowest_compute_s, g.compute_s);
    p.mean_compute_s += g.compute_s / static_cast<double>(p.gpus.size());
  }
  p.comm_s = comm_s(s, m);
  p.step_s = p.slowest_compute_s + p.comm_s;
  return p;
}

}  // namespace

std::vector<ShardPass> shard_passes(const TablePlacement& p, const EmbeddingTable& t,
                                    const Cluster& c, int batch) {
  const int gpus = c.total_gpus(), per_node = embeddings::gpus_per_node(c);
  const double R = static_cast<double>(t.rows), B = batch, L = t.pooling;
  std::vector<ShardPass> out;
  const int k = static_cast<int>(p.gpus.size());
  for (int g : p.gpus) {
    switch (p.type) {
      case ShardingType::table_wise:
        out.push_back({g, R, t.dim, L, B});
        break;
      case ShardingType::column_wise:
        out.push_back({g, R, t.dim / k, L, B});
        break;
      case ShardingType::row_wise:
        out.push_back({g, R / gpus, t.dim, L / gpus, B});
        break;
      case ShardingType::table_row_wise:
        out.push_back({g, R / per_node, t.dim, L / per_node, B});
        break;
      case ShardingType::data_parallel:
        out.push_back({g, R, t.dim, L, B / gpus});
        break;
    }
  }
  return out;
}

namespace {

[[noreturn]] void fits_nowhere(const EmbeddingTable& t, const CostModel& m) {
  throw InputError(fmt::format(
      "table '{}' ({} rows x {}, {:.1f} GiB with its optimizer state) fits no sharding: even "
      "row-wise over the {} GPUs it needs {:.1f} GiB on each beside the other tables, and a GPU "
      "may hold {:.1f} GiB of tables; add GPUs or shrink the table",
      t.name, t.rows, t.dim, m.memory_bytes(t, static_cast<double>(t.rows), t.dim) / units::kGiB,
      m.gpus(), m.memory_bytes(t, static_cast<double>(t.rows) / m.gpus(), t.dim) / units::kGiB,
      m.budget_bytes() / units::kGiB));
}

}  // namespace

ShardingResult shard_tables(const std::vector<EmbeddingTable>& tables, const Cluster& c,
                            const ShardingOptions& opt, const EstimateOptions& eopt) {
  if (opt.batch < 1) throw InputError("--batch must be a positive number of samples");
  if (c.groups.size() > 1)
    throw InputError("shard-tables on a mixed cluster (several node groups) is not priced yet");
  if (tables.empty()) throw InputError("no tables to shard");
  // Each table's candidates span the GPUs and the beam keeps every GPU's load per plan: time
  // and memory grow with tables x GPUs (2,000 tables on 4,096 GPUs: 20 s, 680 MB on 2 cores;
  // 20,000 took 6.5 GB), bounded before anything is allocated.
  constexpr double kMaxTableGpus = 1 << 22;
  const double pairs = static_cast<double>(tables.size()) * c.total_gpus();
  if (pairs > kMaxTableGpus)
    throw InputError(fmt::format(
        "{} tables on {} GPUs: shard-tables plans up to 4,194,304 tables x GPUs (its search "
        "grows with both); shard the tables in parts, or over fewer GPUs",
        tables.size(), c.total_gpus()));
  const auto start = std::chrono::steady_clock::now();
  const CostModel m(c, opt, eopt);
  ShardingResult r;
  // The dense part runs on every GPU alike: it adds to each plan's step, never to its choices;
  // what it needs of a GPU's memory must fit beside the tables' share.
  r.dense = embeddings::dense_cost(m, opt);
  if (!opt.dense_mlps.empty()) {
    const DenseCost& dense = r.dense;
    const double left = c.groups.front().device.memory_bytes - m.budget_bytes();
    if (dense.memory_bytes > left)
      throw InputError(fmt::format(
          "the dense MLPs need {:.1f} GiB on every GPU ({:.0f} M parameters with their "
          "gradients and Adam's moments, and the activations of {} samples), more than the "
          "{:.1f} GiB a GPU keeps beside the tables; use more GPUs or a smaller dense part",
          dense.memory_bytes / units::kGiB, dense.parameters / 1e6, opt.batch / m.gpus(),
          left / units::kGiB));
  }
  State empty;
  empty.gpus.assign(static_cast<size_t>(m.gpus()), {});
  empty.index_bytes.assign(static_cast<size_t>(m.gpus()), 0);

  // The costliest tables first (their table-wise shard's compute).
  std::vector<std::vector<Candidate>> options;
  for (const auto& t : tables) options.push_back(candidates(t, m, true));
  std::vector<size_t> order(tables.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return options[a].front().compute_s > options[b].front().compute_s;
  });

  // TorchRec's greedy: table-wise where a table fits one GPU, else row-wise; the costliest
  // first onto the least-loaded GPU with room (torchrec), or where it raises the plan's score
  // least (a second path the beam keeps beside its own).
  std::string failed;
  auto greedy_path = [&](bool torchrec) {
    std::vector<State> steps;
    State s = empty;
    for (size_t i : order) {
      const auto base = candidates(tables[i], m, false);
      const Candidate& tw = base[0];
      std::optional<std::vector<int>> at;
      if (tw.memory_bytes <= m.budget_bytes()) at = place(s, tw, m, torchrec);
      const Candidate& use = at ? tw : base[1];
      if (!at) at = place(s, use, m, torchrec);
      if (!at) {  // this path packs no further: the search goes on without it
        failed = tables[i].name;
        return std::vector<State>{};
      }
      s = apply(s, i, use, *at, m);
      steps.push_back(s);
    }
    return steps;
  };
  const std::vector<State> greedy_steps = greedy_path(true);
  if (greedy_steps.empty()) {
    r.greedy_failed = failed;
  } else {
    r.greedy = plan_of(greedy_steps.back(), m);
  }
  const std::vector<State> scored_steps = greedy_path(false);

  // Beam search: every candidate of every table, placed where it loads least, the best
  // `beam` partial plans kept.
  std::vector<State> beam{empty};
  for (size_t step = 0; step < order.size(); ++step) {
    tick(opt.progress, "tables placed", static_cast<int64_t>(step),
         static_cast<int64_t>(order.size()));
    const size_t i = order[step];
    std::vector<State> next;
    for (const State& s : beam)
      for (const Candidate& cand : options[i]) {
        ++r.evaluated;
        if (auto at = place(s, cand, m)) next.push_back(apply(s, i, cand, *at, m));
      }
    if (next.empty()) fits_nowhere(tables[i], m);
    std::sort(next.begin(), next.end(), [](const State& a, const State& b) {
      return a.score != b.score ? a.score < b.score : a.total < b.total;
    });
    if (static_cast<int>(next.size()) > std::max(1, opt.beam))
      next.resize(static_cast<size_t>(std::max(1, opt.beam)));
    // The greedy paths' partial states ride along beside the beam's: the search never ends
    // worse than either.
    if (!greedy_steps.empty()) next.push_back(greedy_steps[step]);
    if (!scored_steps.empty()) next.push_back(scored_steps[step]);
    beam = std::move(next);
  }
  tick(opt.progress, "tables placed", static_cast<int64_t>(order.size()),
       static_cast<int64_t>(order.size()));
  const State& best = *std::min_element(
      beam.begin(), beam.end(), [](const State& a, const State& b) { return a.score < b.score; });
  r.plan = plan_of(best, m);
  r.lookup_costs = m.lookup_source();
  for (ShardingPlan* p : {&r.plan, &r.greedy}) {
    if (p->gpus.empty()) continue;
    p->dense_s = r.dense.compute_s;
    p->dense_comm_s = r.dense.all_reduce_s;
    p->step_s += p->dense_s + p->dense_comm_s;
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardcost
