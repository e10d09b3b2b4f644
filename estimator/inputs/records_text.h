#pragma once
// Files of records (jobs, embedding tables): a JSON array of objects, as {"<key>": [...]} or
// [...], or CSV whose header names the same fields. Read strictly: an unknown field or column,
// a row of the wrong width, no records at all are errors naming the file and the line.
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost {

struct RecordReaders {
  // A JSON record (an object, checked by the caller) and where it is ("file 'x' jobs[2]").
  std::function<void(const nlohmann::json&, const std::string& where, size_t index)> json;
  // A CSV row: its non-empty cells by column, and where it is ("file 'x' line 3").
  std::function<void(const std::map<std::string, std::string>&, const std::string& where,
                     size_t index)>
      csv;
};

// key: the JSON object's array ("jobs"); fields: the columns a CSV header may name, required:
// those it must. Throws InputError.
void read_records(std::string_view text, std::string_view origin, const char* key,
                  const std::vector<std::string_view>& fields,
                  const std::vector<std::string_view>& required, const RecordReaders&);

// A CSV cell as a finite number, or an InputError naming the column and the line.
double csv_number(const std::string& text, const std::string& where, const char* column);

}  // namespace shardcost
