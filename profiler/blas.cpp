#include "blas.h"

#include <fmt/format.h>

#include <limits>
#include <thread>

#include "shardcost/error.h"

#ifdef SHARDCOST_HAVE_BLAS
#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>
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
namespace {

// OpenBLAS is loaded on first use, not linked: its pthreads build starts a pool of worker
// threads when it loads, and an idle worker polls (sched_yield) before it sleeps, so linked
// it took a second core through every command, a rank as much as a benchmark (1.77x the CPU
// seconds of `rank --model llama3-70b --cluster dgx-h100 --gpus 64`). Loaded, it starts
// one thread unless OPENBLAS_NUM_THREADS says otherwise; set_threads() asks for more.
struct Blas {
  decltype(&openblas_get_config) get_config = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&cblas_sgemm) sgemm = nullptr;
  // cblas_sbgemm, declared here (bfloat16 is OpenBLAS's uint16_t): null where the library was
  // built without it, as Debian's is, or its header does not name it.
  void (*sbgemm)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                 const uint16_t*, blasint, const uint16_t*, blasint, float, float*,
                 blasint) = nullptr;
};

// The library's SONAME (OpenBLAS's since 0.2), then the file the build linked against.
constexpr const char* kLibraries[] = {"libopenblas.so.0", SHARDCOST_OPENBLAS_PATH};

// The load's outcome, once for the process: the entry points, or why there are none.
struct Loaded {
  Blas fns;
  std::string error;
};

const Loaded& loaded() {
  static const Loaded once = [] {
    const bool pool_unset = std::getenv("OPENBLAS_NUM_THREADS") == nullptr;
    if (pool_unset) ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
    void* handle = nullptr;
    std::string why;
    for (const char* name : kLibraries) {
      handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      const char* e = ::dlerror();
      why += fmt::format("{}{}", why.empty() ? "" : "; ", e ? e : name);
    }
    if (pool_unset) ::unsetenv("OPENBLAS_NUM_THREADS");
    Loaded l;
    if (handle == nullptr) {
      l.error = fmt::format(
          "cannot load OpenBLAS ({}); install libopenblas0 or put its folder on LD_LIBRARY_PATH",
          why);
      return l;
    }
    auto get = [&](auto& fn, const char* name, bool required) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
      if (fn == nullptr && required && l.error.empty())
        l.error = fmt::format("the OpenBLAS loaded has no {}; it is not a CBLAS", name);
    };
    get(l.fns.get_config, "openblas_get_config", true);
    get(l.fns.set_num_threads, "openblas_set_num_threads", true);
    get(l.fns.sgemm, "cblas_sgemm", true);
    get(l.fns.sbgemm, "cblas_sbgemm", false);
    return l;
  }();
  return once;
}

// The entry points; throws why the library did not load.
const Blas& lib() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw Error(l.error);
  return l.fns;
}

}  // namespace

// Loadable, not only built against: a benchmark that only names the library's version says
// "none" rather than failing where OpenBLAS is missing.
bool available() {
  return loaded().error.empty();
}

bool has_bf16() {
  return lib().sbgemm != nullptr;
}

std::string version() {
  const char* config = lib().get_config();
  return config ? config : "OpenBLAS";
}

void set_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  lib().set_num_threads(threads);
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  const int mi = to_int(m, "m"), ni = to_int(n, "n"), ki = to_int(k, "k");
  lib().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni, 0.0f, c,
              ni);
}

void sbgemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, const uint16_t* b, float* c) {
  if (!has_bf16())
    throw InputError(
        "--dtype bf16 needs cblas_sbgemm, which this OpenBLAS lacks (Debian builds it without "
        "bf16); use --dtype fp32 on the CPU");
  const int mi = to_int(m, "m"), ni = to_int(n, "n"), ki = to_int(k, "k");
  lib().sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni, 0.0f, c,
               ni);
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
