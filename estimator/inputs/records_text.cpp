#include "records_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "json_fields.h"
#include "shardcost/error.h"

namespace shardcost {
namespace {

// Cells split at commas, each trimmed; a cell in double quotes (RFC 4180) keeps its commas,
// and "" inside it is one quote (a strategy "tp=8,pp=2", a model's JSON).
std::vector<std::string> split_csv_line(const std::string& line, const std::string& where) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size())
          throw InputError(fmt::format("{}: a quoted cell is not closed; end it with \"", where));
        if (line[i] == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          cell += '"';
          i += 2;
        } else if (line[i] == '"') {
          ++i;
          break;
        } else {
          cell += line[i++];
        }
      }
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i < line.size() && line[i] != ',')
        throw InputError(fmt::format("{}: text after a quoted cell; quote the whole cell", where));
    } else {
      const size_t end = std::min(line.find(',', i), line.size());
      cell = line.substr(i, end - i);
      const size_t b = cell.find_last_not_of(" \t\r");
      cell = b == std::string::npos ? "" : cell.substr(0, b + 1);
      i = end;
    }
    out.push_back(cell);
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return out;
}

std::string joined(const std::vector<std::string_view>& fields) {
  std::string out;
  for (auto f : fields) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

}  // namespace

double csv_number(const std::string& text, const std::string& where, const char* column) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v))
    throw InputError(fmt::format("{}: {} '{}' is not a number", where, column, text));
  return v;
}

void read_records(std::string_view text, std::string_view origin, const char* key,
                  const std::vector<std::string_view>& fields,
                  const std::vector<std::string_view>& required, const RecordReaders& read) {
  const std::string where(origin);
  const size_t first = text.find_first_not_of(" \t\r\n");
  size_t records = 0;
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    const auto j = parse_json_text(text, origin);
    const nlohmann::json* list = &j;
    if (j.is_object()) {
      JsonFields f(j, where);
      f.reject_unknown({key});
      list = f.optional_array(key);
      if (!list) f.fail(key, fmt::format("is missing; give {{\"{}\": [{{...}}, ...]}}", key));
    }
    if (!list->is_array()) throw InputError(fmt::format("{}: give an array of {}", where, key));
    for (size_t i = 0; i < list->size(); ++i)
      read.json((*list)[i], fmt::format("{} {}[{}]", where, key, i), records++);
  } else {
    std::istringstream in{std::string(text)};
    std::string line;
    std::vector<std::string> header;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      const size_t text_at = line.find_first_not_of(" \t\r");
      if (text_at == std::string::npos || line[text_at] == '#') continue;
      const auto cells = split_csv_line(line, fmt::format("{} line {}", where, line_no));
      if (header.empty()) {
        header = cells;
        for (size_t i = 0; i < header.size(); ++i)
          for (size_t k = 0; k < i; ++k)
            if (header[i] == header[k])
              throw InputError(fmt::format("{} line {}: the header names '{}' twice", where,
                                           line_no, header[i]));
        for (const auto& h : header)
          if (std::find(fields.begin(), fields.end(), h) == fields.end())
            throw InputError(fmt::format("{} line {}: unknown column '{}'; the columns are {}",
                                         where, line_no, h, joined(fields)));
        for (auto need : required)
          if (std::find(header.begin(), header.end(), need) == header.end())
            throw InputError(
                fmt::format("{} line {}: the header has no '{}' column", where, line_no, need));
        continue;
      }
      const std::string at = fmt::format("{} line {}", where, line_no);
      if (cells.size() != header.size())
        throw InputError(
            fmt::format("{}: {} cells where the header has {}", at, cells.size(), header.size()));
      std::map<std::string, std::string> row;
      for (size_t c = 0; c < cells.size(); ++c)
        if (!cells[c].empty()) row[header[c]] = cells[c];
      read.csv(row, at, records++);
    }
  }
  if (records == 0) throw InputError(fmt::format("{} holds no {}", where, key));
}

}  // namespace shardcost
