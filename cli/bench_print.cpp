#include "bench_print.h"

#include <fmt/format.h>

namespace shardcost::cli {
namespace {

using nlohmann::json;

std::string us(int64_t ns) {
  return fmt::format("{:.2f}", static_cast<double>(ns) / 1e3);
}
std::string num(double v) {
  return fmt::format("{:.2f}", v);
}
std::string cv(const bench::Stats& s) {
  return fmt::format("{:.1f}%", 100 * s.cv);
}
std::string check_cell(int64_t wrong) {
  return wrong == 0 ? "ok" : fmt::format("WRONG {}", wrong);
}

json stats_json(const bench::Stats& s) {
  return {{"median_ns", s.median_ns},  {"p10_ns", s.p10_ns}, {"p90_ns", s.p90_ns},
          {"min_ns", s.min_ns},        {"max_ns", s.max_ns}, {"cv", s.cv},
          {"iterations", s.iterations}};
}
json device_json(const db::DeviceRecord& d) {
  return {{"name", d.name},
          {"host", d.host},
          {"index", d.index},
          {"uuid", d.uuid},
          {"compute_capability", d.compute_capability}};
}

// "# device (host)", and where a host benchmark's threads ran.
std::string header(const db::DeviceRecord& d, const std::string& binding) {
  std::string out = fmt::format("# {} ({})\n", d.name, d.host);
  if (!binding.empty()) out += fmt::format("# threads: {}\n", binding);
  return out;
}

std::string ratio(std::optional<double> base, double value) {
  return base && *base > 0 ? fmt::format("{:.1f}%", 100 * value / *base) : "";
}

}  // namespace

std::string render(const bench::GemmReport& r, Format f) {
  const bool base = !r.results.empty() && r.results.front().baseline_tflops.has_value();
  if (f == Format::json) {
    json j = {{"benchmark", "gemm"}, {"device", device_json(r.device)}, {"results", json::array()}};
    if (!r.binding.empty()) j["threads"] = r.binding;
    for (const auto& g : r.results) {
      json row = {{"name", g.shape.name}, {"dtype", g.dtype},
                  {"m", g.shape.m},       {"n", g.shape.n},
                  {"k", g.shape.k},       {"batch", g.shape.batch},
                  {"tflops", g.tflops},   {"checked", g.checked},
                  {"wrong", g.wrong},     {"stats", stats_json(g.stats)}};
      if (g.baseline_tflops) row["baseline_tflops"] = *g.baseline_tflops;
      j["results"].push_back(row);
    }
    return json_text(j) + "\n";
  }
  std::vector<std::string> head = {"gemm",      "dtype",  "m",      "n",  "k",       "batch",
                                   "median us", "p10 us", "p90 us", "cv", "GFLOP/s", "check"};
  if (base) head.insert(head.end(), {"BLAS GFLOP/s", "vs BLAS"});
  Table t(head,
          {false, false, true, true, true, true, true, true, true, true, true, false, true, true});
  for (const auto& g : r.results) {
    std::vector<std::string> row = {g.shape.name,
                                    g.dtype,
                                    fmt::format("{}", g.shape.m),
                                    fmt::format("{}", g.shape.n),
                                    fmt::format("{}", g.shape.k),
                                    fmt::format("{}", g.shape.batch),
                                    us(g.stats.median_ns),
                                    us(g.stats.p10_ns),
                                    us(g.stats.p90_ns),
                                    cv(g.stats),
                                    num(g.tflops * 1e3),
                                    check_cell(g.wrong)};
    if (base) {
      row.push_back(num(*g.baseline_tflops * 1e3));
      row.push_back(ratio(g.baseline_tflops, g.tflops));
    }
    t.add(row);
  }
  return header(r.device, r.binding) + t.render();
}

std::string render(const bench::EmbeddingReport& r, Format f) {
  if (f == Format::json) {
    json j = {
        {"benchmark", "embedding"}, {"device", device_json(r.device)}, {"results", json::array()}};
    if (!r.binding.empty()) j["threads"] = r.binding;
    for (const auto& e : r.results)
      j["results"].push_back({{"pass", e.pass},
                              {"dtype", e.dtype},
                              {"optimizer", e.optimizer},
                              {"rows", e.shape.rows},
                              {"dim", e.shape.dim},
                              {"pooling", e.shape.pooling},
                              {"batch", e.shape.batch},
                              {"zipf", e.shape.zipf},
                              {"lookups_per_s", e.lookups_per_s},
                              {"wrong", e.wrong},
                              {"stats", stats_json(e.stats)}});
    return json_text(j) + "\n";
  }
  Table t({"pass", "dtype", "rows", "dim", "pooling", "batch", "zipf", "median us", "p10 us",
           "p90 us", "cv", "Mlookups/s", "check"},
          {false, false, true, true, true, true, true, true, true, true, true, true, false});
  for (const auto& e : r.results)
    t.add({e.pass, e.dtype, fmt::format("{}", e.shape.rows), fmt::format("{}", e.shape.dim),
           fmt::format("{:g}", e.shape.pooling), fmt::format("{}", e.shape.batch),
           fmt::format("{:g}", e.shape.zipf), us(e.stats.median_ns), us(e.stats.p10_ns),
           us(e.stats.p90_ns), cv(e.stats), num(e.lookups_per_s / 1e6), check_cell(e.wrong)});
  return header(r.device, r.binding) + t.render();
}

std::string render(const bench::MemoryReport& r, Format f) {
  bool base = false;
  for (const auto& m : r.results) base = base || m.baseline_gbps.has_value();
  if (f == Format::json) {
    json j = {
        {"benchmark", "memory"}, {"device", device_json(r.device)}, {"results", json::array()}};
    if (!r.binding.empty()) j["threads"] = r.binding;
    for (const auto& m : r.results) {
      json row = {{"kind", m.kind},   {"kernel", m.kernel},
                  {"bytes", m.bytes}, {"bandwidth_gbps", m.bandwidth_gbps},
                  {"wrong", m.wrong}, {"stats", stats_json(m.stats)}};
      if (m.baseline_gbps) row["baseline_gbps"] = *m.baseline_gbps;
      j["results"].push_back(row);
    }
    return json_text(j) + "\n";
  }
  std::vector<std::string> head = {"memory", "kernel", "bytes", "median us", "p10 us",
                                   "p90 us", "cv",     "GB/s",  "check"};
  if (base) head.insert(head.end(), {"reference GB/s", "vs reference"});
  Table t(head, {false, false, true, true, true, true, true, true, false, true, true});
  for (const auto& m : r.results) {
    std::vector<std::string> row = {m.kind,
                                    m.kernel,
                                    fmt::format("{}", m.bytes),
                                    us(m.stats.median_ns),
                                    us(m.stats.p10_ns),
                                    us(m.stats.p90_ns),
                                    cv(m.stats),
                                    num(m.bandwidth_gbps),
                                    check_cell(m.wrong)};
    if (base) {
      row.push_back(m.baseline_gbps ? num(*m.baseline_gbps) : "");
      row.push_back(ratio(m.baseline_gbps, m.bandwidth_gbps));
    }
    t.add(row);
  }
  return header(r.device, r.binding) + t.render();
}

std::string render(const bench::CollectiveReport& r, Format f) {
  if (f == Format::json) {
    json j = {{"benchmark", "collective"},
              {"ranks", r.ranks},
              {"nodes", r.nodes},
              {"fabric_level", r.fabric_level},
              {"library", r.library_version},
              {"device", device_json(r.device)},
              {"results", json::array()}};
    for (const auto& c : r.results)
      j["results"].push_back({{"op", c.op},
                              {"bytes", c.bytes},
                              {"elements", c.elements},
                              {"dtype", c.dtype},
                              {"redop", c.redop},
                              {"root", c.root},
                              {"in_place", c.in_place},
                              {"algbw_gbps", c.algbw_gbps},
                              {"busbw_gbps", c.busbw_gbps},
                              {"wrong", c.wrong},
                              {"stats", stats_json(c.stats)}});
    return json_text(j) + "\n";
  }
  Table t({"op", "size", "count", "type", "redop", "root", "time us", "p10 us", "p90 us",
           "algbw GB/s", "busbw GB/s", "#wrong"},
          {false, true, true, false, false, true, true, true, true, true, true, true});
  for (const auto& c : r.results)
    t.add({c.op, fmt::format("{}", c.bytes), fmt::format("{}", c.elements), c.dtype, c.redop,
           c.root < 0 ? "-" : fmt::format("{}", c.root), us(c.stats.median_ns), us(c.stats.p10_ns),
           us(c.stats.p90_ns), num(c.algbw_gbps), num(c.busbw_gbps), fmt::format("{}", c.wrong)});
  return fmt::format("# {} ranks on {} node{} ({}), {}\n", r.ranks, r.nodes,
                     r.nodes == 1 ? "" : "s", r.fabric_level, r.library_version) +
         t.render();
}

std::string render(const bench::P2pReport& r, Format f) {
  if (f == Format::json) {
    json j = {{"benchmark", "p2p"},
              {"ranks", r.ranks},
              {"nodes", r.nodes},
              {"library", r.library_version},
              {"results", json::array()}};
    for (const auto& p : r.results)
      j["results"].push_back({{"from", p.from},
                              {"to", p.to},
                              {"fabric_level", p.fabric_level},
                              {"bytes", p.bytes},
                              {"latency_us", p.latency_us},
                              {"bandwidth_gbps", p.bandwidth_gbps},
                              {"wrong", p.wrong},
                              {"stats", stats_json(p.stats)}});
    return json_text(j) + "\n";
  }
  Table t({"from", "to", "fabric", "size", "one-way us", "p10 us", "p90 us", "GB/s", "#wrong"},
          {true, true, false, true, true, true, true, true, true});
  for (const auto& p : r.results)
    t.add({fmt::format("{}", p.from), fmt::format("{}", p.to), p.fabric_level,
           fmt::format("{}", p.bytes), us(p.stats.median_ns), us(p.stats.p10_ns),
           us(p.stats.p90_ns), num(p.bandwidth_gbps), fmt::format("{}", p.wrong)});
  return fmt::format("# {} ranks on {} node{}, {}\n", r.ranks, r.nodes, r.nodes == 1 ? "" : "s",
                     r.library_version) +
         t.render();
}

}  // namespace shardcost::cli
