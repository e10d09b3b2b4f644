#include "tree_ensemble.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "shardcost/error.h"

namespace shardcost::learned {
namespace {

// Whole numbers only: a JSON number out of int's range is refused, never converted (a damaged
// model must not be undefined behaviour).
std::vector<int> int_array(const nlohmann::json& j, const char* name) {
  if (!j.is_array()) throw InputError(fmt::format("'{}' is not an array", name));
  std::vector<int> out;
  out.reserve(j.size());
  for (const auto& v : j) {
    if (!v.is_number_integer())
      throw InputError(fmt::format("'{}' holds a value that is not an integer", name));
    const int64_t x = v.get<int64_t>();
    if (x < -1 || x > std::numeric_limits<int>::max())
      throw InputError(fmt::format("'{}' holds {}, out of range", name, x));
    out.push_back(static_cast<int>(x));
  }
  return out;
}

std::vector<float> float_array(const nlohmann::json& j, const char* name) {
  if (!j.is_array()) throw InputError(fmt::format("'{}' is not an array", name));
  std::vector<float> out;
  out.reserve(j.size());
  for (const auto& v : j) {
    if (!v.is_number())
      throw InputError(fmt::format("'{}' holds a value that is not a number", name));
    const double x = v.get<double>();
    if (!(std::abs(x) <= std::numeric_limits<float>::max()))
      throw InputError(fmt::format("'{}' holds a value out of float's range", name));
    out.push_back(static_cast<float>(x));
  }
  return out;
}

}  // namespace

TreeEnsemble TreeEnsemble::from_xgboost_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    const auto& learner = j.at("learner");
    const auto& param = learner.at("learner_model_param");
    if (learner.at("gradient_booster").at("name").get<std::string>() != "gbtree")
      throw InputError("not a gbtree model");
    if (param.at("num_class").get<std::string>() != "0" ||
        param.value("num_target", std::string("1")) != "1")
      throw InputError("not a single-output regression model");
    TreeEnsemble e;
    e.base_score_ = std::stod(param.at("base_score").get<std::string>());
    e.features_ = std::stoul(param.at("num_feature").get<std::string>());
    if (!std::isfinite(e.base_score_) || e.features_ > 100000)
      throw InputError("its base score or feature count is out of range");
    for (const auto& t : learner.at("gradient_booster").at("model").at("trees")) {
      const auto left = int_array(t.at("left_children"), "left_children");
      const auto right = int_array(t.at("right_children"), "right_children");
      const auto feature = int_array(t.at("split_indices"), "split_indices");
      const auto value = float_array(t.at("split_conditions"), "split_conditions");
      const auto default_left = int_array(t.at("default_left"), "default_left");
      const size_t n = left.size();
      if (right.size() != n || feature.size() != n || value.size() != n ||
          default_left.size() != n || n == 0)
        throw InputError("a tree's arrays differ in length");
      const int base = static_cast<int>(e.nodes_.size());
      e.roots_.push_back(base);
      for (size_t i = 0; i < n; ++i) {
        const bool leaf = left[i] < 0;
        // Children come after their parent (as XGBoost writes trees): every walk ends.
        if (!leaf && (left[i] <= static_cast<int>(i) || left[i] >= static_cast<int>(n) ||
                      right[i] <= static_cast<int>(i) || right[i] >= static_cast<int>(n) ||
                      feature[i] < 0 || static_cast<size_t>(feature[i]) >= e.features_))
          throw InputError("a tree points outside itself or back up");
        if (!std::isfinite(value[i])) throw InputError("a tree holds a value that is not finite");
        e.nodes_.push_back({leaf ? -1 : base + left[i], leaf ? -1 : base + right[i],
                            leaf ? 0 : feature[i], value[i], default_left[i] != 0});
      }
    }
    return e;
  } catch (const nlohmann::json::exception& ex) {
    throw InputError(fmt::format("unreadable tree model ({})", ex.what()));
  } catch (const std::logic_error& ex) {  // stod/stoul
    throw InputError(fmt::format("unreadable tree model parameter ({})", ex.what()));
  }
}

double TreeEnsemble::predict(const float* row) const {
  double sum = base_score_;
  for (int root : roots_) {
    int i = root;
    while (nodes_[i].left >= 0) {
      const Node& n = nodes_[i];
      const float v = row[n.feature];
      i = std::isnan(v) ? (n.default_left ? n.left : n.right) : (v < n.value ? n.left : n.right);
    }
    sum += nodes_[i].value;
  }
  return sum;
}

}  // namespace shardcost::learned
