// Device kernels of the embedding-bag benchmark: the table fill, the pooled forward and the
// sort-based backward with its sparse optimizer update.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <type_traits>

#include "cuda/embedding_kernels.h"
#include "embedding_inputs.h"

namespace shardcost::bench::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;  // 8 warps a block
constexpr unsigned kAllLanes = 0xffffffffu;
// Chunks of a row's summed gradient each lane keeps in registers from the Adagrad reduction
// to the update (a row of up to 32 x 4 chunks); a longer row sums its gradient a second time.
constexpr int kKept = 4;

int blocks_for_warps(int64_t warps) {
  return static_cast<int>((warps * kWarp + kThreads - 1) / kThreads);
}

// The widest loads (up to 4 elements) that still give each of a warp's 32 lanes a piece of the
// row: dim 128 reads 4 elements a lane, 64 reads 2, 16 reads 1 on half the lanes.
int width_for(int64_t dim) {
  for (const int v : {4, 2})
    if (dim % v == 0 && dim / v >= kWarp) return v;
  return 1;
}

__device__ float to_float(float v) {
  return v;
}
__device__ float to_float(__half v) {
  return __half2float(v);
}
__device__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ void from_float(float v, float& out) {
  out = v;
}
__device__ void from_float(float v, __half& out) {
  out = __float2half_rn(v);
}
__device__ void from_float(float v, __nv_bfloat16& out) {
  out = __float2bfloat16_rn(v);
}

// V consecutive elements, loaded and stored as one access (rows start aligned: dim % V == 0).
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};
template <typename T, int V>
__device__ Vec<T, V> load(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}
template <typename T, int V>
__device__ void store(T* p, const Vec<T, V>& x) {
  *reinterpret_cast<Vec<T, V>*>(p) = x;
}

// Calls f(T{}, std::integral_constant<int, V>{}) for the weights' element type T and the load
// width V that dim allows: one instantiation of a kernel for each.
template <typename T, typename F>
void with_width(int64_t dim, F& f) {
  switch (width_for(dim)) {
    case 4:
      return f(T{}, std::integral_constant<int, 4>{});
    case 2:
      return f(T{}, std::integral_constant<int, 2>{});
    default:
      return f(T{}, std::integral_constant<int, 1>{});
  }
}
template <typename F>
void with_types(WeightType t, int64_t dim, F f) {
  switch (t) {
    case WeightType::f16:
      return with_width<__half>(dim, f);
    case WeightType::bf16:
      return with_width<__nv_bfloat16>(dim, f);
    default:
      return with_width<float>(dim, f);
  }
}

template <typename T>
__global__ void fill_table(T* w, int64_t rows, int64_t dim) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * dim;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / dim, d = i % dim;
    // Rounded step by step as the host rounds (no fused multiply-add): the same table.
    const float v =
        __fsub_rn(__fmul_rn(static_cast<float>((row * 131 + d * 7) % 997), 1e-4f), 0.05f);
    from_float(v, w[i]);
  }
}

// One warp a bag: lane l sums the V-wide chunks l, l + 32, ... of the bag's rows in lookup
// order. The warp reads a row as one contiguous run of 32 accesses.
template <typename T, int V>
__global__ void pool_bags(const T* __restrict__ w, int64_t dim, const int64_t* __restrict__ indices,
                          const int64_t* __restrict__ offsets, int64_t batch,
                          float* __restrict__ out) {
  const int64_t b = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  if (b >= batch) return;
  const int64_t begin = offsets[b], end = offsets[b + 1], chunks = dim / V;
  for (int64_t c = threadIdx.x % kWarp; c < chunks; c += kWarp) {
    float acc[V] = {};
    for (int64_t i = begin; i < end; ++i) {
      const Vec<T, V> x = load<T, V>(w + indices[i] * dim + c * V);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += to_float(x.v[k]);
    }
    Vec<float, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = acc[k];
    store(out + b * dim + c * V, o);
  }
}

// g = chunk c of the output gradients of bags[begin, end) summed in that order: the radix sort
// is stable, so it is bag order, the order the host check sums in.
template <int V>
__device__ void sum_grad(const float* __restrict__ grad, int64_t dim,
                         const int32_t* __restrict__ bags, uint32_t begin, uint32_t end, int64_t c,
                         float (&g)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) g[k] = 0;
  for (uint32_t i = begin; i < end; ++i) {
    const Vec<float, V> x = load<float, V>(grad + bags[i] * dim + c * V);
#pragma unroll
    for (int k = 0; k < V; ++k) g[k] += x.v[k];
  }
}

// Squares summed in double, as the host sums them: the state matches it to the last bit.
template <int V>
__device__ double squares(const float (&g)[V]) {
  double s = 0;
#pragma unroll
  for (int k = 0; k < V; ++k) s += static_cast<double>(g[k]) * g[k];
  return s;
}

// w -= step g, rounded as the host rounds (no fused multiply-add), so bf16 and fp16 weights
// round to the same value the check expects.
template <typename T, int V>
__device__ void step_chunk(T* w, float step, const float (&g)[V]) {
  Vec<T, V> x = load<T, V>(w);
#pragma unroll
  for (int k = 0; k < V; ++k)
    from_float(__fsub_rn(to_float(x.v[k]), __fmul_rn(step, g[k])), x.v[k]);
  store(w, x);
}

// One warp a distinct row j < *runs, whose lookups' bags are bags[starts[j], starts[j] +
// counts[j]). Launched for as many warps as there are lookups (the most distinct rows there can
// be), the spare warps returning at once, so the count of distinct rows never goes to the host.
template <typename T, int V>
__global__ void update_rows(const int64_t* __restrict__ rows, const uint32_t* __restrict__ starts,
                            const uint32_t* __restrict__ counts, const int* __restrict__ runs,
                            const int32_t* __restrict__ bags, const float* __restrict__ grad,
                            int64_t dim, T* __restrict__ w, float* __restrict__ state) {
  const int64_t j = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
  if (j >= *runs) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t row = rows[j], chunks = dim / V;
  const uint32_t begin = starts[j], end = begin + counts[j];
  T* const wrow = w + row * dim;
  float g[kKept][V] = {};
  double sq = 0;
#pragma unroll
  for (int k = 0; k < kKept; ++k) {
    const int64_t c = lane + k * kWarp;
    if (c < chunks) {
      sum_grad(grad, dim, bags, begin, end, c, g[k]);
      if (state) sq += squares(g[k]);
    }
  }
  float step = kLearningRate;
  if (state) {
    for (int64_t c = lane + kKept * kWarp; c < chunks; c += kWarp) {
      float t[V];
      sum_grad(grad, dim, bags, begin, end, c, t);
      sq += squares(t);
    }
    for (int off = kWarp / 2; off > 0; off /= 2) sq += __shfl_down_sync(kAllLanes, sq, off);
    // Lane 0 alone reads and writes the state; the others take its value.
    float s = 0;
    if (lane == 0) {
      s = __fadd_rn(state[row], static_cast<float>(sq / static_cast<double>(dim)));
      state[row] = s;
    }
    s = __shfl_sync(kAllLanes, s, 0);
    step = __fdiv_rn(kLearningRate, __fadd_rn(__fsqrt_rn(s), kAdagradEps));
  }
#pragma unroll
  for (int k = 0; k < kKept; ++k) {
    const int64_t c = lane + k * kWarp;
    if (c < chunks) step_chunk<T, V>(wrow + c * V, step, g[k]);
  }
  for (int64_t c = lane + kKept * kWarp; c < chunks; c += kWarp) {
    float t[V];
    sum_grad(grad, dim, bags, begin, end, c, t);
    step_chunk<T, V>(wrow + c * V, step, t);
  }
}

// The bits a row index below `rows` needs: the sort looks at those only.
int bits_for(int64_t rows) {
  int b = 1;
  while ((int64_t{1} << b) < rows) ++b;
  return b;
}

// cub's scratch for the sort, the encoding and the scan, which run one after the other and
// share it: the largest of the three.
size_t temp_bytes_for(int64_t lookups, int end_bit) {
  const int n = static_cast<int>(lookups);  // at most 2e9 (check_shape)
  const int64_t* keys = nullptr;
  int64_t* keys_out = nullptr;
  const int32_t* values = nullptr;
  int32_t* values_out = nullptr;
  uint32_t* counts = nullptr;
  int* runs = nullptr;
  size_t sort = 0, encode = 0, scan = 0;
  SC_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort, keys, keys_out, values, values_out, n, 0,
                                          end_bit));
  SC_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, encode, keys, keys_out, counts, runs, n));
  SC_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, scan, counts, counts, n));
  return std::max({sort, encode, scan});
}

// Bytes a lookup takes in the backward's scratch: its bag (4), sorted row and bag (8 + 4),
// distinct row (8), run length (4) and run start (4).
constexpr int64_t kBytesPerLookup = 32;

}  // namespace

void launch_embedding_fill(void* weights, WeightType t, int64_t rows, int64_t dim, cudaStream_t s) {
  const int64_t blocks = std::min<int64_t>((rows * dim + kThreads - 1) / kThreads, 65535 * 4);
  with_types(t, dim, [&](auto type, auto) {
    using T = decltype(type);
    fill_table<<<static_cast<int>(blocks), kThreads, 0, s>>>(static_cast<T*>(weights), rows, dim);
  });
  SC_CUDA(cudaGetLastError());
}

void launch_embedding_forward(const void* weights, WeightType t, int64_t dim,
                              const int64_t* indices, const int64_t* offsets, int64_t batch,
                              float* out, cudaStream_t s) {
  with_types(t, dim, [&](auto type, auto width) {
    using T = decltype(type);
    pool_bags<T, decltype(width)::value><<<blocks_for_warps(batch), kThreads, 0, s>>>(
        static_cast<const T*>(weights), dim, indices, offsets, batch, out);
  });
  SC_CUDA(cudaGetLastError());
}

int64_t EmbeddingBackward::scratch_bytes(int64_t rows, int64_t lookups) {
  return lookups * kBytesPerLookup + 4 +
         static_cast<int64_t>(temp_bytes_for(lookups, bits_for(rows)));
}

EmbeddingBackward::EmbeddingBackward(int64_t rows, const std::vector<int64_t>& offsets,
                                     cudaStream_t s)
    : lookups_(offsets.back()),
      end_bit_(bits_for(rows)),
      temp_bytes_(temp_bytes_for(lookups_, end_bit_)),
      bags_(device_alloc(lookups_ * 4)),
      sorted_rows_(device_alloc(lookups_ * 8)),
      sorted_bags_(device_alloc(lookups_ * 4)),
      unique_rows_(device_alloc(lookups_ * 8)),
      counts_(device_alloc(lookups_ * 4)),
      starts_(device_alloc(lookups_ * 4)),
      runs_(device_alloc(4)),
      temp_(device_alloc(static_cast<int64_t>(std::max<size_t>(temp_bytes_, 1)))) {
  std::vector<int32_t> bag(static_cast<size_t>(lookups_));
  for (size_t b = 0; b + 1 < offsets.size(); ++b)
    for (int64_t i = offsets[b]; i < offsets[b + 1]; ++i)
      bag[static_cast<size_t>(i)] = static_cast<int32_t>(b);
  // Pageable memory is staged before copy_async returns: `bag` may go.
  copy_async(bags_.get(), bag.data(), lookups_ * 4, s);
  // The scan reads every count, also those past the last run: they start as zeros.
  set_async(counts_.get(), 0, lookups_ * 4, s);
}

void EmbeddingBackward::run(const int64_t* indices, const float* grad_out, void* weights,
                            WeightType t, int64_t dim, float* state, cudaStream_t s) {
  const int n = static_cast<int>(lookups_);
  const auto* bags = reinterpret_cast<const int32_t*>(bags_.get());
  auto* rows = reinterpret_cast<int64_t*>(sorted_rows_.get());
  const int64_t* sorted = rows;  // the encoding's input, typed as when its scratch was sized
  auto* sorted_bags = reinterpret_cast<int32_t*>(sorted_bags_.get());
  auto* unique = reinterpret_cast<int64_t*>(unique_rows_.get());
  auto* counts = reinterpret_cast<uint32_t*>(counts_.get());
  auto* starts = reinterpret_cast<uint32_t*>(starts_.get());
  auto* runs = reinterpret_cast<int*>(runs_.get());
  // Row indices are not negative: the low end_bit_ bits of the signed keys order them.
  size_t bytes = temp_bytes_;
  SC_CUDA(cub::DeviceRadixSort::SortPairs(temp_.get(), bytes, indices, rows, bags, sorted_bags, n,
                                          0, end_bit_, s));
  bytes = temp_bytes_;
  SC_CUDA(
      cub::DeviceRunLengthEncode::Encode(temp_.get(), bytes, sorted, unique, counts, runs, n, s));
  // Counts past the last run are stale or zero; the starts of the real runs do not see them.
  bytes = temp_bytes_;
  SC_CUDA(cub::DeviceScan::ExclusiveSum(temp_.get(), bytes, counts, starts, n, s));
  with_types(t, dim, [&](auto type, auto width) {
    using T = decltype(type);
    update_rows<T, decltype(width)::value><<<blocks_for_warps(lookups_), kThreads, 0, s>>>(
        unique, starts, counts, runs, sorted_bags, grad_out, dim, static_cast<T*>(weights), state);
  });
  SC_CUDA(cudaGetLastError());
}

}  // namespace shardcost::bench::cuda
