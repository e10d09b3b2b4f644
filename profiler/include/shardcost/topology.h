#pragma once
// The host side of a node as Linux exposes it under /sys: CPU sockets, cores and NUMA nodes,
// the GPUs, NICs and NVMe drives on PCIe with the NUMA node, CPUs and PCIe switches each hangs
// off, and what joins two of them (nvidia-smi topo's words). Read from any root, so a copy of
// another node's tree (or a test's) reads the same way; nothing here needs a driver.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost {

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11}. parse throws InputError naming `what` on bad text.
std::vector<int> parse_cpu_list(std::string_view text, std::string_view what);
std::string cpu_list_text(std::vector<int> cpus);

struct CpuCore {
  int cpu = 0;      // logical CPU
  int package = 0;  // socket
  int core = 0;     // core id within the package
  int numa = -1;    // NUMA node; -1 not known
};
struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  int64_t memory_bytes = 0;
  std::vector<int> distances;  // to every node, in node order (10 = local)
};
struct PciFunction {
  std::string address;  // "0000:17:00.0"
  std::string kind;     // gpu | nic | nvme
  std::string vendor;   // "0x10de"
  std::string device;   // "0x2330"
  std::string name;     // the interface or driver name: "eth0", "mlx5_0", "nvme0"; may be empty
  int numa = -1;        // -1: the platform does not say
  std::vector<int> local_cpus;
  std::string host_bridge;           // "pci0000:00", the root complex it hangs off
  std::vector<std::string> bridges;  // PCIe bridges from the root port down to it
  std::string link;                  // "16.0 GT/s PCIe x16"; empty where not given
};
struct NodeTopology {
  std::vector<CpuCore> cpus;  // online logical CPUs, in CPU order
  int sockets = 0, cores = 0;
  std::vector<NumaNode> numa;
  std::vector<PciFunction> devices;  // gpus, nics and nvme drives, in address order
  std::vector<std::string> notes;    // what could not be read, one line each
  int threads() const { return static_cast<int>(cpus.size()); }
  // The NUMA node of a CPU; -1 where not known.
  int numa_of(int cpu) const;
};

// Reads the tree under `sysfs` ("/sys" on a live node). Never throws for what a platform does
// not expose (a VM without NUMA files, a container without /sys/bus/pci): it says so in notes.
NodeTopology read_topology(const std::filesystem::path& sysfs = "/sys");

// What joins two PCI functions, in nvidia-smi topo's legend: PIX (one PCIe switch), PXB
// (several switches, no host bridge), PHB (through the root complex of one host bridge), NODE
// (between host bridges of one NUMA node), SYS (across NUMA nodes, over the CPUs' link); "X"
// for a function with itself. NVLink is not on PCIe and not here.
std::string pci_path(const PciFunction& a, const PciFunction& b);

// The NIC closest to a function (fewest hops by pci_path's order, then address); nullopt when
// the node has none.
std::optional<size_t> nearest_nic(const NodeTopology&, const PciFunction&);

// The order benchmark threads are bound in, from the CPUs they may use: NUMA node by node, one
// thread per physical core before any core's second hardware thread.
std::vector<int> binding_order(const NodeTopology&, const std::vector<int>& allowed);

// "0-1 (NUMA node 0)" or "0-3,8-11 (NUMA nodes 0,1)": a CPU set and the nodes it spans.
std::string cpus_where(const NodeTopology&, const std::vector<int>& cpus);

}  // namespace shardcost
