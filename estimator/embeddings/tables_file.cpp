// Tables files: JSON ({"tables": [...]}) or CSV with the same columns, read strictly.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "inputs/json_fields.h"
#include "inputs/records_text.h"
#include "shardcost/embeddings.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

const std::vector<std::string_view> kFields = {"name",           "rows",  "dim",
                                               "pooling_factor", "dtype", "zipf"};

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
  return out;
}

std::vector<EmbeddingTable> load_tables(std::string_view path) {
  return parse_tables(read_text_file(path, "tables file"), fmt::format("tables file '{}'", path));
}

}  // namespace shardcost
