#include "cuda/cublaslt_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <type_traits>

#include "shardcost/error.h"

#define SC_STR2(x) #x
#define SC_STR(x) SC_STR2(x)

namespace shardcost::bench::cuda {
namespace {

// The entry points used, resolved once from the library of the toolkit's major version: each
// named once here, as the field that holds it and the symbol it is looked up by.
// clang-format off
#define SC_LT_ENTRIES(X) \
  X(Create) \
  X(Destroy) \
  X(GetVersion) \
  X(GetStatusName) \
  X(GetStatusString) \
  X(Matmul) \
  X(MatmulAlgoGetHeuristic) \
  X(MatmulDescCreate) \
  X(MatmulDescDestroy) \
  X(MatmulDescSetAttribute) \
  X(MatmulPreferenceCreate) \
  X(MatmulPreferenceDestroy) \
  X(MatmulPreferenceSetAttribute) \
  X(MatrixLayoutCreate) \
  X(MatrixLayoutDestroy) \
  X(MatrixLayoutSetAttribute)
// clang-format on

struct Lt {
#define SC_LT_FIELD(name) decltype(&cublasLt##name) name;
  SC_LT_ENTRIES(SC_LT_FIELD)
#undef SC_LT_FIELD
};

constexpr const char* kLibrary = "libcublasLt.so." SC_STR(CUBLAS_VER_MAJOR);

// Loaded once, kept for the life of the process (its objects may be released at exit).
const Lt& lt() {
  static const Lt table = [] {
    void* lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr)
      throw Error(
          fmt::format("cannot load cuBLASLt ({}): {}; install the CUDA toolkit's cuBLAS "
                      "or put its lib folder on LD_LIBRARY_PATH",
                      kLibrary, ::dlerror()));
    auto get = [lib](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (fn == nullptr)
        throw Error(
            fmt::format("{} has no {}; it is not the cuBLASLt this shardcost was built "
                        "against (CUDA {})",
                        kLibrary, name, CUBLAS_VER_MAJOR));
    };
    Lt t{};
#define SC_LT_GET(name) get(t.name, "cublasLt" #name);
    SC_LT_ENTRIES(SC_LT_GET)
#undef SC_LT_GET
    return t;
  }();
  return table;
}

void check(cublasStatus_t rc, const char* call, int line) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw Error(fmt::format("{} failed at profiler/cuda/cublaslt_api.cpp:{}: {} ({})", call, line,
                          lt().GetStatusString(rc), lt().GetStatusName(rc)));
}
#define SC_LT(call) check((call), #call, __LINE__)

struct Types {
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
};

Types types(const std::string& dtype) {
  if (dtype == "fp32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  if (dtype == "tf32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  if (dtype == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  if (dtype == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
  if (dtype == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  throw InputError(fmt::format("--dtype {} is unknown; use fp32, tf32, bf16, fp16 or fp8", dtype));
}

}  // namespace

// A release that fails has nothing left to do; the objects are gone either way.
void destroy(cublasLtHandle_t h) {
  (void)lt().Destroy(h);
}
void destroy(cublasLtMatmulDesc_t h) {
  (void)lt().MatmulDescDestroy(h);
}
void destroy(cublasLtMatrixLayout_t h) {
  (void)lt().MatrixLayoutDestroy(h);
}
void destroy(cublasLtMatmulPreference_t h) {
  (void)lt().MatmulPreferenceDestroy(h);
}

std::string LtMatmul::version() {
  return fmt::format("cublasLt={}", lt().GetVersion());
}

LtMatmul::LtMatmul(const std::string& dtype, int64_t m, int64_t n, int64_t k,
                   size_t workspace_bytes, void* workspace, int64_t batch)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  if (batch < 1 || batch > INT32_MAX)
    throw InputError(fmt::format("GEMM batch {} must be between 1 and {}", batch, INT32_MAX));
  const Types t = types(dtype);
  SC_LT(lt().Create(handle_.out()));
  SC_LT(lt().MatmulDescCreate(op_.out(), t.compute, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
  SC_LT(lt().MatmulDescSetAttribute(op_.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
  SC_LT(lt().MatmulDescSetAttribute(op_.get(), CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)));
  SC_LT(lt().MatrixLayoutCreate(a_.out(), t.ab, static_cast<uint64_t>(k), static_cast<uint64_t>(m),
                                k));
  SC_LT(lt().MatrixLayoutCreate(b_.out(), t.ab, static_cast<uint64_t>(k), static_cast<uint64_t>(n),
                                k));
  SC_LT(lt().MatrixLayoutCreate(d_.out(), t.d, static_cast<uint64_t>(m), static_cast<uint64_t>(n),
                                m));
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    const struct {
      cublasLtMatrixLayout_t layout;
      int64_t stride;
    } batched[] = {{a_.get(), k * m}, {b_.get(), k * n}, {d_.get(), m * n}};
    for (const auto& [layout, stride] : batched) {
      SC_LT(lt().MatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                          sizeof(count)));
      SC_LT(lt().MatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof(stride)));
    }
  }
  SC_LT(lt().MatmulPreferenceCreate(pref_.out()));
  SC_LT(lt().MatmulPreferenceSetAttribute(pref_.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                          &workspace_bytes_, sizeof(workspace_bytes_)));
  int found = 0;
  SC_LT(lt().MatmulAlgoGetHeuristic(handle_.get(), op_.get(), a_.get(), b_.get(), d_.get(),
                                    d_.get(), pref_.get(), 1, &algo_, &found));
  if (found == 0)
    throw InputError(
        fmt::format("cuBLASLt has no {} GEMM for {}x{}x{} on this device (fp8 needs "
                    "compute capability 8.9+ and dimensions that are multiples of 16)",
                    dtype, m, n, k));
}

void LtMatmul::run(const void* a, const void* b, void* d, cudaStream_t stream) const {
  SC_LT(lt().Matmul(handle_.get(), op_.get(), &alpha_, a, a_.get(), b, b_.get(), &beta_, d,
                    d_.get(), d, d_.get(), &algo_.algo, workspace_, workspace_bytes_, stream));
}

}  // namespace shardcost::bench::cuda
