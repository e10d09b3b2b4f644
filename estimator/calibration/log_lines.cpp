// What the training-log importers share: cleaned lines, numbers after keys, the warm-up rule,
// a measured run from a configuration and its step times.
#include "calibration/log_lines.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "shardcost/error.h"
#include "shardcost/importers.h"
#include "shardcost/quantiles.h"

namespace shardcost::logs {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

namespace {

// The launcher's prefix: its length (0: none) and the rank it names.
size_t rank_prefix(std::string_view s, int* rank) {
  size_t lead = 0;
  while (lead < s.size() && s[lead] == ' ') ++lead;
  size_t i = lead;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i > lead && i < s.size() && s[i] == ':' && i - lead < 7) {
    if (rank) *rank = std::stoi(std::string(s.substr(lead, i - lead)));
    return i + 1;
  }
  const std::string_view rest = s.substr(lead);
  for (std::string_view tag : {"[default", "[rank"}) {
    if (rest.rfind(tag, 0) != 0) continue;
    const size_t close = rest.find("]:");
    if (close == std::string_view::npos) continue;
    const std::string_view digits = rest.substr(tag.size(), close - tag.size());
    if (digits.empty() || digits.size() > 6) continue;
    bool all = true;
    for (char c : digits) all = all && std::isdigit(static_cast<unsigned char>(c));
    if (!all) continue;
    if (rank) *rank = std::stoi(std::string(digits));
    return lead + close + 2;
  }
  return 0;
}

}  // namespace

std::string clean_line(std::string_view raw) {
  const std::string_view s = raw.substr(rank_prefix(raw, nullptr));
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    // ESC [ parameters final-byte: a colour code.
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == ';')) ++j;
      i = j;  // the final byte (m) is skipped with it
      continue;
    }
    out.push_back(s[i]);
  }
  return std::string(trim(out));
}

std::optional<int> line_rank(std::string_view raw) {
  int rank = -1;
  return rank_prefix(raw, &rank) > 0 ? std::optional<int>(rank) : std::nullopt;
}

std::optional<double> number_after(std::string_view line, std::string_view key, bool commas) {
  const size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = trim(line.substr(at + key.size()));
  std::string digits;
  for (char c : rest) {
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
        c == '+' || c == '-')
      digits.push_back(c);
    else if (!(commas && c == ',' && !digits.empty()))
      break;
  }
  try {
    size_t used = 0;
    const double v = std::stod(digits, &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void for_each_line(std::string_view text,
                   const std::function<void(int, std::string_view, bool)>& f) {
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    f(++line_no, text.substr(start, end - start), last);
    start = end + 1;
  }
}

Kept past_warmup(const std::vector<Interval>& intervals) {
  Kept out;
  int64_t previous = -1;
  bool first = true;
  for (const Interval& i : intervals) {
    const bool restart = i.restart || (previous >= 0 && i.step <= previous);
    if (restart) first = true;
    const int64_t covered = first ? 0 : i.step - previous;
    if (!first && i.step - covered >= kWarmupSteps) {
      out.seconds.push_back(i.seconds);
      out.steps += covered;
    }
    first = false;
    previous = i.step;
  }
  return out;
}

db::Measurements measured_run(const LogRun& r, const std::string& where, std::string_view kind,
                              std::string_view source, const std::string& salt,
                              std::string_view whole_text) {
  if (r.kept.seconds.empty())
    throw InputError(fmt::format(
        "{}: the run logs no step past its warm-up (the first interval logged after a start "
        "and the first {} steps are left out); log more steps",
        where, kWarmupSteps));
  MeasuredFigures f;
  f.step_s = percentile(r.kept.seconds, 0.5);
  if (r.kept.seconds.size() >= 3) {
    f.step_p10_s = percentile(r.kept.seconds, 0.1);
    f.step_p90_s = percentile(r.kept.seconds, 0.9);
  }
  f.steps = r.kept.steps;
  f.peak_memory_bytes = r.peak_memory_bytes;
  try {
    const Cluster c = load_cluster(r.cluster, r.gpus);
    const Strategy s = parse_strategy(r.strategy, c.total_gpus());
    const Software sw = parse_software(r.software);
    if (const auto why = check_strategy(r.model, c, s)) throw InputError(*why);
    f.tokens_per_s = static_cast<double>(s.gbs) * r.model.seq_len / f.step_s;
    db::Measurements out;
    out.measured =
        measured_record(r.model, r.cluster, c, s, sw, f, r.label.empty() ? where : r.label);
    out.measured->source_kind = std::string(kind);
    out.measured->content_hash = db::content_uuid(std::string(kind), whole_text);
    out.run.tool = std::string(kind);
    out.run.source = std::string(source);
    out.run.uuid = db::content_uuid(fmt::format("{}-{}", kind, salt), whole_text);
    return out;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

}  // namespace shardcost::logs
