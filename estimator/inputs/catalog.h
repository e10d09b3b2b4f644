#pragma once
// The built-in catalog: JSON files under data/catalog embedded into the binary at build time.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shardcost::catalog {

// The parsed catalog kind ("devices", "systems", "models"): an array of entries.
const nlohmann::json& entries(std::string_view kind);
// The entry with this name, or nullptr.
const nlohmann::json* find(std::string_view kind, std::string_view name);
// "a, b, c": the names of one kind, for error messages; with `near`, the closest name to it
// first when one is within 2 edits ("did you mean 'llama3-8b'? a, b, c").
std::string names_list(std::string_view kind, std::string_view near = {});

}  // namespace shardcost::catalog
