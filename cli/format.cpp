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

void say_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) fmt::print(stderr, "shardcost: warning: {}\n", w);
}

}  // namespace shardcost::cli
