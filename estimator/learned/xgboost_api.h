#pragma once
// The only door to XGBoost's C API (libxgboost-dev): regression boosters trained on dense
// float rows, predicting, saving to and loading from bytes. Every call's return code is
// checked and a failure names the call and XGBoost's message. Handles are owned (RAII).
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardcost::xgb {

// Whether this build has XGBoost (SHARDCOST_HAVE_XGBOOST); without it every call below
// throws an Error saying how to get it.
bool available();
std::string version();  // "1.7.4"

class Booster {
 public:
  // Trains `rounds` boosting rounds on rows (row-major, `columns` wide) against labels.
  static Booster train(const std::vector<float>& rows, size_t columns,
                       const std::vector<float>& labels,
                       const std::map<std::string, std::string>& params, int rounds);
  // A booster saved by save() (XGBoost's JSON model format).
  static Booster load(const std::string& bytes);

  Booster(Booster&&) noexcept;
  Booster& operator=(Booster&&) noexcept;
  ~Booster();

  std::vector<float> predict(const std::vector<float>& rows, size_t columns) const;
  std::string save() const;

 private:
  struct Handle;
  explicit Booster(std::unique_ptr<Handle>);
  std::unique_ptr<Handle> h_;
};

}  // namespace shardcost::xgb
