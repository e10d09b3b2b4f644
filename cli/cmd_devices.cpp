// devices: the GPUs this machine has (or why none are visible) and the host CPU.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "format.h"
#include "shardcost/profiler.h"

namespace shardcost::cli {
namespace {

void print_devices(const std::string& format_text) {
  const Format f = parse_format(format_text, {Format::text, Format::json});
  const bench::DeviceList d = bench::list_devices();
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
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("host  {}: {}, {} logical CPUs, {:.1f} GiB, {}\n", d.host.hostname, d.host.cpu_model,
             d.host.logical_cpus, d.host.memory_bytes / kGiB, d.host.cuda_build);
  if (d.gpus.empty()) {
    fmt::print("gpus  none: {}\n", d.gpu_status);
    return;
  }
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

}  // namespace

void add_devices_command(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  auto* cmd = app.add_subcommand("devices", "List the CUDA devices and the host CPU");
  cmd->add_option("--format", *format, "text or json");
  cmd->callback([format] { print_devices(*format); });
}

}  // namespace shardcost::cli
