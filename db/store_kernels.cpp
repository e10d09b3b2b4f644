// Reading one traced run back: its events, devices, names and launch configurations.
#include <string>
#include <unordered_map>

#include "shardcost/db.h"
#include "shardcost/error.h"
#include "sqlite.h"
#include "store_rows.h"

namespace shardcost::db {

Measurements Store::kernel_events(int64_t run_id) const {
  const Connection& c = *conn_;
  Measurements m;
  Statement run = c.prepare(std::string(kRunSelect) + " WHERE id = ?");
  run.bind(1, run_id);
  if (!run.step())
    throw InputError(path_ + " has no run " + std::to_string(run_id) + "; 'shardcost db info " +
                     path_ + "' lists them");
  m.run = read_run(run);

  // Devices by their store row, never by name: two GPUs of one model on one host are two rows
  // (their UUIDs or ordinals differ), so they stay two devices here.
  std::unordered_map<int64_t, int> device_of;  // device.id -> index in m.devices
  Statement device = c.prepare(std::string(kDeviceSelect) + " WHERE id = ?");
  auto device_index = [&](int64_t id) {
    if (auto it = device_of.find(id); it != device_of.end()) return it->second;
    device.bind(1, id);
    if (!device.step())
      throw InputError(path_ + ": run " + std::to_string(run_id) + " refers to a missing device " +
                       std::to_string(id) + "; run 'shardcost db check " + path_ + "'");
    m.devices.push_back(read_device(device));
    device.reset();
    return device_of[id] = static_cast<int>(m.devices.size() - 1);
  };
  Statement linked =
      c.prepare("SELECT device_id FROM run_device WHERE run_id = ? ORDER BY device_id");
  linked.bind(1, run_id);
  while (linked.step()) device_index(linked.int64(0));

  std::unordered_map<int64_t, int32_t> name_of;  // string.id -> index in m.names
  Statement name = c.prepare("SELECT text FROM string WHERE id = ?");
  auto name_index = [&](int64_t id) {
    if (auto it = name_of.find(id); it != name_of.end()) return it->second;
    name.bind(1, id);
    m.names.push_back(name.step() ? name.text(0) : std::string("?"));
    name.reset();
    return name_of[id] = static_cast<int32_t>(m.names.size() - 1);
  };

  // No index on kernel_event (it would cost bytes per event): one scan of the table.
  Statement events = c.prepare(
      "SELECT k.device_id, k.stream, k.kind, k.name_id, k.start_ns, k.duration_ns, "
      "coalesce(k.bytes, 0), l.grid_x, l.grid_y, l.grid_z, l.block_x, l.block_y, l.block_z "
      "FROM kernel_event k LEFT JOIN launch_config l ON l.id = k.launch_id "
      "WHERE k.run_id = ? ORDER BY k.rowid");
  events.bind(1, run_id);
  while (events.step()) {
    KernelEvent e;
    e.device = device_index(events.int64(0));
    e.stream = events.int64(1);
    const int64_t kind = events.int64(2);
    e.kind = kind >= 0 && kind <= 3 ? static_cast<EventKind>(kind) : EventKind::kernel;
    e.name = name_index(events.int64(3));
    e.start_ns = events.int64(4);
    e.duration_ns = events.int64(5);
    e.bytes = events.int64(6);
    if (!events.is_null(7)) {
      auto dim = [&](int i) { return static_cast<int32_t>(events.int64(i)); };
      e.launch = {dim(7), dim(8), dim(9), dim(10), dim(11), dim(12)};
    }
    m.kernels.push_back(e);
  }
  return m;
}

}  // namespace shardcost::db
