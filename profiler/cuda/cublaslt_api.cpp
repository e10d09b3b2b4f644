#include "cuda/cublaslt_api.h"

#include <fmt/format.h>

#include <cstdint>

#include "shardcost/error.h"

namespace shardcost::bench::cuda {
namespace {

void check(cublasStatus_t rc, const char* call, int line) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  throw Error(fmt::format("{} failed at profiler/cuda/cublaslt_api.cpp:{}: {} ({})", call, line,
                          cublasLtGetStatusString(rc), cublasLtGetStatusName(rc)));
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

std::string LtMatmul::version() {
  return fmt::format("cublasLt={}", cublasLtGetVersion());
}

LtMatmul::LtMatmul(const std::string& dtype, int64_t m, int64_t n, int64_t k,
                   size_t workspace_bytes, void* workspace, int64_t batch)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  if (batch < 1 || batch > INT32_MAX)
    throw InputError(fmt::format("GEMM batch {} must be between 1 and {}", batch, INT32_MAX));
  const Types t = types(dtype);
  SC_LT(cublasLtCreate(handle_.out()));
  SC_LT(cublasLtMatmulDescCreate(op_.out(), t.compute, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
  SC_LT(cublasLtMatmulDescSetAttribute(op_.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans,
                                       sizeof(trans)));
  SC_LT(
      cublasLtMatmulDescSetAttribute(op_.get(), CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)));
  SC_LT(cublasLtMatrixLayoutCreate(a_.out(), t.ab, static_cast<uint64_t>(k),
                                   static_cast<uint64_t>(m), k));
  SC_LT(cublasLtMatrixLayoutCreate(b_.out(), t.ab, static_cast<uint64_t>(k),
                                   static_cast<uint64_t>(n), k));
  SC_LT(cublasLtMatrixLayoutCreate(d_.out(), t.d, static_cast<uint64_t>(m),
                                   static_cast<uint64_t>(n), m));
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    const struct {
      cublasLtMatrixLayout_t layout;
      int64_t stride;
    } batched[] = {{a_.get(), k * m}, {b_.get(), k * n}, {d_.get(), m * n}};
    for (const auto& [layout, stride] : batched) {
      SC_LT(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                             sizeof(count)));
      SC_LT(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof(stride)));
    }
  }
  SC_LT(cublasLtMatmulPreferenceCreate(pref_.out()));
  SC_LT(cublasLtMatmulPreferenceSetAttribute(pref_.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes_, sizeof(workspace_bytes_)));
  int found = 0;
  SC_LT(cublasLtMatmulAlgoGetHeuristic(handle_.get(), op_.get(), a_.get(), b_.get(), d_.get(),
                                       d_.get(), pref_.get(), 1, &algo_, &found));
  if (found == 0)
    throw InputError(
        fmt::format("cuBLASLt has no {} GEMM for {}x{}x{} on this device (fp8 needs "
                    "compute capability 8.9+ and dimensions that are multiples of 16)",
                    dtype, m, n, k));
}

void LtMatmul::run(const void* a, const void* b, void* d, cudaStream_t stream) const {
  SC_LT(cublasLtMatmul(handle_.get(), op_.get(), &alpha_, a, a_.get(), b, b_.get(), &beta_, d,
                       d_.get(), d, d_.get(), &algo_.algo, workspace_, workspace_bytes_, stream));
}

}  // namespace shardcost::bench::cuda
