// Loading models, devices and clusters from the catalog or from JSON files.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "catalog.h"
#include "hf_config.h"
#include "json_fields.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

// Sizes past any cluster built: a million GPUs, 1,024 a node, 4,096 node groups. Beyond them
// an input only makes the estimator run long or overflow its counts.
constexpr int64_t kMaxGpus = int64_t{1} << 20;
constexpr int kMaxGpusPerNode = 1024;
constexpr size_t kMaxGroups = 4096;

using units::kGB;
using units::kGiB;

// Defaults for cluster fields a user file may omit. The bandwidth fractions are what
// nccl-tests' bus bandwidth reaches on NVSwitch and InfiniBand systems (docs/catalog-sources.md),
// and on a PCIe node's pair of GPUs: 19.97 GB/s at 128 MiB on two L40S of one node over PCIe
// Gen4 x16's 32 (../shared/data/measured/collective_l40s.csv; more GPUs share the host's paths,
// pcie_ring_share). The intra-node latency is a small-message all-reduce over 8 GPUs of a node,
// the mean of the shared tables' three (512 B-4 KiB: A100-SXM4 21.8, B200 27.7, L40S 23.5 us;
// other groups scale from it, NcclLatency::intra_node_s); the network's a typical one.
constexpr double kDefaultIntraLatencyUs = 24.0;
constexpr double kDefaultInterLatencyUs = 20.0;
constexpr double kDefaultIntraEfficiency = 0.80;
constexpr double kDefaultPcieIntraEfficiency = 0.62;
constexpr double kDefaultInterEfficiency = 0.90;

// "gemm_fp8_shape": {"dims": [256, ..., 16384], "relative": [[[...k...], ...n...], ...m...]}.
Fp8ShapeGrid parse_fp8_shape_grid(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  f.reject_unknown({"dims", "relative"});
  Fp8ShapeGrid g;
  const nlohmann::json* dims = f.optional_array("dims");
  if (!dims || dims->size() < 2)
    f.fail("dims", "must list at least two GEMM dimensions, strictly increasing");
  for (const auto& x : *dims) {
    if (!x.is_number() || x.get<double>() < 1 ||
        (!g.dims.empty() && x.get<double>() <= g.dims.back()))
      f.fail("dims", "must list at least two GEMM dimensions, strictly increasing");
    g.dims.push_back(x.get<double>());
  }
  const size_t n = g.dims.size();
  const std::string shape =
      fmt::format("must hold {0} x {0} x {0} fractions in (0, 1.5] (m, then n, then k)", n);
  const nlohmann::json* rel = f.optional_array("relative");
  if (!rel || rel->size() != n) f.fail("relative", shape);
  for (const auto& plane : *rel) {
    if (!plane.is_array() || plane.size() != n) f.fail("relative", shape);
    for (const auto& line : plane) {
      if (!line.is_array() || line.size() != n) f.fail("relative", shape);
      for (const auto& x : line) {
        if (!x.is_number() || x.get<double>() <= 0 || x.get<double>() > 1.5)
          f.fail("relative", shape);
        g.relative.push_back(x.get<double>());
      }
    }
  }
  return g;
}

// "attention_kernels": {"seq_len": [...], "curves": [{"kernel": "cudnn", "head_dim": 128,
// "forward_causal": [TFLOP/s...], "forward": [...], "backward": [...]}, ...]}; a curve may give
// "backward_causal" instead of (or beside) the non-causal pair, "dtype": "mxfp8" for an FP8
// variant of a kernel, "release": "9.19.1" for the library release it measured, and
// "seq_len" of its own where its benchmark measured other lengths.
AttentionKernels parse_attention_kernels(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  AttentionKernels k;
  auto numbers = [](const JsonFields& in, const char* key, double scale) {
    const nlohmann::json* a = in.optional_array(key);
    if (!a || a->empty()) in.fail(key, "must be a non-empty array of positive numbers");
    std::vector<double> out;
    for (const auto& x : *a) {
      if (!x.is_number() || x.get<double>() <= 0)
        in.fail(key, "must be a non-empty array of positive numbers");
      out.push_back(x.get<double>() * scale);
    }
    return out;
  };
  auto lengths = [&](const JsonFields& in) {
    std::vector<double> out = numbers(in, "seq_len", 1);
    if (!std::is_sorted(out.begin(), out.end()) ||
        std::adjacent_find(out.begin(), out.end()) != out.end())
      in.fail("seq_len", "must be strictly increasing");
    return out;
  };
  k.seq_len = lengths(f);
  const nlohmann::json* curves = f.optional_array("curves");
  if (!curves)
    f.fail("curves", "is missing; add [{\"kernel\": \"cudnn\", \"head_dim\": 128, ...}]");
  for (size_t i = 0; i < curves->size(); ++i) {
    JsonFields c((*curves)[i], fmt::format("{} curves[{}]", where, i));
    AttentionCurve curve;
    curve.kernel = parse_fused_attention(c.required_string("kernel"));
    if (curve.kernel == FusedAttention::best)
      c.fail("kernel", "must name a kernel: fa2, cudnn or fa3");
    curve.head_dim = c.required_number("head_dim", 1);
    if (const auto dtype = c.optional_string("dtype"); dtype && *dtype == "mxfp8")
      curve.fp8 = true;
    else if (dtype && *dtype != "bf16")
      c.fail("dtype", "must be bf16 (the default) or mxfp8");
    if (const auto release = c.optional_string("release")) {
      const auto order = library_release_order(*release);
      if (!order) c.fail("release", "must be a release such as \"9.19.1\" (numbers and dots)");
      curve.release = *release;
      curve.release_order = *order;
    }
    if (c.optional_array("seq_len")) curve.seq_len = lengths(c);
    const size_t points = k.lengths(curve).size();
    curve.forward_causal = numbers(c, "forward_causal", 1e12);
    const bool causal_backward = c.optional_array("backward_causal") != nullptr;
    const bool has_forward = c.optional_array("forward") != nullptr;
    const bool has_backward = c.optional_array("backward") != nullptr;
    if (causal_backward) curve.backward_causal = numbers(c, "backward_causal", 1e12);
    if (!causal_backward || has_forward || has_backward) {
      if (!has_forward || !has_backward)
        c.fail(has_forward ? "backward" : "forward",
               "is missing; give the non-causal \"forward\" and \"backward\" rates, or the "
               "causal backward as \"backward_causal\"");
      curve.forward = numbers(c, "forward", 1e12);
      curve.backward = numbers(c, "backward", 1e12);
    }
    for (const auto* v :
         {&curve.forward_causal, &curve.forward, &curve.backward, &curve.backward_causal})
      if (!v->empty() && v->size() != points)
        c.fail("forward", fmt::format("and the other rate arrays must hold one rate per seq_len "
                                      "({} of them)",
                                      points));
    k.curves.push_back(std::move(curve));
  }
  return k;
}

Device parse_device(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  Device d;
  d.name = f.required_string("name");
  if (const auto* a = f.optional_array("aliases")) {
    for (const auto& x : *a) {
      if (!x.is_string()) f.fail("aliases", "must hold names (strings)");
      d.aliases.push_back(x.get<std::string>());
    }
  }
  d.architecture = f.optional_string("architecture").value_or("unknown");
  d.node_fabric = f.optional_string("node_fabric").value_or("");
  if (!d.node_fabric.empty() && d.node_fabric != "switch" && d.node_fabric != "mesh" &&
      d.node_fabric != "pcie")
    f.fail("node_fabric", "must be switch, mesh or pcie");
  d.sms = f.required_int("sms", 1);
  d.boost_clock_hz = f.optional_number("boost_clock_mhz", 1).value_or(0) * 1e6;
  d.l2_bytes = f.optional_number("l2_MiB", 0.001).value_or(0) * 1024 * 1024;
  d.memory_bytes = f.required_number("memory_GiB", 0.001) * kGiB;
  d.memory_bandwidth_Bps = f.required_number("memory_bandwidth_GBps", 0.001) * kGB;
  d.nvlink_bandwidth_Bps = f.optional_number("nvlink_bandwidth_GBps", 0).value_or(0) * kGB;
  d.pcie_bandwidth_Bps = f.optional_number("pcie_bandwidth_GBps", 0).value_or(32) * kGB;
  const nlohmann::json* peaks = f.optional_object("peak_tflops");
  if (!peaks) f.fail("peak_tflops", "is missing; add {\"bf16\": <dense TFLOP/s>, ...}");
  JsonFields pf(*peaks, where + " peak_tflops");
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto name = std::string(to_string(static_cast<DType>(i)));
    d.peak_flops[i] = pf.optional_number(name.c_str(), 0).value_or(0) * 1e12;
  }
  if (d.peak_flops[static_cast<int>(DType::bf16)] <= 0 &&
      d.peak_flops[static_cast<int>(DType::fp16)] <= 0)
    pf.fail("bf16", "and fp16 are both missing; give the device's dense tensor peaks");
  const nlohmann::json* eff = f.optional_object("efficiency");
  if (!eff)
    f.fail("efficiency", "is missing; add {\"gemm\": 0.8, \"memory\": 0.85, \"attention\": 0.5}");
  JsonFields ef(*eff, where + " efficiency");
  d.gemm_efficiency = ef.required_number("gemm", 0.01);
  d.gemm_burst_efficiency = ef.optional_number("gemm_burst", 0.01).value_or(0);
  if (d.gemm_burst_efficiency > 1.0) ef.fail("gemm_burst", "must be a fraction in (0, 1]");
  d.gemm_fp8_efficiency = ef.optional_number("gemm_fp8", 0.01).value_or(0);
  if (d.gemm_fp8_efficiency > 1.0) ef.fail("gemm_fp8", "must be a fraction in (0, 1]");
  d.gemm_fp32_efficiency = ef.optional_number("gemm_fp32", 0.01).value_or(0);
  if (d.gemm_fp32_efficiency > 1.0) ef.fail("gemm_fp32", "must be a fraction in (0, 1]");
  d.memory_efficiency = ef.required_number("memory", 0.01);
  d.attention_efficiency = ef.required_number("attention", 0.01);
  // The grid, or the name of a catalog device whose measured grid this part shares (a die of
  // the same tensor-core generation and FP8 peak without a table of its own).
  if (const auto it = j.find("gemm_fp8_shape"); it != j.end() && it->is_string()) {
    const std::string from = it->get<std::string>();
    const nlohmann::json* other = catalog::find("devices", from);
    const nlohmann::json* grid =
        other && other->contains("gemm_fp8_shape") ? &other->at("gemm_fp8_shape") : nullptr;
    if (!grid || !grid->is_object())
      f.fail("gemm_fp8_shape",
             fmt::format("names '{}', which is no catalog device with a measured grid of its "
                         "own; give the grid (dims and relative) or such a device's name",
                         from));
    d.gemm_fp8_shape =
        parse_fp8_shape_grid(*grid, fmt::format("catalog device '{}' gemm_fp8_shape", from));
  } else if (const nlohmann::json* grid = f.optional_object("gemm_fp8_shape")) {
    d.gemm_fp8_shape = parse_fp8_shape_grid(*grid, where + " gemm_fp8_shape");
  }
  if (const nlohmann::json* ak = f.optional_object("attention_kernels"))
    d.attention_kernels = parse_attention_kernels(*ak, where + " attention_kernels");
  for (const char* key : {"gemm", "memory", "attention"}) {
    if (ef.required_number(key, 0.01) > 1.0) ef.fail(key, "must be a fraction in (0, 1]");
  }
  return d;
}

// "device": a catalog name, or an object with the device's fields.
Device resolve_device(const nlohmann::json& j, const JsonFields& f) {
  const auto it = j.find("device");
  if (it != j.end() && it->is_object()) return parse_device(*it, f.where() + " device");
  return find_device(f.required_string("device"));
}

// "<level>_busbw_GBps": {"all_reduce": [[bytes, GB/s], ...], ...}, ascending in bytes.
void parse_busbw_curves(const JsonFields& f, const char* key, Fabric& fab) {
  const nlohmann::json* curves = f.optional_object(key);
  if (!curves) return;
  for (const auto& [name, points] : curves->items()) {
    const std::string field = fmt::format("{}.{}", key, name);
    const auto op = parse_collective_op(name);
    if (!op)
      f.fail(
          key,
          fmt::format(
              "has an unknown collective '{}'; use all_reduce, all_gather, "
              "reduce_scatter, all_to_all, broadcast, reduce or send_recv (alltoall, sendrecv too)",
              name));
    if (!points.is_array() || points.size() < 2)
      f.fail(field.c_str(), "must be an array of at least two [bytes, GB/s] pairs");
    auto& curve = fab.busbw_curves[static_cast<size_t>(*op)];
    for (const auto& p : points) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
          p[0].get<double>() <= 0 || p[1].get<double>() <= 0)
        f.fail(field.c_str(), "must hold [bytes, GB/s] pairs of positive numbers");
      const BusbwPoint point{p[0].get<double>(), p[1].get<double>() * kGB};
      if (!curve.empty() && point.bytes <= curve.back().bytes)
        f.fail(field.c_str(), "must be sorted by strictly increasing bytes");
      curve.push_back(point);
    }
  }
}

Fabric parse_fabric(const JsonFields& f, const char* bw_key, const char* lat_key,
                    const char* eff_key, const char* curves_key, double default_latency_us,
                    double default_efficiency) {
  Fabric fab;
  parse_busbw_curves(f, curves_key, fab);
  fab.bandwidth_Bps = f.required_number(bw_key, 0.001) * kGB;
  fab.latency_s = f.optional_number(lat_key, 0).value_or(default_latency_us) * 1e-6;
  const auto eff = f.optional_number(eff_key, 0.01);
  if (eff && *eff > 1) f.fail(eff_key, "must be a fraction in (0, 1]");
  fab.efficiency = eff.value_or(default_efficiency);
  return fab;
}

// index: the group's place in node_groups; -1 for a flat cluster (one group, "g0", whose
// "name" field is the cluster's).
// A node group's fields; a flat cluster's top level holds them too, and the links between
// nodes.
const std::vector<std::string_view> kGroupFields = {"name",
                                                    "description",
                                                    "device",
                                                    "nodes",
                                                    "gpus_per_node",
                                                    "nvlink_domain_gpus",
                                                    "intra_node_bandwidth_GBps",
                                                    "intra_node_latency_us",
                                                    "intra_node_latency_ranks",
                                                    "intra_node_efficiency",
                                                    "intra_node_busbw_GBps",
                                                    "inter_node_bandwidth_GBps",
                                                    "inter_node_latency_us",
                                                    "inter_node_efficiency",
                                                    "inter_node_busbw_GBps"};
const std::vector<std::string_view> kInterNodeFields = {
    "sources", "inter_node_bandwidth_GBps", "inter_node_latency_us", "inter_node_efficiency",
    "inter_node_busbw_GBps"};

NodeGroup parse_group(const nlohmann::json& j, const std::string& where, int index) {
  JsonFields f(j, where);
  if (index >= 0) f.reject_unknown(kGroupFields);
  NodeGroup g;
  g.name = index < 0 ? "g0" : f.optional_string("name").value_or(fmt::format("g{}", index));
  if (g.name.empty()) f.fail("name", "is empty; name the group (e.g. \"h100\") or leave it out");
  g.device = resolve_device(j, f);
  g.nodes = f.optional_int("nodes", 1).value_or(1);
  g.gpus_per_node = f.required_int("gpus_per_node", 1);
  if (g.gpus_per_node > kMaxGpusPerNode)
    f.fail("gpus_per_node", fmt::format("is {}; a node holds at most {} GPUs here", g.gpus_per_node,
                                        kMaxGpusPerNode));
  if (const auto domain = f.optional_int("nvlink_domain_gpus", 1, kMaxGpusPerNode)) {
    if (*domain < g.gpus_per_node || *domain % g.gpus_per_node != 0)
      f.fail("nvlink_domain_gpus",
             fmt::format("({}) must be a whole number of {}-GPU nodes; an NVLink domain joins "
                         "nodes (72 for an NVL72 rack of 4-GPU trays)",
                         *domain, g.gpus_per_node));
    g.nvlink_domain_gpus = *domain;
  }
  g.intra_node = parse_fabric(
      f, "intra_node_bandwidth_GBps", "intra_node_latency_us", "intra_node_efficiency",
      "intra_node_busbw_GBps", kDefaultIntraLatencyUs,
      g.device.node_fabric == "pcie" ? kDefaultPcieIntraEfficiency : kDefaultIntraEfficiency);
  // 2 to 8: the groups on which the scaling of small messages by ring steps was measured.
  g.intra_node.latency_ranks = f.optional_int("intra_node_latency_ranks", 2, 8).value_or(8);
  if (index >= 0 && j.contains("inter_node_bandwidth_GBps"))
    g.inter_node = parse_fabric(f, "inter_node_bandwidth_GBps", "inter_node_latency_us",
                                "inter_node_efficiency", "inter_node_busbw_GBps",
                                kDefaultInterLatencyUs, kDefaultInterEfficiency);
  return g;
}

// A group's fields the cluster's top level gives for every group that does not give its own.
const std::vector<std::string_view> kSharedGroupFields = {
    "intra_node_bandwidth_GBps", "intra_node_latency_us", "intra_node_latency_ranks",
    "intra_node_efficiency",     "intra_node_busbw_GBps", "gpus_per_node",
    "nvlink_domain_gpus"};

}  // namespace

BandwidthTrace checked_trace(const std::vector<std::pair<double, double>>& points_GBps,
                             std::string_view where) {
  if (points_GBps.size() < 2)
    throw InputError(
        fmt::format("{}: give at least two points, [[seconds, GB/s], ...]; the last "
                    "closes the trace",
                    where));
  BandwidthTrace t;
  for (size_t k = 0; k < points_GBps.size(); ++k) {
    const auto [sec, gbps] = points_GBps[k];
    if (!std::isfinite(sec) || sec < 0 || (k > 0 && sec <= points_GBps[k - 1].first))
      throw InputError(
          fmt::format("{}: point {} is at {} s; times must start at 0 or later and "
                      "increase",
                      where, k, sec));
    if (!std::isfinite(gbps) || gbps <= 0 || gbps > 1e6)
      throw InputError(
          fmt::format("{}: point {} has bandwidth {} GB/s; give a positive figure "
                      "(a link that is down: a small one, e.g. 0.001)",
                      where, k, gbps));
    t.emplace_back(sec, gbps * kGB);
  }
  return t;
}

BandwidthTrace parse_network_trace_csv(std::string_view text, std::string_view origin) {
  std::vector<std::pair<double, double>> points;
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string line(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (line_no == 1 && line.find_first_not_of("0123456789.,eE+- ") != std::string::npos)
      continue;  // a header (seconds,bandwidth_GBps)
    const size_t comma = line.find(',');
    char* rest = nullptr;
    const double sec = std::strtod(line.c_str(), &rest);
    if (comma == std::string::npos || rest != line.c_str() + comma)
      throw InputError(
          fmt::format("{} line {}: '{}' is not seconds,bandwidth_GBps", origin, line_no, line));
    const double gbps = std::strtod(line.c_str() + comma + 1, &rest);
    if (rest == line.c_str() + comma + 1 || *rest != '\0')
      throw InputError(
          fmt::format("{} line {}: '{}' is not seconds,bandwidth_GBps", origin, line_no, line));
    points.emplace_back(sec, gbps);
  }
  return checked_trace(points, origin);
}

namespace {

// links: [{"between": ["a", "b"], "bandwidth_GBps": 25, "latency_us": 10, "efficiency": 0.9}]
std::vector<GroupLink> parse_links(const JsonFields& f, const Cluster& c, std::string_view origin) {
  std::vector<GroupLink> out;
  const nlohmann::json* links = f.optional_array("links");
  if (!links) return out;
  for (size_t i = 0; i < links->size(); ++i) {
    const std::string at = fmt::format("{} links[{}]", origin, i);
    const nlohmann::json& lj = (*links)[i];
    JsonFields lf(lj, at);
    lf.reject_unknown(
        {"between", "bandwidth_GBps", "latency_us", "efficiency", "sources", "trace"});
    const nlohmann::json* between = lf.optional_array("between");
    if (!between || between->size() != 2 || !(*between)[0].is_string() ||
        !(*between)[1].is_string())
      lf.fail("between", "must name two node groups, [\"a\", \"b\"]");
    size_t ends[2];
    for (int e = 0; e < 2; ++e) {
      const std::string name = (*between)[static_cast<size_t>(e)].get<std::string>();
      const NodeGroup* g = c.group(name);
      if (!g)
        lf.fail("between", fmt::format("names '{}', which is not a node group; the groups are {}",
                                       name, c.group_names()));
      ends[e] = static_cast<size_t>(g - c.groups.data());
    }
    if (ends[0] == ends[1])
      lf.fail("between", "names one group twice; a link joins two different groups");
    for (const GroupLink& l : out)
      if ((l.a == ends[0] && l.b == ends[1]) || (l.a == ends[1] && l.b == ends[0]))
        lf.fail("between", "repeats a link given before; give each pair once");
    GroupLink l;
    l.a = ends[0], l.b = ends[1];
    l.fabric = parse_fabric(lf, "bandwidth_GBps", "latency_us", "efficiency", "busbw_GBps",
                            kDefaultInterLatencyUs, kDefaultInterEfficiency);
    if (const nlohmann::json* trace = lf.optional_array("trace")) {
      std::vector<std::pair<double, double>> points;
      for (size_t k = 0; k < trace->size(); ++k) {
        const nlohmann::json& pt = (*trace)[k];
        if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number())
          lf.fail("trace", fmt::format("point {} must be [seconds, GB/s]", k));
        points.emplace_back(pt[0].get<double>(), pt[1].get<double>());
      }
      l.trace = checked_trace(points, at + " trace");
    }
    out.push_back(std::move(l));
  }
  return out;
}

// Group g sized to `gpus` GPUs: whole nodes, or part of one node; otherwise `refusal`.
void cut_group(NodeGroup& g, int gpus, const std::string& refusal) {
  if (gpus <= g.gpus_per_node) {
    g.nodes = 1;
    g.gpus_per_node = gpus;
    g.nvlink_domain_gpus = 0;  // part of one node: the node is the domain
  } else if (gpus % g.gpus_per_node == 0) {
    g.nodes = gpus / g.gpus_per_node;
    // Part of one NVLink domain: every GPU is in it, and groups need not tile 72 to stay on it.
    if (g.nvlink_domain_gpus > gpus) g.nvlink_domain_gpus = gpus;
  } else {
    throw InputError(refusal);
  }
}

void apply_gpu_count(Cluster& c, int gpus, const std::string& where) {
  if (gpus <= 0) throw InputError(fmt::format("--gpus must be a positive integer (got {})", gpus));
  if (gpus > kMaxGpus)
    throw InputError(
        fmt::format("--gpus {} is above {}, the most GPUs a cluster holds here", gpus, kMaxGpus));
  if (c.groups.size() != 1) {
    // The first `gpus` GPUs in the order ranks fill them: whole groups, then part of the next.
    if (gpus > c.total_gpus())
      throw InputError(fmt::format(
          "{}: --gpus {} is more than its {} node groups hold ({}); set 'nodes' in each group "
          "instead",
          where, gpus, c.groups.size(), c.total_gpus()));
    std::vector<std::pair<size_t, int>> take;
    int left = gpus;
    for (size_t i = 0; i < c.groups.size() && left > 0; ++i) {
      const int here = std::min(left, c.groups[i].gpus());
      take.emplace_back(i, here);
      left -= here;
    }
    c = cluster_part(c, take, fmt::format("--gpus {}", gpus));
    return;
  }
  NodeGroup& g = c.groups[0];
  cut_group(g, gpus,
            fmt::format("--gpus {} is not a whole number of {}-GPU nodes of {}; use a "
                        "multiple of {}",
                        gpus, g.gpus_per_node, where, g.gpus_per_node));
}

bool is_file(std::string_view path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(path), ec);
}

}  // namespace

Device find_device(std::string_view name) {
  if (const auto* e = catalog::find("devices", name)) {
    return parse_device(*e, fmt::format("catalog device '{}'", name));
  }
  throw InputError(fmt::format("unknown device '{}'; use one of: {}", name,
                               catalog::names_list("devices", name)));
}

std::optional<std::string> catalog_system_for(std::string_view device_name) {
  for (const auto& e : catalog::entries("systems")) {
    const auto it = e.find("device");
    if (it != e.end() && it->is_string() && it->get<std::string>() == device_name)
      return e.at("name").get<std::string>();
  }
  return std::nullopt;
}

// A model file's largest sizes.
constexpr int kMaxLayers = 10000, kMaxHidden = 1 << 20, kMaxHeads = 1 << 16,
              kMaxFfnHidden = 1 << 22, kMaxVocab = 1 << 24, kMaxSeqLen = 1 << 27,
              kMaxExperts = 1 << 16;

namespace {

// One of several names a field goes by (ours, and the published configs'); two given is an
// error. Returns the name given, or nullptr.
const char* one_of(const JsonFields& f, const nlohmann::json& j,
                   std::initializer_list<const char*> names) {
  const char* found = nullptr;
  for (const char* n : names) {
    if (!j.contains(n)) continue;
    if (found) f.fail(n, fmt::format("and '{}' name the same thing; give one of them", found));
    found = n;
  }
  return found;
}

void parse_mla(const JsonFields& f, const nlohmann::json& j, Model& m) {
  const bool any = j.contains("kv_lora_rank") || j.contains("q_lora_rank") ||
                   j.contains("qk_nope_head_dim") || j.contains("qk_rope_head_dim") ||
                   j.contains("v_head_dim");
  if (!any) return;
  if (!j.contains("kv_lora_rank"))
    f.fail("kv_lora_rank",
           "is missing; multi-head latent attention (q_lora_rank, qk_nope_head_dim, "
           "qk_rope_head_dim, v_head_dim) needs the key-value latent's rank");
  Mla& a = m.mla;
  a.kv_lora_rank = f.required_int("kv_lora_rank", 1, kMaxHidden);
  a.q_lora_rank = f.optional_int("q_lora_rank", 0, kMaxHidden).value_or(0);
  a.qk_nope_head_dim = f.required_int("qk_nope_head_dim", 1, kMaxHidden);
  a.qk_rope_head_dim = f.required_int("qk_rope_head_dim", 0, kMaxHidden);
  a.v_head_dim = f.required_int("v_head_dim", 1, kMaxHidden);
  // A latent wider than the hidden states is no compression, but Megatron-core trains it
  // (its MLA unit tests: hidden 12, q_lora_rank and kv_lora_rank 32), so it is priced as given.
}

void parse_moe(const nlohmann::json& moe, const std::string& where, Model& m) {
  JsonFields mf(moe, where);
  mf.reject_unknown({"experts", "n_routed_experts", "num_experts", "num_local_experts", "top_k",
                     "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                     "first_k_dense_replace", "topk_method", "n_group", "topk_group", "imbalance",
                     "capacity_factor", "sources"});
  Moe& e = m.moe;
  const char* experts =
      one_of(mf, moe, {"experts", "n_routed_experts", "num_experts", "num_local_experts"});
  if (!experts)
    mf.fail("experts", "is missing; give the routed experts per layer (n_routed_experts)");
  e.experts = mf.required_int(experts, 1, kMaxExperts);
  const char* top_k = one_of(mf, moe, {"top_k", "num_experts_per_tok"});
  if (!top_k) mf.fail("top_k", "is missing; give the experts each token is routed to");
  e.top_k = mf.required_int(top_k, 1);
  if (e.top_k > e.experts)
    mf.fail(top_k, fmt::format("({}) must not exceed the {} experts", e.top_k, e.experts));
  e.expert_ffn_hidden = mf.optional_int("moe_intermediate_size", 1, kMaxFfnHidden).value_or(0);
  e.shared_experts = mf.optional_int("n_shared_experts", 0, kMaxExperts).value_or(0);
  e.first_dense_layers = mf.optional_int("first_k_dense_replace", 0).value_or(0);
  if (e.first_dense_layers >= m.layers)
    mf.fail("first_k_dense_replace",
            fmt::format("({}) leaves none of the {} layers with experts; it counts the dense "
                        "layers before the first expert layer",
                        e.first_dense_layers, m.layers));
  if (const auto method = mf.optional_string("topk_method")) {
    if (*method != "greedy" && *method != "group_limited_greedy" && *method != "noaux_tc")
      mf.fail(
          "topk_method",
          fmt::format("must be greedy, group_limited_greedy or noaux_tc (got \"{}\")", *method));
    e.expert_bias = *method == "noaux_tc";  // auxiliary-loss-free balancing: a bias per expert
  }
  e.groups = mf.optional_int("n_group", 1, e.experts).value_or(0);
  e.group_top_k = mf.optional_int("topk_group", 1, std::max(1, e.groups)).value_or(0);
  if ((e.groups > 0) != (e.group_top_k > 0))
    mf.fail(e.groups > 0 ? "topk_group" : "n_group",
            "is missing; group-limited routing needs both n_group (the expert groups) and "
            "topk_group (the groups a token may use)");
  if (e.groups > 0 && e.experts % e.groups != 0)
    mf.fail("n_group", fmt::format("({}) does not divide the {} experts into equal groups",
                                   e.groups, e.experts));
  if (e.groups == 1) e.groups = e.group_top_k = 0;  // one group: no limit
  e.imbalance = mf.optional_number("imbalance", 1).value_or(1);
  if (e.imbalance > e.experts)
    mf.fail("imbalance", fmt::format("({}) is above the {} experts: the busiest expert cannot "
                                     "receive more than every token's copy",
                                     e.imbalance, e.experts));
  e.capacity_factor = mf.optional_number("capacity_factor", 0.01).value_or(0);
}

// hybrid_override_pattern (Nemotron-H's): one character per layer, 'M' a Mamba-2 mixer, '*'
// attention, '-' an MLP, 'E' experts; and the Mamba-2 mixer's fields where it has 'M'.
void parse_hybrid(const JsonFields& f, const nlohmann::json& j, Model& m) {
  static const char* const kMambaFields[] = {"mamba_num_heads", "mamba_head_dim", "ssm_state_size",
                                             "n_groups",        "conv_kernel",    "chunk_size"};
  const auto pattern = f.optional_string("hybrid_override_pattern");
  if (!pattern) {
    for (const char* k : kMambaFields)
      if (j.contains(k))
        f.fail(k, "describes Mamba layers but there is no hybrid_override_pattern to place them");
    return;
  }
  if (static_cast<int>(pattern->size()) != m.layers)
    f.fail("hybrid_override_pattern",
           fmt::format("has {} characters for {} layers; give one per layer (M Mamba, * "
                       "attention, - MLP, E experts)",
                       pattern->size(), m.layers));
  bool mamba = false, experts = false;
  for (size_t i = 0; i < pattern->size(); ++i) {
    const char c = (*pattern)[i];
    LayerKind k;
    if (c == 'M') {
      k = {Mixer::mamba, Ffn::none};
    } else if (c == '*') {
      k = {Mixer::attention, Ffn::none};
    } else if (c == '-') {
      k = {Mixer::none, Ffn::dense};
    } else if (c == 'E') {
      k = {Mixer::none, Ffn::moe};
    } else {
      f.fail("hybrid_override_pattern",
             fmt::format("has '{}' at layer {}; use M (Mamba-2), * (attention), - (MLP) or E "
                         "(experts)",
                         c, i));
    }
    mamba = mamba || c == 'M';
    experts = experts || c == 'E';
    m.pattern.push_back(k);
  }
  const bool mixer = std::any_of(m.pattern.begin(), m.pattern.end(),
                                 [](LayerKind k) { return k.mixer != Mixer::none; });
  if (!mixer)
    f.fail("hybrid_override_pattern",
           "has no mixer; give at least one M (Mamba-2) or * (attention) layer");
  if (experts != m.is_moe())
    f.fail(experts ? "moe" : "hybrid_override_pattern",
           experts ? "is missing; the pattern's E layers need the experts described"
                   : "has no E layer for the moe object's experts; mark expert layers with E");
  if (m.is_moe() && m.moe.first_dense_layers > 0)
    f.fail("moe",
           "sets first_k_dense_replace beside a hybrid_override_pattern; the pattern "
           "places the expert layers");
  if (m.mtp_layers > 0)
    f.fail("num_nextn_predict_layers",
           "is not priced with a hybrid_override_pattern (multi-token prediction here repeats a "
           "transformer layer)");
  if (!mamba) return;
  Mamba& s = m.mamba;
  s.heads = f.required_int("mamba_num_heads", 1, kMaxHeads);
  s.head_dim = f.required_int("mamba_head_dim", 1, kMaxHidden);
  s.state = f.required_int("ssm_state_size", 1, kMaxHidden);
  s.groups = f.optional_int("n_groups", 1, kMaxHeads).value_or(1);
  s.conv_kernel = f.optional_int("conv_kernel", 1, 64).value_or(4);
  s.chunk = f.optional_int("chunk_size", 1, kMaxSeqLen).value_or(128);
  if (s.heads % s.groups != 0)
    f.fail("n_groups", fmt::format("({}) must divide mamba_num_heads ({})", s.groups, s.heads));
}

// sliding_window and attention_chunk_size (null: none, as published configs write it), and
// layer_types: which of them each layer's attention runs with.
void parse_windows(const JsonFields& f, const nlohmann::json& j, Model& m) {
  auto span = [&](const char* key) {
    return j.contains(key) && j.at(key).is_null() ? 0
                                                  : f.optional_int(key, 1, kMaxSeqLen).value_or(0);
  };
  m.sliding_window = span("sliding_window");
  m.attention_chunk = span("attention_chunk_size");
  const nlohmann::json* types = f.optional_array("layer_types");
  if (!types) {
    if (m.sliding_window > 0 && m.attention_chunk > 0)
      f.fail("layer_types",
             "is missing; with both sliding_window and attention_chunk_size, say "
             "which layers use which");
    return;
  }
  if (static_cast<int>(types->size()) != m.layers)
    f.fail("layer_types", fmt::format("has {} entries for {} layers; give one per layer",
                                      types->size(), m.layers));
  for (size_t i = 0; i < types->size(); ++i) {
    const auto& t = (*types)[i];
    const std::string name = t.is_string() ? t.get<std::string>() : "";
    if (name == "full_attention") {
      m.windows.push_back(Window::full);
    } else if (name == "sliding_attention") {
      if (m.sliding_window == 0)
        f.fail("sliding_window", fmt::format("is missing; layer {} is sliding_attention", i));
      m.windows.push_back(Window::sliding);
    } else if (name == "chunked_attention") {
      if (m.attention_chunk == 0)
        f.fail("attention_chunk_size", fmt::format("is missing; layer {} is chunked_attention", i));
      m.windows.push_back(Window::chunked);
    } else {
      f.fail("layer_types", fmt::format("[{}] is {}; use full_attention, sliding_attention or "
                                        "chunked_attention",
                                        i, t.dump()));
    }
  }
}

}  // namespace

Model parse_model_json(std::string_view text, std::string_view origin) {
  const auto j = parse_json_text(text, origin);
  // A published Hugging Face config.json: its fields read as a model file's (hf_config.cpp).
  if (is_hf_config(j))
    return parse_model_json(model_file_of_hf_config(j, std::string(origin)).dump(), origin);
  JsonFields f(j, std::string(origin));
  f.reject_unknown({"name",
                    "description",
                    "sources",
                    "layers",
                    "hidden",
                    "heads",
                    "kv_heads",
                    "ffn_hidden",
                    "vocab",
                    "seq_len",
                    "activation",
                    "norm",
                    "position_embedding",
                    "bias",
                    "tied_embeddings",
                    "dropout",
                    "moe",
                    "head_dim",
                    "qk_norm",
                    "qkv_bias",
                    "post_norms",
                    "final_logit_softcapping",
                    "q_lora_rank",
                    "kv_lora_rank",
                    "qk_nope_head_dim",
                    "qk_rope_head_dim",
                    "v_head_dim",
                    "num_nextn_predict_layers",
                    "hybrid_override_pattern",
                    "mamba_num_heads",
                    "mamba_head_dim",
                    "ssm_state_size",
                    "n_groups",
                    "conv_kernel",
                    "chunk_size",
                    "sliding_window",
                    "attention_chunk_size",
                    "layer_types"});
  Model m;
  m.name = f.optional_string("name").value_or(std::string(origin));
  // Upper limits far above any model trained (docs/estimator.md): a value past one is a typo
  // or an attack, not a model, and would make pricing run for minutes or overflow.
  m.layers = f.required_int("layers", 1, kMaxLayers);
  m.hidden = f.required_int("hidden", 1, kMaxHidden);
  m.heads = f.required_int("heads", 1, kMaxHeads);
  parse_mla(f, j, m);
  // MLA has no key-value heads of its own: every head has its key and value.
  m.kv_heads = m.is_mla() ? f.optional_int("kv_heads", 1, kMaxHeads).value_or(m.heads)
                          : f.required_int("kv_heads", 1, kMaxHeads);
  m.head_dim_override = f.optional_int("head_dim", 1, kMaxHidden).value_or(0);
  m.ffn_hidden = f.required_int("ffn_hidden", 1, kMaxFfnHidden);
  m.vocab = f.required_int("vocab", 1, kMaxVocab);
  m.seq_len = f.required_int("seq_len", 1, kMaxSeqLen);
  if (m.head_dim_override == 0 && !m.is_mla() && m.hidden % m.heads != 0)
    f.fail("heads",
           fmt::format("({}) must divide hidden ({}), or give head_dim", m.heads, m.hidden));
  if (m.heads % m.kv_heads != 0)
    f.fail("kv_heads", fmt::format("({}) must divide heads ({})", m.kv_heads, m.heads));
  m.qk_norm = f.optional_bool("qk_norm").value_or(false);
  m.qkv_bias = f.optional_bool("qkv_bias").value_or(false);
  m.post_norms = f.optional_bool("post_norms").value_or(false);
  m.logit_softcap = f.optional_number("final_logit_softcapping", 0).value_or(0);
  m.mtp_layers = f.optional_int("num_nextn_predict_layers", 0, kMaxLayers).value_or(0);
  const auto act = f.optional_string("activation").value_or("gelu");
  if (act == "gelu") {
    m.activation = Activation::gelu;
  } else if (act == "swiglu") {
    m.activation = Activation::swiglu;
  } else if (act == "relu2") {
    m.activation = Activation::relu2;
  } else {
    f.fail("activation",
           fmt::format("must be \"gelu\", \"swiglu\" or \"relu2\" (got \"{}\")", act));
  }
  const auto norm = f.optional_string("norm").value_or("layernorm");
  if (norm != "layernorm" && norm != "rmsnorm")
    f.fail("norm", fmt::format("must be \"layernorm\" or \"rmsnorm\" (got \"{}\")", norm));
  m.rmsnorm = norm == "rmsnorm";
  const auto pos = f.optional_string("position_embedding").value_or("learned");
  if (pos != "learned" && pos != "rope" && pos != "none")
    f.fail("position_embedding",
           fmt::format("must be \"learned\", \"rope\" or \"none\" (got \"{}\")", pos));
  m.learned_positions = pos == "learned";
  m.bias = f.optional_bool("bias").value_or(true);
  m.tied_embeddings = f.optional_bool("tied_embeddings").value_or(true);
  m.dropout = f.optional_number("dropout", 0).value_or(0);
  if (m.dropout >= 1) f.fail("dropout", "must be a probability in [0, 1)");
  if (const auto* moe = f.optional_object("moe")) parse_moe(*moe, std::string(origin) + " moe", m);
  parse_hybrid(f, j, m);
  parse_windows(f, j, m);
  return m;
}

Model load_model(std::string_view name_or_path) {
  if (const auto* e = catalog::find("models", name_or_path)) {
    return parse_model_json(e->dump(), fmt::format("catalog model '{}'", name_or_path));
  }
  if (!is_file(name_or_path))
    throw InputError(fmt::format("unknown model '{}': not a catalog name ({}) and no such file",
                                 name_or_path, catalog::names_list("models", name_or_path)));
  return parse_model_json(read_text_file(name_or_path, "model file"),
                          fmt::format("model file '{}'", name_or_path));
}

Cluster parse_cluster_json(std::string_view text, std::string_view origin,
                           std::optional<int> gpus) {
  const auto j = parse_json_text(text, origin);
  JsonFields f(j, std::string(origin));
  std::vector<std::string_view> known = kInterNodeFields;
  if (f.optional_array("node_groups")) {
    known.insert(known.end(), {"name", "description", "node_groups", "links"});
    known.insert(known.end(), kSharedGroupFields.begin(), kSharedGroupFields.end());
  } else
    known.insert(known.end(), kGroupFields.begin(), kGroupFields.end());
  f.reject_unknown(known);
  Cluster c;
  c.name = f.optional_string("name").value_or(std::string(origin));
  if (const auto* groups = f.optional_array("node_groups")) {
    if (groups->empty()) f.fail("node_groups", "is empty; give at least one node group");
    if (groups->size() > kMaxGroups)
      f.fail("node_groups",
             fmt::format("holds {} groups; a cluster has at most {}", groups->size(), kMaxGroups));
    for (size_t i = 0; i < groups->size(); ++i) {
      const std::string where = fmt::format("{} node_groups[{}]", origin, i);
      // The cluster's shared fields, where the group gives none of its own.
      nlohmann::json group = (*groups)[i];
      if (group.is_object())
        for (std::string_view key : kSharedGroupFields) {
          const std::string k(key);
          // The group a latency was measured on goes with that latency, not with another.
          if (k == "intra_node_latency_ranks" && (*groups)[i].contains("intra_node_latency_us"))
            continue;
          if (!group.contains(k) && j.contains(k)) group[k] = j[k];
        }
      c.groups.push_back(parse_group(group, where, static_cast<int>(i)));
      for (size_t k = 0; k < i; ++k)
        if (c.groups[k].name == c.groups[i].name)
          throw InputError(
              fmt::format("{}: group name '{}' is already node_groups[{}]'s; give "
                          "each group its own name",
                          where, c.groups[i].name, k));
    }
  } else {
    c.groups.push_back(parse_group(j, std::string(origin), -1));
  }
  // The top-level network; with node groups it may be left out where every group gives its own.
  bool every_group_has_one = c.groups.size() > 1 || f.optional_array("node_groups");
  for (const auto& g : c.groups) every_group_has_one = every_group_has_one && g.inter_node;
  if (every_group_has_one && !j.contains("inter_node_bandwidth_GBps"))
    c.inter_node = *c.groups.front().inter_node;
  else
    c.inter_node = parse_fabric(f, "inter_node_bandwidth_GBps", "inter_node_latency_us",
                                "inter_node_efficiency", "inter_node_busbw_GBps",
                                kDefaultInterLatencyUs, kDefaultInterEfficiency);
  c.links = parse_links(f, c, origin);
  int64_t total = 0;
  for (const auto& g : c.groups) total += static_cast<int64_t>(g.nodes) * g.gpus_per_node;
  if (total > kMaxGpus)
    throw InputError(fmt::format("{}: the node groups hold {} GPUs; a cluster holds at most {}",
                                 origin, total, kMaxGpus));
  if (gpus) apply_gpu_count(c, *gpus, std::string(origin));
  return c;
}

Cluster cluster_part(const Cluster& c, const std::vector<std::pair<size_t, int>>& take,
                     std::string_view why) {
  Cluster out = c;
  out.groups.clear();
  out.links.clear();
  std::vector<int> index(c.groups.size(), -1);
  for (const auto& [g, gpus] : take) {
    if (g >= c.groups.size() || index[g] >= 0 || gpus <= 0)
      throw InputError(fmt::format("{}: group {} taken twice or not in the cluster", why, g));
    NodeGroup group = c.groups[g];
    if (gpus > group.gpus())
      throw InputError(fmt::format("{}: {} GPUs of group '{}', which holds {}", why, gpus,
                                   group.name, group.gpus()));
    if (gpus != group.gpus())  // a group taken whole keeps its NVLink domain as it is
      cut_group(group, gpus,
                fmt::format("{}: {} GPUs of group '{}' is not a whole number of its {}-GPU nodes "
                            "or part of one; use a multiple of {}, or at most {}",
                            why, gpus, group.name, group.gpus_per_node, group.gpus_per_node,
                            group.gpus_per_node));
    index[g] = static_cast<int>(out.groups.size());
    out.groups.push_back(std::move(group));
  }
  for (const GroupLink& l : c.links)
    if (index[l.a] >= 0 && index[l.b] >= 0) {
      GroupLink kept = l;
      kept.a = static_cast<size_t>(index[l.a]);
      kept.b = static_cast<size_t>(index[l.b]);
      out.links.push_back(std::move(kept));
    }
  return out;
}

Cluster load_cluster(std::string_view name_or_path, std::optional<int> gpus) {
  if (const auto* e = catalog::find("systems", name_or_path)) {
    return parse_cluster_json(e->dump(), fmt::format("catalog system '{}'", name_or_path), gpus);
  }
  if (!is_file(name_or_path))
    throw InputError(fmt::format("unknown cluster '{}': not a catalog system ({}) and no such file",
                                 name_or_path, catalog::names_list("systems", name_or_path)));
  return parse_cluster_json(read_text_file(name_or_path, "cluster file"),
                            fmt::format("cluster file '{}'", name_or_path), gpus);
}

namespace {

// A fabric at another bandwidth: its measured sweeps scaled alike (a bandwidth-bound curve).
void set_bandwidth(Fabric& f, double bps) {
  const double ratio = f.bandwidth_Bps > 0 ? bps / f.bandwidth_Bps : 1;
  f.bandwidth_Bps = bps;
  for (auto& curve : f.busbw_curves)
    for (BusbwPoint& p : curve) p.busbw_Bps *= ratio;
}

double value_at(const BandwidthTrace& t, double sec) {
  double v = t.front().second;
  for (const auto& [at, bps] : t)
    if (at <= sec) v = bps;
  return v;
}

}  // namespace

BandwidthTrace load_network_trace(std::string_view path) {
  return parse_network_trace_csv(read_text_file(path, "network trace"), path);
}

bool has_bandwidth_traces(const Cluster& c) {
  return !c.network_trace.empty() ||
         std::any_of(c.links.begin(), c.links.end(),
                     [](const GroupLink& l) { return !l.trace.empty(); });
}

std::vector<NetworkSegment> network_segments(const Cluster& c) {
  if (!has_bandwidth_traces(c)) return {};
  std::vector<const BandwidthTrace*> traces;
  if (!c.network_trace.empty()) traces.push_back(&c.network_trace);
  for (const GroupLink& l : c.links)
    if (!l.trace.empty()) traces.push_back(&l.trace);
  double begin = 0, end = 1e300;
  std::vector<double> cuts;
  for (const BandwidthTrace* t : traces) {
    begin = std::max(begin, t->front().first);
    end = std::min(end, t->back().first);
    for (const auto& p : *t) cuts.push_back(p.first);
  }
  if (end <= begin)
    throw InputError(
        fmt::format("cluster '{}': its bandwidth traces share no time (the latest "
                    "start, {} s, is not before the earliest end, {} s)",
                    c.name, begin, end));
  cuts.push_back(begin);
  cuts.push_back(end);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  // Counted before any is built: each segment is a copy of the cluster.
  constexpr size_t kMaxSegments = 1000;
  size_t segments = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) segments += cuts[i] >= begin && cuts[i + 1] <= end;
  if (segments > kMaxSegments)
    throw InputError(fmt::format(
        "cluster '{}': its traces make {} segments; shardcost prices up to 1,000: resample the "
        "trace coarser (one point a minute covers 16 hours)",
        c.name, segments));
  // A segment's cluster has its bandwidths fixed, and no traces (copying them into every
  // segment took memory quadratic in the points).
  Cluster fixed = c;
  fixed.network_trace.clear();
  for (GroupLink& l : fixed.links) l.trace.clear();
  std::vector<NetworkSegment> out;
  out.reserve(segments);
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    if (cuts[i] < begin || cuts[i + 1] > end) continue;
    NetworkSegment seg;
    seg.start_s = cuts[i];
    seg.end_s = cuts[i + 1];
    seg.cluster = fixed;
    std::string text;
    if (!c.network_trace.empty()) {
      const double bps = value_at(c.network_trace, seg.start_s);
      set_bandwidth(seg.cluster.inter_node, bps);
      for (NodeGroup& g : seg.cluster.groups)
        if (g.inter_node) set_bandwidth(*g.inter_node, bps);
      text = fmt::format("network {:.3g} GB/s", bps / kGB);
    }
    for (size_t k = 0; k < c.links.size(); ++k) {
      const GroupLink& l = c.links[k];
      if (l.trace.empty()) continue;
      const double bps = value_at(l.trace, seg.start_s);
      set_bandwidth(seg.cluster.links[k].fabric, bps);
      text += fmt::format("{}{}-{} {:.3g} GB/s", text.empty() ? "" : ", ", c.groups[l.a].name,
                          c.groups[l.b].name, bps / kGB);
    }
    seg.bandwidths = text;
    out.push_back(std::move(seg));
  }
  return out;
}

}  // namespace shardcost
