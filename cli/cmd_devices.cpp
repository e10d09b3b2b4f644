// devices: the GPUs this machine has (or why none are visible), the host CPU, and the node's
// topology from /sys (NUMA nodes, and the GPUs, NICs and drives on PCIe with what joins them).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "format.h"
#include "shardcost/error.h"
#include "shardcost/profiler.h"
#include "shardcost/topology.h"

namespace shardcost::cli {
namespace {

// What each PCI function is called in the output: GPUs by their CUDA ordinal where CUDA sees
// them (by PCI address), else GPU<n> in address order after those; NICs and drives by their
// interface names, else their addresses.
std::vector<std::string> labels(const NodeTopology& t, const bench::DeviceList& d) {
  std::vector<std::string> out;
  int next_gpu = 0;
  for (const auto& g : d.gpus) next_gpu = std::max(next_gpu, g.index + 1);
  for (const auto& f : t.devices) {
    if (f.kind != "gpu") {
      out.push_back(f.name.empty() ? f.address : f.name);
      continue;
    }
    const auto g = std::find_if(d.gpus.begin(), d.gpus.end(),
                                [&](const bench::GpuInfo& x) { return x.pci_bus == f.address; });
    out.push_back(fmt::format("GPU{}", g != d.gpus.end() ? g->index : next_gpu++));
  }
  return out;
}

// The functions a path matrix is drawn for: GPUs and NICs (drives only in the list).
std::vector<size_t> matrix_members(const NodeTopology& t) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.devices.size(); ++i)
    if (t.devices[i].kind != "nvme") out.push_back(i);
  return out;
}

nlohmann::json topology_json(const NodeTopology& t, const std::vector<std::string>& label) {
  nlohmann::json j;
  j["sockets"] = t.sockets;
  j["cores"] = t.cores;
  j["threads"] = t.threads();
  j["numa"] = nlohmann::json::array();
  for (const auto& n : t.numa)
    j["numa"].push_back({{"id", n.id},
                         {"cpus", cpu_list_text(n.cpus)},
                         {"memory_bytes", n.memory_bytes},
                         {"distances", n.distances}});
  j["pci"] = nlohmann::json::array();
  for (size_t i = 0; i < t.devices.size(); ++i) {
    const PciFunction& f = t.devices[i];
    nlohmann::json row = {{"label", label[i]},    {"kind", f.kind},
                          {"address", f.address}, {"vendor", f.vendor},
                          {"device", f.device},   {"name", f.name},
                          {"numa", f.numa},       {"local_cpus", cpu_list_text(f.local_cpus)},
                          {"link", f.link},       {"host_bridge", f.host_bridge},
                          {"bridges", f.bridges}};
    if (f.kind == "gpu")
      if (const auto nic = nearest_nic(t, f))
        row["nearest_nic"] = {{"label", label[*nic]}, {"path", pci_path(f, t.devices[*nic])}};
    j["pci"].push_back(row);
  }
  j["paths"] = nlohmann::json::object();
  const auto members = matrix_members(t);
  for (const size_t a : members)
    for (const size_t b : members)
      j["paths"][label[a]][label[b]] = pci_path(t.devices[a], t.devices[b]);
  j["notes"] = t.notes;
  return j;
}

std::string topology_text(const NodeTopology& t, const std::vector<std::string>& label) {
  std::string out = fmt::format("cpus  {} socket{}, {} core{}, {} hardware thread{}\n", t.sockets,
                                t.sockets == 1 ? "" : "s", t.cores, t.cores == 1 ? "" : "s",
                                t.threads(), t.threads() == 1 ? "" : "s");
  for (const auto& n : t.numa)
    out += fmt::format(
        "numa  node {}: CPUs {}, {:.1f} GiB{}\n", n.id, cpu_list_text(n.cpus),
        static_cast<double>(n.memory_bytes) / kGiB,
        n.distances.empty() ? "" : fmt::format(", distances {}", fmt::join(n.distances, " ")));
  if (t.devices.empty()) {
    out += "pcie  no GPU, NIC or NVMe drive found\n";
  } else {
    Table pci({"pcie", "kind", "address", "numa", "cpus", "link", "nearest nic"},
              {false, false, false, true, false, false, false});
    for (size_t i = 0; i < t.devices.size(); ++i) {
      const PciFunction& f = t.devices[i];
      std::string nic = "-";
      if (f.kind == "gpu")
        if (const auto n = nearest_nic(t, f))
          nic = fmt::format("{} ({})", label[*n], pci_path(f, t.devices[*n]));
      pci.add({label[i], f.kind, f.address, f.numa < 0 ? "-" : fmt::format("{}", f.numa),
               f.local_cpus.empty() ? "-" : cpu_list_text(f.local_cpus),
               f.link.empty() ? "-" : f.link, nic});
    }
    out += pci.render();
  }
  const auto members = matrix_members(t);
  if (members.size() >= 2) {
    std::vector<std::string> head = {"path"};
    std::vector<bool> right = {false};
    for (const size_t m : members) head.push_back(label[m]), right.push_back(false);
    Table paths(head, right);
    for (const size_t a : members) {
      std::vector<std::string> row = {label[a]};
      for (const size_t b : members) row.push_back(pci_path(t.devices[a], t.devices[b]));
      paths.add(row);
    }
    out += paths.render();
    out +=
        "path  PIX one PCIe switch, PXB several switches, PHB through a host bridge, NODE between "
        "host bridges of one NUMA node, SYS across NUMA nodes (NVLink is not on PCIe: nvidia-smi "
        "topo -m)\n";
  }
  for (const auto& note : t.notes) out += fmt::format("note  {}\n", note);
  return out;
}

void print_devices(const std::string& format_text, const std::string& sysfs) {
  const Format f = parse_format(format_text, {Format::text, Format::json});
  if (std::error_code ec; !std::filesystem::is_directory(sysfs, ec))
    throw InputError(fmt::format("--sysfs {}: not a directory; give /sys or a copy of it", sysfs));
  const bench::DeviceList d = bench::list_devices();
  const NodeTopology topo = read_topology(sysfs);
  const std::vector<std::string> label = labels(topo, d);
  if (f == Format::json) {
    nlohmann::json j;
    j["host"] = {{"hostname", d.host.hostname},
                 {"cpu", d.host.cpu_model},
                 {"logical_cpus", d.host.logical_cpus},
                 {"memory_bytes", d.host.memory_bytes},
                 {"build", d.host.cuda_build}};
    j["gpus"] = nlohmann::json::array();
    for (const auto& g : d.gpus)
      j["gpus"].push_back({{"index", g.index},
                           {"name", g.name},
                           {"uuid", g.uuid},
                           {"pci_bus", g.pci_bus},
                           {"compute_capability", g.compute_capability},
                           {"sms", g.sms},
                           {"memory_bytes", g.memory_bytes},
                           {"sm_clock_khz", g.sm_clock_khz},
                           {"memory_clock_khz", g.memory_clock_khz}});
    if (!d.gpu_status.empty()) j["gpu_status"] = d.gpu_status;
    j["driver_version"] = d.driver_version;
    j["runtime_version"] = d.runtime_version;
    j["nccl_version"] = d.nccl_version;
    j["topology"] = topology_json(topo, label);
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("host  {}: {}, {} logical CPUs, {:.1f} GiB, {}\n", d.host.hostname, d.host.cpu_model,
             d.host.logical_cpus, d.host.memory_bytes / kGiB, d.host.cuda_build);
  if (d.gpus.empty()) {
    fmt::print("gpus  none: {}\n", d.gpu_status);
  } else {
    fmt::print("cuda  driver {}, runtime {}, nccl {}\n", d.driver_version, d.runtime_version,
               d.nccl_version.empty() ? "-" : d.nccl_version);
    Table t({"#", "name", "cc", "SMs", "memory GiB", "SM MHz", "mem MHz", "pci", "uuid"},
            {true, false, false, true, true, true, true, false, false});
    for (const auto& g : d.gpus)
      t.add({fmt::format("{}", g.index), g.name, g.compute_capability, fmt::format("{}", g.sms),
             fmt::format("{:.1f}", static_cast<double>(g.memory_bytes) / kGiB),
             fmt::format("{}", g.sm_clock_khz / 1000), fmt::format("{}", g.memory_clock_khz / 1000),
             g.pci_bus, g.uuid});
    fmt::print("{}", t.render());
  }
  fmt::print("{}", topology_text(topo, label));
}

}  // namespace

void add_devices_command(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  auto sysfs = std::make_shared<std::string>("/sys");
  auto* cmd = app.add_subcommand(
      "devices", "List the CUDA devices, the host CPU and the node's topology (NUMA, PCIe)");
  cmd->add_option("--format", *format, "text or json");
  cmd->add_option("--sysfs", *sysfs,
                  "read the topology from this copy of /sys (default /sys: this node's)");
  cmd->callback([format, sysfs] { print_devices(*format, *sysfs); });
}

}  // namespace shardcost::cli
