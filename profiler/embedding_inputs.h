#pragma once
// What an embedding-bag benchmark looks up, CUDA-free, shared by the host and CUDA backends:
// bag boundaries for a (possibly fractional) mean pooling factor, row indices drawn uniformly
// or Zipf-skewed (rejection-inversion sampling, Hörmann and Derflinger 1996) with the hot
// ranks scattered over the table, and the reference pooled sums and sparse updates the checks
// compare against.
#include <cstdint>
#include <random>
#include <vector>

#include "shardcost/profiler.h"

namespace shardcost::bench {

// Throws InputError naming the field when a shape cannot run (no rows, no lookups, rows past
// 2^31, ...).
void check_shape(const EmbeddingShape&);

// Bag b holds lookups [offsets[b], offsets[b+1]): floor((b+1)L) - floor(bL) of them, so the
// mean is L exactly over the batch whatever its fraction.
std::vector<int64_t> bag_offsets(const EmbeddingShape&);

// Draws ranks 1..n with weight r^-s (s > 0) in O(1) per draw.
class ZipfSampler {
 public:
  ZipfSampler(int64_t n, double s);
  int64_t operator()(std::mt19937_64&) const;

 private:
  double h(double x) const;
  double h_integral(double x) const;
  double h_integral_inverse(double x) const;
  int64_t n_;
  double s_, h_integral_x1_, h_integral_n_, threshold_;
};

// `count` row indices of the shape's table: uniform, or Zipf ranks scattered by a bijection
// (rank * a mod rows with a coprime to rows), so hot rows are not neighbours.
std::vector<int64_t> draw_indices(const EmbeddingShape&, int64_t count, uint64_t seed);

// bf16 as stored (the high half of an fp32), converted both ways.
inline float bf16_to_float(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float);  // round to nearest even

// The update the backward applies to one row from its summed fp32 gradient g (dim values):
// row-wise Adagrad (state += mean(g^2); w -= lr g / (sqrt(state) + eps)) or SGD (w -= lr g).
inline constexpr float kLearningRate = 0.01f, kAdagradEps = 1e-8f;
// The step size for g: Adagrad adds mean(g^2) (summed in double) to *state first.
float optimizer_step(const float* g, int64_t dim, bool adagrad, float* state);

// What the backward's checks follow: up to 64 distinct rows the lookups touch (every k-th
// lookup's), sorted.
std::vector<int64_t> checked_rows(const std::vector<int64_t>& indices);
// The fp32 output gradients (grad_out: batch x dim) summed per row of `rows` (sorted) over
// the bags in bag order, as the backward sums them.
std::vector<std::vector<float>> summed_gradients(const std::vector<int64_t>& offsets,
                                                 const std::vector<int64_t>& indices,
                                                 const std::vector<int64_t>& rows,
                                                 const std::vector<float>& grad_out, int64_t dim);

}  // namespace shardcost::bench
