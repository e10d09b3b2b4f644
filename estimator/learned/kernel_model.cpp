#include "kernel_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "shardcost/error.h"

namespace shardcost::learned {
namespace {

KernelClassModel fit_class(std::string cls, std::vector<KernelSample> samples) {
  KernelClassModel m;
  m.cls = std::move(cls);
  std::sort(samples.begin(), samples.end(), [](const KernelSample& x, const KernelSample& y) {
    return std::tie(x.name, x.threads) < std::tie(y.name, y.threads);
  });
  m.samples = std::move(samples);
  // Median launch, weighted by how often each ran.
  std::vector<std::pair<double, int64_t>> by_time;
  int64_t total = 0;
  for (const auto& s : m.samples) by_time.push_back({s.seconds, s.count}), total += s.count;
  std::sort(by_time.begin(), by_time.end());
  int64_t seen = 0;
  for (const auto& [t, n] : by_time) {
    seen += n;
    if (2 * seen >= total) {
      m.median_s = t;
      break;
    }
  }
  // log2 time against log2 threads, least squares, one point per launch.
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (const auto& s : m.samples) {
    if (!(s.threads > 0)) continue;
    const double x = std::log2(s.threads), y = std::log2(s.seconds);
    if (!m.sized) m.lo = m.hi = x;
    m.sized = true;
    m.lo = std::min(m.lo, x), m.hi = std::max(m.hi, x);
    sx += x, sy += y, sxx += x * x, sxy += x * y, n += 1;
  }
  if (n > 0) {
    const double var = sxx - sx * sx / n;
    m.b = var > 1e-12 ? std::clamp((sxy - sx * sy / n) / var, 0.0, 1.0) : 0.0;
    m.a = (sy - m.b * sx) / n;
  }
  return m;
}

double sized_seconds(const KernelClassModel& m, double threads) {
  return std::exp2(m.a + m.b * std::log2(threads));
}

// Held-out launches of one class: each alone, and each kernel name's together.
void cross_validate(const KernelClassModel& m, HeldOut& by_launch, HeldOut& by_name) {
  std::vector<size_t> known;
  for (size_t i = 0; i < m.samples.size(); ++i)
    if (m.samples[i].threads > 0) known.push_back(i);
  if (known.size() >= 3) {
    for (size_t i : known) {
      std::vector<KernelSample> rest;
      for (size_t j : known)
        if (j != i) rest.push_back(m.samples[j]);
      const auto f = fit_class(m.cls, rest);
      by_launch.add(sized_seconds(f, m.samples[i].threads), m.samples[i].seconds);
    }
  }
  std::set<std::string> names;
  for (size_t i : known) names.insert(m.samples[i].name);
  if (names.size() < 2) return;
  for (const auto& name : names) {
    std::vector<KernelSample> rest;
    for (size_t j : known)
      if (m.samples[j].name != name) rest.push_back(m.samples[j]);
    const auto f = fit_class(m.cls, rest);
    for (size_t i : known)
      if (m.samples[i].name == name)
        by_name.add(sized_seconds(f, m.samples[i].threads), m.samples[i].seconds);
  }
}

}  // namespace

std::string kernel_class(std::string_view name) {
  std::string_view n = name;
  if (n.rfind("void ", 0) == 0) n.remove_prefix(5);
  std::string out;
  int depth = 0;
  for (char c : n) {
    if (c == '<')
      ++depth;
    else if (c == '>' && depth > 0)
      --depth;
    else if (depth == 0 && c == '(')
      break;  // the parameter list
    else if (depth == 0)
      out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  return out.empty() ? std::string(name) : out;
}

std::optional<CurveAnswer> KernelFit::predict(std::string_view name, double threads,
                                              bool look_up) const {
  const std::string cls = kernel_class(name);
  const auto it =
      std::lower_bound(classes.begin(), classes.end(), cls,
                       [](const KernelClassModel& m, const std::string& c) { return m.cls < c; });
  if (it == classes.end() || it->cls != cls) return std::nullopt;
  for (const auto& s : it->samples)
    if (look_up && s.name == name && (s.threads == threads || (!(s.threads > 0) && !(threads > 0))))
      return CurveAnswer{s.seconds, true};
  if (threads > 0 && it->sized) {
    const double x = std::log2(threads);
    return CurveAnswer{sized_seconds(*it, threads), x >= it->lo && x <= it->hi};
  }
  return CurveAnswer{it->median_s, false};
}

KernelFit fit_kernels(const std::string& device, std::vector<KernelSample> samples) {
  KernelFit fit;
  fit.device = device;
  std::map<std::string, std::vector<KernelSample>> by_class;
  for (auto& s : samples) {
    if (!(s.seconds > 0) || s.count < 1) continue;
    fit.rows += static_cast<size_t>(s.count);
    by_class[kernel_class(s.name)].push_back(std::move(s));
  }
  if (fit.rows < kMinKernelEvents)
    throw InputError(fmt::format("{} traced kernels, fewer than the {} a model needs", fit.rows,
                                 kMinKernelEvents));
  HeldOut by_launch, by_name;
  for (auto& [cls, list] : by_class) {
    fit.classes.push_back(fit_class(cls, std::move(list)));
    cross_validate(fit.classes.back(), by_launch, by_name);
  }
  if (!by_launch.empty()) fit.cv.push_back(by_launch.summary("each launch configuration held out"));
  if (!by_name.empty()) fit.cv.push_back(by_name.summary("each kernel name held out of its class"));
  return fit;
}

std::string KernelFit::to_json() const {
  nlohmann::json j;
  j["fitter"] = kKernelFitterVersion;
  j["device"] = device;
  j["rows"] = rows;
  j["cross_validation"] = cv_json(cv);
  j["classes"] = nlohmann::json::array();
  for (const auto& c : classes) {
    nlohmann::json cj = {{"class", c.cls},        {"a", c.a},   {"b", c.b},
                         {"sized", c.sized},      {"lo", c.lo}, {"hi", c.hi},
                         {"median_s", c.median_s}};
    cj["samples"] = nlohmann::json::array();
    for (const auto& s : c.samples)
      cj["samples"].push_back(
          {{"name", s.name}, {"threads", s.threads}, {"count", s.count}, {"seconds", s.seconds}});
    j["classes"].push_back(cj);
  }
  return j.dump();
}

KernelFit KernelFit::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    const auto fitter = j.at("fitter").get<std::string>();
    if (fitter != kKernelFitterVersion)
      throw InputError(fmt::format("fitted by '{}', not this shardcost's {}; fit again", fitter,
                                   kKernelFitterVersion));
    KernelFit f;
    f.device = j.at("device").get<std::string>();
    f.rows = count_of(j.at("rows"));
    f.cv = cv_from(j.at("cross_validation"));
    for (const auto& cj : j.at("classes")) {
      KernelClassModel c;
      c.cls = cj.at("class").get<std::string>();
      if (!f.classes.empty() && c.cls <= f.classes.back().cls)
        throw InputError("its classes are not in order");
      c.a = number_of(cj.at("a"));
      c.b = number_of(cj.at("b"));
      c.sized = cj.at("sized").get<bool>();
      c.lo = number_of(cj.at("lo"));
      c.hi = number_of(cj.at("hi"));
      c.median_s = number_of(cj.at("median_s"));
      if (c.b < 0 || c.b > 1 || !(c.median_s > 0) || c.lo > c.hi || std::abs(c.a) > 1e4 ||
          std::abs(c.hi) > 64)
        throw InputError("a kernel class holds figures out of range; fit again");
      for (const auto& sj : cj.at("samples")) {
        KernelSample s{sj.at("name").get<std::string>(), number_of(sj.at("threads")),
                       static_cast<int64_t>(count_of(sj.at("count"))), number_of(sj.at("seconds"))};
        if (s.threads < 0 || !(s.seconds > 0) || s.count < 1)
          throw InputError("a kernel launch holds figures out of range");
        c.samples.push_back(std::move(s));
      }
      f.classes.push_back(std::move(c));
    }
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("unreadable kernel model ({}); fit again", e.what()));
  }
}

}  // namespace shardcost::learned
