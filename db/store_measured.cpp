// Measured training runs (schema 8's measured_step): written with their run, read back for
// calibration.
#include "shardcost/db.h"
#include "sqlite.h"
#include "store_access.h"
#include "store_rows.h"

namespace shardcost::db {

void write_measured_step(const Connection& c, int64_t run_id, const MeasuredStepRecord& r) {
  Statement s = c.prepare(
      "INSERT INTO measured_step (run_id, label, model_json, model_name, cluster, gpus, strategy, "
      "software, device, precision, seq_len, step_time_ns, step_time_p10_ns, step_time_p90_ns, "
      "steps, tokens_per_s, peak_memory_bytes, source_kind, content_hash) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, run_id).bind(2, r.label).bind(3, r.model_json).bind(4, r.model_name);
  s.bind(5, r.cluster).bind(6, r.gpus).bind(7, r.strategy).bind(8, r.software);
  s.bind(9, r.device).bind(10, r.precision).bind(11, r.seq_len).bind(12, r.step_time_ns);
  s.bind(13, r.step_time_p10_ns).bind(14, r.step_time_p90_ns).bind(15, r.steps);
  if (r.tokens_per_s) s.bind(16, *r.tokens_per_s);
  s.bind(17, r.peak_memory_bytes).bind(18, r.source_kind).bind(19, r.content_hash);
  s.run();
}

std::vector<Store::MeasuredStep> Store::measured_steps() const {
  Statement s = StoreAccess::connection(*this).prepare(
      "SELECT r.uuid, m.label, m.model_json, m.model_name, m.cluster, m.gpus, m.strategy, "
      "m.software, m.device, m.precision, m.seq_len, m.step_time_ns, m.step_time_p10_ns, "
      "m.step_time_p90_ns, m.steps, m.tokens_per_s, m.peak_memory_bytes, m.source_kind, "
      "m.content_hash FROM measured_step m JOIN run r ON r.id = m.run_id ORDER BY m.run_id");
  std::vector<MeasuredStep> out;
  auto opt = [&](int i) {
    return s.is_null(i) ? std::nullopt : std::optional<int64_t>(s.int64(i));
  };
  while (s.step()) {
    MeasuredStep m;
    m.run_uuid = s.text(0);
    MeasuredStepRecord& r = m.record;
    r.label = s.text(1);
    r.model_json = s.text(2);
    r.model_name = s.text(3);
    r.cluster = s.text(4);
    r.gpus = s.int64(5);
    r.strategy = s.text(6);
    r.software = s.text(7);
    r.device = s.text(8);
    r.precision = s.text(9);
    r.seq_len = s.int64(10);
    r.step_time_ns = s.int64(11);
    r.step_time_p10_ns = opt(12);
    r.step_time_p90_ns = opt(13);
    r.steps = s.int64(14);
    if (!s.is_null(15)) r.tokens_per_s = s.real(15);
    r.peak_memory_bytes = opt(16);
    r.source_kind = s.text(17);
    r.content_hash = s.text(18);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace shardcost::db
