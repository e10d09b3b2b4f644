#pragma once
// What every fitted model's record shares: its cross-validation figures, and the strict
// readers of counts and figures (a damaged record is an InputError, never undefined
// behaviour or a crash).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardcost::learned {

// |predicted - measured| / measured over held-out rows.
struct CrossValidation {
  std::string split;  // "5-fold", "5-fold by (n, k)", "each size held out", ...
  size_t rows = 0;
  double median = 0, p90 = 0;
};

// Held-out |relative error| of time, in parts per million, summarised.
CrossValidation summarise(std::string split, const std::vector<int64_t>& errors_ppm);
int64_t error_ppm(double predicted, double measured);

// A count: a whole non-negative number, never converted from anything else.
size_t count_of(const nlohmann::json&);
// A figure: a finite number.
double number_of(const nlohmann::json&);
nlohmann::json cv_json(const std::vector<CrossValidation>&);
std::vector<CrossValidation> cv_from(const nlohmann::json&);

}  // namespace shardcost::learned
