// nccl-tests JSON (-J FILE, JSON_FILE_VERSION 2): config, devices and one object per result
// with out_of_place / in_place halves.
#include <nlohmann/json.hpp>

#include "import_nccl.h"
#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

using nlohmann::json;

std::optional<NcclHalf> half(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const json* time = j.contains("time")       ? &j["time"]
                     : j.contains("cpu_time") ? &j["cpu_time"]
                                              : nullptr;
  if (!time || !time->is_number()) return std::nullopt;
  NcclHalf h;
  h.time_us = time->get<double>();
  if (j.contains("nwrong") && j["nwrong"].is_number())
    h.wrong = static_cast<int64_t>(j["nwrong"].get<double>());
  return h;
}

std::string text_of(const json& j) {
  if (j.is_string()) return std::string(trim(j.get<std::string>()));
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  return "";
}

}  // namespace

Measurements import_nccl_tests_json(std::string_view text, std::string_view source,
                                    std::string_view op) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(std::string(source) + ": not valid JSON (" + e.what() +
                     "); is the nccl-tests run complete?");
  }
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array())
    throw InputError(std::string(source) + ": no 'results' list; is this an nccl-tests -J file?");
  Measurements m;
  m.run.tool = "nccl-tests";
  m.run.source = std::string(source);
  m.run.uuid = content_uuid("nccl-tests", text);
  if (doc.contains("nccl_version") && doc["nccl_version"].is_number_integer())
    m.run.library_versions = "nccl=" + nccl_version_text(doc["nccl_version"].get<int64_t>());
  if (doc.contains("start_time")) m.run.start_time_ns = parse_time_ns(text_of(doc["start_time"]));
  if (doc.contains("end_time")) m.run.end_time_ns = parse_time_ns(text_of(doc["end_time"]));
  std::string program;
  if (doc.contains("args") && doc["args"].is_array()) {
    for (const auto& a : doc["args"]) {
      if (!a.is_string()) continue;
      if (program.empty()) program = a.get<std::string>();
      m.run.command_line += (m.run.command_line.empty() ? "" : " ") + a.get<std::string>();
    }
  }
  NcclRun run;
  run.op = std::string(op);
  if (run.op.empty() && !program.empty()) {
    const size_t slash = program.find_last_of('/');
    run.op = nccl_op_name(slash == std::string::npos ? program : program.substr(slash + 1));
  }
  if (run.op.empty()) run.op = nccl_op_from_path(source);

  const json cfg = doc.value("config", json::object());
  const json devices =
      cfg.contains("devices") ? cfg["devices"] : doc.value("devices", json::array());
  for (const auto& d : devices) {
    if (!d.is_object()) continue;
    run.rank_lines.push_back({d.value("rank", 0), d.value("hostname", ""), d.value("device", 0),
                              d.value("device_hex", ""),
                              std::string(trim(d.value("device_info", "")))});
  }
  // The JSON keeps one device line per process; each process drives nthreads x ngpus ranks.
  const int per_process = cfg.value("nthreads", 1) * cfg.value("ngpus", 1);
  run.iterations = cfg.value("iterations", int64_t{0});
  run.ranks = static_cast<int>(std::max<size_t>(run.rank_lines.size(), 1)) * per_process;

  for (const auto& r : doc["results"]) {
    if (!r.is_object() || !r.contains("size")) continue;
    NcclRow row;
    row.bytes = r["size"].get<int64_t>();
    row.elements = r.value("count", int64_t{0});
    row.dtype = r.value("type", "");
    row.redop = r.value("redop", "none");
    row.root =
        static_cast<int>(parse_int(r.contains("root") ? text_of(r["root"]) : "-1").value_or(-1));
    row.out_of_place = half(r.value("out_of_place", json()));
    row.in_place = half(r.value("in_place", json()));
    run.rows.push_back(std::move(row));
  }
  if (run.rows.empty())
    throw InputError(std::string(source) + ": the 'results' list is empty; nothing to import");
  nccl_records(run, source, m);
  return m;
}

}  // namespace shardcost::db
