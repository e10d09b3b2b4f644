#pragma once
// A small, fixed "training step" for tests and the fixture store: two devices, compute and NCCL
// streams, copies, sets and a synchronisation, with known overlap. Times in ns from `t0`.
#include <string>

#include "trace_file.h"

namespace shardcost::trace::testing {

inline file::RawEvent raw(file::RawKind kind, uint32_t device, uint32_t stream, uint32_t name,
                          uint64_t start, uint64_t end, uint64_t bytes = 0) {
  file::RawEvent e;
  e.kind = kind, e.device = device, e.context = device + 1, e.stream = stream, e.name = name;
  e.start_ns = start, e.end_ns = end, e.bytes = bytes;
  return e;
}

// Device d: stream 7 runs gemm [0,400), attention [400,600), layer_norm [600,650),
// elementwise [650,700); stream 13 runs an NCCL all-reduce [500,900) (overlapped by compute
// for [500,700): 50 %); a 1 MiB HtoD copy [1000,1100) and a memset [1100,1110) on stream 7;
// a stream synchronize [700,1000) (CPU wait).
// scale multiplies every time (1000: the same step in microseconds).
inline file::Batch training_step(uint32_t device, uint64_t t0, uint32_t first_name = 0,
                                 uint64_t scale = 1) {
  file::Batch b;
  b.first_new_name = first_name;
  if (first_name == 0) {
    b.new_names = {
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn",
        "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "memcpy HtoD",
        "memset",
        "stream synchronize"};
  }
  using K = file::RawKind;
  b.events = {raw(K::kernel, device, 7, 0, t0 + 0 * scale, t0 + 400 * scale),
              raw(K::kernel, device, 7, 1, t0 + 400 * scale, t0 + 600 * scale),
              raw(K::kernel, device, 7, 2, t0 + 600 * scale, t0 + 650 * scale),
              raw(K::kernel, device, 7, 3, t0 + 650 * scale, t0 + 700 * scale),
              raw(K::kernel, device, 13, 4, t0 + 500 * scale, t0 + 900 * scale),
              raw(K::memcpy, device, 7, 5, t0 + 1000 * scale, t0 + 1100 * scale, 1 << 20),
              raw(K::memset, device, 7, 6, t0 + 1100 * scale, t0 + 1110 * scale, 4096),
              raw(K::sync, file::kNoDevice, 7, 7, t0 + 700 * scale, t0 + 1000 * scale),
              raw(K::runtime, file::kNoDevice, 4242, 0, t0, t0 + 5 * scale)};
  b.events[7].context = device + 1;
  // Launch configurations: the GEMM as a persistent kernel (one block per SM), the rest 1-D.
  const int32_t launches[5][6] = {{132, 1, 1, 256, 1, 1},
                                  {64, 16, 2, 128, 1, 1},
                                  {2048, 1, 1, 512, 1, 1},
                                  {4096, 1, 1, 128, 1, 1},
                                  {2, 1, 1, 640, 1, 1}};
  for (size_t i = 0; i < 5; ++i) {
    for (int d = 0; d < 3; ++d) {
      b.events[i].grid[d] = launches[i][d];
      b.events[i].block[d] = launches[i][3 + d];
    }
  }
  b.contexts = {{device + 1, device}};
  file::RawDevice d;
  d.id = device, d.cc_major = 9, d.cc_minor = 0, d.sms = 132, d.core_clock_khz = 1980000;
  d.memory_bytes = 80ull << 30;
  d.uuid = "GPU-0000000" + std::to_string(device) + "-0000-0000-0000-000000000000";
  d.name = "NVIDIA H100 80GB HBM3";
  b.devices = {d};
  return b;
}

}  // namespace shardcost::trace::testing
