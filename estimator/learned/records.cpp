#include "records.h"

#include <cmath>

#include "shardcost/error.h"
#include "shardcost/quantiles.h"

namespace shardcost::learned {

CrossValidation summarise(std::string split, const std::vector<int64_t>& errors_ppm) {
  if (errors_ppm.empty()) return {std::move(split), 0, 0, 0};
  return {std::move(split), errors_ppm.size(), median(errors_ppm) / 1e6,
          percentile(errors_ppm, 0.9) / 1e6};
}

int64_t error_ppm(double predicted, double measured) {
  return static_cast<int64_t>(std::llround(1e6 * std::abs(predicted - measured) / measured));
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
  for (const auto& c : cv) j.push_back({{"split", c.split}, {"rows", c.rows}, {"median", c.median}, {"p90", c.p90}});
  return j;
}

std::vector<CrossValidation> cv_from(const nlohmann::json& j) {
  std::vector<CrossValidation> out;
  for (const auto& c : j)
    out.push_back({c.at("split").get<std::string>(), count_of(c.at("rows")), number_of(c.at("median")),
                   number_of(c.at("p90"))});
  return out;
}

}  // namespace shardcost::learned
