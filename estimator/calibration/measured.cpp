// Measured runs in and out: a stored run's configuration read back for pricing, a run's record
// from its parts, and `import runs`' table of runs written by hand or by a script.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "inputs/records_text.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "shardcost/units.h"

namespace shardcost {
namespace {

bool is_json(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

int64_t ns(double s) {
  return static_cast<int64_t>(std::llround(s * 1e9));
}

const std::vector<std::string_view> kColumns = {
    "label",           "model",    "cluster",      "gpus",
    "strategy",        "software", "step_time_s",  "step_time_p10_s",
    "step_time_p90_s", "steps",    "tokens_per_s", "peak_memory_gib"};
const std::vector<std::string_view> kRequired = {"model",    "cluster",  "gpus",
                                                 "strategy", "software", "step_time_s"};

// One row of the table, whatever its format: its cells by column as text.
db::Measurements read_row(const std::map<std::string, std::string>& cells, const std::string& where,
                          std::string_view source) {
  auto text = [&](const char* key) {
    const auto it = cells.find(key);
    return it == cells.end() ? std::string() : it->second;
  };
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = cells.find(key);
    if (it == cells.end() || it->second.empty()) return std::nullopt;
    return csv_number(it->second, where, key);
  };
  auto positive = [&](const char* key) -> std::optional<double> {
    const auto v = number(key);
    if (v && !(*v > 0))
      throw InputError(
          fmt::format("{}: {} is {}; give a positive figure or leave it empty", where, key, *v));
    return v;
  };
  for (const auto key : kRequired)
    if (text(std::string(key).c_str()).empty())
      throw InputError(
          fmt::format("{}: {} is empty; every run needs model, cluster, gpus, "
                      "strategy, software and step_time_s",
                      where, key));
  const double gpus_real = *positive("gpus");
  if (gpus_real != std::floor(gpus_real) || gpus_real > 1e6)
    throw InputError(fmt::format("{}: gpus is {}; give a whole number of GPUs", where, gpus_real));
  const int gpus = static_cast<int>(gpus_real);
  MeasuredFigures f;
  f.step_s = *positive("step_time_s");
  f.step_p10_s = positive("step_time_p10_s");
  f.step_p90_s = positive("step_time_p90_s");
  if (const auto steps = number("steps")) {
    if (*steps < 0 || *steps != std::floor(*steps))
      throw InputError(fmt::format("{}: steps is {}; give a whole number", where, *steps));
    f.steps = static_cast<int64_t>(*steps);
  }
  f.tokens_per_s = positive("tokens_per_s");
  if (const auto gib = positive("peak_memory_gib")) f.peak_memory_bytes = *gib * units::kGiB;
  if (f.step_p10_s && f.step_p90_s && *f.step_p10_s > *f.step_p90_s)
    throw InputError(fmt::format("{}: step_time_p10_s is above step_time_p90_s", where));
  // The configuration must price: every error names the row.
  try {
    const std::string model_text = text("model");
    const Model m =
        is_json(model_text) ? parse_model_json(model_text, "the model") : load_model(model_text);
    const std::string cluster_text = text("cluster");
    const Cluster c = run_cluster(cluster_text, gpus);
    const Strategy s = parse_strategy(text("strategy"), c.total_gpus());
    const Software sw = parse_software(text("software"));
    if (const auto why = check_strategy(m, c, s)) throw InputError(*why);
    if (const auto why = unsupported(sw, s)) throw InputError(*why);
    db::Measurements out;
    out.measured = measured_record(m, cluster_text, c, s, sw, f, text("label"));
    out.measured->source_kind = "csv";
    out.run.tool = "csv";
    out.run.source = std::string(source);
    std::string all;
    for (const auto& [k, v] : cells) {
      all += k;
      all += '=';
      all += v;
      all += '\x1f';
    }
    out.measured->content_hash = db::content_uuid("run", all);
    out.run.uuid = out.measured->content_hash;
    return out;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

std::string csv_cell(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out(1, '"');
  for (char ch : v) {
    out += ch;
    if (ch == '"') out += ch;
  }
  out += '"';
  return out;
}

}  // namespace

Cluster run_cluster(std::string_view text, int gpus) {
  return is_json(text) ? parse_cluster_json(text, "the run's cluster", gpus)
                       : load_cluster(text, gpus);
}

MeasuredRun resolve_measured(const db::MeasuredStepRecord& r, std::string_view run_uuid) {
  try {
    MeasuredRun out;
    out.run_uuid = std::string(run_uuid);
    out.record = r;
    out.model = parse_model_json(r.model_json, "the run's model");
    out.cluster = run_cluster(r.cluster, static_cast<int>(r.gpus));
    out.strategy = parse_strategy(r.strategy, out.cluster.total_gpus());
    out.software = parse_software(r.software);
    return out;
  } catch (const InputError& e) {
    throw InputError(fmt::format("measured run {}: {}", run_uuid, e.what()));
  }
}

db::MeasuredStepRecord measured_record(const Model& m, std::string_view cluster_text,
                                       const Cluster& c, const Strategy& s, const Software& sw,
                                       const MeasuredFigures& f, std::string_view label) {
  db::MeasuredStepRecord r;
  r.label = std::string(label);
  r.model_json = model_json(m);
  r.model_name = m.name;
  r.cluster = std::string(cluster_text);
  r.gpus = c.total_gpus();
  r.strategy = to_string(s);
  r.software = software_text(sw);
  r.device = calibration_devices(c);
  std::string why;
  const auto precision = resolved_precision(s, sw, c.groups.front().device, &why);
  r.precision = precision ? std::string(to_string(*precision)) : "";
  r.seq_len = m.seq_len;
  r.step_time_ns = ns(f.step_s);
  if (f.step_p10_s) r.step_time_p10_ns = ns(*f.step_p10_s);
  if (f.step_p90_s) r.step_time_p90_ns = ns(*f.step_p90_s);
  r.steps = f.steps;
  r.tokens_per_s = f.tokens_per_s;
  if (f.peak_memory_bytes) r.peak_memory_bytes = static_cast<int64_t>(*f.peak_memory_bytes);
  return r;
}

std::vector<db::Measurements> import_runs_table(std::string_view text, std::string_view source) {
  std::vector<db::Measurements> out;
  RecordReaders read;
  read.csv = [&](const std::map<std::string, std::string>& cells, const std::string& where,
                 size_t) { out.push_back(read_row(cells, where, source)); };
  read.json = [&](const nlohmann::json& j, const std::string& where, size_t) {
    if (!j.is_object()) throw InputError(fmt::format("{}: give an object per run", where));
    std::map<std::string, std::string> cells;
    for (const auto& [k, v] : j.items()) {
      if (std::find(kColumns.begin(), kColumns.end(), k) == kColumns.end())
        throw InputError(fmt::format("{}: unknown field '{}'", where, k));
      cells[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    out.push_back(read_row(cells, where, source));
  };
  read_records(text, source, "runs", kColumns, kRequired, read);
  return out;
}

std::string runs_table_csv(const std::vector<db::MeasuredStepRecord>& runs) {
  std::string out;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    if (i) out += ',';
    out += kColumns[i];
  }
  out += '\n';
  auto seconds = [](std::optional<int64_t> v) {
    return v ? fmt::format("{}", static_cast<double>(*v) / 1e9) : std::string();
  };
  for (const auto& r : runs) {
    const std::vector<std::string> cells = {
        r.label,
        r.model_json,
        r.cluster,
        std::to_string(r.gpus),
        r.strategy,
        r.software,
        seconds(r.step_time_ns),
        seconds(r.step_time_p10_ns),
        seconds(r.step_time_p90_ns),
        r.steps ? std::to_string(r.steps) : "",
        r.tokens_per_s ? fmt::format("{}", *r.tokens_per_s) : "",
        r.peak_memory_bytes
            ? fmt::format("{}", static_cast<double>(*r.peak_memory_bytes) / units::kGiB)
            : ""};
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csv_cell(cells[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace shardcost
