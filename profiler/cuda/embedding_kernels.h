#pragma once
// The embedding-bag kernels (embedding_kernels.cu): FBGEMM's table-batched embeddings reduced
// to one table. The forward pools each bag's rows in fp32; the backward sorts the lookups by
// row so that each distinct row's gradient is summed once and its optimizer step applied once,
// with no atomics and no host round trip.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_api.h"

namespace shardcost::bench::cuda {

enum class WeightType { f32, f16, bf16 };
inline int64_t bytes_of(WeightType t) {
  return t == WeightType::f32 ? 4 : 2;
}

// A fresh table with the host backend's values: w[r][d] = ((131 r + 7 d) mod 997) 1e-4 - 0.05.
void launch_embedding_fill(void* weights, WeightType, int64_t rows, int64_t dim, cudaStream_t);

// out[b] (fp32, batch x dim) = the sum of the rows indices[offsets[b] .. offsets[b+1]), added
// in lookup order.
void launch_embedding_forward(const void* weights, WeightType, int64_t dim, const int64_t* indices,
                              const int64_t* offsets, int64_t batch, float* out, cudaStream_t);

// The backward of the bags `offsets` over a table of `rows`: a radix sort of (row, bag) pairs,
// a run-length encoding into distinct rows and a scan for their segment starts, then one warp
// per distinct row sums its bags' output gradients in bag order and applies row-wise Adagrad
// (state += mean(g^2); w -= lr g / (sqrt(state) + eps)) or SGD (w -= lr g). The scratch is
// allocated once; run() only enqueues.
class EmbeddingBackward {
 public:
  // Device bytes the constructor allocates: sizing check_room before it runs.
  static int64_t scratch_bytes(int64_t rows, int64_t lookups);
  EmbeddingBackward(int64_t rows, const std::vector<int64_t>& offsets, cudaStream_t);
  // indices: one per lookup; grad_out: fp32 batch x dim; state: one fp32 per row, null for SGD.
  void run(const int64_t* indices, const float* grad_out, void* weights, WeightType, int64_t dim,
           float* state, cudaStream_t);

 private:
  int64_t lookups_;
  int end_bit_;  // the bits a row index needs: the sort looks at no more
  size_t temp_bytes_;
  DeviceBuffer bags_;  // the bag of each lookup, the values sorted along with the rows
  DeviceBuffer sorted_rows_, sorted_bags_, unique_rows_, counts_, starts_, runs_, temp_;
};

}  // namespace shardcost::bench::cuda
