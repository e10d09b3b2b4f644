// nccl-tests JSON (-J FILE, JSON_FILE_VERSION 2): config, devices and one object per result
// with out_of_place / in_place halves.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "import_nccl.h"
#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

using nlohmann::json;

// where: "file: results[3].in_place", for errors.
std::optional<NcclHalf> half(const json& j, const std::string& where) {
  if (!j.is_object()) return std::nullopt;
  const json* time = j.contains("time")       ? &j["time"]
                     : j.contains("cpu_time") ? &j["cpu_time"]
                                              : nullptr;
  if (!time || time->is_null()) return std::nullopt;  // not measured
  // A time given as text ("24.1") or anything but a number is refused, not dropped.
  if (!time->is_number())
    throw InputError(
        fmt::format("{}: time {} is not a number of microseconds", where, time->dump()));
  NcclHalf h;
  h.time_us = time->get<double>();
  if (!is_duration_us(h.time_us))
    throw InputError(fmt::format("{}: time {} is not a time in microseconds", where, h.time_us));
  if (h.time_us == 0) throw InputError(fmt::format("{}: time 0 us is not a measurement", where));
  if (j.contains("nwrong") && j["nwrong"].is_number()) {
    const double n = j["nwrong"].get<double>();
    if (!(n >= 0) || n != std::floor(n) || n > 9e18)
      throw InputError(fmt::format("{}: nwrong {} is not a whole number of elements", where, n));
    h.wrong = static_cast<int64_t>(n);
  }
  return h;
}

std::string text_of(const json& j) {
  if (j.is_string()) return std::string(trim(j.get<std::string>()));
  if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
  return "";
}

}  // namespace

namespace {
Measurements read_json(std::string_view text, std::string_view source, std::string_view op);
}  // namespace

Measurements import_nccl_tests_json(std::string_view text, std::string_view source,
                                    std::string_view op) {
  try {
    return read_json(text, source, op);
  } catch (const nlohmann::json::exception&) {
    // A field of the wrong type somewhere the reader did not check: said without the JSON
    // library's own text.
    throw InputError(std::string(source) +
                     ": a field has the wrong type (a number where text belongs, or the "
                     "reverse); is this an nccl-tests -J file?");
  }
}

namespace {

Measurements read_json(std::string_view text, std::string_view source, std::string_view op) {
  json doc;
  struct TooDeep {};
  try {
    // nccl-tests -J files nest a few levels; deeper is not one (and is refused while parsing).
    doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > 64) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    throw InputError(std::string(source) +
                     ": the JSON nests deeper than 64 levels; it is not an nccl-tests -J file");
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format(
        "{}: not valid JSON (at byte {}: the file ends early or holds a syntax error); is the "
        "nccl-tests run complete?",
        source, e.byte));
  } catch (const json::exception&) {
    throw InputError(std::string(source) +
                     ": a JSON value cannot be read (a number too large, such as 1e400)");
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
  // The file's own op (its program) first, then its name, then --op.
  NcclRun run;
  if (!program.empty()) {
    const size_t slash = program.find_last_of('/');
    run.op = nccl_op_name(slash == std::string::npos ? program : program.substr(slash + 1));
  }
  if (run.op.empty()) run.op = nccl_op_from_path(source);
  if (run.op.empty()) run.op = fallback_op(op);

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

  size_t index = 0;
  for (const auto& r : doc["results"]) {
    const std::string where = fmt::format("{}: results[{}]", source, index++);
    if (!r.is_object() || !r.contains("size")) continue;
    auto whole = [&](const char* key, int64_t fallback) {
      if (!r.contains(key)) return fallback;
      const json& v = r[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw InputError(fmt::format("{}: '{}' is not a whole number >= 0", where, key));
      return v.get<int64_t>();
    };
    auto string_of = [&](const char* key, const char* fallback) {
      return r.contains(key) && r[key].is_string() ? r[key].get<std::string>()
                                                   : std::string(fallback);
    };
    NcclRow row;
    row.bytes = whole("size", 0);
    row.elements = whole("count", 0);
    row.dtype = string_of("type", "");
    row.redop = string_of("redop", "none");
    row.root =
        static_cast<int>(parse_int(r.contains("root") ? text_of(r["root"]) : "-1").value_or(-1));
    row.out_of_place =
        half(r.contains("out_of_place") ? r["out_of_place"] : json(), where + ".out_of_place");
    row.in_place = half(r.contains("in_place") ? r["in_place"] : json(), where + ".in_place");
    run.rows.push_back(std::move(row));
  }
  if (run.rows.empty())
    throw InputError(std::string(source) + ": the 'results' list is empty; nothing to import");
  nccl_records(run, source, m);
  return m;
}

}  // namespace

}  // namespace shardcost::db
