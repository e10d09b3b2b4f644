#pragma once
// The host's memory kernels over one thread's share of a buffer. The streaming ones store with
// non-temporal instructions that bypass the caches, as STREAM's and glibc's large-copy paths
// do: a large copy or write then moves each byte once instead of reading the destination
// first. They exist where the CPU has them (x86-64: SSE2, in every x86-64 part).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shardcost::bench {

bool has_streaming_stores();

// copy: "memcpy" (the C library's) or "stream" (16-byte loads, streaming stores).
void copy_kernel(std::string_view kernel, std::byte* dst, const std::byte* src, size_t bytes);
// write: "memset" (the C library's) or "stream" (streaming stores of the byte value).
void write_kernel(std::string_view kernel, std::byte* p, int value, size_t bytes);
// read: four independent sums of 64-bit words, so the compiler vectorises and keeps loads in
// flight ("sum4").
uint64_t read_sum4(const uint64_t* p, size_t words);

// The kernels a benchmark of `kind` (copy, read, write) chooses from, its reference first.
std::vector<std::string_view> memory_kernels(std::string_view kind);

// The simple loops the benchmarks are checked against (--compare-baseline): what a plain
// program does. copy: memcpy; read: one running sum; write: a store loop.
void reference_copy(std::byte* dst, const std::byte* src, size_t bytes);
uint64_t reference_read(const uint64_t* p, size_t words);
void reference_write(uint64_t* p, uint64_t value, size_t words);

}  // namespace shardcost::bench
