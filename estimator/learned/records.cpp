#include "records.h"

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/quantiles.h"

namespace shardcost::learned {

void HeldOut::add(double predicted_s, double measured_s) {
  pairs_.push_back({measured_s, predicted_s});
}

CrossValidation HeldOut::summary(std::string split) const {
  CrossValidation cv{std::move(split), pairs_.size(), 0, 0, {}};
  if (pairs_.empty()) return cv;
  std::vector<int64_t> ppm;  // |relative error| in parts per million
  for (const auto& [measured, predicted] : pairs_)
    ppm.push_back(
        static_cast<int64_t>(std::llround(1e6 * std::abs(predicted - measured) / measured)));
  cv.median = median(ppm) / 1e6;
  cv.p90 = percentile(ppm, 0.9) / 1e6;
  const size_t step = (pairs_.size() + kKeptHeldOut - 1) / kKeptHeldOut;
  for (size_t i = 0; i < pairs_.size(); i += step) cv.held_out.push_back(pairs_[i]);
  return cv;
}

size_t count_of(const nlohmann::json& j) {
  if (!j.is_number_unsigned()) throw InputError("a count in the record is not a whole number");
  return j.get<size_t>();
}

double number_of(const nlohmann::json& j) {
  if (!j.is_number()) throw InputError("a figure in the record is not a number");
  const double x = j.get<double>();
  if (!std::isfinite(x)) throw InputError("a figure in the record is not finite");
  return x;
}

nlohmann::json cv_json(const std::vector<CrossValidation>& cv) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : cv) {
    nlohmann::json x = {{"split", c.split}, {"rows", c.rows}, {"median", c.median}, {"p90", c.p90}};
    if (!c.held_out.empty()) x["held_out"] = c.held_out;  // [[measured, predicted], ...]
    j.push_back(std::move(x));
  }
  return j;
}

std::vector<CrossValidation> cv_from(const nlohmann::json& j) {
  std::vector<CrossValidation> out;
  for (const auto& c : j) {
    out.push_back({c.at("split").get<std::string>(),
                   count_of(c.at("rows")),
                   number_of(c.at("median")),
                   number_of(c.at("p90")),
                   {}});
    if (const auto it = c.find("held_out"); it != c.end()) {
      if (!it->is_array() || it->size() > kKeptHeldOut)
        throw InputError("its held-out predictions are not a short list");
      for (const auto& pair : *it) {
        if (!pair.is_array() || pair.size() != 2)
          throw InputError("a held-out prediction is not a pair");
        const double measured = number_of(pair[0]), predicted = number_of(pair[1]);
        if (!(measured > 0) || !(predicted > 0))
          throw InputError("a held-out time is not positive");
        out.back().held_out.push_back({measured, predicted});
      }
    }
  }
  return out;
}

}  // namespace shardcost::learned
