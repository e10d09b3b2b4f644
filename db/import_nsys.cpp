// Nsight Systems reports exported to SQLite (`nsys export --type sqlite`): GPU kernels (NCCL's
// among them), memory copies and sets, the devices, and NVTX ranges named as training steps.
// The export's schema changes between releases: every table and column is looked up before it
// is read, what a release leaves out is taken as unknown, and what the import cannot do
// without is refused in one line naming the table and column.
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "sqlite.h"

namespace shardcost::db {
namespace {

constexpr const char* kKernels = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kCopies = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kSets = "CUPTI_ACTIVITY_KIND_MEMSET";
// The longest a GPU event may last (a day, in ns): past it, the row is not a time.
constexpr int64_t kMaxEventNs = int64_t{86400} * 1000000000;

// CUPTI's copy kinds (CUpti_ActivityMemcpyKind), for exports without ENUM_CUDA_MEMCPY_OPER.
const std::map<int64_t, std::string> kCopyKinds = {
    {0, "Unknown"},          {1, "Host-to-Device"}, {2, "Device-to-Host"},  {3, "Host-to-Array"},
    {4, "Array-to-Host"},    {5, "Array-to-Array"}, {6, "Array-to-Device"}, {7, "Device-to-Array"},
    {8, "Device-to-Device"}, {9, "Host-to-Host"},   {10, "Peer-to-Peer"}};

// SQLite files start with these 16 bytes.
void check_sqlite_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[16] = {};
  f.read(head, sizeof head);
  if (f.gcount() != sizeof head || std::string_view(head, 15) != "SQLite format 3")
    throw InputError(
        fmt::format("{}: not an SQLite file; export the report first: nsys export --type sqlite "
                    "--output report.sqlite report.nsys-rep",
                    path));
}

// The file's content hash, read in chunks: the run's identity (one export, one run).
std::string file_uuid(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  StreamHash hash;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (f.gcount() > 0) hash.update(std::string_view(buf.data(), static_cast<size_t>(f.gcount())));
  }
  return hash.uuid("nsys");
}

class NsysReader {
 public:
  NsysReader(const std::string& path, std::string_view step_prefix)
      : path_(path), step_prefix_(step_prefix), c_(path, Connection::Access::read_only) {
    auto q = c_.prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
    while (q.step()) tables_.insert(q.text(0));
  }

  Measurements read() {
    m_.run.tool = "nsys";
    m_.run.source = path_;
    if (!tables_.count(kKernels) && !tables_.count(kCopies) && !tables_.count(kSets))
      throw InputError(
          fmt::format("{}: no CUDA activity in the export (no {}, {} or {} table); was the report "
                      "recorded with --trace=cuda?",
                      path_, kKernels, kCopies, kSets));
    read_strings();
    read_devices();
    if (tables_.count(kKernels)) read_kernels();
    if (tables_.count(kCopies)) read_events(kCopies, EventKind::memcpy);
    if (tables_.count(kSets)) read_events(kSets, EventKind::memset);
    if (m_.kernels.empty())
      throw InputError(fmt::format("{}: the export has no GPU kernels, copies or sets", path_));
    if (tables_.count("NVTX_EVENTS")) read_steps();
    base_time();
    return std::move(m_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", path_, what));
  }
  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> out;
    auto q = c_.prepare(fmt::format("PRAGMA table_info(\"{}\")", table));
    while (q.step()) out.insert(q.text(1));
    return out;
  }
  void need(const std::string& table, const std::set<std::string>& have,
            std::initializer_list<const char*> wanted) const {
    for (const char* w : wanted)
      if (!have.count(w))
        fail(
            fmt::format("{} has no column '{}' (an Nsight Systems release shardcost does not "
                        "read; export with nsys 2021 or later)",
                        table, w));
  }

  void read_strings() {
    if (!tables_.count("StringIds")) return;
    auto q = c_.prepare("SELECT id, value FROM StringIds");
    while (q.step()) strings_[q.int64(0)] = q.text(1);
  }
  // A name column's value: a StringIds id (most releases) or the text itself.
  std::string name_of(const Statement& q, int col, const char* table, int64_t row) const {
    if (q.is_null(col)) return {};
    const Cell cell = q.cell(col);
    if (const auto* id = std::get_if<int64_t>(&cell)) {
      auto it = strings_.find(*id);
      if (it == strings_.end())
        fail(fmt::format("{} row {}: name id {} is not in StringIds", table, row, *id));
      return it->second;
    }
    return q.text(col);
  }
  int32_t intern(const std::string& name) {
    auto [it, fresh] = names_.emplace(name, static_cast<int32_t>(m_.names.size()));
    if (fresh) m_.names.push_back(name);
    return it->second;
  }

  // TARGET_INFO_GPU: one row per GPU; the CUDA device is cuDevice where the release has it,
  // else the row's id. Kept with every row's properties; devices the events name but the
  // table does not are "unknown GPU".
  void read_devices() {
    if (!tables_.count("TARGET_INFO_GPU")) return;
    const auto have = columns("TARGET_INFO_GPU");
    need("TARGET_INFO_GPU", have, {"id", "name"});
    auto col = [&](const char* c) { return have.count(c) ? std::string(c) : "NULL"; };
    auto q = c_.prepare(fmt::format("SELECT {}, name, {}, {}, {}, {} FROM TARGET_INFO_GPU",
                                    have.count("cuDevice") ? "coalesce(cuDevice, id)" : "id",
                                    col("totalMemory"), col("busLocation"), col("smCount"),
                                    col("uuid")));
    while (q.step()) {
      DeviceRecord d;
      d.index = static_cast<int>(q.int64(0));
      d.name = q.is_null(1) ? "unknown GPU" : q.text(1);
      if (!q.is_null(2)) d.memory_bytes = q.int64(2);
      if (!q.is_null(3)) d.pci_bus = q.text(3);
      if (!q.is_null(4)) d.sms = static_cast<int>(q.int64(4));
      if (!q.is_null(5)) d.uuid = q.text(5);
      properties_[q.int64(0)] = d;
    }
  }
  int device(int64_t id) {
    if (auto it = device_of_.find(id); it != device_of_.end()) return it->second;
    DeviceRecord d;
    d.name = "unknown GPU";
    if (auto p = properties_.find(id); p != properties_.end()) d = p->second;
    d.index = static_cast<int>(id);
    m_.devices.push_back(d);
    return device_of_[id] = static_cast<int>(m_.devices.size() - 1);
  }

  // start and end of a row, checked: a time, in order, at most a day apart.
  void times(const Statement& q, const char* table, int64_t row, KernelEvent& k) const {
    if (q.is_null(0) || q.is_null(1))
      fail(fmt::format("{} row {} has no start or end", table, row));
    const int64_t start = q.int64(0), end = q.int64(1);
    if (start < 0 || end < start || end - start > kMaxEventNs)
      fail(fmt::format("{} row {}: start {} and end {} are not an event's times in ns", table, row,
                       start, end));
    k.start_ns = start;
    k.duration_ns = end - start;
  }

  void read_kernels() {
    const auto have = columns(kKernels);
    need(kKernels, have, {"start", "end", "deviceId", "streamId"});
    const char* name_col = nullptr;
    for (const char* c : {"demangledName", "shortName", "mangledName", "name"})
      if (have.count(c)) {
        name_col = c;
        break;
      }
    if (!name_col)
      fail(
          fmt::format("{} has no kernel name column (demangledName, shortName or name)", kKernels));
    const bool launch = have.count("gridX") && have.count("gridY") && have.count("gridZ") &&
                        have.count("blockX") && have.count("blockY") && have.count("blockZ");
    auto q = c_.prepare(fmt::format(
        "SELECT start, end, deviceId, streamId, {}, rowid{} FROM {} ORDER BY start", name_col,
        launch ? ", gridX, gridY, gridZ, blockX, blockY, blockZ" : "", kKernels));
    while (q.step()) {
      const int64_t row = q.int64(5);
      KernelEvent k;
      k.kind = EventKind::kernel;
      times(q, kKernels, row, k);
      k.device = device(q.int64(2));
      k.stream = q.int64(3);
      const std::string name = name_of(q, 4, kKernels, row);
      if (name.empty()) fail(fmt::format("{} row {} has no kernel name", kKernels, row));
      k.name = intern(name);
      if (launch) {
        int64_t d[6];
        bool ok = true;
        for (int i = 0; i < 6; ++i) {
          d[i] = q.is_null(6 + i) ? 0 : q.int64(6 + i);
          ok = ok && d[i] >= 1 && d[i] <= INT32_MAX;
        }
        if (ok)
          k.launch = {static_cast<int32_t>(d[0]), static_cast<int32_t>(d[1]),
                      static_cast<int32_t>(d[2]), static_cast<int32_t>(d[3]),
                      static_cast<int32_t>(d[4]), static_cast<int32_t>(d[5])};
      }
      m_.kernels.push_back(k);
    }
  }

  // Copies ("Memcpy Host-to-Device") and sets ("Memset"), with their bytes.
  void read_events(const char* table, EventKind kind) {
    const auto have = columns(table);
    need(table, have, {"start", "end", "deviceId", "streamId", "bytes"});
    const bool copy = kind == EventKind::memcpy && have.count("copyKind");
    std::map<int64_t, std::string> labels = kCopyKinds;
    if (copy && tables_.count("ENUM_CUDA_MEMCPY_OPER") &&
        columns("ENUM_CUDA_MEMCPY_OPER").count("label")) {
      auto e = c_.prepare("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER");
      while (e.step()) labels[e.int64(0)] = e.text(1);
    }
    auto q =
        c_.prepare(fmt::format("SELECT start, end, deviceId, streamId, bytes, rowid{} FROM {} "
                               "ORDER BY start",
                               copy ? ", copyKind" : "", table));
    while (q.step()) {
      const int64_t row = q.int64(5);
      KernelEvent k;
      k.kind = kind;
      times(q, table, row, k);
      k.device = device(q.int64(2));
      k.stream = q.int64(3);
      k.bytes = q.is_null(4) ? 0 : q.int64(4);
      if (k.bytes < 0) fail(fmt::format("{} row {}: bytes {} is negative", table, row, k.bytes));
      std::string name = "Memset";
      if (kind == EventKind::memcpy) {
        name = "Memcpy";
        if (copy && !q.is_null(6)) {
          auto it = labels.find(q.int64(6));
          name += " " + (it == labels.end() ? fmt::format("kind {}", q.int64(6)) : it->second);
        }
      }
      k.name = intern(name);
      m_.kernels.push_back(k);
    }
  }

  // NVTX ranges (push/pop 59, start/end 60) named <prefix><number> are the steps.
  void read_steps() {
    const auto have = columns("NVTX_EVENTS");
    if (!have.count("start") || !have.count("end") || !have.count("eventType")) return;
    const bool by_id = have.count("textId") && tables_.count("StringIds");
    const bool inline_text = have.count("text");
    if (!by_id && !inline_text) return;
    auto q = c_.prepare(fmt::format(
        "SELECT start, end, {}, rowid FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS "
        "NOT NULL",
        by_id && inline_text ? "coalesce(text, (SELECT value FROM StringIds WHERE id = textId))"
        : by_id              ? "(SELECT value FROM StringIds WHERE id = textId)"
                             : "text"));
    while (q.step()) {
      if (q.is_null(2)) continue;
      const auto number = step_number(q.text(2), step_prefix_);
      if (!number) continue;
      const int64_t start = q.int64(0), end = q.int64(1);
      if (start < 0 || end < start)
        fail(fmt::format("NVTX_EVENTS row {}: step range {} has start {} after end {}", q.int64(3),
                         q.text(2), start, end));
      m_.steps.push_back({*number, start, end - start});
    }
  }

  // Event times are ns from the session's start; where the export says when that was, they
  // become Unix epoch times like every other trace's.
  void base_time() {
    if (!tables_.count("TARGET_INFO_SESSION_START_TIME") ||
        !columns("TARGET_INFO_SESSION_START_TIME").count("utcEpochNs"))
      return;
    auto q = c_.prepare("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
    if (!q.step() || q.is_null(0)) return;
    const int64_t base = q.int64(0);
    int64_t last = 0;
    for (const auto& k : m_.kernels) last = std::max(last, k.start_ns + k.duration_ns);
    for (const auto& s : m_.steps) last = std::max(last, s.start_ns + s.duration_ns);
    if (base <= 0 || base > INT64_MAX - last) return;
    for (auto& k : m_.kernels) k.start_ns += base;
    for (auto& s : m_.steps) s.start_ns += base;
    m_.run.start_time_ns = base;
  }

  std::string path_;
  std::string step_prefix_;
  Connection c_;
  std::set<std::string> tables_;
  std::unordered_map<int64_t, std::string> strings_;
  std::unordered_map<std::string, int32_t> names_;
  std::map<int64_t, int> device_of_;  // CUDA device -> index in m_.devices
  std::map<int64_t, DeviceRecord> properties_;
  Measurements m_;
};

}  // namespace

Measurements import_nsys_file(const std::string& path, std::string_view step_prefix) {
  check_input_file(path);
  check_sqlite_file(path);
  Measurements m = NsysReader(path, step_prefix).read();
  m.run.uuid = file_uuid(path);
  return m;
}

}  // namespace shardcost::db
