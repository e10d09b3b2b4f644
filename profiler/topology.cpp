// The node's topology from /sys: sysfs files read as text, what a platform leaves out noted.
#include "shardcost/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "shardcost/error.h"

namespace shardcost {
namespace fs = std::filesystem;

namespace {

// The first line of a sysfs file, trimmed; nullopt when it cannot be read.
std::optional<std::string> line_of(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  if (!in || !std::getline(in, s)) return std::nullopt;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::optional<int64_t> int_of(const fs::path& p) {
  const auto s = line_of(p);
  if (!s) return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || end != s->data() + s->size()) return std::nullopt;
  return v;
}

// Entries of a directory named prefix<N>, as (N, path), in N order.
std::vector<std::pair<int, fs::path>> numbered(const fs::path& dir, std::string_view prefix) {
  std::vector<std::pair<int, fs::path>> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    int n = 0;
    const char* b = name.data() + prefix.size();
    const auto [p, e] = std::from_chars(b, name.data() + name.size(), n);
    if (e == std::errc() && p == name.data() + name.size()) out.emplace_back(n, it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> cpus_in(const fs::path& p) {
  const auto s = line_of(p);
  if (!s || s->empty()) return {};
  try {
    return parse_cpu_list(*s, p.string());
  } catch (const InputError&) {
    return {};
  }
}

void read_cpus(const fs::path& sysfs, NodeTopology& t) {
  const fs::path cpu_dir = sysfs / "devices/system/cpu";
  std::vector<int> online = cpus_in(cpu_dir / "online");
  if (online.empty()) {
    for (const auto& [n, p] : numbered(cpu_dir, "cpu")) online.push_back(n);
    if (online.empty()) {
      t.notes.push_back(
          fmt::format("{} lists no CPUs: sockets and cores unknown", cpu_dir.string()));
      return;
    }
  }
  std::set<int> packages;
  std::set<std::pair<int, int>> cores;
  bool topology_known = true;
  for (const int cpu : online) {
    const fs::path topo = cpu_dir / fmt::format("cpu{}", cpu) / "topology";
    const auto package = int_of(topo / "physical_package_id");
    const auto core = int_of(topo / "core_id");
    if (!package || !core) topology_known = false;
    CpuCore c{cpu, static_cast<int>(package.value_or(0)), static_cast<int>(core.value_or(cpu)), -1};
    packages.insert(c.package);
    cores.insert({c.package, c.core});
    t.cpus.push_back(c);
  }
  if (!topology_known)
    t.notes.push_back(
        fmt::format("{}/cpu*/topology is not readable: every CPU counted as a core of one socket",
                    cpu_dir.string()));
  t.sockets = static_cast<int>(packages.size());
  t.cores = static_cast<int>(cores.size());
}

void read_numa(const fs::path& sysfs, NodeTopology& t) {
  const fs::path node_dir = sysfs / "devices/system/node";
  for (const auto& [id, p] : numbered(node_dir, "node")) {
    NumaNode n;
    n.id = id;
    n.cpus = cpus_in(p / "cpulist");
    std::ifstream meminfo(p / "meminfo");
    for (std::string line; std::getline(meminfo, line);) {
      // "Node 0 MemTotal:       24683792 kB"
      const auto at = line.find("MemTotal:");
      if (at == std::string::npos) continue;
      const std::string rest = line.substr(at + 9);
      const auto digits = rest.find_first_of("0123456789");
      if (digits != std::string::npos) n.memory_bytes = std::stoll(rest.substr(digits)) * 1024;
    }
    if (const auto d = line_of(p / "distance")) {
      size_t i = 0;
      while (i < d->size()) {
        int v = 0;
        const auto [end, ec] = std::from_chars(d->data() + i, d->data() + d->size(), v);
        if (ec != std::errc()) break;
        n.distances.push_back(v);
        i = static_cast<size_t>(end - d->data());
        while (i < d->size() && (*d)[i] == ' ') ++i;
      }
    }
    for (auto& c : t.cpus)
      if (std::find(n.cpus.begin(), n.cpus.end(), c.cpu) != n.cpus.end()) c.numa = id;
    t.numa.push_back(std::move(n));
  }
  if (t.numa.empty())
    t.notes.push_back(
        fmt::format("{} lists no NUMA nodes (a kernel without NUMA support)", node_dir.string()));
}

std::optional<std::string> kind_of(const std::string& cls, const std::string& vendor) {
  // PCI class codes: 0x03 display (GPUs), 0x02 network, 0x0108 NVM Express.
  if (cls.rfind("0x03", 0) == 0 && (vendor == "0x10de" || vendor == "0x1002")) return "gpu";
  if (cls.rfind("0x02", 0) == 0) return "nic";
  if (cls.rfind("0x0108", 0) == 0) return "nvme";
  return std::nullopt;
}

// A NIC's interface: its InfiniBand device, else its network interface, looked for one level
// down too (virtio puts them under virtioN/).
std::string name_of(const fs::path& dev, const std::string& kind) {
  std::vector<std::string> dirs;
  if (kind == "nic") dirs = {"infiniband", "net"};
  if (kind == "nvme") dirs = {"nvme"};
  for (const auto& d : dirs) {
    if (auto e = entries(dev / d); !e.empty()) return e.front();
    for (const auto& sub : entries(dev))
      if (auto e = entries(dev / sub / d); !e.empty() && fs::is_directory(dev / sub))
        return e.front();
  }
  return "";
}

std::optional<PciFunction> read_function(const fs::path& link, NodeTopology& t) {
  const fs::path dev = link;
  const auto cls = line_of(dev / "class");
  const auto vendor = line_of(dev / "vendor");
  if (!cls || !vendor) return std::nullopt;
  const auto kind = kind_of(*cls, *vendor);
  if (!kind) return std::nullopt;
  PciFunction f;
  f.address = link.filename().string();
  f.kind = *kind;
  f.vendor = *vendor;
  f.device = line_of(dev / "device").value_or("");
  f.name = name_of(dev, f.kind);
  f.numa = static_cast<int>(int_of(dev / "numa_node").value_or(-1));
  f.local_cpus = cpus_in(dev / "local_cpulist");
  const auto speed = line_of(dev / "current_link_speed");
  const auto width = line_of(dev / "current_link_width");
  if (speed && width && *speed != "Unknown" && *width != "0")
    f.link = fmt::format("{} x{}", *speed, *width);
  // /sys/bus/pci/devices/X links to /sys/devices/pci0000:00/<root port>/.../X.
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  if (ec) {
    t.notes.push_back(
        fmt::format("{}: not a link into /sys/devices; its PCIe path is unknown", link.string()));
    return f;
  }
  bool below_root = false;
  for (const auto& part : real) {
    const std::string s = part.string();
    if (s.rfind("pci", 0) == 0 && s.find(':') != std::string::npos) {
      f.host_bridge = s;
      below_root = true;
      continue;
    }
    if (below_root && s != f.address) f.bridges.push_back(s);
  }
  return f;
}

void read_pci(const fs::path& sysfs, NodeTopology& t) {
  const fs::path dir = sysfs / "bus/pci/devices";
  if (!fs::is_directory(dir)) {
    t.notes.push_back(fmt::format("{} not found: no PCIe devices read", dir.string()));
    return;
  }
  for (const auto& name : entries(dir))
    if (auto f = read_function(dir / name, t)) t.devices.push_back(std::move(*f));
}

// Switches on the way down from the root port: a switch shows as its upstream port with one
// downstream port below it, so they come in pairs after the root port.
std::vector<std::string> switches(const PciFunction& f) {
  std::vector<std::string> out;
  for (size_t i = 1; i < f.bridges.size(); i += 2) out.push_back(f.bridges[i]);
  return out;
}

int path_rank(const std::string& p) {
  static const std::vector<std::string> order = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"};
  return static_cast<int>(std::find(order.begin(), order.end(), p) - order.begin());
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text, std::string_view what) {
  std::vector<int> out;
  auto bad = [&] {
    return InputError(
        fmt::format("{}: '{}' is not a CPU list; give CPUs and ranges like 0-7,16", what, text));
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string_view::npos) j = text.size();
    const std::string_view item = text.substr(i, j - i);
    const size_t dash = item.find('-');
    auto number = [&](std::string_view s) {
      int v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 65535)
        throw bad();
      return v;
    };
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) throw bad();
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    i = j + 1;
    if (j + 1 == text.size()) throw bad();  // a trailing comma
  }
  if (out.empty()) throw bad();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string cpu_list_text(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

int NodeTopology::numa_of(int cpu) const {
  for (const auto& c : cpus)
    if (c.cpu == cpu) return c.numa;
  return -1;
}

NodeTopology read_topology(const fs::path& sysfs) {
  NodeTopology t;
  read_cpus(sysfs, t);
  read_numa(sysfs, t);
  read_pci(sysfs, t);
  return t;
}

std::string pci_path(const PciFunction& a, const PciFunction& b) {
  if (a.address == b.address) return "X";
  if (a.host_bridge.empty() || b.host_bridge.empty() || a.host_bridge != b.host_bridge)
    return a.numa == b.numa ? "NODE" : "SYS";
  // One host bridge: through the root complex unless both sit below one root port.
  if (a.bridges.empty() || b.bridges.empty() || a.bridges.front() != b.bridges.front())
    return "PHB";
  const auto sa = switches(a), sb = switches(b);
  size_t common = 0;
  while (common < sa.size() && common < sb.size() && sa[common] == sb[common]) ++common;
  if (common == 0) return "PHB";  // one root port, no switch shared (not a PCIe layout)
  const size_t crossed = (sa.size() - common) + (sb.size() - common) + 1;
  return crossed <= 1 ? "PIX" : "PXB";
}

std::optional<size_t> nearest_nic(const NodeTopology& t, const PciFunction& f) {
  std::optional<size_t> best;
  int best_rank = 0;
  for (size_t i = 0; i < t.devices.size(); ++i) {
    if (t.devices[i].kind != "nic" || t.devices[i].address == f.address) continue;
    const int r = path_rank(pci_path(f, t.devices[i]));
    if (!best || r < best_rank) best = i, best_rank = r;
  }
  return best;
}

std::vector<int> binding_order(const NodeTopology& t, const std::vector<int>& allowed) {
  // Each CPU's place among its core's hardware threads (0 for the first).
  std::map<std::pair<int, int>, int> seen;
  std::vector<std::tuple<int, int, int, int, int>> keyed;  // sibling, numa, package, core, cpu
  std::vector<int> sorted = allowed;
  std::sort(sorted.begin(), sorted.end());
  for (const int cpu : sorted) {
    const auto it =
        std::find_if(t.cpus.begin(), t.cpus.end(), [&](const CpuCore& c) { return c.cpu == cpu; });
    const CpuCore c = it == t.cpus.end() ? CpuCore{cpu, 0, cpu, -1} : *it;
    const int sibling = seen[{c.package, c.core}]++;
    keyed.emplace_back(sibling, c.numa, c.package, c.core, cpu);
  }
  // NUMA node by node, and within a node one thread per core first.
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x), std::get<2>(x), std::get<3>(x)) <
           std::tie(std::get<0>(y), std::get<1>(y), std::get<2>(y), std::get<3>(y));
  });
  std::vector<int> out;
  for (const auto& k : keyed) out.push_back(std::get<4>(k));
  return out;
}

std::string cpus_where(const NodeTopology& t, const std::vector<int>& cpus) {
  std::set<int> nodes;
  for (const int c : cpus)
    if (const int n = t.numa_of(c); n >= 0) nodes.insert(n);
  const std::string list = cpu_list_text(cpus);
  if (nodes.empty()) return list;
  std::vector<int> v(nodes.begin(), nodes.end());
  return fmt::format("{} (NUMA node{} {})", list, v.size() == 1 ? "" : "s", cpu_list_text(v));
}

}  // namespace shardcost
