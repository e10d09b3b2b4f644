// profiler.h's entry points: pick the backend, and turn reports into store rows.
#include <fmt/format.h>

#include "backends.h"
#include "blas.h"
#include "embedding_inputs.h"
#include "mpi_api.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"

namespace shardcost::bench {
namespace {

void check_device(const std::string& device) {
  if (device != "cpu" && device != "cuda")
    throw InputError(fmt::format("--device {} is unknown; use cpu or cuda", device));
}

// The report's device goes in once per Measurements; rows refer to it by index.
int device_index(db::Measurements& m, const db::DeviceRecord& d) {
  for (size_t i = 0; i < m.devices.size(); ++i) {
    if (m.devices[i].name == d.name && m.devices[i].index == d.index && m.devices[i].host == d.host)
      return static_cast<int>(i);
  }
  m.devices.push_back(d);
  return static_cast<int>(m.devices.size() - 1);
}

std::optional<int64_t> opt(int64_t v) {
  return v > 0 ? std::optional<int64_t>(v) : std::nullopt;
}

// The timing columns every measurement record shares.
template <typename Record>
void set_timing(Record& rec, const Stats& s) {
  rec.time_ns = s.median_ns;
  rec.time_p10_ns = opt(s.p10_ns);
  rec.time_p90_ns = opt(s.p90_ns);
  rec.iterations = s.iterations;
  rec.samples_ns = s.samples_ns;
}

}  // namespace

GemmReport bench_gemm(const GemmOptions& o, const Progress& p) {
  check_device(o.device);
  if (o.shapes.empty())
    throw InputError("no GEMM shapes; give --shape MxNxK or --shapes-from MODEL");
  return o.device == "cpu" ? host_bench_gemm(o, p) : cuda_bench_gemm(o, p);
}

MemoryReport bench_memory(const MemoryOptions& o, const Progress& p) {
  check_device(o.device);
  if (o.sizes.empty()) throw InputError("no sizes to measure; give -b/-e");
  return o.device == "cpu" ? host_bench_memory(o, p) : cuda_bench_memory(o, p);
}

std::vector<std::string> memory_kinds(std::string_view device) {
  if (device == "cpu") return {"copy", "read", "write"};
  return {"copy_d2d", "copy_h2d", "copy_d2h", "memset", "read", "write"};
}

EmbeddingReport bench_embedding(const EmbeddingOptions& o, const Progress& p) {
  check_device(o.device);
  if (o.shapes.empty()) throw InputError("no embedding shapes to measure; give a grid or --shape");
  if (o.passes.empty()) throw InputError("no passes to measure; give --pass forward,backward");
  for (const auto& pass : o.passes)
    if (pass != "forward" && pass != "backward")
      throw InputError(fmt::format("--pass {} is unknown; use forward or backward", pass));
  if (o.optimizer != "rowwise_adagrad" && o.optimizer != "sgd")
    throw InputError(
        fmt::format("--optimizer {}: bench embedding runs rowwise_adagrad or sgd", o.optimizer));
  for (const auto& s : o.shapes) check_shape(s);
  return o.device == "cpu" ? host_bench_embedding(o, p) : cuda_bench_embedding(o, p);
}

CollectiveReport bench_collective(const CollectiveOptions& o, const Progress& p) {
  if (o.sizes.empty()) throw InputError("no sizes to measure; give -b/-e");
  if (o.ops.empty()) throw InputError("no collectives to measure; give --op");
  if (o.backend == "mpi") return mpi_bench_collective(o, p);
  if (o.backend == "nccl") return nccl_bench_collective(o, p);
  throw InputError(fmt::format("--backend {} is unknown; use mpi or nccl", o.backend));
}

P2pReport bench_p2p(const CollectiveOptions& o, const Progress& p) {
  if (o.sizes.empty()) throw InputError("no sizes to measure; give -b/-e");
  if (o.backend == "mpi") return mpi_bench_p2p(o, p);
  if (o.backend == "nccl")
    throw InputError(
        "bench p2p runs over --backend mpi in this version; NCCL send/recv is "
        "measured by bench collective --op sendrecv --backend nccl");
  throw InputError(fmt::format("--backend {} is unknown; use mpi or nccl", o.backend));
}

DeviceList list_devices() {
  DeviceList list;
  list.host = host_info();
  cuda_list_devices(list);
  return list;
}

db::DeviceRecord host_device_record() {
  const HostInfo h = host_info();
  db::DeviceRecord d;
  d.name = h.cpu_model.empty() ? "host CPU" : h.cpu_model;
  d.host = h.hostname;
  d.index = -1;
  d.memory_bytes = static_cast<int64_t>(h.memory_bytes);
  d.sms = h.logical_cpus;  // for a CPU: logical CPUs
  return d;
}

void append(db::Measurements& m, const GemmReport& r) {
  const int dev = device_index(m, r.device);
  for (const auto& g : r.results) {
    db::GemmRecord rec;
    rec.device = dev;
    rec.dtype = g.dtype;
    rec.m = g.shape.m, rec.n = g.shape.n, rec.k = g.shape.k, rec.batch = g.shape.batch;
    set_timing(rec, g.stats);
    m.gemms.push_back(rec);
  }
}

void append(db::Measurements& m, const MemoryReport& r) {
  const int dev = device_index(m, r.device);
  for (const auto& x : r.results) {
    db::MemoryRecord rec;
    rec.device = dev;
    rec.kind = x.kind;
    rec.bytes = x.bytes;
    set_timing(rec, x.stats);
    m.memory.push_back(rec);
  }
}

void append(db::Measurements& m, const EmbeddingReport& r) {
  const int dev = device_index(m, r.device);
  for (const auto& e : r.results) {
    db::EmbeddingRecord rec;
    rec.device = dev;
    rec.pass = e.pass;
    rec.dtype = e.dtype;
    rec.optimizer = e.optimizer;
    rec.rows = e.shape.rows, rec.dim = e.shape.dim, rec.batch = e.shape.batch;
    rec.pooling = e.shape.pooling, rec.zipf = e.shape.zipf;
    set_timing(rec, e.stats);
    m.embeddings.push_back(rec);
  }
}

void append(db::Measurements& m, const CollectiveReport& r) {
  const int dev = device_index(m, r.device);
  for (const auto& c : r.results) {
    db::CollectiveRecord rec;
    rec.device = dev;
    rec.op = c.op;
    rec.dtype = c.dtype;
    rec.redop = c.redop;
    rec.root = c.root;
    rec.bytes = c.bytes;
    rec.elements = c.elements;
    rec.ranks = r.ranks;
    rec.nodes = r.nodes;
    rec.fabric_level = r.fabric_level;
    rec.in_place = c.in_place;
    set_timing(rec, c.stats);
    rec.wrong_elements = c.wrong;
    m.collectives.push_back(rec);
  }
}

void append(db::Measurements& m, const P2pReport& r) {
  const int dev = device_index(m, r.device);
  for (const auto& p : r.results) {
    db::CollectiveRecord rec;
    rec.device = dev;
    rec.op = "send_recv";
    rec.dtype = "int8";
    rec.redop = "none";
    rec.bytes = p.bytes;
    rec.elements = p.bytes;
    rec.ranks = 2;
    rec.nodes = p.fabric_level == "inter_node" ? 2 : 1;
    rec.fabric_level = p.fabric_level;
    set_timing(rec, p.stats);
    rec.wrong_elements = p.wrong;
    m.collectives.push_back(rec);
  }
}

std::string library_versions() {
  std::string v = fmt::format("blas={}", blas::available() ? blas::version() : "none");
  if (mpi::available()) v += fmt::format("; mpi={}", mpi::version());
  const std::string cuda = cuda_library_versions();
  if (!cuda.empty()) v += "; " + cuda;
  return v;
}

}  // namespace shardcost::bench
