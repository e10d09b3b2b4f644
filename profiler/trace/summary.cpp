// The summary of a trace: time per class, per stream and per kernel, GPU busy fraction, and
// compute/communication overlap as Holistic Trace Analysis defines it (per device: the share of
// communication-kernel time during which at least one compute kernel also runs).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "intervals.h"
#include "shardcost/trace.h"

namespace shardcost::trace {

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

int64_t total_length(const std::vector<Interval>& merged) {
  int64_t sum = 0;
  for (const auto& i : merged) sum += i.end - i.start;
  return sum;
}

int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].start, b[j].start);
    const int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return sum;
}

double Summary::busy_fraction() const {
  int64_t busy = 0, span = 0;
  for (const auto& d : devices) busy += d.busy_ns, span += d.span_ns;
  return span > 0 ? static_cast<double>(busy) / static_cast<double>(span) : 0.0;
}

double Summary::overlap_fraction() const {
  int64_t comm = 0, overlapped = 0;
  for (const auto& d : devices)
    comm += d.communication_ns, overlapped += d.overlapped_communication_ns;
  return comm > 0 ? static_cast<double>(overlapped) / static_cast<double>(comm) : 0.0;
}

namespace {

struct DeviceIntervals {
  std::vector<Interval> busy, communication, compute;
  int64_t first = INT64_MAX, last = INT64_MIN;
};

}  // namespace

Summary summarize(const db::Measurements& trace, size_t top_n) {
  Summary s;
  std::vector<KernelClass> class_of(trace.names.size(), KernelClass::other);
  std::vector<bool> classified(trace.names.size(), false);
  std::map<KernelClass, ClassTime> classes;
  std::map<std::pair<int, int64_t>, StreamTime> streams;
  std::unordered_map<int32_t, KernelTime> kernels;
  std::map<int, DeviceIntervals> devices;

  for (const auto& e : trace.kernels) {
    if (e.kind == db::EventKind::sync) {
      ++s.syncs;
      s.sync_time_ns += e.duration_ns;
      continue;
    }
    const auto n = static_cast<size_t>(e.name);
    if (n < classified.size() && !classified[n]) {
      class_of[n] = classify(trace.names[n], e.kind).cls;
      classified[n] = true;
    }
    KernelClass cls = e.kind == db::EventKind::memcpy   ? KernelClass::copy
                      : e.kind == db::EventKind::memset ? KernelClass::set
                      : n < class_of.size()             ? class_of[n]
                                                        : KernelClass::other;
    if (e.kind == db::EventKind::kernel)
      ++s.kernels;
    else if (e.kind == db::EventKind::memcpy)
      ++s.copies;
    else
      ++s.sets;
    s.gpu_time_ns += e.duration_ns;
    auto& c = classes.try_emplace(cls, ClassTime{cls}).first->second;
    ++c.count, c.time_ns += e.duration_ns;
    auto& st =
        streams.try_emplace({e.device, e.stream}, StreamTime{e.device, e.stream}).first->second;
    ++st.count, st.time_ns += e.duration_ns;
    if (e.kind == db::EventKind::kernel) {
      auto& k = kernels.try_emplace(e.name, KernelTime{"", cls}).first->second;
      ++k.count, k.time_ns += e.duration_ns;
    }
    auto& d = devices[e.device];
    const Interval iv{e.start_ns, e.start_ns + e.duration_ns};
    d.first = std::min(d.first, iv.start);
    d.last = std::max(d.last, iv.end);
    d.busy.push_back(iv);
    if (e.kind == db::EventKind::kernel)
      (cls == KernelClass::communication ? d.communication : d.compute).push_back(iv);
  }

  for (auto& [cls, c] : classes) s.classes.push_back(c);
  std::stable_sort(s.classes.begin(), s.classes.end(),
                   [](const ClassTime& a, const ClassTime& b) { return a.time_ns > b.time_ns; });
  for (auto& [key, st] : streams) s.streams.push_back(st);
  for (auto& [name, k] : kernels) {
    k.name = static_cast<size_t>(name) < trace.names.size() ? trace.names[static_cast<size_t>(name)]
                                                            : "?";
    s.top.push_back(std::move(k));
  }
  std::sort(s.top.begin(), s.top.end(), [](const KernelTime& a, const KernelTime& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  if (s.top.size() > top_n) s.top.resize(top_n);
  for (auto& [index, d] : devices) {
    DeviceTime t{index};
    t.span_ns = d.last - d.first;
    t.busy_ns = total_length(merge(std::move(d.busy)));
    const auto comm = merge(std::move(d.communication));
    t.communication_ns = total_length(comm);
    t.overlapped_communication_ns = intersection_length(comm, merge(std::move(d.compute)));
    s.devices.push_back(t);
  }
  return s;
}

}  // namespace shardcost::trace
