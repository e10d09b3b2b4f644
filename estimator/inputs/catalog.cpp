#include "catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "json_fields.h"
#include "shardcost/error.h"
#include "shardcost/estimator.h"

namespace shardcost::embedded {
std::string_view devices();
std::string_view edge_devices();
std::string_view systems();
std::string_view models();
}  // namespace shardcost::embedded

namespace shardcost::catalog {
namespace {

struct Parsed {
  nlohmann::json devices, systems, models;
};

const Parsed& parsed() {
  static const Parsed p = [] {
    Parsed out;
    out.devices = parse_json_text(embedded::devices(), "built-in devices.json").at("devices");
    out.systems = parse_json_text(embedded::systems(), "built-in systems.json").at("systems");
    out.models = parse_json_text(embedded::models(), "built-in models.json").at("models");
    return out;
  }();
  return p;
}

}  // namespace

const nlohmann::json& entries(std::string_view kind) {
  const Parsed& p = parsed();
  if (kind == "devices") return p.devices;
  if (kind == "systems") return p.systems;
  if (kind == "models") return p.models;
  throw InputError(fmt::format("unknown catalog kind '{}'; use devices, systems or models", kind));
}

const nlohmann::json* find(std::string_view kind, std::string_view name) {
  for (const auto& e : entries(kind)) {
    if (e.value("name", "") == name) return &e;
  }
  return nullptr;
}

std::string names_list(std::string_view kind, std::string_view near) {
  std::vector<std::string> names;
  for (const auto& e : entries(kind)) names.push_back(e.value("name", "?"));
  const std::string out = fmt::format("{}", fmt::join(names, ", "));
  if (near.empty()) return out;
  const std::string closest =
      closest_name(near, std::vector<std::string_view>(names.begin(), names.end()));
  return closest.empty() ? out : "did you mean '" + closest + "'? " + out;
}

}  // namespace shardcost::catalog

namespace shardcost {

std::string catalog_json() {
  nlohmann::json all;
  all["devices"] = catalog::entries("devices");
  all["systems"] = catalog::entries("systems");
  all["models"] = catalog::entries("models");
  all["edge_devices"] =
      parse_json_text(embedded::edge_devices(), "built-in edge_devices.json").at("edge_devices");
  return all.dump(2);
}

std::vector<std::string> catalog_names(std::string_view kind) {
  std::vector<std::string> out;
  for (const auto& e : catalog::entries(kind)) out.push_back(e.value("name", ""));
  return out;
}

}  // namespace shardcost
