#pragma once
// CSV text in: a header and rows of fields (RFC 4180 quoting, LF or CRLF).
#include <string>
#include <string_view>
#include <vector>

namespace shardcost::db {

struct CsvText {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> row_lines;  // 1-based line of each row, for error messages
};
// Throws InputError naming origin and the line.
CsvText parse_csv(std::string_view text, std::string_view origin);

}  // namespace shardcost::db
