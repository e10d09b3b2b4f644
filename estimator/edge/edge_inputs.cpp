// The edge catalog and devices files of split learning.
#include <fmt/format.h>

#include "inputs/json_fields.h"
#include "shardcost/error.h"
#include "shardcost/split_learning.h"
#include "shardcost/units.h"

namespace shardcost {
namespace embedded {
std::string_view edge_devices();
}
namespace {

using units::kGB;
using units::kGiB;

EdgeDevice parse_edge_device(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where);
  EdgeDevice d;
  d.name = f.required_string("name");
  d.description = f.optional_string("description").value_or("");
  const nlohmann::json* peaks = f.optional_object("peak_gflops");
  if (!peaks) f.fail("peak_gflops", "is missing; add {\"fp32\": <GFLOP/s>, \"fp16\": ...}");
  JsonFields p(*peaks, where + " peak_gflops");
  d.fp32_flops = p.required_number("fp32", 0.001) * 1e9;
  d.fp16_flops = p.optional_number("fp16", 0.001).value_or(0) * 1e9;
  d.memory_bytes = f.required_number("memory_GiB", 0.001) * kGiB;
  d.memory_bandwidth_Bps = f.required_number("memory_bandwidth_GBps", 0.001) * kGB;
  const nlohmann::json* eff = f.optional_object("efficiency");
  if (!eff) f.fail("efficiency", "is missing; add {\"compute\": 0.5, \"memory\": 0.7}");
  JsonFields e(*eff, where + " efficiency");
  d.compute_efficiency = e.required_number("compute", 0.001);
  d.compute_fp16_efficiency = e.optional_number("compute_fp16", 0.001).value_or(0);
  d.memory_efficiency = e.required_number("memory", 0.001);
  for (const char* key : {"compute", "memory"})
    if (e.required_number(key, 0.001) > 1) e.fail(key, "must be a fraction in (0, 1]");
  return d;
}

}  // namespace

std::vector<EdgeDevice> edge_devices() {
  const nlohmann::json j = parse_json_text(embedded::edge_devices(), "built-in edge_devices.json");
  std::vector<EdgeDevice> out;
  for (const auto& d : j.at("edge_devices"))
    out.push_back(parse_edge_device(d, "built-in edge device"));
  return out;
}

EdgeDevice find_edge_device(std::string_view name) {
  std::string names;
  for (EdgeDevice& d : edge_devices()) {
    if (d.name == name) return d;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  throw InputError(
      fmt::format("unknown edge device '{}'; use {} (or give the device's fields)", name, names));
}

SplitSetup parse_split_devices_json(std::string_view text, std::string_view origin) {
  const nlohmann::json j = parse_json_text(text, origin);
  const std::string where = fmt::format("devices file '{}'", origin);
  if (!j.is_object()) throw InputError(fmt::format("{}: must be a JSON object", where));
  JsonFields f(j, where);
  f.reject_unknown({"shared_uplink_Mbps", "devices", "description"});
  SplitSetup s;
  s.shared_uplink_Bps = f.optional_number("shared_uplink_Mbps", 0.001).value_or(0) * 1e6 / 8;
  const nlohmann::json* list = f.optional_array("devices");
  if (!list || list->empty())
    f.fail("devices",
           "is missing or empty; list the devices: [{\"name\": ..., \"device\": "
           "\"jetson-nano\", \"uplink_Mbps\": ..., \"downlink_Mbps\": ..., \"batch\": ...}]");
  if (list->size() > 1024) f.fail("devices", "lists more than 1,024 devices");
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& d = (*list)[i];
    const std::string at = fmt::format("{} devices[{}]", where, i);
    if (!d.is_object()) throw InputError(fmt::format("{}: must be an object", at));
    JsonFields df(d, at);
    df.reject_unknown({"name", "device", "uplink_Mbps", "downlink_Mbps", "batch"});
    SplitClient c;
    c.name = df.optional_string("name").value_or(fmt::format("device{}", i));
    const auto it = d.find("device");
    if (it != d.end() && it->is_object())
      c.device = parse_edge_device(*it, at + " device");
    else
      c.device = find_edge_device(df.required_string("device"));
    c.uplink_Bps = df.required_number("uplink_Mbps", 0.001) * 1e6 / 8;
    c.downlink_Bps = df.required_number("downlink_Mbps", 0.001) * 1e6 / 8;
    c.batch = df.required_int("batch", 1, 1 << 20);
    for (size_t k = 0; k < s.clients.size(); ++k)  // at most 1,024 devices
      if (s.clients[k].name == c.name)
        throw InputError(
            fmt::format("{}: name '{}' is already devices[{}]'s; give each device "
                        "its own name",
                        at, c.name, k));
    s.clients.push_back(std::move(c));
  }
  return s;
}

SplitSetup load_split_devices(std::string_view path) {
  return parse_split_devices_json(read_text_file(path, "devices file"), path);
}

}  // namespace shardcost
