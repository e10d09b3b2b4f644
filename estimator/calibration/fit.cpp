// fit --table step: the estimate's own parts calibrated on measured training runs, per device
// and stack, cross-validated by configuration and by model (docs/calibration.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "calibration/parts.h"
#include "shardcost/calibration.h"
#include "shardcost/error.h"
#include "shardcost/quantiles.h"

namespace shardcost {
namespace {

constexpr const char* kKind = "step_calibration";
// A run the estimate misses by more than this share counts linearly, not squared (Huber): one
// run priced under the wrong memory decision must not pull every factor toward it.
constexpr double kHuberDelta = 0.10;
// A device with fewer runs under a stack is left to the pooled calibration of that stack.
constexpr int kMinRuns = 4;
// The pulls toward 1 and 0 tried; cross-validation picks one (a factor moves by 0.1 only when
// that buys about sqrt(lambda) x 0.1 of mean squared relative error).
constexpr double kLambdas[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0};
constexpr int kInnerFolds = 5;

// One measured run as the fit sees it.
struct Row {
  std::string label, model, configuration;
  std::map<std::string, double> parts;  // calibration parts' seconds
  double measured = 0, analytic = 0;
  int gpus = 0;
  double modelled_memory = 0, capacity = 0;  // bytes, without the allowance
  std::optional<double> peak;
};

struct Solution {
  std::vector<double> alpha;
  double overhead = 0;  // seconds
};

// measured ~ sum alpha_k x_k + overhead, minimised over relative residuals with Huber weights,
// alpha >= 0 and overhead >= 0, pulled toward 1 and 0 with strength lambda.
// Prior: each factor's pull point (1 where it names none); the overhead's is 0.
using Prior = std::map<std::string, double>;

Solution solve(const std::vector<const Row*>& rows, const std::vector<std::string>& names,
               double lambda, const Prior& pull) {
  const size_t k = names.size(), dim = k + 1;
  double ybar = 0;
  for (const Row* r : rows) ybar += r->measured;
  ybar /= std::max<size_t>(1, rows.size());
  std::vector<std::vector<double>> a(rows.size(), std::vector<double>(dim, 0));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < k; ++j) {
      const auto it = rows[i]->parts.find(names[j]);
      a[i][j] = it == rows[i]->parts.end() ? 0 : it->second / rows[i]->measured;
    }
    a[i][k] = ybar / rows[i]->measured;  // the overhead, in units of the mean step
  }
  std::vector<double> theta(dim, 1.0), prior(dim, 1.0);
  for (size_t j = 0; j < k; ++j)
    if (const auto it = pull.find(names[j]); it != pull.end()) theta[j] = prior[j] = it->second;
  theta[k] = prior[k] = 0;
  std::vector<double> w(rows.size(), 1.0);
  const double n = static_cast<double>(std::max<size_t>(1, rows.size()));
  for (int irls = 0; irls < 8; ++irls) {
    std::vector<std::vector<double>> g(dim, std::vector<double>(dim, 0));
    std::vector<double> c(dim, 0);
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t p = 0; p < dim; ++p) {
        c[p] += w[i] * a[i][p] / n;
        for (size_t q = 0; q < dim; ++q) g[p][q] += w[i] * a[i][p] * a[i][q] / n;
      }
    for (size_t p = 0; p < dim; ++p) {
      g[p][p] += lambda;
      c[p] += lambda * prior[p];
    }
    // Coordinate descent on the bounded quadratic: each coordinate at its minimum, not below 0.
    for (int sweep = 0; sweep < 200; ++sweep) {
      double moved = 0;
      for (size_t p = 0; p < dim; ++p) {
        double v = c[p];
        for (size_t q = 0; q < dim; ++q)
          if (q != p) v -= g[p][q] * theta[q];
        const double next = std::max(0.0, v / g[p][p]);
        moved = std::max(moved, std::abs(next - theta[p]));
        theta[p] = next;
      }
      if (moved < 1e-10) break;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      double fit = 0;
      for (size_t p = 0; p < dim; ++p) fit += a[i][p] * theta[p];
      const double r = std::abs(1 - fit);
      w[i] = r <= kHuberDelta ? 1.0 : kHuberDelta / r;
    }
  }
  Solution s;
  s.alpha.assign(theta.begin(), theta.begin() + static_cast<std::ptrdiff_t>(k));
  s.overhead = theta[k] * ybar;
  return s;
}

double predict(const Solution& s, const std::vector<std::string>& names, const Row& r) {
  double y = s.overhead;
  for (size_t j = 0; j < names.size(); ++j) {
    const auto it = r.parts.find(names[j]);
    if (it != r.parts.end()) y += s.alpha[j] * it->second;
  }
  return y;
}

double rel(double predicted, double measured) {
  return std::abs(predicted - measured) / measured;
}

// Rows grouped by a key (configuration or model), in first-seen order.
std::vector<std::vector<const Row*>> groups_by(const std::vector<const Row*>& rows,
                                               std::string Row::*key) {
  std::vector<std::vector<const Row*>> out;
  std::map<std::string, size_t> at;
  for (const Row* r : rows) {
    auto [it, fresh] = at.emplace(r->*key, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

// The pull cross-validation prefers on these rows: configurations dealt into kInnerFolds folds.
double choose_lambda(const std::vector<const Row*>& rows, const std::vector<std::string>& names,
                     const Prior& pull) {
  const auto groups = groups_by(rows, &Row::configuration);
  if (groups.size() < 3) return 0.1;
  const size_t folds = std::min<size_t>(kInnerFolds, groups.size());
  double best = kLambdas[0], best_error = INFINITY;
  for (double lambda : kLambdas) {
    double error = 0;
    for (size_t f = 0; f < folds; ++f) {
      std::vector<const Row*> train, test;
      for (size_t g = 0; g < groups.size(); ++g)
        for (const Row* r : groups[g]) (g % folds == f ? test : train).push_back(r);
      const Solution s = solve(train, names, lambda, pull);
      for (const Row* r : test) error += rel(predict(s, names, *r), r->measured);
    }
    if (error < best_error - 1e-12) best = lambda, best_error = error;
  }
  return best;
}

// The names of the parts priced above zero in these rows, and in how many.
std::map<std::string, int> seen_parts(const std::vector<const Row*>& rows) {
  std::map<std::string, int> seen;
  for (const Row* r : rows)
    for (const auto& [name, s] : r->parts)
      if (s > 0) ++seen[name];
  return seen;
}

std::vector<std::string> names_of(const std::map<std::string, int>& seen) {
  std::vector<std::string> names;
  for (const auto& [name, n] : seen) names.push_back(name);
  return names;
}

// The stack's calibration over every device, what a device's own is pulled toward: fitted on
// `pool` without the rows `keep` refuses (the group a cross-validation holds out).
Prior pooled_prior(const std::vector<const Row*>* pool,
                   const std::function<bool(const Row*)>& keep) {
  Prior out;
  if (!pool) return out;
  std::vector<const Row*> rows;
  for (const Row* r : *pool)
    if (keep(r)) rows.push_back(r);
  if (rows.empty()) return out;
  const auto names = names_of(seen_parts(rows));
  const Solution s = solve(rows, names, choose_lambda(rows, names, {}), {});
  for (size_t j = 0; j < names.size(); ++j) out[names[j]] = s.alpha[j];
  return out;
}

// Mean |relative error| of each group held out in turn (the pull, its strength and the pooled
// prior all chosen without it), and the held-out predictions by row.
std::optional<double> held_out_error(const std::vector<const Row*>& rows,
                                     const std::vector<std::string>& names, std::string Row::*key,
                                     const std::vector<const Row*>* pool,
                                     std::map<const Row*, double>* predictions) {
  const auto groups = groups_by(rows, key);
  if (groups.size() < 2) return std::nullopt;
  double error = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<const Row*> train;
    for (size_t h = 0; h < groups.size(); ++h)
      if (h != g) train.insert(train.end(), groups[h].begin(), groups[h].end());
    const std::string held = groups[g].front()->*key;
    const Prior pull = pooled_prior(pool, [&](const Row* r) { return r->*key != held; });
    const Solution s = solve(train, names, choose_lambda(train, names, pull), pull);
    for (const Row* r : groups[g]) {
      const double p = predict(s, names, *r);
      error += rel(p, r->measured);
      if (predictions) (*predictions)[r] = p;
    }
  }
  return error / static_cast<double>(rows.size());
}

// pool: the stack's runs on every device, whose calibration this device's is pulled toward;
// nullptr for the pooled calibration itself (pulled toward 1 and 0).
StepCalibration fit_group(const std::vector<const Row*>& rows, const std::string& device,
                          const std::string& software, const std::vector<const Row*>* pool) {
  StepCalibration c;
  c.device = device;
  c.software = software;
  c.runs = static_cast<int>(rows.size());
  std::set<std::string> models;
  for (const Row* r : rows) {
    models.insert(r->model);
    c.max_gpus = std::max(c.max_gpus, r->gpus);
  }
  c.models = static_cast<int>(models.size());
  auto seen = seen_parts(rows);
  const std::vector<std::string> names = names_of(seen);
  const Prior pull = pooled_prior(pool, [](const Row*) { return true; });
  c.lambda = choose_lambda(rows, names, pull);
  const Solution s = solve(rows, names, c.lambda, pull);
  for (size_t j = 0; j < names.size(); ++j)
    c.factors.push_back({names[j], s.alpha[j], seen[names[j]]});
  c.overhead_s = s.overhead;
  double analytic = 0, fitted = 0;
  for (const Row* r : rows) {
    analytic += rel(r->analytic, r->measured);
    fitted += rel(predict(s, names, *r), r->measured);
  }
  c.analytic_error = analytic / static_cast<double>(rows.size());
  c.fitted_error = fitted / static_cast<double>(rows.size());
  std::map<const Row*, double> by_configuration, by_model;
  c.configuration_cv_error =
      held_out_error(rows, names, &Row::configuration, pool, &by_configuration);
  c.model_cv_error = held_out_error(rows, names, &Row::model, pool, &by_model);
  // Each run's held-out prediction: with its model held out, else its configuration.
  if (by_model.empty()) by_model = by_configuration;
  for (const Row* r : rows) {
    const auto it = by_model.find(r);
    c.held_out.push_back({r->label, r->model, r->measured, r->analytic,
                          it == by_model.end() ? predict(s, names, *r) : it->second});
  }
  if (!c.model_cv_error)
    c.notes.push_back(
        fmt::format("one model only ({}): no model can be held out; the "
                    "uncertainty is the configuration-held-out error",
                    *models.begin()));

  // Memory: the allowance the logged peaks show, never so large that a run that ran would not
  // fit (runs whose state and activations alone exceed their GPU bound nothing: said).
  std::vector<double> over;
  std::optional<double> bound;
  for (const Row* r : rows) {
    if (r->capacity <= 0) continue;
    if (r->peak) over.push_back(*r->peak - r->modelled_memory);
    const double room = r->capacity - r->modelled_memory;
    if (room < 0) {
      c.notes.push_back(
          fmt::format("{}: its modelled state and activations ({:.1f} GiB) exceed "
                      "its GPU ({:.1f} GiB) with no allowance, and it ran",
                      r->label, r->modelled_memory / (1 << 30), r->capacity / (1 << 30)));
      continue;
    }
    bound = bound ? std::min(*bound, room) : room;
  }
  c.memory_runs = static_cast<int>(over.size());
  if (!over.empty()) c.memory_allowance_bytes = std::max(0.0, percentile(over, 0.5));
  if (bound) {
    const double preset = software_preset(software).memory_fixed_bytes;
    const double want = c.memory_allowance_bytes.value_or(preset);
    if (*bound < want) c.memory_allowance_bytes = std::max(0.0, *bound);
  }
  return c;
}

std::string configuration_key(const db::MeasuredStepRecord& r) {
  return fmt::format("{}|{}|{}|{}|{}|{}", r.model_json, r.cluster, r.gpus, r.strategy, r.software,
                     r.precision);
}

nlohmann::json to_json(const StepCalibration& c) {
  nlohmann::json j;
  j["device"] = c.device;
  j["software"] = c.software;
  for (const auto& f : c.factors)
    j["factors"].push_back({{"part", f.part}, {"value", f.value}, {"runs", f.runs}});
  j["overhead_s"] = c.overhead_s;
  j["runs"] = c.runs;
  j["models"] = c.models;
  j["max_gpus"] = c.max_gpus;
  j["lambda"] = c.lambda;
  j["analytic_error"] = c.analytic_error;
  j["fitted_error"] = c.fitted_error;
  if (c.configuration_cv_error) j["configuration_cv_error"] = *c.configuration_cv_error;
  if (c.model_cv_error) j["model_cv_error"] = *c.model_cv_error;
  if (c.memory_allowance_bytes) j["memory_allowance_bytes"] = *c.memory_allowance_bytes;
  j["memory_runs"] = c.memory_runs;
  j["notes"] = c.notes;
  for (const auto& h : c.held_out)
    j["held_out"].push_back({{"label", h.label},
                             {"model", h.model},
                             {"measured_s", h.measured_s},
                             {"analytic_s", h.analytic_s},
                             {"calibrated_s", h.calibrated_s}});
  return j;
}

StepCalibration from_json(const nlohmann::json& j) {
  StepCalibration c;
  c.device = j.at("device").get<std::string>();
  c.software = j.at("software").get<std::string>();
  if (j.contains("factors"))
    for (const auto& f : j.at("factors"))
      c.factors.push_back(
          {f.at("part").get<std::string>(), f.at("value").get<double>(), f.at("runs").get<int>()});
  c.overhead_s = j.at("overhead_s").get<double>();
  c.runs = j.at("runs").get<int>();
  c.models = j.at("models").get<int>();
  c.max_gpus = j.at("max_gpus").get<int>();
  c.lambda = j.at("lambda").get<double>();
  c.analytic_error = j.at("analytic_error").get<double>();
  c.fitted_error = j.at("fitted_error").get<double>();
  if (j.contains("configuration_cv_error"))
    c.configuration_cv_error = j.at("configuration_cv_error").get<double>();
  if (j.contains("model_cv_error")) c.model_cv_error = j.at("model_cv_error").get<double>();
  if (j.contains("memory_allowance_bytes"))
    c.memory_allowance_bytes = j.at("memory_allowance_bytes").get<double>();
  c.memory_runs = j.value("memory_runs", 0);
  c.notes = j.value("notes", std::vector<std::string>{});
  if (j.contains("held_out"))
    for (const auto& h : j.at("held_out"))
      c.held_out.push_back({h.at("label").get<std::string>(), h.at("model").get<std::string>(),
                            h.at("measured_s").get<double>(), h.at("analytic_s").get<double>(),
                            h.at("calibrated_s").get<double>()});
  return c;
}

}  // namespace

double StepCalibration::uncertainty() const {
  return model_cv_error.value_or(configuration_cv_error.value_or(fitted_error));
}

double StepCalibration::factor(std::string_view part) const {
  for (const auto& f : factors)
    if (f.part == part) return f.value;
  return 1;
}

std::vector<StepCalibration> fit_step_calibrations(const std::string& store_path,
                                                   const CostSource* costs,
                                                   std::vector<std::string>* skipped) {
  db::Store store = db::Store::open(store_path, db::Store::Mode::read_write);
  std::vector<Row> rows;
  std::vector<std::pair<std::string, std::string>> keys;  // device, software per row
  std::vector<std::string> uuids;
  for (const auto& stored : store.measured_steps()) {
    try {
      const MeasuredRun run = resolve_measured(stored.record, stored.run_uuid);
      EstimateOptions opt;
      opt.software = run.software;
      opt.costs = costs;
      const Estimate e = estimate(run.model, run.cluster, run.strategy, opt);
      Row r;
      r.label = stored.record.label.empty() ? stored.run_uuid : stored.record.label;
      r.model = stored.record.model_name;
      r.configuration = configuration_key(stored.record);
      r.parts = calibration_parts(e, stored.record.precision);
      r.measured = static_cast<double>(stored.record.step_time_ns) / 1e9;
      r.analytic = e.step_time_s;
      r.gpus = static_cast<int>(stored.record.gpus);
      r.modelled_memory = e.memory_per_gpu_bytes - memory_part(e, "buffers");
      r.capacity = e.memory_capacity_bytes;
      if (stored.record.peak_memory_bytes)
        r.peak = static_cast<double>(*stored.record.peak_memory_bytes);
      if (!(r.analytic > 0)) throw InputError("the estimate prices no step time");
      rows.push_back(std::move(r));
      // From the run's cluster, not the stored name: stores written before mixed clusters
      // were calibrated on their own name only their first group's device.
      keys.emplace_back(calibration_devices(run.cluster), run.software.name);
      uuids.push_back(stored.run_uuid);
    } catch (const InputError& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  std::vector<StepCalibration> out;
  std::map<std::string, std::vector<size_t>> by_stack;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_device;
  for (size_t i = 0; i < rows.size(); ++i) {
    by_stack[keys[i].second].push_back(i);
    by_device[keys[i]].push_back(i);
  }
  // A stack's runs on every device: what each device's calibration is pulled toward, where
  // the stack ran on more than one.
  std::map<std::string, std::vector<const Row*>> pools;
  for (const auto& [software, at] : by_stack) {
    std::set<std::string> devices;
    for (size_t i : at) devices.insert(keys[i].first);
    if (devices.size() < 2) continue;
    for (size_t i : at) pools[software].push_back(&rows[i]);
  }
  auto add = [&](const std::vector<size_t>& at, const std::string& device,
                 const std::string& software, const std::string& note) {
    const auto pool = pools.find(software);
    const std::vector<const Row*>* pull =
        device.empty() || pool == pools.end() ? nullptr : &pool->second;
    std::vector<const Row*> group;
    std::string sources;
    for (size_t i : at) {
      group.push_back(&rows[i]);
      sources += (sources.empty() ? "" : " ") + uuids[i];
    }
    StepCalibration c = fit_group(group, device, software, pull);
    if (pull)
      c.notes.push_back(fmt::format("pulled toward {}'s calibration over every device ({} runs)",
                                    software, pull->size()));
    if (!note.empty()) c.notes.insert(c.notes.begin(), note);
    store.put_fitted_model({kKind, "",
                            fmt::format("{} {}", device.empty() ? "*" : device, software),
                            to_json(c).dump(), sources, 0});
    out.push_back(std::move(c));
  };
  for (const auto& [key, at] : by_device) {
    if (static_cast<int>(at.size()) >= kMinRuns) add(at, key.first, key.second, "");
  }
  // Pooled over devices, for a stack's devices with too few runs of their own (or none).
  for (const auto& [software, at] : by_stack) {
    std::set<std::string> devices;
    for (size_t i : at) devices.insert(keys[i].first);
    bool short_device = false;
    for (const auto& d : devices) short_device |= by_device[{d, software}].size() < kMinRuns;
    if (devices.size() > 1 || short_device) {
      if (static_cast<int>(at.size()) >= kMinRuns)
        add(at, "", software,
            fmt::format("pooled over {} device{}: applies to the devices of {} without a "
                        "calibration of their own",
                        devices.size(), devices.size() == 1 ? "" : "s", software));
    }
  }
  return out;
}

std::vector<StepCalibration> load_step_calibrations(const std::string& store_path) {
  db::Store store = db::Store::open(store_path, db::Store::Mode::read_only);
  std::vector<StepCalibration> out;
  for (const auto& m : store.fitted_models()) {
    if (m.kind != kKind) continue;
    try {
      out.push_back(from_json(nlohmann::json::parse(m.parameters_json)));
    } catch (const std::exception& e) {
      throw InputError(
          fmt::format("store {}: the step calibration {} cannot be read ({}); fit it "
                      "again with 'shardcost fit --table step'",
                      store_path, m.key, e.what()));
    }
  }
  return out;
}

}  // namespace shardcost
