// Cost tables out (CSV, JSON) and CSV in.
#include "table_io.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "shardcost/db.h"
#include "shardcost/error.h"

namespace shardcost::db {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Derived rates carry six significant digits: more would only show measurement noise.
std::string real_text(double v) {
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::string cell_text(const Cell& c) {
  if (std::holds_alternative<int64_t>(c)) return std::to_string(std::get<int64_t>(c));
  if (std::holds_alternative<double>(c)) return real_text(std::get<double>(c));
  if (std::holds_alternative<std::string>(c)) return std::get<std::string>(c);
  return "";
}

std::string csv_header(const std::vector<std::string>& columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ',';
    out += csv_field(columns[i]);
  }
  return out + '\n';
}

std::string csv_row(const std::vector<Cell>& row) {
  std::string out;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) out += ',';
    out += csv_field(cell_text(row[i]));
  }
  return out + '\n';
}

std::string to_csv(const CostTable& t) {
  std::string out = csv_header(t.columns);
  for (const auto& row : t.rows) out += csv_row(row);
  return out;
}

namespace {

nlohmann::ordered_json row_json(const std::vector<std::string>& columns,
                                const std::vector<Cell>& row) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (size_t i = 0; i < row.size(); ++i) {
    const Cell& c = row[i];
    if (std::holds_alternative<int64_t>(c))
      o[columns[i]] = std::get<int64_t>(c);
    else if (std::holds_alternative<double>(c))
      o[columns[i]] = std::stod(real_text(std::get<double>(c)));
    else if (std::holds_alternative<std::string>(c))
      o[columns[i]] = std::get<std::string>(c);
    else
      o[columns[i]] = nullptr;
  }
  return o;
}

}  // namespace

std::string json_row(const std::vector<std::string>& columns, const std::vector<Cell>& row) {
  // An element of an array dumped with an indent of 2: every line two spaces further in.
  const std::string text =
      row_json(columns, row).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out = "  ";
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out += "  ";
  }
  return out;
}

std::string to_json(const CostTable& t) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : t.rows) rows.push_back(row_json(t.columns, row));
  return rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

CsvText parse_csv(std::string_view text, std::string_view origin) {
  CsvText out;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, row_line = 1;
  auto end_row = [&] {
    if (!any && row.empty() && field.empty()) return;  // blank line
    row.push_back(std::move(field));
    field.clear();
    if (out.header.empty())
      out.header = std::move(row);
    else {
      out.rows.push_back(std::move(row));
      out.row_lines.push_back(row_line);
    }
    row.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty())
      quoted = any = true;
    else if (c == ',')
      row.push_back(std::move(field)), field.clear(), any = true;
    else if (c == '\r')
      continue;
    else if (c == '\n')
      end_row(), row_line = ++line;
    else
      field += c, any = true;
  }
  if (quoted)
    throw InputError(
        fmt::format("{}:{}: a quoted field is not closed; check the quotes", origin, row_line));
  end_row();
  for (size_t r = 0; r < out.rows.size(); ++r) {
    if (out.rows[r].size() != out.header.size())
      throw InputError(fmt::format("{}:{}: {} fields but the header has {}; check the row", origin,
                                   out.row_lines[r], out.rows[r].size(), out.header.size()));
  }
  return out;
}

}  // namespace shardcost::db
