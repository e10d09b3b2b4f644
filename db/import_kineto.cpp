// PyTorch profiler / Kineto Chrome trace. GPU events are complete events ("ph": "X") with
// categories kernel, gpu_memcpy and gpu_memset (older Kineto: Kernel, Memcpy, Memset), times
// in microseconds, and args.device / args.stream. Events are read one at a time and dropped,
// so a trace of millions of events never sits in memory as JSON.
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

using nlohmann::json;

std::optional<EventKind> gpu_kind(std::string cat) {
  for (auto& c : cat) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (cat == "kernel") return EventKind::kernel;
  if (cat == "gpu_memcpy" || cat == "memcpy") return EventKind::memcpy;
  if (cat == "gpu_memset" || cat == "memset") return EventKind::memset;
  return std::nullopt;
}

// Kineto's kernel args "grid": [x, y, z] and "block": [x, y, z]; unknown when either is missing.
LaunchConfig launch(const json& args) {
  int32_t dims[6] = {};
  const char* keys[2] = {"grid", "block"};
  for (int k = 0; k < 2; ++k) {
    const auto it = args.find(keys[k]);
    if (it == args.end() || !it->is_array() || it->size() != 3) return {};
    for (size_t d = 0; d < 3; ++d) {
      const json& v = (*it)[d];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > INT32_MAX) return {};
      dims[k * 3 + static_cast<int>(d)] = static_cast<int32_t>(v.get<int64_t>());
    }
  }
  return {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]};
}

int64_t us_to_ns(const json& v) {
  return v.is_number() ? std::llround(v.get<double>() * 1000.0) : 0;
}

struct Reader {
  Measurements& m;
  std::unordered_map<std::string, int32_t> names;
  std::map<int64_t, int> device_of;  // CUDA device id -> index in m.devices
  std::map<int64_t, DeviceRecord> properties;
  int64_t events = 0;

  int device(int64_t id) {
    if (auto it = device_of.find(id); it != device_of.end()) return it->second;
    DeviceRecord d;
    if (auto p = properties.find(id); p != properties.end())
      d = p->second;
    else
      d.name = "unknown GPU";
    d.index = static_cast<int>(id);
    m.devices.push_back(d);
    return device_of[id] = static_cast<int>(m.devices.size() - 1);
  }

  void event(const json& e) {
    ++events;
    if (!e.is_object() || e.value("ph", "") != "X") return;
    const std::string cat = e.value("cat", "");
    // The profiler's step spans (host side; the GPU-side copy of each is skipped).
    if (cat.rfind("gpu_", 0) != 0) {
      const std::string name = e.value("name", "");
      constexpr std::string_view kStep = "ProfilerStep#";
      if (name.rfind(kStep, 0) == 0) {
        int64_t number = 0;
        const auto [ptr, ec] =
            std::from_chars(name.data() + kStep.size(), name.data() + name.size(), number);
        const int64_t dur = us_to_ns(e.value("dur", json()));
        if (ec == std::errc() && ptr == name.data() + name.size() && dur > 0)
          m.steps.push_back({number, us_to_ns(e.value("ts", json())), dur});
        return;
      }
    }
    const auto kind = gpu_kind(cat);
    if (!kind) return;
    const json args = e.value("args", json::object());
    KernelEvent k;
    k.kind = *kind;
    k.device = device(args.value("device", int64_t{0}));
    k.stream = args.value("stream", int64_t{e.value("tid", int64_t{0})});
    k.start_ns = us_to_ns(e.value("ts", json()));
    k.duration_ns = us_to_ns(e.value("dur", json()));
    k.bytes = args.value("bytes", int64_t{0});
    if (k.kind == EventKind::kernel) k.launch = launch(args);
    const std::string name = e.value("name", "");
    auto [it, added] = names.emplace(name, static_cast<int32_t>(m.names.size()));
    if (added) m.names.push_back(name);
    k.name = it->second;
    m.kernels.push_back(k);
  }
};

DeviceRecord device_properties(const json& p) {
  DeviceRecord d;
  d.name = p.value("name", "unknown GPU");
  d.memory_bytes = p.value("totalGlobalMem", int64_t{0});
  d.sms = p.value("numSms", 0);
  if (p.contains("computeMajor"))
    d.compute_capability = std::to_string(p.value("computeMajor", 0)) + "." +
                           std::to_string(p.value("computeMinor", 0));
  return d;
}

}  // namespace

Measurements import_kineto(std::string_view text, std::string_view source) {
  Measurements m;
  m.run.tool = "kineto";
  m.run.source = std::string(source);
  m.run.uuid = content_uuid("kineto", text);
  Reader reader{m, {}, {}, {}, 0};
  int64_t base_ns = 0;
  bool saw_events = false, in_events = false;
  std::vector<json> pending;  // events seen before deviceProperties (the order is not fixed)
  // Top-level members end at depth 1; an event object ends at depth 2 inside traceEvents.
  auto callback = [&](int depth, json::parse_event_t ev, json& parsed) {
    using E = json::parse_event_t;
    if (ev == E::key && depth == 1) {
      in_events = parsed == "traceEvents";
      saw_events = saw_events || in_events;
    }
    if (ev == E::object_end && depth == 2 && in_events) {
      pending.push_back(std::move(parsed));
      if (!reader.properties.empty() || pending.size() > 4096) {
        for (const auto& e : pending) reader.event(e);
        pending.clear();
      }
      return false;  // dropped from the document
    }
    if (ev == E::array_end && depth == 1 && !in_events && !parsed.empty() &&
        parsed[0].is_object() && parsed[0].contains("totalGlobalMem")) {
      for (const auto& p : parsed)
        reader.properties[p.value("id", int64_t{0})] = device_properties(p);
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, callback);
  } catch (const json::parse_error& e) {
    throw InputError(std::string(source) + ": not valid JSON (" + e.what() +
                     "); is the trace complete?");
  }
  if (!doc.is_object() || !saw_events)
    throw InputError(std::string(source) +
                     ": no 'traceEvents' list; is this a PyTorch profiler "
                     "(Kineto) Chrome trace?");
  for (const auto& e : pending) reader.event(e);
  if (doc.contains("baseTimeNanoseconds") && doc["baseTimeNanoseconds"].is_number_integer())
    base_ns = doc["baseTimeNanoseconds"].get<int64_t>();
  if (base_ns)
    for (auto& k : m.kernels) k.start_ns += base_ns;
  for (auto& st : m.steps) st.start_ns += base_ns;
  if (m.kernels.empty())
    throw InputError(std::string(source) +
                     ": the trace has no GPU events (kernel, gpu_memcpy, "
                     "gpu_memset); was it recorded with ProfilerActivity.CUDA?");
  return m;
}

}  // namespace shardcost::db
