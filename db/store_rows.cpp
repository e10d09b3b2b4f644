#include "store_rows.h"

#include <string>

#include "shardcost/error.h"

namespace shardcost::db {
namespace {

// Schema 3's samples_ns text: "812 790 845"; NULL when the harness kept none.
std::optional<std::string> samples_text(const std::vector<int64_t>& samples_ns) {
  if (samples_ns.empty()) return std::nullopt;
  std::string out;
  out.reserve(samples_ns.size() * 8);
  for (const int64_t v : samples_ns) {
    if (!out.empty()) out += ' ';
    out += std::to_string(v);
  }
  return out;
}

void bind_samples(Statement& s, int index, const std::vector<int64_t>& samples_ns) {
  if (auto text = samples_text(samples_ns))
    s.bind(index, *text);
  else
    s.bind_null(index);
}

}  // namespace

Run read_run(const Statement& s) {
  Run r;
  r.id = s.int64(0);
  r.uuid = s.text(1);
  r.tool = s.text(2);
  r.tool_version = s.text(3);
  r.git_revision = s.text(4);
  r.host = s.text(5);
  r.command_line = s.text(6);
  r.start_time_ns = s.int64(7);
  r.end_time_ns = s.int64(8);
  r.status = s.text(9);
  r.source = s.text(10);
  r.recorded_by = s.text(11);
  r.library_versions = s.text(12);
  return r;
}

DeviceRecord read_device(const Statement& s) {
  DeviceRecord d;
  d.id = s.int64(0);
  d.name = s.text(1);
  d.uuid = s.text(2);
  d.host = s.text(3);
  d.index = static_cast<int>(s.int64(4));
  d.pci_bus = s.text(5);
  d.compute_capability = s.text(6);
  d.memory_bytes = s.int64(7);
  d.sm_clock_khz = s.int64(8);
  d.memory_clock_khz = s.int64(9);
  d.sms = static_cast<int>(s.int64(10));
  d.driver_version = s.text(11);
  d.cuda_version = s.text(12);
  return d;
}

std::string device_fingerprint(const DeviceRecord& d) {
  if (!d.uuid.empty()) return "uuid:" + d.uuid;
  if (d.host.empty() && d.index < 0) return "name:" + d.name;
  return "host:" + d.host + "/" + std::to_string(d.index) + "/" + d.name;
}

int64_t upsert_device(const Connection& c, const DeviceRecord& d) {
  const std::string fp = device_fingerprint(d);
  Statement ins = c.prepare(
      "INSERT INTO device (fingerprint, name, uuid, host, device_index, pci_bus, "
      "compute_capability, memory_bytes, sm_clock_khz, memory_clock_khz, sms, driver_version, "
      "cuda_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (fingerprint) DO NOTHING");
  auto opt = [](int64_t v) { return v > 0 ? std::optional<int64_t>(v) : std::nullopt; };
  ins.bind(1, fp).bind(2, d.name).bind(3, d.uuid).bind(4, d.host);
  ins.bind(5, d.index >= 0 ? std::optional<int64_t>(d.index) : std::nullopt);
  ins.bind(6, d.pci_bus).bind(7, d.compute_capability).bind(8, opt(d.memory_bytes));
  ins.bind(9, opt(d.sm_clock_khz)).bind(10, opt(d.memory_clock_khz)).bind(11, opt(d.sms));
  ins.bind(12, d.driver_version).bind(13, d.cuda_version);
  ins.run();
  Statement find = c.prepare("SELECT id FROM device WHERE fingerprint = ?");
  find.bind(1, fp);
  find.step();
  return find.int64(0);
}

RowWriter::RowWriter(const Connection& c, int64_t run_id)
    : c_(c),
      run_id_(run_id),
      gemm_(c.prepare(
          "INSERT INTO gemm (run_id, device_id, dtype, m, n, k, batch, time_ns, "
          "time_p10_ns, time_p90_ns, iterations, samples_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")),
      memory_(c.prepare("INSERT INTO memory (run_id, device_id, kind, bytes, time_ns, time_p10_ns, "
                        "time_p90_ns, iterations, samples_ns) VALUES (?,?,?,?,?,?,?,?,?)")),
      collective_(c.prepare(
          "INSERT INTO collective (run_id, device_id, op, dtype, redop, root, bytes, elements, "
          "ranks, nodes, fabric_level, in_place, time_ns, time_p10_ns, time_p90_ns, "
          "wrong_elements, max_error, iterations, samples_ns) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
      embedding_(c.prepare(
          "INSERT INTO embedding (run_id, device_id, pass, dtype, optimizer, rows, dim, pooling, "
          "batch, zipf, time_ns, time_p10_ns, time_p90_ns, iterations, samples_ns) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
      add_string_(c.prepare("INSERT OR IGNORE INTO string (text) VALUES (?)")),
      find_string_(c.prepare("SELECT id FROM string WHERE text = ?")),
      add_launch_(c.prepare("INSERT OR IGNORE INTO launch_config (grid_x, grid_y, grid_z, block_x, "
                            "block_y, block_z) VALUES (?, ?, ?, ?, ?, ?)")),
      find_launch_(c.prepare("SELECT id FROM launch_config WHERE grid_x = ? AND grid_y = ? AND "
                             "grid_z = ? AND block_x = ? AND block_y = ? AND block_z = ?")) {}

void RowWriter::gemm(const GemmRecord& r, int64_t device_id) {
  gemm_.bind(1, run_id_).bind(2, device_id).bind(3, r.dtype).bind(4, r.m).bind(5, r.n);
  gemm_.bind(6, r.k).bind(7, r.batch).bind(8, r.time_ns).bind(9, r.time_p10_ns);
  gemm_.bind(10, r.time_p90_ns).bind(11, r.iterations);
  bind_samples(gemm_, 12, r.samples_ns);
  gemm_.run();
}

void RowWriter::memory(const MemoryRecord& r, int64_t device_id) {
  memory_.bind(1, run_id_).bind(2, device_id).bind(3, r.kind).bind(4, r.bytes).bind(5, r.time_ns);
  memory_.bind(6, r.time_p10_ns).bind(7, r.time_p90_ns).bind(8, r.iterations);
  bind_samples(memory_, 9, r.samples_ns);
  memory_.run();
}

void RowWriter::embedding(const EmbeddingRecord& r, int64_t device_id) {
  Statement& s = embedding_;
  s.bind(1, run_id_).bind(2, device_id).bind(3, r.pass).bind(4, r.dtype).bind(5, r.optimizer);
  s.bind(6, r.rows).bind(7, r.dim).bind(8, r.pooling).bind(9, r.batch).bind(10, r.zipf);
  s.bind(11, r.time_ns).bind(12, r.time_p10_ns).bind(13, r.time_p90_ns).bind(14, r.iterations);
  bind_samples(s, 15, r.samples_ns);
  s.run();
}

void RowWriter::collective(const CollectiveRecord& r, int64_t device_id) {
  Statement& s = collective_;
  s.bind(1, run_id_).bind(2, device_id).bind(3, r.op).bind(4, r.dtype).bind(5, r.redop);
  s.bind(6, r.root).bind(7, r.bytes).bind(8, r.elements).bind(9, r.ranks).bind(10, r.nodes);
  s.bind(11, r.fabric_level).bind(12, r.in_place ? 1 : 0).bind(13, r.time_ns);
  s.bind(14, r.time_p10_ns).bind(15, r.time_p90_ns).bind(16, r.wrong_elements);
  if (r.max_error)
    s.bind(17, *r.max_error);
  else
    s.bind_null(17);
  s.bind(18, r.iterations);
  bind_samples(s, 19, r.samples_ns);
  s.run();
}

void RowWriter::kernels(const KernelEvent* events, size_t n, const int64_t* device_ids,
                        const int64_t* name_ids, const int64_t* launch_ids) {
  constexpr int kColumns = 9;
  auto it = kernel_chunks_.find(n);
  if (it == kernel_chunks_.end()) {
    std::string sql =
        "INSERT INTO kernel_event (run_id, device_id, stream, kind, name_id, start_ns, "
        "duration_ns, bytes, launch_id) VALUES ";
    for (size_t i = 0; i < n; ++i) sql += i ? ",(?,?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,?,?,?)";
    it = kernel_chunks_.emplace(n, c_.prepare(sql)).first;
  }
  Statement& s = it->second;
  for (size_t i = 0; i < n; ++i) {
    const KernelEvent& e = events[i];
    const int p = static_cast<int>(i) * kColumns;
    s.bind(p + 1, run_id_).bind(p + 2, device_ids[i]).bind(p + 3, e.stream);
    s.bind(p + 4, static_cast<int64_t>(e.kind)).bind(p + 5, name_ids[i]).bind(p + 6, e.start_ns);
    s.bind(p + 7, e.duration_ns);
    if (e.kind == EventKind::memcpy || e.kind == EventKind::memset)
      s.bind(p + 8, e.bytes);
    else
      s.bind_null(p + 8);
    if (launch_ids[i] > 0)
      s.bind(p + 9, launch_ids[i]);
    else
      s.bind_null(p + 9);
  }
  s.run();
}

size_t RowWriter::LaunchHash::operator()(const LaunchConfig& l) const {
  size_t h = 0;
  for (const int32_t v : {l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z})
    h = h * 1000003u + static_cast<size_t>(static_cast<uint32_t>(v));
  return h;
}

int64_t RowWriter::launch(const LaunchConfig& l) {
  if (auto it = launches_.find(l); it != launches_.end()) return it->second;
  auto bind_all = [&](Statement& s) {
    s.bind(1, l.grid_x).bind(2, l.grid_y).bind(3, l.grid_z);
    s.bind(4, l.block_x).bind(5, l.block_y).bind(6, l.block_z);
  };
  bind_all(add_launch_);
  add_launch_.run();
  bind_all(find_launch_);
  if (!find_launch_.step()) throw Error("internal: launch_config row missing right after insert");
  const int64_t id = find_launch_.int64(0);
  find_launch_.reset();
  launches_.emplace(l, id);
  return id;
}

int64_t RowWriter::intern(std::string_view name) {
  const std::string key(name);
  if (auto it = strings_.find(key); it != strings_.end()) return it->second;
  add_string_.bind(1, name).run();
  find_string_.bind(1, name);
  find_string_.step();
  const int64_t id = find_string_.int64(0);
  find_string_.reset();
  strings_.emplace(key, id);
  return id;
}

}  // namespace shardcost::db
