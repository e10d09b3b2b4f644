#include "json_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "shardcost/error.h"

namespace shardcost {

JsonFields::JsonFields(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) throw InputError(fmt::format("{}: expected a JSON object", where_));
}

void JsonFields::fail(const char* key, const std::string& what) const {
  throw InputError(fmt::format("{}: field '{}' {}", where_, key, what));
}

void JsonFields::reject_unknown(const std::vector<std::string_view>& known) const {
  if (!object_.is_object()) return;
  for (const auto& [key, value] : object_.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string closest = closest_name(key, known);
    throw InputError(
        fmt::format("{}: unknown field '{}'{}; the fields are {}", where_,
                    key.size() > 40 ? key.substr(0, 40) + "..." : key,
                    closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest),
                    fmt::join(known, ", ")));
  }
}

namespace {
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}
}  // namespace

std::optional<int> JsonFields::optional_int(const char* key, int min_value, int max_value) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    fail(key,
         fmt::format("must be an integer (got {}); write it as e.g. {}", shown(*it), min_value));
  // A number too large for int64 reads as unsigned: still too large, said plainly.
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max_value))
    fail(key, fmt::format("must be an integer <= {} (got {}); correct the value", max_value,
                          shown(*it)));
  const auto v = it->get<int64_t>();
  if (v < min_value)
    fail(key, fmt::format("must be an integer >= {} (got {}); correct the value", min_value, v));
  if (v > max_value)
    fail(key, fmt::format("must be an integer <= {} (got {}); correct the value", max_value, v));
  return static_cast<int>(v);
}

int JsonFields::required_int(const char* key, int min_value, int max_value) const {
  auto v = optional_int(key, min_value, max_value);
  if (!v) fail(key, fmt::format("is missing; add it as an integer >= {}", min_value));
  return *v;
}

std::optional<double> JsonFields::optional_number(const char* key, double min_value) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) fail(key, fmt::format("must be a number (got {})", shown(*it)));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < min_value)
    fail(key, fmt::format("must be a number >= {} (got {}); correct the value", min_value, v));
  return v;
}

double JsonFields::required_number(const char* key, double min_value) const {
  auto v = optional_number(key, min_value);
  if (!v) fail(key, fmt::format("is missing; add it as a number >= {}", min_value));
  return *v;
}

std::optional<std::string> JsonFields::optional_string(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail(key, fmt::format("must be a string (got {})", shown(*it)));
  return it->get<std::string>();
}

std::string JsonFields::required_string(const char* key) const {
  auto v = optional_string(key);
  if (!v) fail(key, "is missing; add it as a string");
  return *v;
}

std::optional<bool> JsonFields::optional_bool(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail(key, fmt::format("must be true or false (got {})", shown(*it)));
  return it->get<bool>();
}

const nlohmann::json* JsonFields::optional_object(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  if (!it->is_object()) fail(key, fmt::format("must be an object (got {})", shown(*it)));
  return &*it;
}

const nlohmann::json* JsonFields::optional_array(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  if (!it->is_array()) fail(key, fmt::format("must be an array (got {})", shown(*it)));
  return &*it;
}

namespace {
// Deeper than any model, cluster or plan file: nesting past it is refused while parsing, before
// anything walks the value recursively (printing it in a message overflowed the stack).
constexpr int kMaxJsonDepth = 64;
struct TooDeep {};
struct DuplicateKey {
  std::string key;
};
}  // namespace

nlohmann::json parse_json_text(std::string_view text, std::string_view origin) {
  // The keys of each object being read, innermost last: a key given twice is refused (the
  // parser would keep the last silently, and the first may be the one meant).
  std::vector<std::unordered_set<std::string>> keys;
  using Event = nlohmann::json::parse_event_t;
  try {
    return nlohmann::json::parse(text.begin(), text.end(),
                                 [&keys](int depth, Event event, nlohmann::json& parsed) {
                                   if (depth > kMaxJsonDepth) throw TooDeep{};
                                   if (event == Event::object_start) {
                                     keys.emplace_back();
                                   } else if (event == Event::object_end) {
                                     keys.pop_back();
                                   } else if (event == Event::key && !keys.empty()) {
                                     std::string key = parsed.get<std::string>();
                                     if (!keys.back().insert(key).second)
                                       throw DuplicateKey{std::move(key)};
                                   }
                                   return true;
                                 });
  } catch (const TooDeep&) {
    throw InputError(
        fmt::format("{}: the JSON nests deeper than {} levels; no model, cluster or plan file does",
                    origin, kMaxJsonDepth));
  } catch (const DuplicateKey& d) {
    throw InputError(fmt::format(
        "{}: key '{}' is given twice in one object; keep the one meant (JSON readers differ in "
        "which they take)",
        origin, d.key));
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the error; turn it into line:column.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(fmt::format("{}: malformed JSON at line {}, column {}; fix the syntax there",
                                 origin, line, col));
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value the parser cannot hold: a number out of range (1e400).
    // The library's own text names its exception ids; ours names the problem.
    throw InputError(
        fmt::format("{}: a JSON value cannot be read{}; fix the value", origin,
                    e.id == 406 ? " (a number too large for a double, such as 1e400)" : ""));
  }
}

std::string read_text_file(std::string_view path, std::string_view what) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in)
    throw InputError(
        fmt::format("cannot open {} '{}': no such file, and it is not a catalog name "
                    "(see 'shardcost catalog')",
                    what, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("cannot read {} '{}'", what, path));
  return ss.str();
}

}  // namespace shardcost
