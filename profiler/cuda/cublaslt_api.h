#pragma once
// The only door to cuBLASLt: one handle, one planned matmul per shape and type, RAII throughout.
#include <cublasLt.h>

#include <cstdint>
#include <string>

namespace shardcost::bench::cuda {

// D[m,n] = A^T B in column-major "TN" form (A stored k x m, B k x n), the layout FP8 requires
// and the one linear layers use. dtype: fp32 tf32 bf16 fp16 fp8 (D is bf16 for fp8).
class LtMatmul {
 public:
  LtMatmul(const std::string& dtype, int64_t m, int64_t n, int64_t k, size_t workspace_bytes, void* workspace);
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul();
  void run(const void* a, const void* b, void* d, cudaStream_t stream) const;
  static size_t element_bytes(const std::string& dtype);   // of A and B
  static size_t output_bytes(const std::string& dtype);    // of D
  static std::string version();

 private:
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  void* workspace_;
  size_t workspace_bytes_;
  float alpha_ = 1, beta_ = 0;
};

}  // namespace shardcost::bench::cuda
