#pragma once
// Turning records into text: aligned tables, JSON objects, CSV rows.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/estimator.h"
#include "shardcost/request.h"  // json_text, to_json of estimates
#include "shardcost/units.h"    // round6

namespace shardcost::cli {

enum class Format { text, json, csv };

Format parse_format(const std::string& s, const std::vector<Format>& allowed);

class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right_aligned = {});
  void add(std::vector<std::string> row);
  std::string render(int indent = 0) const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string csv_escape(const std::string&);
// "1,234,567"
std::string thousands(double value);
// Text from files (kernel names, values in error messages) as the terminal may show it: each
// control character (a newline, an escape sequence's ESC, DEL) spelled \xNN; UTF-8 kept.
std::string printable(std::string_view text);

// Warnings of a report or a store's fitted models, one line each on stderr.
void say_warnings(const std::vector<std::string>&);

// An output file checked before a long command starts: its folder exists and can be written,
// and the path is not a folder; one line naming `option` otherwise.
void check_output_path(const std::string& path, const char* option);

}  // namespace shardcost::cli
