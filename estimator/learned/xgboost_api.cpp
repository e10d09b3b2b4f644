#include "xgboost_api.h"

#include <fmt/format.h>

#include "shardcost/error.h"

#ifdef SHARDCOST_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace shardcost::xgb {

#ifdef SHARDCOST_HAVE_XGBOOST
namespace {

void check(int rc, const char* call) {
  if (rc != 0) throw Error(fmt::format("XGBoost {} failed: {}", call, XGBGetLastError()));
}

struct Matrix {
  DMatrixHandle h = nullptr;
  Matrix(const std::vector<float>& rows, size_t columns) {
    if (columns == 0 || rows.size() % columns != 0)
      throw Error(fmt::format("XGBoost rows: {} values are not rows of {}", rows.size(), columns));
    check(XGDMatrixCreateFromMat(rows.data(), rows.size() / columns, columns, -1e30f, &h),
          "XGDMatrixCreateFromMat");
  }
  ~Matrix() {
    if (h) XGDMatrixFree(h);  // nothing to do on failure while unwinding
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
};

}  // namespace

struct Booster::Handle {
  BoosterHandle h = nullptr;
  Handle() { check(XGBoosterCreate(nullptr, 0, &h), "XGBoosterCreate"); }
  explicit Handle(const Matrix& m) {
    const DMatrixHandle cache[] = {m.h};
    check(XGBoosterCreate(cache, 1, &h), "XGBoosterCreate");
  }
  ~Handle() {
    if (h) XGBoosterFree(h);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

bool available() {
  return true;
}

std::string version() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return fmt::format("{}.{}.{}", major, minor, patch);
}

Booster Booster::train(const std::vector<float>& rows, size_t columns,
                       const std::vector<float>& labels,
                       const std::map<std::string, std::string>& params, int rounds) {
  const Matrix m(rows, columns);
  if (labels.size() != rows.size() / columns)
    throw Error(
        fmt::format("XGBoost labels: {} for {} rows", labels.size(), rows.size() / columns));
  check(XGDMatrixSetFloatInfo(m.h, "label", labels.data(), labels.size()), "XGDMatrixSetFloatInfo");
  auto h = std::make_unique<Handle>(m);
  for (const auto& [k, v] : params)
    check(XGBoosterSetParam(h->h, k.c_str(), v.c_str()), "XGBoosterSetParam");
  for (int i = 0; i < rounds; ++i)
    check(XGBoosterUpdateOneIter(h->h, i, m.h), "XGBoosterUpdateOneIter");
  return Booster(std::move(h));
}

Booster Booster::load(const std::string& bytes) {
  auto h = std::make_unique<Handle>();
  check(XGBoosterLoadModelFromBuffer(h->h, bytes.data(), bytes.size()),
        "XGBoosterLoadModelFromBuffer");
  return Booster(std::move(h));
}

std::vector<float> Booster::predict(const std::vector<float>& rows, size_t columns) const {
  const Matrix m(rows, columns);
  bst_ulong n = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(h_->h, m.h, 0, 0, 0, &n, &out), "XGBoosterPredict");
  return std::vector<float>(out, out + n);
}

std::string Booster::save() const {
  bst_ulong n = 0;
  const char* out = nullptr;
  check(XGBoosterSaveModelToBuffer(h_->h, R"({"format": "json"})", &n, &out),
        "XGBoosterSaveModelToBuffer");
  return std::string(out, n);
}

#else  // no XGBoost in this build

struct Booster::Handle {};
namespace {
[[noreturn]] void missing() {
  throw InputError(
      "this shardcost was built without XGBoost: install libxgboost-dev "
      "(scripts/install-deps.sh) and rebuild");
}
}  // namespace
bool available() {
  return false;
}
std::string version() {
  return "none";
}
Booster Booster::train(const std::vector<float>&, size_t, const std::vector<float>&,
                       const std::map<std::string, std::string>&, int) {
  missing();
}
Booster Booster::load(const std::string&) {
  missing();
}
std::vector<float> Booster::predict(const std::vector<float>&, size_t) const {
  missing();
}
std::string Booster::save() const {
  missing();
}

#endif

Booster::Booster(std::unique_ptr<Handle> h) : h_(std::move(h)) {}
Booster::Booster(Booster&&) noexcept = default;
Booster& Booster::operator=(Booster&&) noexcept = default;
Booster::~Booster() = default;

}  // namespace shardcost::xgb
