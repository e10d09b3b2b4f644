// Tables files: JSON ({"tables": [...]}) or CSV with the same columns, read strictly.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <unordered_map>

#include "inputs/json_fields.h"
#include "inputs/records_text.h"
#include "shardcost/embeddings.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

const std::vector<std::string_view> kFields = {"name",  "rows", "dim",      "pooling_factor",
                                               "dtype", "zipf", "histogram"};

int dtype_bytes(std::string_view dtype, const std::string& where) {
  if (dtype == "fp32") return 4;
  if (dtype == "fp16" || dtype == "bf16") return 2;
  throw InputError(fmt::format("{}: dtype '{}': give fp32, fp16 or bf16", where, dtype));
}

// The checks every table takes, whichever format it came in.
void check(const EmbeddingTable& t, const std::string& where) {
  if (t.rows < 1) throw InputError(fmt::format("{}: rows must be at least 1", where));
  if (t.dim < 1) throw InputError(fmt::format("{}: dim must be at least 1", where));
  if (!(t.pooling > 0) || !std::isfinite(t.pooling))
    throw InputError(
        fmt::format("{}: pooling_factor must be a number above 0 (lookups per "
                    "sample)",
                    where));
  if (!(t.zipf >= 0) || t.zipf > 10)
    throw InputError(fmt::format("{}: zipf must be a number from 0 (uniform) to 10", where));
  if (t.histogram.empty()) return;
  if (t.zipf > 0)
    throw InputError(fmt::format("{}: give the skew once, as zipf or as a histogram", where));
  double rows = 0, lookups = 0;
  for (const auto& [r, a] : t.histogram) {
    if (!(r > 0) || !(a >= 0) || !std::isfinite(r) || !std::isfinite(a))
      throw InputError(fmt::format(
          "{}: histogram buckets are (share of rows above 0, share of lookups from 0)", where));
    rows += r, lookups += a;
  }
  if (std::fabs(rows - 1) > 1e-3 || std::fabs(lookups - 1) > 1e-3)
    throw InputError(fmt::format(
        "{}: the histogram's shares of rows add up to {:.4f} and of lookups to {:.4f}; each "
        "must add up to 1",
        where, rows, lookups));
}

// "0.01:0.6;0.99:0.4": (share of rows, share of lookups) per bucket, hottest first.
AccessHistogram histogram_of_text(const std::string& v, const std::string& where) {
  AccessHistogram h;
  size_t start = 0;
  while (start < v.size()) {
    size_t end = v.find(';', start);
    if (end == std::string::npos) end = v.size();
    const std::string item = v.substr(start, end - start);
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      throw InputError(fmt::format(
          "{}: histogram '{}': write buckets as rows:lookups shares, e.g. 0.01:0.6;0.99:0.4", where,
          v));
    h.emplace_back(csv_number(item.substr(0, colon), where, "histogram"),
                   csv_number(item.substr(colon + 1), where, "histogram"));
    start = end + 1;
  }
  return h;
}

EmbeddingTable table_of_json(const nlohmann::json& o, const std::string& where, size_t index) {
  if (!o.is_object()) throw InputError(fmt::format("{}: a table is an object of fields", where));
  JsonFields f(o, where);
  f.reject_unknown(kFields);
  EmbeddingTable t;
  t.name = f.optional_string("name").value_or(fmt::format("t{}", index));
  const double rows = f.required_number("rows", 1);
  if (rows != std::floor(rows) || rows > 1e12) f.fail("rows", "must be a whole number of rows");
  t.rows = static_cast<int64_t>(rows);
  t.dim = f.required_int("dim", 1, 1 << 16);
  t.pooling = f.required_number("pooling_factor", 0);
  if (const auto d = f.optional_string("dtype")) t.dtype_bytes = dtype_bytes(*d, where);
  t.zipf = f.optional_number("zipf", 0).value_or(0);
  if (o.contains("histogram")) {
    const auto& h = o.at("histogram");
    if (!h.is_array()) f.fail("histogram", "must be an array of [share of rows, share of lookups]");
    for (const auto& b : h) {
      if (!b.is_array() || b.size() != 2 || !b[0].is_number() || !b[1].is_number())
        f.fail("histogram", "must be an array of [share of rows, share of lookups]");
      t.histogram.emplace_back(b[0].get<double>(), b[1].get<double>());
    }
  }
  check(t, where);
  return t;
}

// A CSV row: the same fields as JSON's.
EmbeddingTable table_of_csv(const std::map<std::string, std::string>& row, const std::string& where,
                            size_t index) {
  EmbeddingTable t;
  t.name = fmt::format("t{}", index);
  for (const auto& [h, v] : row) {
    if (h == "name") t.name = v;
    if (h == "rows") {
      const double r = csv_number(v, where, "rows");
      if (r != std::floor(r) || r < 1 || r > 1e12)
        throw InputError(fmt::format("{}: rows '{}' is not a whole number of rows", where, v));
      t.rows = static_cast<int64_t>(r);
    }
    if (h == "dim") {
      const double d = csv_number(v, where, "dim");
      if (d != std::floor(d) || d < 1 || d > (1 << 16))
        throw InputError(fmt::format("{}: dim '{}' is not a whole number from 1", where, v));
      t.dim = static_cast<int>(d);
    }
    if (h == "pooling_factor") t.pooling = csv_number(v, where, "pooling_factor");
    if (h == "dtype") t.dtype_bytes = dtype_bytes(v, where);
    if (h == "zipf") t.zipf = csv_number(v, where, "zipf");
    if (h == "histogram" && !v.empty()) t.histogram = histogram_of_text(v, where);
  }
  check(t, where);
  return t;
}

}  // namespace

std::vector<EmbeddingTable> parse_tables(std::string_view text, std::string_view origin) {
  std::vector<EmbeddingTable> out;
  read_records(text, origin, "tables", kFields, {"rows", "dim", "pooling_factor"},
               {[&](const nlohmann::json& o, const std::string& at, size_t i) {
                  out.push_back(table_of_json(o, at, i));
                },
                [&](const std::map<std::string, std::string>& row, const std::string& at,
                    size_t i) { out.push_back(table_of_csv(row, at, i)); }});
  // A name twice: the plans and `bench embedding --plan` name shards by their table.
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < out.size(); ++i)
    if (const auto [it, fresh] = seen.emplace(out[i].name, i); !fresh)
      throw InputError(
          fmt::format("{}: tables {} and {} are both named '{}'; give each table its "
                      "own name",
                      origin, it->second + 1, i + 1, out[i].name));
  return out;
}

std::vector<EmbeddingTable> load_tables(std::string_view path) {
  return parse_tables(read_text_file(path, "tables file"), fmt::format("tables file '{}'", path));
}

}  // namespace shardcost
