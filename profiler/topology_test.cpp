// The node's topology from a made-up /sys: a two-socket node with GPUs and NICs behind PCIe
// switches, read as the kernel lays it out (bus/pci/devices/X links into devices/pciD:B/...).
#include "shardcost/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "cpu_binding.h"
#include "shardcost/error.h"
#include "thread_pool.h"

namespace shardcost {
namespace {
namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("shardcost_sysfs_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "bus/pci/devices");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Logical CPU `cpu` as hardware thread of (package, core).
  void cpu(int cpu, int package, int core) {
    const fs::path t = root_ / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
    write(t / "physical_package_id", std::to_string(package));
    write(t / "core_id", std::to_string(core));
  }
  void node(int id, const std::string& cpus, int64_t kib, const std::string& distances) {
    const fs::path n = root_ / "devices/system/node" / ("node" + std::to_string(id));
    write(n / "cpulist", cpus);
    write(n / "meminfo", "Node " + std::to_string(id) + " MemTotal:       " + std::to_string(kib) +
                             " kB\nNode 0 MemFree:  1 kB");
    write(n / "distance", distances);
  }
  // A PCI function at `chain` below host bridge `bridge` ("pci0000:00"), the last address the
  // function itself, the others its bridges; `sub` names an interface directory.
  void pci(const std::string& bridge, const std::vector<std::string>& chain, const std::string& cls,
           const std::string& vendor, int numa, const std::string& sub = "",
           const std::string& local_cpus = "") {
    fs::path dev = root_ / "devices" / bridge;
    for (const auto& a : chain) dev /= a;
    write(dev / "class", cls);
    write(dev / "vendor", vendor);
    write(dev / "device", "0x2330");
    write(dev / "numa_node", std::to_string(numa));
    write(dev / "current_link_speed", "32.0 GT/s PCIe");
    write(dev / "current_link_width", "16");
    if (!local_cpus.empty()) write(dev / "local_cpulist", local_cpus);
    if (!sub.empty()) fs::create_directories(dev / sub);
    fs::create_directory_symlink(dev, root_ / "bus/pci/devices" / chain.back());
  }
  // Two sockets of 4 cores with 2 hardware threads each (cpu N and N+8 share a core); the
  // first socket's host bridges hold GPU0, GPU1 and mlx5_0 behind one switch, a drive on its
  // own root port, and GPU2 on a second host bridge; the second socket's holds GPU3 two
  // switches down and mlx5_1 one switch down.
  void dgx_like() {
    for (int c = 0; c < 16; ++c) cpu(c, (c % 8) / 4, c % 4);
    write(root_ / "devices/system/cpu/online", "0-15");
    node(0, "0-3,8-11", 1048576, "10 21");
    node(1, "4-7,12-15", 2097152, "21 10");
    const std::string gpu = "0x030200", nic = "0x020700", nvme = "0x010802";
    pci("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}, gpu,
        "0x10de", 0, "", "0-3,8-11");
    pci("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0"}, nic,
        "0x15b3", 0, "infiniband/mlx5_0");
    pci("pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0"}, gpu,
        "0x10de", 0);
    pci("pci0000:00", {"0000:00:02.0", "0000:06:00.0"}, nvme, "0x144d", 0, "nvme/nvme0");
    pci("pci0000:40", {"0000:40:01.0", "0000:41:00.0", "0000:42:00.0", "0000:43:00.0"}, gpu,
        "0x10de", 0);
    pci("pci0000:80",
        {"0000:80:01.0", "0000:81:00.0", "0000:82:00.0", "0000:83:00.0", "0000:84:00.0",
         "0000:85:00.0"},
        gpu, "0x10de", 1);
    pci("pci0000:80", {"0000:80:01.0", "0000:81:00.0", "0000:82:01.0", "0000:86:00.0"}, nic,
        "0x15b3", 1, "virtio3/net/ib1");
    // Not listed: a bridge, a BMC's VGA, an NVIDIA audio function.
    pci("pci0000:00", {"0000:00:03.0"}, "0x060400", "0x8086", 0);
    pci("pci0000:00", {"0000:00:04.0"}, "0x030000", "0x1a03", 0);
    pci("pci0000:00", {"0000:00:05.0"}, "0x040300", "0x10de", 0);
  }
  const PciFunction& at(const NodeTopology& t, const std::string& address) {
    for (const auto& f : t.devices)
      if (f.address == address) return f;
    throw std::runtime_error("no " + address);
  }
  fs::path root_;
};

TEST(CpuList, ReadsAndWritesRanges) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11", "x"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5,1,1", "x"), (std::vector<int>{1, 5}));
  EXPECT_EQ(cpu_list_text({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({}), "");
  for (const char* bad : {"", "1,", ",1", "3-1", "a", "1-", "-1", "0-99999"})
    EXPECT_THROW(parse_cpu_list(bad, "--cpus"), InputError) << bad;
}

TEST_F(FakeSysfs, ReadsSocketsCoresAndNumaNodes) {
  dgx_like();
  const NodeTopology t = read_topology(root_);
  EXPECT_EQ(t.sockets, 2);
  EXPECT_EQ(t.cores, 8);
  EXPECT_EQ(t.threads(), 16);
  ASSERT_EQ(t.numa.size(), 2U);
  EXPECT_EQ(cpu_list_text(t.numa[1].cpus), "4-7,12-15");
  EXPECT_EQ(t.numa[0].memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(t.numa[1].distances, (std::vector<int>{21, 10}));
  EXPECT_EQ(t.numa_of(12), 1);
  EXPECT_TRUE(t.notes.empty());
}

TEST_F(FakeSysfs, ListsGpusNicsAndDrivesWithTheirNames) {
  dgx_like();
  const NodeTopology t = read_topology(root_);
  std::vector<std::string> seen;
  for (const auto& f : t.devices) seen.push_back(f.kind + " " + f.address + " " + f.name);
  EXPECT_EQ(seen, (std::vector<std::string>{"gpu 0000:03:00.0 ", "nic 0000:04:00.0 mlx5_0",
                                            "gpu 0000:05:00.0 ", "nvme 0000:06:00.0 nvme0",
                                            "gpu 0000:43:00.0 ", "gpu 0000:85:00.0 ",
                                            "nic 0000:86:00.0 ib1"}));
  const PciFunction& g0 = at(t, "0000:03:00.0");
  EXPECT_EQ(g0.host_bridge, "pci0000:00");
  EXPECT_EQ(g0.bridges, (std::vector<std::string>{"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}));
  EXPECT_EQ(g0.link, "32.0 GT/s PCIe x16");
  EXPECT_EQ(cpu_list_text(g0.local_cpus), "0-3,8-11");
}

// Worked by hand from the layout: one switch between GPU0, GPU1 and mlx5_0; GPU3 two switches
// below the one mlx5_1 hangs off; GPU2 on another host bridge of socket 0; GPU3 on socket 1;
// the drive on its own root port of GPU0's host bridge.
TEST_F(FakeSysfs, PathsUseNvidiaSmiTopoWords) {
  dgx_like();
  const NodeTopology t = read_topology(root_);
  const auto& g0 = at(t, "0000:03:00.0");
  const auto& g1 = at(t, "0000:05:00.0");
  const auto& g2 = at(t, "0000:43:00.0");
  const auto& g3 = at(t, "0000:85:00.0");
  const auto& nic0 = at(t, "0000:04:00.0");
  const auto& nic1 = at(t, "0000:86:00.0");
  const auto& drive = at(t, "0000:06:00.0");
  EXPECT_EQ(pci_path(g0, g0), "X");
  EXPECT_EQ(pci_path(g0, g1), "PIX");
  EXPECT_EQ(pci_path(g0, nic0), "PIX");
  EXPECT_EQ(pci_path(g3, nic1), "PXB");
  EXPECT_EQ(pci_path(g0, drive), "PHB");
  EXPECT_EQ(pci_path(g0, g2), "NODE");
  EXPECT_EQ(pci_path(g0, g3), "SYS");
  EXPECT_EQ(pci_path(g3, g0), "SYS");
  EXPECT_EQ(t.devices[*nearest_nic(t, g0)].name, "mlx5_0");
  EXPECT_EQ(t.devices[*nearest_nic(t, g2)].name, "mlx5_0");  // NODE beats SYS
  EXPECT_EQ(t.devices[*nearest_nic(t, g3)].name, "ib1");
}

TEST_F(FakeSysfs, BindsOneThreadPerCoreNodeByNodeFirst) {
  dgx_like();
  const NodeTopology t = read_topology(root_);
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_EQ(binding_order(t, all),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  // CPU 8 is core 0's second hardware thread: after one thread on each of cores 0, 1 and 2
  // (CPU 9 alone stands for core 1).
  EXPECT_EQ(binding_order(t, {8, 0, 9, 2}), (std::vector<int>{0, 9, 2, 8}));

  const bench::Binding n1 = bench::resolve_binding("numa:1", 0, t, all);
  EXPECT_EQ(n1.cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(n1.where, "8 threads bound to CPUs 4-7,12-15 (NUMA node 1)");
  const bench::Binding two = bench::resolve_binding("", 2, t, all);
  EXPECT_EQ(two.where, "2 threads bound to CPUs 0-1 (NUMA node 0)");
  const bench::Binding over = bench::resolve_binding("", 20, t, {0, 1});
  EXPECT_EQ(over.cpus.size(), 20U);
  EXPECT_EQ(over.where, "20 threads bound to CPUs 0-1 (NUMA node 0), up to 10 per CPU");
  EXPECT_EQ(bench::resolve_binding("none", 3, t, all).cpus.size(), 0U);
  EXPECT_THROW(bench::resolve_binding("numa:2", 0, t, all), InputError);
  EXPECT_THROW(bench::resolve_binding("0-3", 5, t, all), InputError);
  EXPECT_THROW(bench::resolve_binding("20", 0, t, all), InputError);
  EXPECT_THROW(bench::resolve_binding("numa:1", 0, t, {0, 1}), InputError);
}

TEST_F(FakeSysfs, SaysWhatAPlatformLeavesOut) {
  // A container: no NUMA directory, no PCI devices, CPUs without topology files.
  fs::remove_all(root_ / "bus");
  write(root_ / "devices/system/cpu/online", "0-1");
  fs::create_directories(root_ / "devices/system/cpu/cpu0");
  const NodeTopology t = read_topology(root_);
  EXPECT_EQ(t.threads(), 2);
  EXPECT_EQ(t.sockets, 1);
  EXPECT_TRUE(t.devices.empty());
  ASSERT_EQ(t.notes.size(), 3U);
  EXPECT_NE(t.notes[0].find("topology is not readable"), std::string::npos);
  EXPECT_NE(t.notes[1].find("no NUMA nodes"), std::string::npos);
  EXPECT_NE(t.notes[2].find("no PCIe devices read"), std::string::npos);
}

TEST(ThreadPoolBinding, EachThreadRunsOnItsCpu) {
  const std::vector<int> allowed = bench::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  // Every thread on the last allowed CPU, then each on its own (as many as the host has).
  for (const std::vector<int>& cpus : {std::vector<int>{allowed.back(), allowed.back()}, allowed}) {
    std::vector<int> ran(cpus.size(), -1);
    {
      bench::ThreadPool pool(0, cpus);
      ASSERT_EQ(pool.size(), static_cast<int>(cpus.size()));
      pool.run([&](int t) { ran[static_cast<size_t>(t)] = sched_getcpu(); });
    }
    EXPECT_EQ(ran, cpus);
  }
  // The caller's own affinity comes back when the pool ends.
  EXPECT_EQ(bench::allowed_cpus(), allowed);
}

}  // namespace
}  // namespace shardcost
