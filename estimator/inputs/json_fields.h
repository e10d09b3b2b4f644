#pragma once
// Reading typed fields out of JSON objects with errors that name the file, the field and the
// fix. Used by every loader in the estimator.
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcost/closest.h"

namespace shardcost {

class JsonFields {
 public:
  // where: "model file 'x.json'", "cluster 'dgx-h100' node_groups[1]" ...
  JsonFields(const nlohmann::json& object, std::string where);

  // max_value: the largest the field may be (stated in the error when it is passed).
  int required_int(const char* key, int min_value,
                   int max_value = std::numeric_limits<int>::max()) const;
  std::optional<int> optional_int(const char* key, int min_value,
                                  int max_value = std::numeric_limits<int>::max()) const;
  double required_number(const char* key, double min_value) const;
  std::optional<double> optional_number(const char* key, double min_value) const;
  std::string required_string(const char* key) const;
  std::optional<std::string> optional_string(const char* key) const;
  std::optional<bool> optional_bool(const char* key) const;
  const nlohmann::json* optional_object(const char* key) const;
  const nlohmann::json* optional_array(const char* key) const;
  [[noreturn]] void fail(const char* key, const std::string& what) const;
  // A field not in `known` is an error naming it (a misspelt optional field would otherwise
  // silently take its default), with the closest known name when one is near.
  void reject_unknown(const std::vector<std::string_view>& known) const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& object_;
  std::string where_;
};

// Parses JSON text; a syntax error becomes an InputError naming origin, line and column.
nlohmann::json parse_json_text(std::string_view text, std::string_view origin);
// Reads a whole file; a missing or unreadable file is an InputError.
std::string read_text_file(std::string_view path, std::string_view what);

}  // namespace shardcost
