#pragma once
// The only door to CBLAS (OpenBLAS). Row-major C[m,n] = A[m,k] * B[k,n].
#include <cstdint>
#include <string>

namespace shardcost::bench::blas {

bool available();               // built with a CBLAS, and the library loads
bool has_bf16();                // the CBLAS exports cblas_sbgemm
std::string version();          // "OpenBLAS 0.3.21 ..." or "none"
void set_threads(int threads);  // 0 = all logical CPUs
void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);
// bf16 inputs (raw bits), fp32 output; throws when the BLAS has no bf16 GEMM.
void sbgemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, const uint16_t* b, float* c);

}  // namespace shardcost::bench::blas
