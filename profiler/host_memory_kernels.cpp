#include "host_memory_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "shardcost/error.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#define SHARDCOST_STREAMING_STORES 1
#else
#define SHARDCOST_STREAMING_STORES 0
#endif

namespace shardcost::bench {
namespace {

#if SHARDCOST_STREAMING_STORES
constexpr size_t kLine = 64;

// Bytes up to the next 16-byte boundary of p (streaming stores need aligned addresses).
size_t to_aligned(const std::byte* p, size_t bytes) {
  const size_t off = reinterpret_cast<uintptr_t>(p) % 16;
  return off == 0 ? 0 : std::min(bytes, 16 - off);
}

void stream_copy(std::byte* dst, const std::byte* src, size_t bytes) {
  const size_t head = to_aligned(dst, bytes);
  std::memcpy(dst, src, head);
  dst += head, src += head, bytes -= head;
  const size_t body = bytes / kLine * kLine;
  for (size_t i = 0; i < body; i += kLine) {
    const auto* s = reinterpret_cast<const __m128i*>(src + i);
    auto* d = reinterpret_cast<__m128i*>(dst + i);
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
    const __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  _mm_sfence();  // the streamed lines are visible before anyone reads them
  std::memcpy(dst + body, src + body, bytes - body);
}

void stream_write(std::byte* p, int value, size_t bytes) {
  const size_t head = to_aligned(p, bytes);
  std::memset(p, value, head);
  p += head, bytes -= head;
  const size_t body = bytes / kLine * kLine;
  const __m128i v = _mm_set1_epi8(static_cast<char>(value));
  for (size_t i = 0; i < body; i += kLine) {
    auto* d = reinterpret_cast<__m128i*>(p + i);
    _mm_stream_si128(d, v);
    _mm_stream_si128(d + 1, v);
    _mm_stream_si128(d + 2, v);
    _mm_stream_si128(d + 3, v);
  }
  _mm_sfence();
  std::memset(p + body, value, bytes - body);
}
#endif

[[noreturn]] void unknown(std::string_view what, std::string_view kernel) {
  throw Error(fmt::format("internal: no {} kernel '{}'", what, kernel));
}

}  // namespace

bool has_streaming_stores() {
  return SHARDCOST_STREAMING_STORES != 0;
}

void copy_kernel(std::string_view kernel, std::byte* dst, const std::byte* src, size_t bytes) {
  if (kernel == "memcpy") {
    std::memcpy(dst, src, bytes);
    return;
  }
#if SHARDCOST_STREAMING_STORES
  if (kernel == "stream") {
    stream_copy(dst, src, bytes);
    return;
  }
#endif
  unknown("copy", kernel);
}

void write_kernel(std::string_view kernel, std::byte* p, int value, size_t bytes) {
  if (kernel == "memset") {
    std::memset(p, value, bytes);
    return;
  }
#if SHARDCOST_STREAMING_STORES
  if (kernel == "stream") {
    stream_write(p, value, bytes);
    return;
  }
#endif
  unknown("write", kernel);
}

uint64_t read_sum4(const uint64_t* p, size_t words) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < words; ++i) a += p[i];
  return a + b + c + d;
}

std::vector<std::string_view> memory_kernels(std::string_view kind) {
  const bool stream = has_streaming_stores();
  if (kind == "copy")
    return stream ? std::vector<std::string_view>{"memcpy", "stream"}
                  : std::vector<std::string_view>{"memcpy"};
  if (kind == "write")
    return stream ? std::vector<std::string_view>{"memset", "stream"}
                  : std::vector<std::string_view>{"memset"};
  if (kind == "read") return {"sum4"};
  unknown("memory", kind);
}

void reference_copy(std::byte* dst, const std::byte* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

uint64_t reference_read(const uint64_t* p, size_t words) {
  uint64_t sum = 0;
  for (size_t i = 0; i < words; ++i) sum += p[i];
  return sum;
}

void reference_write(uint64_t* p, uint64_t value, size_t words) {
  for (size_t i = 0; i < words; ++i) p[i] = value;
}

}  // namespace shardcost::bench
