#pragma once
// A boosted tree ensemble read from XGBoost's JSON model and evaluated here: a prediction is
// a few thousand comparisons, so searches can ask for many shapes, and a store's fitted
// models price estimates even in a build without XGBoost (which only trains them).
#include <string>
#include <vector>

namespace shardcost::learned {

class TreeEnsemble {
 public:
  // Throws InputError naming what is missing when the JSON is not a gbtree regression model.
  static TreeEnsemble from_xgboost_json(const std::string& json);
  size_t features() const { return features_; }
  size_t trees() const { return roots_.size(); }
  // base_score + the sum of the leaves each tree sends the row to (XGBoost's rule: go left
  // when value < split, missing values (NaN) take the default side).
  double predict(const float* row) const;

 private:
  struct Node {
    int left = -1, right = -1;  // -1: a leaf
    int feature = 0;
    float value = 0;  // split threshold, or the leaf's value
    bool default_left = false;
  };
  std::vector<Node> nodes_;
  std::vector<int> roots_;
  double base_score_ = 0;
  size_t features_ = 0;
};

}  // namespace shardcost::learned
