#include "blas.h"

#include <fmt/format.h>

#include <limits>
#include <thread>

#include "shardcost/error.h"

#ifdef SHARDCOST_HAVE_BLAS
#include <cblas.h>
#endif

namespace shardcost::bench::blas {
namespace {

[[maybe_unused]] int to_int(int64_t v, const char* what) {
  if (v <= 0 || v > std::numeric_limits<int>::max())
    throw InputError(fmt::format("GEMM {} = {} is outside what CBLAS takes (1..2^31-1)", what, v));
  return static_cast<int>(v);
}

}  // namespace

#ifdef SHARDCOST_HAVE_BLAS
bool available() {
  return true;
}

bool has_bf16() {
#ifdef SHARDCOST_HAVE_SBGEMM
  return true;
#else
  return false;
#endif
}

std::string version() {
  const char* config = openblas_get_config();
  return config ? config : "OpenBLAS";
}

void set_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(threads);
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  const int mi = to_int(m, "m"), ni = to_int(n, "n"), ki = to_int(k, "k");
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni, 0.0f, c,
              ni);
}

void sbgemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, const uint16_t* b, float* c) {
#ifdef SHARDCOST_HAVE_SBGEMM
  const int mi = to_int(m, "m"), ni = to_int(n, "n"), ki = to_int(k, "k");
  cblas_sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni, 0.0f, c,
               ni);
#else
  (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
  throw InputError(
      "--dtype bf16 needs cblas_sbgemm, which this OpenBLAS lacks (Debian builds it without "
      "bf16); use --dtype fp32 on the CPU");
#endif
}
#else
namespace {
[[noreturn]] void missing() {
  throw Error(
      "this shardcost was built without a CBLAS, so --device cpu GEMMs cannot run; install "
      "libopenblas-dev and rebuild");
}
}  // namespace

bool available() {
  return false;
}
bool has_bf16() {
  return false;
}
std::string version() {
  return "none";
}
void set_threads(int) {}
void sgemm(int64_t, int64_t, int64_t, const float*, const float*, float*) {
  missing();
}
void sbgemm(int64_t, int64_t, int64_t, const uint16_t*, const uint16_t*, float*) {
  missing();
}
#endif

}  // namespace shardcost::bench::blas
