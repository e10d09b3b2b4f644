// Plans of an operator graph: a split per operator priced as one step (with the gradient
// all-reduce overlapped as the software does it), the uniform strategies, pipelines of data-
// parallel stages, and the layer-wise search under the memory limit.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "layerwise/eliminate.h"
#include "layerwise/split_model.h"
#include "shardcost/error.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string>& uniform_names() {
  static const std::vector<std::string> names = {"data",        "spatial",      "filter",
                                                 "channel",     "pipeline",     "data+spatial",
                                                 "data+filter", "data+channel", "data+pipeline"};
  return names;
}

const NodeGroup& only_group(const Cluster& c) {
  if (c.groups.size() != 1)
    throw InputError(fmt::format(
        "cluster '{}' has {} node groups; layer-wise plans of operator graphs are priced on one "
        "kind of device (a mixed cluster: plan its groups one at a time)",
        c.name, c.groups.size()));
  return c.groups[0];
}

void finish(GraphPlan& p, const LayerwiseOptions& o, double capacity) {
  p.capacity_bytes = capacity;
  // What the device holds beyond the modelled tensors: the allocator's fragmentation and the
  // stack's fixed part (CUDA context, library handles and workspaces, NCCL's buffers).
  if (p.memory_bytes > 0)
    p.memory_bytes = p.memory_bytes * (1 + o.memory_fragmentation) + o.memory_fixed_bytes;
  if (p.memory_bytes > capacity && p.reason.empty())
    p.reason = fmt::format("needs {:.1f} GiB per device, {:.1f} GiB available",
                           p.memory_bytes / units::kGiB, capacity / units::kGiB);
  p.feasible = p.reason.empty();
  // Devices that split the first operator's batch load distinct samples; the others of its
  // group load the same ones.
  if (o.loading && p.step_s > 0) {
    const int loaders = p.layers.empty() ? 1 : p.layers.front().split.sample;
    p.input = input_budget(*o.loading, o.global_batch, loaders, p.step_s);
    p.step_s += p.input->wait_s;
  }
  if (p.step_s > 0) p.samples_per_s = o.global_batch / p.step_s;
  if (o.epoch_samples > 0) p.epoch_s = std::ceil(o.epoch_samples / o.global_batch) * p.step_s;
}

// The exposed part of the gradient all-reduces: behind the backward in buckets (filled in
// backward order, one per run of operators that reduce over the same group), or all after it.
double exposed_sync(const SplitModel& m, const std::vector<int>& order,
                    const std::vector<LayerSplit>& splits, const std::vector<NodePrice>& prices,
                    const LayerwiseOptions& o) {
  const Pricer& pricer = m.pricer();
  struct Bucket {
    double bytes = 0, ready = 0, separate_s = 0;
    GroupPlacement group{1, 1};
  };
  std::vector<Bucket> buckets;
  double t = 0;  // backward time so far
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto v = static_cast<size_t>(*it);
    const NodePrice& p = prices[v];
    t += p.backward_s + p.comm_s / 2;
    if (p.grad_bytes <= 0) continue;
    const LayerSplit& s = splits[v];
    const GroupPlacement g{s.sample * s.spatial * s.replicas, s.channel * s.filter};
    if (g.ranks <= 1) continue;
    const bool same = !buckets.empty() && buckets.back().group.ranks == g.ranks &&
                      buckets.back().group.stride == g.stride;
    if (!same || (o.overlap_grad_reduce && buckets.back().bytes >= o.grad_bucket_bytes))
      buckets.push_back({0, 0, 0, g});
    buckets.back().bytes += p.grad_bytes;
    buckets.back().ready = t;
  }
  double stream = 0;
  for (const Bucket& b : buckets) {
    const double s = pricer.collective(CollectiveOp::all_reduce, b.bytes, b.group).seconds;
    stream = (o.overlap_grad_reduce ? std::max(stream, b.ready) : std::max(stream, t)) + s;
  }
  return std::max(0.0, stream - t);
}

// The GPU waiting for the host (no CUDA graphs): the host launches each operator's kernels in
// turn, forward in graph order and backward in reverse, at its launch cost each; a kernel
// starts once the GPU is free and the host has launched it, so the queue runs ahead while
// long kernels compute and drains on short ones. The host launched a pass's first kernel
// while the step before it ran (steps repeat), so that one waits for nothing. What the two passes
// over `prices` (a micro-batch's operators, in order) take beyond their kernels' time; `reshard` is
// each operator's redistribution of its inputs, one collective each way.
double host_wait(const std::vector<const NodePrice*>& prices, const std::vector<double>& reshard,
                 const LayerwiseOptions& o) {
  auto pass = [&](bool forward) {
    const double launch = forward ? o.host_forward_launch_s : o.host_backward_launch_s;
    double host = -launch, gpu = 0, idle = 0;
    for (size_t k = 0; k < prices.size(); ++k) {
      const size_t i = forward ? k : prices.size() - 1 - k;
      const NodePrice& p = *prices[i];
      const double work = (forward ? p.forward_s : p.backward_s) + (p.comm_s + reshard[i]) / 2;
      const int kernels = (forward ? p.kernels_fwd : p.kernels_bwd) + (reshard[i] > 0 ? 1 : 0);
      if (kernels <= 0 || launch <= 0) {
        gpu += work;
        continue;
      }
      for (int j = 0; j < kernels; ++j) {
        host += launch;
        if (host > gpu) idle += host - gpu, gpu = host;
        gpu += work / kernels;
      }
    }
    return idle;
  };
  return pass(true) + pass(false);
}

GraphPlan evaluate(const SplitModel& m, const std::vector<LayerSplit>& splits,
                   const LayerwiseOptions& o, std::string name) {
  GraphPlan p;
  p.strategy = std::move(name);
  const OpGraph& g = m.graph();
  std::vector<NodePrice> prices(g.nodes.size());
  std::vector<const NodePrice*> in_order;
  std::vector<double> reshard;
  // The peak: each operator's backward runs while what it and the operators before it keep
  // is still held (autograd frees a node's saved tensors after its backward), with its
  // gradients in flight; the end of the forward is the first of those moments.
  double kept = 0, peak = 0;
  for (int v : m.priced()) {
    const auto sv = static_cast<size_t>(v);
    const NodePrice np = m.node(v, splits[sv]);
    prices[sv] = np;
    LayerCost lc;
    lc.node = g.nodes[sv].name;
    lc.op = g.nodes[sv].op_type;
    lc.split = splits[sv];
    lc.compute_s = np.forward_s + np.backward_s;
    lc.comm_s = np.comm_s;
    lc.sync_s = np.sync_s;
    lc.memory_bytes = np.memory_bytes;
    for (int u : m.producers()[sv])
      lc.reshard_s += m.edge(u, splits[static_cast<size_t>(u)], v, splits[sv]);
    p.compute_s += lc.compute_s;
    p.comm_s += lc.comm_s;
    p.reshard_s += lc.reshard_s;
    p.memory_bytes += lc.memory_bytes - np.kept_bytes;
    kept += np.kept_bytes;
    peak = std::max(peak, kept + np.working_bytes);
    in_order.push_back(&prices[sv]);
    reshard.push_back(lc.reshard_s);
    p.layers.push_back(std::move(lc));
  }
  p.memory_bytes += peak;
  p.sync_exposed_s = exposed_sync(m, m.priced(), splits, prices, o);
  p.host_launch_s = host_wait(in_order, reshard, o);
  p.step_s = p.compute_s + p.comm_s + p.reshard_s + p.sync_exposed_s + p.host_launch_s;
  return p;
}

int inner_group(const NodeGroup& group, int devices) {
  return std::gcd(devices, group.domain_gpus());
}

// The split a uniform strategy asks of one operator (memory-bound ones split their channels
// where the strategy splits a convolution's input or output channels).
LayerSplit wanted(const GraphNode& n, std::string_view name, int devices, int inner) {
  const bool weights = n.kind != NodeKind::memory;
  const int outer = devices / inner;
  LayerSplit s;
  if (name == "data") s.sample = devices;
  if (name == "spatial") s.spatial = devices;
  if (name == "filter") s.filter = devices;
  if (name == "channel") (weights ? s.channel : s.filter) = devices;
  if (name == "data+spatial") s.sample = outer, s.spatial = inner;
  if (name == "data+filter") s.sample = outer, s.filter = inner;
  if (name == "data+channel") s.sample = outer, (weights ? s.channel : s.filter) = inner;
  return s;
}

// Pipelines: `stages` groups of devices/stages ranks, each data-parallel over its ranks,
// fed `micro` micro-batches (GPipe: all forwards, then all backwards; the gradients
// all-reduced after the flush). The operators are cut into contiguous stages that balance
// their time per micro-batch.
GraphPlan price_pipeline(const OpGraph& g, const NodeGroup& group, const Fabric& network,
                         const LayerwiseOptions& o, int devices, int stages, int micro) {
  GraphPlan p;
  p.strategy = stages == devices ? "pipeline" : "data+pipeline";
  p.stages = stages;
  p.micro_batches = micro;
  const int q = devices / stages;
  const int mb = o.global_batch / micro;
  const SplitModel m(g, group, network, o, q, mb);
  const std::vector<int>& order = m.priced();
  const size_t count = order.size();
  std::vector<double> t(count), sync(count), mem(count), kept(count), working(count);
  std::vector<NodePrice> prices(count);
  std::vector<LayerSplit> splits(g.nodes.size());
  for (size_t i = 0; i < count; ++i) {
    const int v = order[i];
    const LayerSplit s = m.fit(v, {q, 1, 1, 1, 1});
    splits[static_cast<size_t>(v)] = s;
    const NodePrice np = m.node(v, s);
    prices[i] = np;
    t[i] = np.forward_s + np.backward_s + np.comm_s;
    sync[i] = np.grad_bytes;
    kept[i] = np.kept_bytes;  // a micro-batch's
    mem[i] = np.memory_bytes - np.kept_bytes;
    working[i] = np.working_bytes;
  }
  // Linear partition: the cut that minimises the slowest stage.
  std::vector<double> prefix(count + 1, 0);
  for (size_t i = 0; i < count; ++i) prefix[i + 1] = prefix[i] + t[i];
  const auto s = static_cast<size_t>(stages);
  std::vector<std::vector<double>> best(s + 1, std::vector<double>(count + 1, kInf));
  std::vector<std::vector<size_t>> cut(s + 1, std::vector<size_t>(count + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= s; ++k)
    for (size_t j = k; j <= count; ++j)
      for (size_t i = k - 1; i < j; ++i) {
        const double v = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (v < best[k][j]) best[k][j] = v, cut[k][j] = i;
      }
  std::vector<size_t> bounds(s + 1, count);
  for (size_t k = s; k > 0; --k) bounds[k - 1] = cut[k][bounds[k]];
  double slowest = 0, send = 0, sync_s = 0, memory = 0, host = 0;
  const Pricer& pricer = m.pricer();
  for (size_t k = 0; k < s; ++k) {
    double time = 0, grad = 0, held = 0, in_flight = 0;
    std::vector<const NodePrice*> stage;
    // GPipe holds every micro-batch's kept tensors at the flush, one's gradients in flight.
    for (size_t i = bounds[k]; i < bounds[k + 1]; ++i) {
      time += t[i], grad += sync[i], held += mem[i] + micro * kept[i];
      in_flight = std::max(in_flight, working[i]);
      stage.push_back(&prices[i]);
    }
    held += in_flight;
    // Each micro-batch's passes through the stage wait for its host as one step's would.
    const double wait = host_wait(stage, std::vector<double>(stage.size(), 0), o);
    if (time + wait > slowest) host = wait;
    time += wait;
    // The activation this stage passes on, per device, forward and its gradient back.
    if (k + 1 < s && bounds[k + 1] > 0) {
      const GraphNode& last = g.nodes[static_cast<size_t>(order[bounds[k + 1] - 1])];
      const double bytes = last.out_elements * mb / q * m.element_bytes();
      send = std::max(send, 2 * pricer.send_recv(bytes, {2, q}).seconds);
    }
    slowest = std::max(slowest, time);
    sync_s = std::max(sync_s, pricer.collective(CollectiveOp::all_reduce, grad, {q, 1}).seconds);
    memory = std::max(memory, held);
  }
  const double per_micro = slowest + send;
  p.host_launch_s = micro * host;
  p.compute_s = micro * (slowest - host);
  p.comm_s = micro * send;
  p.bubble_s = (stages - 1) * per_micro;
  p.sync_exposed_s = sync_s;
  p.step_s = p.compute_s + p.host_launch_s + p.comm_s + p.bubble_s + p.sync_exposed_s;
  p.memory_bytes = memory;
  for (size_t i = 0; i < count; ++i) {
    const auto v = static_cast<size_t>(order[i]);
    LayerCost lc;
    lc.node = g.nodes[v].name;
    lc.op = g.nodes[v].op_type;
    lc.split = splits[v];
    lc.compute_s = t[i] * micro;
    p.layers.push_back(std::move(lc));
  }
  return p;
}

GraphPlan best_pipeline(const OpGraph& g, const NodeGroup& group, const Fabric& network,
                        const LayerwiseOptions& o, int devices, bool pure) {
  GraphPlan best;
  best.strategy = pure ? "pipeline" : "data+pipeline";
  best.reason = pure ? "fewer operators than devices, or the batch does not split into "
                       "micro-batches"
                     : "no stage count divides the devices and the batch";
  int priced = 0;
  for (const GraphNode& n : g.nodes) priced += n.kind != NodeKind::view;
  for (int stages = 2; stages <= devices; ++stages) {
    if (devices % stages || stages > priced) continue;
    if (pure != (stages == devices)) continue;
    const int q = devices / stages;
    for (int micro = stages; micro <= 8 * stages; micro *= 2) {
      if (o.global_batch % (micro * q)) continue;
      GraphPlan p = price_pipeline(g, group, network, o, devices, stages, micro);
      finish(p, o, group.device.memory_bytes);
      const bool better = (p.feasible && (!best.feasible || p.step_s < best.step_s)) ||
                          (!best.feasible && best.step_s == 0);
      if (better) best = std::move(p);
    }
  }
  return best;
}

void check_batch(const OpGraph& g, const LayerwiseOptions& o, int devices) {
  if (o.global_batch < 1)
    throw InputError(fmt::format("{}: give the global batch (--gbs N, samples per step)", g.name));
  check_sizes(g, o.global_batch, fmt::format("--gbs {}", o.global_batch));
  if (o.epoch_samples < 0 || !std::isfinite(o.epoch_samples))
    throw InputError(
        fmt::format("--epoch-samples {}: give a positive count of samples", o.epoch_samples));
  if (devices > 1 && std::gcd(o.global_batch, devices) == 1)
    throw InputError(fmt::format(
        "--gbs {}: no sample split of {} devices divides it, so every device would run the "
        "whole batch; use a multiple of {}",
        o.global_batch, devices, devices));
}

}  // namespace

GraphPlan price_splits(const OpGraph& g, const Cluster& c, const LayerwiseOptions& o,
                       const std::vector<LayerSplit>& per_node, std::string strategy) {
  const NodeGroup& group = only_group(c);
  check_batch(g, o, c.total_gpus());
  const SplitModel m(g, group, c.network_of(0), o, c.total_gpus(), o.global_batch);
  if (per_node.size() != g.nodes.size())
    throw InputError(fmt::format("{} splits for {} operators", per_node.size(), g.nodes.size()));
  for (int v : m.priced())
    if (!m.admits(v, per_node[static_cast<size_t>(v)]))
      throw InputError(fmt::format("operator '{}' cannot run split {} over {} devices",
                                   g.nodes[static_cast<size_t>(v)].name,
                                   to_string(per_node[static_cast<size_t>(v)]), c.total_gpus()));
  GraphPlan p = evaluate(m, per_node, o, std::move(strategy));
  finish(p, o, group.device.memory_bytes);
  return p;
}

GraphPlan price_uniform(const OpGraph& g, const Cluster& c, const LayerwiseOptions& o,
                        std::string_view name) {
  const NodeGroup& group = only_group(c);
  const int devices = c.total_gpus();
  check_batch(g, o, devices);
  if (std::find(uniform_names().begin(), uniform_names().end(), name) == uniform_names().end())
    throw InputError(fmt::format("unknown uniform strategy '{}'; use {}", name,
                                 fmt::join(uniform_names(), ", ")));
  if (name == "pipeline" || name == "data+pipeline")
    return best_pipeline(g, group, c.network_of(0), o, devices, name == "pipeline");
  const SplitModel m(g, group, c.network_of(0), o, devices, o.global_batch);
  const int inner = inner_group(group, devices);
  std::vector<LayerSplit> splits(g.nodes.size());
  bool exact = true;
  for (int v : m.priced()) {
    const LayerSplit want = wanted(g.nodes[static_cast<size_t>(v)], name, devices, inner);
    splits[static_cast<size_t>(v)] = m.fit(v, want);
    exact = exact && splits[static_cast<size_t>(v)] == want;
  }
  GraphPlan p = evaluate(m, splits, o, std::string(name));
  if (name == "data" && !exact)
    p.reason =
        fmt::format("the global batch {} does not split over {} devices", o.global_batch, devices);
  finish(p, o, group.device.memory_bytes);
  return p;
}

LayerwiseResult plan_layerwise(const OpGraph& g, const Cluster& c, const LayerwiseOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const NodeGroup& group = only_group(c);
  const int devices = c.total_gpus();
  check_batch(g, o, devices);
  LayerwiseResult r;
  r.model = g.name;
  r.devices = devices;
  for (const std::string& name : o.uniform.empty() ? uniform_names() : o.uniform)
    r.uniform.push_back(price_uniform(g, c, o, name));
  std::stable_sort(r.uniform.begin(), r.uniform.end(), [](const GraphPlan& a, const GraphPlan& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.step_s < b.step_s;
  });
  if (o.search) {
    const SplitModel m(g, group, c.network_of(0), o, devices, o.global_batch);
    const std::vector<int>& order = m.priced();
    std::map<int, int> index;  // graph node -> search node
    for (size_t i = 0; i < order.size(); ++i) index[order[i]] = static_cast<int>(i);
    std::vector<std::vector<LayerSplit>> candidates(order.size());
    std::vector<std::vector<double>> time(order.size()), memory(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      candidates[i] = m.search_splits(order[i]);
      for (const LayerSplit& s : candidates[i]) {
        const NodePrice p = m.node(order[i], s);
        time[i].push_back(p.total());
        memory[i].push_back(p.memory_bytes);
      }
      r.configurations += static_cast<int64_t>(candidates[i].size());
    }
    std::map<std::pair<int, int>, std::vector<double>> edges;
    for (size_t i = 0; i < order.size(); ++i)
      for (int u : m.producers()[static_cast<size_t>(order[i])]) {
        const int j = index.at(u);
        auto& e = edges[{j, static_cast<int>(i)}];
        const size_t nu = candidates[static_cast<size_t>(j)].size(), nv = candidates[i].size();
        if (e.empty()) e.assign(nu * nv, 0);
        for (size_t a = 0; a < nu; ++a)
          for (size_t b = 0; b < nv; ++b)
            e[a * nv + b] +=
                m.edge(u, candidates[static_cast<size_t>(j)][a], order[i], candidates[i][b]);
      }
    // Under the memory limit: time plus lambda x bytes, lambda raised until the plan fits.
    const double capacity = group.device.memory_bytes;
    std::vector<LayerSplit> splits(g.nodes.size());
    GraphPlan found;
    double lambda = 0;
    for (int attempt = 0; attempt < 48; ++attempt) {
      std::vector<std::vector<double>> cost = time;
      for (size_t i = 0; i < cost.size(); ++i)
        for (size_t k = 0; k < cost[i].size(); ++k) cost[i][k] += lambda * memory[i][k];
      const std::vector<int> choice = eliminate(cost, edges);
      for (size_t i = 0; i < order.size(); ++i)
        splits[static_cast<size_t>(order[i])] = candidates[i][static_cast<size_t>(choice[i])];
      found = evaluate(m, splits, o, "layer-wise");
      finish(found, o, capacity);
      if (found.feasible) break;
      lambda = lambda == 0 ? found.step_s / found.memory_bytes * 1e-3 : lambda * 2;
    }
    r.best = std::move(found);
    // A uniform plan the search's additive objective missed (its overlap of the gradient
    // all-reduce is priced only here), or a pipeline (outside the search's space), that is
    // faster or fits where the search's plan does not stands as the plan: never slower.
    for (const GraphPlan& u : r.uniform)
      if (u.feasible && (!r.best.feasible || u.step_s < r.best.step_s)) {
        std::string label = "layer-wise (= " + u.strategy + ")";
        r.best = u;
        r.best.strategy = label;
      }
  }
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardcost
