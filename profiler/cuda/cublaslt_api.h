#pragma once
// The only door to cuBLASLt: one handle, one planned matmul per shape and type, RAII throughout.
#include <cublasLt.h>

#include <cstdint>
#include <string>

namespace shardcost::bench::cuda {

// cuBLASLt is loaded on first use (dlopen), not linked: merely loading it costs a process
// about 210 MB of resident memory, which every command, even --version, used to pay. These
// release what the loaded library made.
void destroy(cublasLtHandle_t);
void destroy(cublasLtMatmulDesc_t);
void destroy(cublasLtMatrixLayout_t);
void destroy(cublasLtMatmulPreference_t);

// Owns one cuBLASLt object; each member below is its own owner, so a constructor that throws
// halfway releases exactly what it had created.
template <typename T>
class LtOwned {
 public:
  LtOwned() = default;
  LtOwned(const LtOwned&) = delete;
  LtOwned& operator=(const LtOwned&) = delete;
  ~LtOwned() {
    if (h_) destroy(h_);
  }
  T* out() { return &h_; }
  T get() const { return h_; }

 private:
  T h_ = nullptr;
};

// D[m,n] = A^T B in column-major "TN" form (A stored k x m, B k x n), the layout FP8 requires
// and the one linear layers use. dtype: fp32 tf32 bf16 fp16 fp8 (D is bf16 for fp8). batch > 1:
// one strided-batched call over batch distinct A, B and D stored back to back (strides m k,
// k n and m n elements), as attention's batched products run.
class LtMatmul {
 public:
  LtMatmul(const std::string& dtype, int64_t m, int64_t n, int64_t k, size_t workspace_bytes,
           void* workspace, int64_t batch = 1);
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  void run(const void* a, const void* b, void* d, cudaStream_t stream) const;
  static std::string version();

 private:
  LtOwned<cublasLtHandle_t> handle_;
  LtOwned<cublasLtMatmulDesc_t> op_;
  LtOwned<cublasLtMatrixLayout_t> a_, b_, d_;
  LtOwned<cublasLtMatmulPreference_t> pref_;
  cublasLtMatmulHeuristicResult_t algo_{};
  void* workspace_;
  size_t workspace_bytes_;
  float alpha_ = 1, beta_ = 0;
};

}  // namespace shardcost::bench::cuda
