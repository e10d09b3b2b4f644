// import kineto --one-run: the traces of a job's ranks, parsed in parallel, as one run.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "import_util.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "shardcost/parallel.h"

namespace shardcost::db {
namespace {

// Each file parsed on its own thread (the streamed parser holds one chunk at a time); the
// first bad file, in the order given, is the error.
std::vector<Measurements> parse_all(const std::vector<std::string>& paths, int threads) {
  std::vector<std::optional<Measurements>> parsed(paths.size());
  parallel_for(paths.size(), threads, [&](size_t i) { parsed[i] = import_kineto_file(paths[i]); });
  std::vector<Measurements> out;
  for (auto& p : parsed) out.push_back(std::move(*p));
  return out;
}

}  // namespace

Measurements import_kineto_ranks(const std::vector<std::string>& paths, int threads) {
  if (paths.empty()) throw InputError("no traces to import; name one file per rank");
  std::vector<Measurements> ranks = parse_all(paths, threads);

  std::map<int, size_t> file_of_rank;
  Measurements m;
  m.run.tool = "kineto";
  std::unordered_map<std::string, int32_t> names;
  std::map<int64_t, std::pair<int64_t, int64_t>> steps;  // number -> earliest start, latest end
  std::vector<std::string> uuids;
  for (size_t f = 0; f < ranks.size(); ++f) {
    Measurements& r = ranks[f];
    const int rank = r.trace_rank >= 0 ? r.trace_rank : static_cast<int>(f);
    if (auto [it, fresh] = file_of_rank.emplace(rank, f); !fresh)
      throw InputError(fmt::format("{} and {} are both traces of rank {}; give one trace per rank",
                                   paths[it->second], paths[f], rank));
    const int offset = static_cast<int>(m.devices.size());
    for (DeviceRecord d : r.devices) {
      if (d.host.empty()) d.host = fmt::format("rank {}", rank);
      m.devices.push_back(std::move(d));
    }
    std::vector<int32_t> name_of(r.names.size());
    for (size_t i = 0; i < r.names.size(); ++i) {
      auto [it, fresh] = names.emplace(r.names[i], static_cast<int32_t>(m.names.size()));
      if (fresh) m.names.push_back(r.names[i]);
      name_of[i] = it->second;
    }
    for (KernelEvent e : r.kernels) {
      e.device += offset;
      e.name = name_of.at(static_cast<size_t>(e.name));
      m.kernels.push_back(e);
    }
    r.kernels = {};  // the merged copy is the one kept
    for (const StepSpan& s : r.steps) {
      const int64_t end = s.start_ns + s.duration_ns;
      auto [it, fresh] = steps.emplace(s.number, std::make_pair(s.start_ns, end));
      if (!fresh) {
        it->second.first = std::min(it->second.first, s.start_ns);
        it->second.second = std::max(it->second.second, end);
      }
    }
    for (auto& w : r.warnings) m.warnings.push_back(std::move(w));
    uuids.push_back(r.run.uuid);
    m.run.source += (f ? " " : "") + paths[f];
  }
  for (const auto& [number, span] : steps)
    m.steps.push_back({number, span.first, span.second - span.first});
  // The same files, in any order, are the same run.
  std::sort(uuids.begin(), uuids.end());
  std::string joined;
  for (const auto& u : uuids) joined += u + "\n";
  m.run.uuid = content_uuid("kineto-ranks", joined);
  return m;
}

}  // namespace shardcost::db
