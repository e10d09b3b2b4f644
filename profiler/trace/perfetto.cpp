// Chrome trace-event JSON (the format ui.perfetto.dev and chrome://tracing load): one process
// per device, one thread per stream, "X" events in microseconds from the first event.
// Written with fmt rather than a JSON tree: a training step can hold millions of events.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <set>

#include "shardcost/trace.h"

namespace shardcost::trace {
namespace {

// Catapult's reserved colour names (Perfetto colours by name; chrome://tracing honours cname).
std::string_view colour(KernelClass c) {
  switch (c) {
    case KernelClass::gemm:
      return "good";
    case KernelClass::attention:
      return "rail_animation";
    case KernelClass::communication:
      return "terrible";
    case KernelClass::normalization:
      return "rail_idle";
    case KernelClass::elementwise:
      return "generic_work";
    case KernelClass::reduction:
      return "rail_load";
    case KernelClass::copy:
      return "thread_state_iowait";
    case KernelClass::set:
      return "yellow";
    case KernelClass::sync:
      return "grey";
    case KernelClass::other:
      return "olive";
  }
  return "olive";
}

void escape_into(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20)
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
    else
      out += ch;
  }
}

// Syncs are CPU-side waits; they get their own track so stream tracks nest cleanly.
constexpr int64_t kSyncTid = 2147483647;  // INT32_MAX: after every stream, valid as a tid

}  // namespace

std::string to_perfetto_json(const db::Measurements& trace) {
  std::string out;
  out.reserve(trace.kernels.size() * 160 + 4096);
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first_event = true;
  auto begin_event = [&] {
    if (!first_event) out += ",\n";
    first_event = false;
  };
  int64_t t0 = INT64_MAX;
  for (const auto& e : trace.kernels) t0 = std::min(t0, e.start_ns);

  for (size_t i = 0; i < trace.devices.size(); ++i) {
    const auto& d = trace.devices[i];
    begin_event();
    out += fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":")",
                       i + 1);
    escape_into(out, fmt::format("GPU {} {}{}", d.index, d.name,
                                 d.host.empty() ? "" : " (" + d.host + ")"));
    out += "\"}}";
    begin_event();
    out += fmt::format(
        R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
        i + 1, i);
  }
  std::set<std::pair<int, int64_t>> tracks;
  std::vector<Classification> classes(trace.names.size());
  std::vector<bool> known(trace.names.size(), false);
  for (const auto& e : trace.kernels) {
    const auto n = static_cast<size_t>(e.name);
    if (n >= trace.names.size()) continue;
    if (!known[n] || e.kind != db::EventKind::kernel) {
      const Classification c = classify(trace.names[n], e.kind);
      if (e.kind == db::EventKind::kernel)
        classes[n] = c, known[n] = true;
      else
        classes[n].cls = c.cls;  // per-kind class for copies, sets and syncs
    }
    const Classification& c = classes[n];
    const int64_t tid = e.kind == db::EventKind::sync ? kSyncTid : e.stream;
    tracks.insert({e.device, tid});
    begin_event();
    out += R"({"ph":"X","name":")";
    escape_into(out, trace.names[n]);
    out += fmt::format(
        R"(","cat":"{}","cname":"{}","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"class":"{}","kind":"{}")",
        to_string(c.cls), colour(c.cls), e.device + 1, tid,
        static_cast<double>(e.start_ns - t0) / 1000.0, static_cast<double>(e.duration_ns) / 1000.0,
        to_string(c.cls), db::to_string(e.kind));
    if (e.bytes > 0) out += fmt::format(R"(,"bytes":{})", e.bytes);
    if (!c.collective.empty()) out += fmt::format(R"(,"collective":"{}")", c.collective);
    if (!c.algorithm.empty()) out += fmt::format(R"(,"algorithm":"{}")", c.algorithm);
    out += "}}";
  }
  for (const auto& [device, tid] : tracks) {
    begin_event();
    out +=
        fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})",
                    device + 1, tid,
                    tid == kSyncTid ? std::string("synchronisation (CPU waits)")
                                    : fmt::format("stream {}", tid));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace shardcost::trace
