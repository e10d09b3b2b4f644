// Parallel split learning: per-device cuts and uplink shares that minimise the round time
// (docs/operator-graphs.md, "Split learning at the edge").
#include "shardcost/split_learning.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "layerwise/split_model.h"
#include "shardcost/error.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Momentum SGD on the device: fp32 weight, gradient and momentum (12 bytes a parameter); its
// step reads the three and writes two (20 bytes).
constexpr double kStateBytes = 12, kStepBytes = 20;

// One device's costs at every cut: prefix sums over the priced operators.
struct ClientCosts {
  std::vector<double> device_s, server_s, memory, smashed;  // index: operators on the device
  double result = 0;  // inference: the model's output, sent back down
};

double roofline(const EdgeDevice& d, bool half, double flops, double bytes) {
  const bool fast16 = half && d.fp16_flops > 0;
  const double peak = fast16 ? d.fp16_flops : d.fp32_flops;
  const double eff =
      fast16 && d.compute_fp16_efficiency > 0 ? d.compute_fp16_efficiency : d.compute_efficiency;
  return std::max(flops / (peak * eff), bytes / (d.memory_bandwidth_Bps * d.memory_efficiency));
}

struct Planner {
  const OpGraph& g;
  const SplitSetup& setup;
  const SplitOptions& o;
  NodeGroup server;
  Fabric network;
  std::vector<int> order;  // priced operators
  std::vector<int> cuts;   // valid cuts: operators on the device
  std::vector<ClientCosts> costs;
  double e = 4;

  Planner(const OpGraph& graph, const Device& server_device, const SplitSetup& s,
          const SplitOptions& opts)
      : g(graph), setup(s), o(opts) {
    server.name = "server";
    server.device = server_device;
    server.nodes = 1;
    server.gpus_per_node = 1;
    e = o.precision == DType::fp32 || o.precision == DType::tf32 ? 4 : 2;
  }

  void prepare() {
    std::map<int, std::unique_ptr<SplitModel>> models;  // by batch
    LayerwiseOptions lo;
    lo.precision = o.precision;
    lo.costs = o.costs;
    for (const SplitClient& c : setup.clients)
      if (!models.count(c.batch)) {
        lo.global_batch = c.batch;
        models[c.batch] = std::make_unique<SplitModel>(g, server, network, lo, 1, c.batch);
      }
    const SplitModel& any = *models.begin()->second;
    order = any.priced();
    const size_t n = order.size();
    // A cut after position k: every tensor read beyond k was written at k or earlier, and only
    // the one written at k crosses.
    std::vector<size_t> last_use(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t u : any.producer_positions()[i]) last_use[u] = std::max(last_use[u], i);
    // The furthest use of anything written before k; the model's input (raw data stays on the
    // device) counts as written before the first operator.
    size_t reach = 0;
    for (size_t i = 0; i < n; ++i)
      if (any.reads_input(order[i])) reach = std::max(reach, i);
    // Inference may also keep everything on the server (the raw input sent) or the device.
    if (o.inference) cuts.push_back(0);
    for (size_t k = 0; k + 1 < n; ++k) {
      if (reach <= k && last_use[k] > k) cuts.push_back(static_cast<int>(k + 1));
      reach = std::max(reach, last_use[k]);
    }
    if (o.inference) cuts.push_back(static_cast<int>(n));
    if (cuts.empty())
      throw InputError(fmt::format(
          "{}: no place in the graph where a single tensor crosses; split learning needs one",
          g.name));
    const bool half = e == 2;
    for (const SplitClient& c : setup.clients) {
      const SplitModel& m = *models.at(c.batch);
      ClientCosts cc;
      cc.device_s.assign(n + 1, 0);
      cc.server_s.assign(n + 1, 0);
      cc.memory.assign(n + 1, 0);
      cc.smashed.assign(n + 1, 0);
      std::vector<double> server_node(n);
      for (size_t i = 0; i < n; ++i) {
        const NodePrice np = m.node(order[i], {1, 1, 1, 1, 1});
        server_node[i] = np.forward_s + (o.inference ? 0 : np.backward_s);
      }
      // Inference: the raw input is what crosses at cut 0; weights and the largest working
      // set of one operator are what the device holds.
      double inputs = 0, working = 0;
      if (o.inference) {
        for (size_t i = 0; i < n; ++i)
          if (m.reads_input(order[i])) inputs += g.nodes[static_cast<size_t>(order[i])].in_elements;
        cc.smashed[0] = inputs * c.batch * e;
        cc.result = g.nodes[static_cast<size_t>(order[n - 1])].out_elements * c.batch * e;
      }
      for (size_t k = 0; k < n; ++k) {
        const GraphNode& node = g.nodes[static_cast<size_t>(order[k])];
        const double b = c.batch;
        const double flops = node.flops() * b;
        const double fwd =
            roofline(c.device, half, flops,
                     (node.in_elements + node.out_elements) * b * e + node.params * e);
        const double bwd =
            roofline(c.device, half, (k == 0 ? 1 : 2) * flops,
                     (2 * node.in_elements + node.out_elements) * b * e + 2 * node.params * e);
        const double step =
            node.params * kStepBytes / (c.device.memory_bandwidth_Bps * c.device.memory_efficiency);
        if (o.inference) {
          working = std::max(working, (node.in_elements + node.out_elements) * b * e);
          cc.device_s[k + 1] = cc.device_s[k] + fwd;
          cc.memory[k + 1] = cc.memory[k] + node.params * e;
        } else {
          cc.device_s[k + 1] = cc.device_s[k] + fwd + bwd + step;
          cc.memory[k + 1] = cc.memory[k] + node.params * kStateBytes + node.kept_bytes(e) * b;
        }
        cc.smashed[k + 1] = k + 1 == n && o.inference ? 0 : node.out_elements * b * e;
      }
      if (o.inference)
        for (size_t k = 1; k <= n; ++k) cc.memory[k] += working;
      for (size_t k = n; k-- > 0;) cc.server_s[k] = cc.server_s[k + 1] + server_node[k];
      costs.push_back(std::move(cc));
    }
  }

  bool fits(size_t client, int cut) const {
    return costs[client].memory[static_cast<size_t>(cut)] <=
           setup.clients[client].device.memory_bytes;
  }

  // What comes back down: the gradient of the cut's activation (training), the output
  // (inference; nothing when the device ran it all).
  double down_bytes(size_t i, size_t k) const {
    if (!o.inference) return costs[i].smashed[k];
    return k == static_cast<size_t>(order.size()) ? 0 : costs[i].result;
  }

  // The client's round without its upload and queueing.
  double rest(size_t i, int cut) const {
    const auto k = static_cast<size_t>(cut);
    const ClientCosts& c = costs[i];
    return c.device_s[k] + c.server_s[k] + down_bytes(i, k) / setup.clients[i].downlink_Bps;
  }

  // Shares of the shared uplink that let every device finish by the smallest common time
  // (queueing at the server left out; it is what the round then plays out).
  std::vector<double> allocate(const std::vector<int>& cut) const {
    const size_t n = setup.clients.size();
    std::vector<double> share(n, 0);
    if (setup.shared_uplink_Bps <= 0) return share;
    const double shared = setup.shared_uplink_Bps;
    auto needs = [&](double t, std::vector<double>* out) {
      double total = 0;
      for (size_t i = 0; i < n; ++i) {
        const double left = t - rest(i, cut[i]);
        const double bytes = costs[i].smashed[static_cast<size_t>(cut[i])];
        if (bytes <= 0) continue;  // nothing to send: the device runs it all
        if (left <= 0) return kInf;
        const double rate = bytes / left;
        if (rate > setup.clients[i].uplink_Bps * (1 + 1e-12)) return kInf;
        if (out) (*out)[i] = rate / shared;
        total += rate / shared;
      }
      return total;
    };
    double lo = 0, hi = 1;
    for (size_t i = 0; i < n; ++i) lo = std::max(lo, rest(i, cut[i]));
    hi = lo + 1;
    while (needs(hi, nullptr) > 1 && hi < 1e12) hi *= 2;
    for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; ++it) {
      const double mid = (lo + hi) / 2;
      (needs(mid, nullptr) <= 1 ? hi : lo) = mid;
    }
    if (needs(hi, &share) > 1) return std::vector<double>(n, 1.0 / n);
    // What is left over goes out in proportion to what each needs.
    const double used = std::accumulate(share.begin(), share.end(), 0.0);
    for (double& s : share) s = used > 0 ? s / used : 1.0 / n;
    return share;
  }

  SplitRound play(const std::vector<int>& cut, const std::vector<double>& share,
                  std::string method) const {
    const size_t n = setup.clients.size();
    SplitRound r;
    r.method = std::move(method);
    std::vector<double> arrival(n);
    for (size_t i = 0; i < n; ++i) {
      const SplitClient& c = setup.clients[i];
      const auto k = static_cast<size_t>(cut[i]);
      ClientRound cr;
      cr.name = c.name;
      cr.device = c.device.name;
      cr.cut = cut[i];
      cr.cut_after = k == 0 ? "(input: all on the server)"
                            : g.nodes[static_cast<size_t>(order[k - 1])].name +
                                  (k == order.size() ? " (all on the device)" : "");
      cr.smashed_bytes = costs[i].smashed[k];
      cr.result_bytes = down_bytes(i, k);
      cr.share = share[i];
      const double rate = setup.shared_uplink_Bps > 0
                              ? std::min(c.uplink_Bps, share[i] * setup.shared_uplink_Bps)
                              : c.uplink_Bps;
      cr.device_s = costs[i].device_s[k];
      cr.upload_s = cr.smashed_bytes <= 0 ? 0 : rate > 0 ? cr.smashed_bytes / rate : kInf;
      cr.server_s = costs[i].server_s[k];
      cr.download_s = cr.result_bytes / c.downlink_Bps;
      cr.device_memory_bytes = costs[i].memory[k];
      // The device's forward is the part of its time before the cut's activation leaves.
      arrival[i] = forward_share(i, k) + cr.upload_s;
      r.clients.push_back(std::move(cr));
    }
    // The server takes the devices' work as it arrives, one at a time.
    std::vector<size_t> by(n);
    std::iota(by.begin(), by.end(), 0);
    std::stable_sort(by.begin(), by.end(),
                     [&](size_t a, size_t b) { return arrival[a] < arrival[b]; });
    double busy = 0;
    for (size_t i : by) {
      ClientRound& cr = r.clients[i];
      const double start = std::max(busy, arrival[i]);
      cr.wait_s = start - arrival[i];
      busy = start + cr.server_s;
      cr.finish_s =
          busy + cr.download_s + (cr.device_s - forward_share(i, static_cast<size_t>(cr.cut)));
      r.round_s = std::max(r.round_s, cr.finish_s);
    }
    if (o.inference) {
      // Successive batches pipelined: each device's compute, uplink and downlink, and the
      // server, which serves every device's work in turn, each take one batch at a time.
      double slowest = 0, serving = 0, samples = 0;
      for (size_t i = 0; i < n; ++i) {
        const ClientRound& cr = r.clients[i];
        slowest = std::max({slowest, cr.device_s, cr.upload_s, cr.download_s});
        serving += cr.server_s;
        samples += setup.clients[i].batch;
      }
      slowest = std::max(slowest, serving);
      r.samples_per_s = slowest > 0 ? samples / slowest : kInf;
    }
    return r;
  }

  // Forward share of the device's time: a third of its compute (backward is twice forward);
  // all of it for inference.
  double forward_share(size_t i, size_t k) const {
    return o.inference ? costs[i].device_s[k] : costs[i].device_s[k] / 3;
  }

  // Inference: the same slowest latency and less latency in all (a device that need not wait
  // for the network no longer does), or the same and more throughput.
  static bool sooner(const SplitRound& a, const SplitRound& b) {
    if (a.round_s > b.round_s * (1 + 1e-12)) return false;
    double sa = 0, sb = 0;
    for (const ClientRound& c : a.clients) sa += c.finish_s;
    for (const ClientRound& c : b.clients) sb += c.finish_s;
    if (sa < sb * (1 - 1e-12)) return true;
    return sa <= sb * (1 + 1e-12) && a.samples_per_s > b.samples_per_s * (1 + 1e-12);
  }

  SplitResult solve() {
    prepare();
    const size_t n = setup.clients.size();
    SplitResult result;
    result.cuts = static_cast<int>(cuts.size());
    // The best cut common to all, the uplink shared equally.
    const std::vector<double> equal(n, setup.shared_uplink_Bps > 0 ? 1.0 / n : 0);
    double best_common = kInf;
    int common = -1;
    for (int k : cuts) {
      bool ok = true;
      for (size_t i = 0; i < n; ++i) ok = ok && fits(i, k);
      if (!ok) continue;
      const SplitRound r = play(std::vector<int>(n, k), equal, "one cut for all, equal shares");
      if (r.round_s < best_common) best_common = r.round_s, common = k, result.baseline = r;
    }
    // Per-device cuts: from each device's own best cut alone, improved one device at a time,
    // the shares reallocated for every candidate.
    std::vector<int> cut(n, common);
    for (size_t i = 0; i < n; ++i) {
      if (cut[i] > 0 && fits(i, cut[i])) continue;
      cut[i] = -1;
      for (int k : cuts)
        if (fits(i, k)) {
          cut[i] = k;
          break;
        }
      if (cut[i] < 0)
        throw InputError(fmt::format(
            "device '{}' ({}): even the first operators of {} do not fit its {:.1f} GiB at batch "
            "{}; use a smaller batch",
            setup.clients[i].name, setup.clients[i].device.name, g.name,
            setup.clients[i].device.memory_bytes / units::kGiB, setup.clients[i].batch));
    }
    SplitRound best = play(cut, allocate(cut), "per-device cuts");
    for (int sweep = 0; sweep < 20; ++sweep) {
      bool better = false;
      for (size_t i = 0; i < n; ++i)
        for (int k : cuts) {
          if (k == cut[i] || !fits(i, k)) continue;
          std::vector<int> trial = cut;
          trial[i] = k;
          SplitRound r = play(trial, allocate(trial), "per-device cuts");
          if (r.round_s < best.round_s * (1 - 1e-12) || (o.inference && sooner(r, best)))
            best = std::move(r), cut = trial, better = true;
        }
      if (!better) break;
    }
    if (!result.baseline.clients.empty() && result.baseline.round_s < best.round_s) {
      best = result.baseline;
      best.method = "per-device cuts (= one cut for all)";
    }
    result.best = std::move(best);
    return result;
  }
};

}  // namespace

SplitResult plan_split_learning(const OpGraph& g, const Device& server, const SplitSetup& s,
                                const SplitOptions& o) {
  if (s.clients.empty()) throw InputError("split learning needs at least one device");
  for (const SplitClient& c : s.clients)
    check_sizes(g, c.batch, fmt::format("device '{}' batch {}", c.name, c.batch));
  Planner p(g, server, s, o);
  return p.solve();
}

}  // namespace shardcost
