// Folding the per-process files of one traced command into one set of measurements, and
// rebuilding a run's events from the store's kernels table.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>

#include "shardcost/error.h"
#include "shardcost/trace.h"
#include "trace_file.h"

namespace shardcost::trace {
namespace {

class Builder {
 public:
  explicit Builder(db::Measurements& m) : m_(m) {}

  int32_t name(const std::string& text) {
    auto [it, inserted] = names_.try_emplace(text, static_cast<int32_t>(m_.names.size()));
    if (inserted) m_.names.push_back(text);
    return it->second;
  }
  // Devices are one per (host, uuid), or per (host, ordinal) when CUPTI gave no uuid.
  int device(const std::string& host, int index, const file::RawDevice* info) {
    const std::string key =
        info && !info->uuid.empty() ? info->uuid : host + "#" + std::to_string(index);
    auto [it, inserted] = devices_.try_emplace(key, static_cast<int>(m_.devices.size()));
    if (inserted) {
      db::DeviceRecord d;
      d.host = host;
      d.index = index;
      d.name = info ? info->name : "GPU " + std::to_string(index);
      if (info) {
        d.uuid = info->uuid;
        d.compute_capability =
            std::to_string(info->cc_major) + "." + std::to_string(info->cc_minor);
        d.memory_bytes = static_cast<int64_t>(info->memory_bytes);
        d.sm_clock_khz = info->core_clock_khz;
        d.sms = static_cast<int>(info->sms);
      }
      m_.devices.push_back(std::move(d));
    }
    return it->second;
  }

 private:
  db::Measurements& m_;
  std::unordered_map<std::string, int32_t> names_;
  std::unordered_map<std::string, int> devices_;
};

db::EventKind event_kind(file::RawKind k) {
  switch (k) {
    case file::RawKind::memcpy:
      return db::EventKind::memcpy;
    case file::RawKind::memset:
      return db::EventKind::memset;
    case file::RawKind::sync:
      return db::EventKind::sync;
    default:
      return db::EventKind::kernel;
  }
}

// Step number -> its earliest start and latest end over the processes.
using StepSpans = std::map<int64_t, std::pair<uint64_t, uint64_t>>;

void add_file(const file::Contents& f, Builder& b, Collected& out, std::string_view step_prefix,
              StepSpans& steps) {
  std::unordered_map<uint32_t, const file::RawDevice*> info;
  for (const auto& d : f.devices) info[d.id] = &d;
  std::unordered_map<uint32_t, uint32_t> context_device(f.contexts.begin(), f.contexts.end());
  std::unordered_map<uint32_t, int> device_index;  // CUPTI device id -> Measurements index
  uint32_t last_id = file::kNoDevice;  // events come in runs of one device: skip the hash
  int last_index = 0;
  auto device = [&](uint32_t id) {
    if (id == last_id) return last_index;
    last_id = id;
    auto it = device_index.find(id);
    if (it != device_index.end()) return last_index = it->second;
    auto i = info.find(id);
    const int index = b.device(f.host, static_cast<int>(id), i == info.end() ? nullptr : i->second);
    device_index.emplace(id, index);
    return last_index = index;
  };
  std::vector<int32_t> names(f.names.size());
  for (size_t i = 0; i < f.names.size(); ++i) names[i] = b.name(f.names[i]);

  auto& events = out.trace.kernels;
  events.reserve(events.size() + f.events.size());
  for (const auto& e : f.events) {
    if (e.kind == file::RawKind::runtime) {
      ++out.runtime_calls;
      continue;
    }
    if (e.kind == file::RawKind::range) {
      ++out.ranges;
      if (e.name >= f.names.size()) continue;
      if (const auto number = db::step_number(f.names[e.name], step_prefix)) {
        auto [it, added] = steps.try_emplace(*number, e.start_ns, e.end_ns);
        if (!added)
          it->second = {std::min(it->second.first, e.start_ns),
                        std::max(it->second.second, e.end_ns)};
      }
      continue;
    }
    uint32_t dev = e.device;
    if (dev == file::kNoDevice) {
      auto it = context_device.find(e.context);
      dev = it == context_device.end() ? 0 : it->second;
    }
    db::KernelEvent k;
    k.device = device(dev);
    k.stream = e.stream;
    k.kind = event_kind(e.kind);
    k.name = e.name < names.size() ? names[e.name] : b.name("?");
    k.start_ns = static_cast<int64_t>(e.start_ns);
    k.duration_ns = e.end_ns > e.start_ns ? static_cast<int64_t>(e.end_ns - e.start_ns) : 0;
    k.bytes = static_cast<int64_t>(e.bytes);
    if (e.kind == file::RawKind::kernel)
      k.launch = {e.grid[0], e.grid[1], e.grid[2], e.block[0], e.block[1], e.block[2]};
    events.push_back(k);
  }
  out.dropped_records += static_cast<int64_t>(f.dropped);
  for (const auto& w : f.warnings) {
    const std::string line = "process " + std::to_string(f.pid) + ": " + w;
    if (std::find(out.warnings.begin(), out.warnings.end(), line) == out.warnings.end())
      out.warnings.push_back(line);
  }
  if (f.truncated) ++out.truncated_files;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError("cannot read " + path.string());
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

}  // namespace

Collected collect_directory(const std::string& dir, std::string_view step_prefix) {
  namespace fs = std::filesystem;
  Collected out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("trace directory '" + dir + "' does not exist");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".sctrace") files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // stable device and name order across runs
  Builder b(out.trace);
  StepSpans steps;
  for (const auto& path : files) {
    add_file(file::decode(read_file(path), path.string()), b, out, step_prefix, steps);
    ++out.processes;
  }
  for (const auto& [number, span] : steps)
    out.trace.steps.push_back(
        {number, static_cast<int64_t>(span.first), static_cast<int64_t>(span.second - span.first)});
  const auto by_start = [](const db::KernelEvent& a, const db::KernelEvent& c) {
    return a.start_ns < c.start_ns;
  };
  if (!std::is_sorted(out.trace.kernels.begin(), out.trace.kernels.end(), by_start))
    std::stable_sort(out.trace.kernels.begin(), out.trace.kernels.end(), by_start);
  return out;
}

db::Measurements from_kernel_table(const db::CostTable& kernels) {
  db::Measurements m;
  Builder b(m);
  auto find = [&](std::string_view name) {
    for (size_t i = 0; i < kernels.columns.size(); ++i)
      if (kernels.columns[i] == name) return i;
    return kernels.columns.size();
  };
  auto column = [&](std::string_view name) {
    const size_t i = find(name);
    if (i == kernels.columns.size())
      throw Error("internal: the kernels table has no column '" + std::string(name) + "'");
    return i;
  };
  const size_t device = column("device"), host = column("host"), stream = column("stream"),
               kind = column("kind"), name = column("name"), start = column("start_ns"),
               duration = column("duration_ns"), bytes = column("bytes");
  const size_t ordinal = find("device_index");  // absent: devices by name and host only
  const size_t launch[6] = {find("grid_x_blocks"),   find("grid_y_blocks"),
                            find("grid_z_blocks"),   find("block_x_threads"),
                            find("block_y_threads"), find("block_z_threads")};
  auto integer = [](const db::Cell& c) {
    return std::holds_alternative<int64_t>(c) ? std::get<int64_t>(c) : int64_t{0};
  };
  auto text = [](const db::Cell& c) {
    return std::holds_alternative<std::string>(c) ? std::get<std::string>(c) : std::string();
  };
  auto cell = [](const std::vector<db::Cell>& row, size_t i) {
    return i < row.size() ? row[i] : db::Cell{};
  };
  std::unordered_map<std::string, int> device_index;
  for (const auto& row : kernels.rows) {
    const bool has_ordinal = std::holds_alternative<int64_t>(cell(row, ordinal));
    const std::string key = text(row[device]) + "\n" + text(row[host]) + "\n" +
                            (has_ordinal ? std::to_string(integer(cell(row, ordinal))) : "");
    auto [it, inserted] = device_index.try_emplace(key, static_cast<int>(m.devices.size()));
    if (inserted) {
      db::DeviceRecord d;
      d.name = text(row[device]);
      d.host = text(row[host]);
      d.index = has_ordinal ? static_cast<int>(integer(cell(row, ordinal)))
                            : static_cast<int>(m.devices.size());
      m.devices.push_back(std::move(d));
    }
    db::KernelEvent e;
    e.device = it->second;
    e.stream = integer(row[stream]);
    const std::string k = text(row[kind]);
    e.kind = k == "memcpy"   ? db::EventKind::memcpy
             : k == "memset" ? db::EventKind::memset
             : k == "sync"   ? db::EventKind::sync
                             : db::EventKind::kernel;
    e.name = b.name(text(row[name]));
    e.start_ns = integer(row[start]);
    e.duration_ns = integer(row[duration]);
    e.bytes = integer(row[bytes]);
    auto dim = [&](int i) { return static_cast<int32_t>(integer(cell(row, launch[i]))); };
    e.launch = {dim(0), dim(1), dim(2), dim(3), dim(4), dim(5)};
    m.kernels.push_back(e);
  }
  return m;
}

}  // namespace shardcost::trace
