// Device kernels for the CUDA benchmarks: input fills, type conversion, read and write passes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <string>

#include "cuda/cuda_api.h"

namespace shardcost::bench::cuda {
namespace {

constexpr int kThreads = 256;
int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 4 ? (b > 0 ? b : 1) : 65535 * 4);
}

// Multiples of 1/8 in [-1, 1]: exact in fp8 e4m3, fp16, bf16 and fp32, so products sum exactly.
__global__ void fill_f32(float* out, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    out[i] = static_cast<float>(static_cast<int>(h % 17) - 8) / 8.0f;
  }
}

template <typename S, typename T>
__global__ void convert(const S* in, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<T>(static_cast<float>(in[i]));
}

__global__ void read_pass(const uint4* data, int64_t n, unsigned long long* sum) {
  unsigned long long acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    acc += static_cast<unsigned long long>(v.x) + v.y + v.z + v.w;
  }
  // One atomic per warp keeps the pass bandwidth-bound.
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

__global__ void write_pass(uint4* data, int64_t n, uint32_t value) {
  const uint4 v = make_uint4(value, value, value, value);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    data[i] = v;
}

}  // namespace

void launch_fill_f32(float* out, int64_t count, uint32_t seed, cudaStream_t s) {
  fill_f32<<<blocks_for(count), kThreads, 0, s>>>(out, count, seed);
  SC_CUDA(cudaGetLastError());
}

void launch_convert(const float* in, void* out, int64_t n, const std::string& dtype,
                    cudaStream_t s) {
  if (dtype == "bf16")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<__nv_bfloat16*>(out), n);
  else if (dtype == "fp16")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<__half*>(out), n);
  else if (dtype == "fp8")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<__nv_fp8_e4m3*>(out), n);
  else
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<float*>(out), n);
  SC_CUDA(cudaGetLastError());
}

void launch_convert_from_f32(const float* in, void* out, int64_t n, const std::string& t,
                             cudaStream_t s) {
  if (t == "half")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<__half*>(out), n);
  else if (t == "bfloat16")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<__nv_bfloat16*>(out), n);
  else if (t == "double")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<double*>(out), n);
  else if (t == "int32")
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<int*>(out), n);
  else
    convert<<<blocks_for(n), kThreads, 0, s>>>(in, static_cast<float*>(out), n);
  SC_CUDA(cudaGetLastError());
}

void launch_convert_to_f32(const void* in, float* out, int64_t n, const std::string& t,
                           cudaStream_t s) {
  if (t == "half")
    convert<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __half*>(in), out, n);
  else if (t == "bfloat16")
    convert<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(in), out, n);
  else if (t == "double")
    convert<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const double*>(in), out, n);
  else if (t == "int32")
    convert<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int*>(in), out, n);
  else
    convert<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const float*>(in), out, n);
  SC_CUDA(cudaGetLastError());
}

void launch_read(const void* data, int64_t bytes, unsigned long long* sum, cudaStream_t s) {
  const int64_t n = bytes / 16;
  read_pass<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const uint4*>(data), n, sum);
  SC_CUDA(cudaGetLastError());
}

void launch_write(void* data, int64_t bytes, uint32_t value, cudaStream_t s) {
  const int64_t n = bytes / 16;
  write_pass<<<blocks_for(n), kThreads, 0, s>>>(static_cast<uint4*>(data), n, value);
  SC_CUDA(cudaGetLastError());
}

}  // namespace shardcost::bench::cuda
