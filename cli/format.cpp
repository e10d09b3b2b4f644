#include "format.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "shardcost/error.h"

namespace shardcost::cli {

Format parse_format(const std::string& s, const std::vector<Format>& allowed) {
  Format f;
  if (s == "text")
    f = Format::text;
  else if (s == "json")
    f = Format::json;
  else if (s == "csv")
    f = Format::csv;
  else
    throw InputError(fmt::format("unknown --format '{}'; use text, json or csv", s));
  if (std::find(allowed.begin(), allowed.end(), f) == allowed.end())
    throw InputError(fmt::format("--format {} is not available for this command", s));
  return f;
}

Table::Table(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), false);
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  return out;
}

void Table::add(std::vector<std::string> row) {
  for (auto& cell : row)
    if (std::any_of(cell.begin(), cell.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      cell = printable(cell);
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::render(int indent) const {
  std::vector<size_t> width(header_.size());
  for (size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l(static_cast<size_t>(indent), ' ');
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) l += "  ";
      l += right_[i] ? fmt::format("{:>{}}", cells[i], width[i])
                     : fmt::format("{:<{}}", cells[i], width[i]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

nlohmann::json to_json(const Strategy& s) {
  nlohmann::json j = {
      {"tp", s.tp},   {"pp", s.pp},    {"dp", s.dp},
      {"cp", s.cp},   {"ep", s.ep},    {"mbs", s.mbs},
      {"gbs", s.gbs}, {"vpp", s.vpp},  {"recompute", std::string(to_string(s.recompute))},
      {"sp", s.sp},   {"zero", s.zero}};
  if (s.balance != Balance::none) j["balance"] = std::string(to_string(s.balance));
  if (s.max_tokens > 0) j["max_tokens"] = s.max_tokens;
  if (s.cp_per_sequence()) j["cp_mode"] = std::string(to_string(s.cp_mode));
  if (s.cp_kind != CpKind::ring) j["cp_kind"] = std::string(to_string(s.cp_kind));
  if (!s.stage_layers.empty()) j["layers"] = s.stage_layers;
  if (!s.stage_tp.empty()) j["stage_tp"] = s.stage_tp;
  if (s.precision) j["precision"] = std::string(to_string(*s.precision));
  if (s.etp > 0) j["etp"] = s.etp;
  if (s.offload > 0) j["offload"] = s.offload;
  if (s.schedule != PipeSchedule::one_f_one_b) j["schedule"] = std::string(to_string(s.schedule));
  if (s.recompute_modules != 0)
    j["recompute_modules"] = recompute_modules_text(s.recompute_modules);
  if (!s.zero_layers.empty()) j["zero_layers"] = zero_layers_text(s.zero_layers);
  return j;
}

double round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
  return std::round(v * scale) / scale;
}

nlohmann::json to_json(const Estimate& e) {
  nlohmann::json j;
  j["strategy"] = to_json(e.strategy);
  j["step_time_s"] = round6(e.step_time_s);
  j["tokens_per_s"] = round6(e.tokens_per_s);
  j["tflops_per_gpu"] = round6(e.tflops_per_gpu);
  j["mfu"] = round6(e.mfu);
  j["memory_per_gpu_gib"] = round6(e.memory_per_gpu_bytes / kGiB);
  j["memory_capacity_gib"] = round6(e.memory_capacity_bytes / kGiB);
  j["feasible"] = e.feasible;
  j["memory_near_limit"] = e.memory_near_limit;
  j["reason"] = e.reason;
  j["parameters"] = e.parameters;
  j["model_flops_per_step"] = round6(e.model_flops);
  nlohmann::json time = nlohmann::json::array();
  for (const auto& p : e.time) {
    nlohmann::json sources = nlohmann::json::object();
    for (const auto& [origin, seconds] : p.sources)
      sources[std::string(to_string(origin))] = round6(seconds);
    time.push_back({{"part", p.name},
                    {"seconds", round6(p.seconds)},
                    {"source", std::string(to_string(p.origin))},
                    {"sources", sources}});
  }
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& p : e.memory)
    memory.push_back({{"part", p.name}, {"gib", round6(p.bytes / kGiB)}, {"source", "analytic"}});
  j["breakdown"] = {{"time", time}, {"memory", memory}};
  if (!e.stages.empty()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& st : e.stages)
      stages.push_back({{"stage", st.stage},
                        {"slowest_group", st.group},
                        {"device", st.device},
                        {"tp", st.tp},
                        {"seconds_per_micro_batch", round6(st.seconds)},
                        {"memory_gib", round6(st.memory_bytes / kGiB)},
                        {"capacity_gib", round6(st.capacity_bytes / kGiB)}});
    j["stages"] = stages;
    j["links"] = e.links;
    if (!e.group_order.empty()) j["group_order"] = e.group_order;
  }
  return j;
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string thousands(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  const size_t start = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void check_output_path(const std::string& path, const char* option) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(fmt::format("{} is empty; name a file", option));
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(fmt::format("{} {} is a folder; name a file in it", option, path));
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(parent, ec))
    throw InputError(fmt::format("{} {}: the folder {} does not exist; create it first", option,
                                 path, parent.string()));
  if (::access(parent.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{} {}: the folder {} cannot be written ({})", option, path,
                                 parent.string(), std::strerror(errno)));
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace shardcost::cli
