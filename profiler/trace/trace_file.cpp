#include "trace_file.h"

#include <cstring>

#include "shardcost/error.h"

namespace shardcost::trace::file {
namespace {

enum class Chunk : uint32_t {
  names = 1,
  events = 2,
  device = 3,
  contexts = 4,
  dropped = 5,
  warning = 6
};

template <class T>
void put(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_string(std::string& out, std::string_view s) {
  put(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Writes the chunk header, then fill(out), then patches the length.
template <class Fill>
void chunk(std::string& out, Chunk type, Fill fill) {
  put(out, static_cast<uint32_t>(type));
  const size_t length_at = out.size();
  put(out, uint32_t{0});
  fill();
  const auto length = static_cast<uint32_t>(out.size() - length_at - sizeof(uint32_t));
  std::memcpy(out.data() + length_at, &length, sizeof length);
}

class Cursor {
 public:
  Cursor(std::string_view bytes) : bytes_(bytes) {}
  bool has(size_t n) const { return bytes_.size() - pos_ >= n; }
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string_view take(size_t n) {
    auto s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

struct Malformed {};

std::string get_string(Cursor& c) {
  if (!c.has(4)) throw Malformed{};
  const auto n = c.get<uint32_t>();
  if (!c.has(n)) throw Malformed{};
  return std::string(c.take(n));
}
template <class T>
T get_checked(Cursor& c) {
  if (!c.has(sizeof(T))) throw Malformed{};
  return c.get<T>();
}

void decode_chunk(Chunk type, Cursor c, Contents& out) {
  switch (type) {
    case Chunk::names: {
      const auto first = get_checked<uint32_t>(c);
      const auto count = get_checked<uint32_t>(c);
      if (first != out.names.size()) throw Malformed{};
      for (uint32_t i = 0; i < count; ++i) out.names.push_back(get_string(c));
      break;
    }
    case Chunk::events: {
      const auto count = get_checked<uint32_t>(c);
      if (!c.has(size_t{count} * sizeof(RawEvent))) throw Malformed{};
      const size_t at = out.events.size();
      out.events.resize(at + count);
      const auto raw = c.take(size_t{count} * sizeof(RawEvent));
      std::memcpy(static_cast<void*>(out.events.data() + at), raw.data(), raw.size());
      break;
    }
    case Chunk::device: {
      RawDevice d;
      d.id = get_checked<uint32_t>(c);
      d.cc_major = get_checked<uint32_t>(c);
      d.cc_minor = get_checked<uint32_t>(c);
      d.sms = get_checked<uint32_t>(c);
      d.core_clock_khz = get_checked<uint32_t>(c);
      d.memory_bytes = get_checked<uint64_t>(c);
      d.uuid = get_string(c);
      d.name = get_string(c);
      out.devices.push_back(std::move(d));
      break;
    }
    case Chunk::contexts: {
      const auto count = get_checked<uint32_t>(c);
      for (uint32_t i = 0; i < count; ++i) {
        const auto context = get_checked<uint32_t>(c);
        out.contexts.emplace_back(context, get_checked<uint32_t>(c));
      }
      break;
    }
    case Chunk::dropped:
      out.dropped += get_checked<uint64_t>(c);
      break;
    case Chunk::warning:
      out.warnings.push_back(get_string(c));
      break;
    default:
      break;  // a newer writer's chunk: skipped, its length is known
  }
}

}  // namespace

std::string encode_header(uint32_t pid, std::string_view host) {
  std::string out(kMagic);
  put(out, kVersion);
  put(out, pid);
  put_string(out, host);
  return out;
}

void encode(const Batch& b, std::string& out) {
  out.reserve(out.size() + b.events.size() * sizeof(RawEvent) + b.new_names.size() * 128 + 256);
  if (!b.new_names.empty()) {
    chunk(out, Chunk::names, [&] {
      put(out, b.first_new_name);
      put(out, static_cast<uint32_t>(b.new_names.size()));
      for (const auto& n : b.new_names) put_string(out, n);
    });
  }
  for (const auto& d : b.devices) {
    chunk(out, Chunk::device, [&] {
      put(out, d.id), put(out, d.cc_major), put(out, d.cc_minor), put(out, d.sms);
      put(out, d.core_clock_khz), put(out, d.memory_bytes);
      put_string(out, d.uuid), put_string(out, d.name);
    });
  }
  if (!b.contexts.empty()) {
    chunk(out, Chunk::contexts, [&] {
      put(out, static_cast<uint32_t>(b.contexts.size()));
      for (const auto& [context, device] : b.contexts) put(out, context), put(out, device);
    });
  }
  // Events in chunks of at most 64 Ki records: lengths stay far below 4 GiB.
  constexpr size_t kMaxEvents = 65536;
  for (size_t at = 0; at < b.events.size(); at += kMaxEvents) {
    const size_t n = std::min(kMaxEvents, b.events.size() - at);
    chunk(out, Chunk::events, [&] {
      put(out, static_cast<uint32_t>(n));
      out.append(reinterpret_cast<const char*>(b.events.data() + at), n * sizeof(RawEvent));
    });
  }
  if (b.dropped > 0) chunk(out, Chunk::dropped, [&] { put(out, b.dropped); });
  for (const auto& w : b.warnings) chunk(out, Chunk::warning, [&] { put_string(out, w); });
}

Contents decode(std::string_view bytes, std::string_view source) {
  Contents out;
  Cursor c(bytes);
  const auto bad = [&](std::string_view what) {
    return InputError(std::string(source) + ": " + std::string(what) +
                      "; it was not written by shardcost's injection library");
  };
  if (!c.has(kMagic.size()) || c.take(kMagic.size()) != kMagic)
    throw bad("not a shardcost trace file");
  try {
    if (get_checked<uint32_t>(c) != kVersion) throw bad("unknown trace file version");
    out.pid = get_checked<uint32_t>(c);
    out.host = get_string(c);
  } catch (const Malformed&) {
    throw bad("truncated header");
  }
  while (!c.done()) {
    if (!c.has(8)) {
      out.truncated = true;
      break;
    }
    const auto type = static_cast<Chunk>(c.get<uint32_t>());
    const auto length = c.get<uint32_t>();
    if (!c.has(length)) {
      out.truncated = true;
      break;
    }
    try {
      decode_chunk(type, Cursor(c.take(length)), out);
    } catch (const Malformed&) {
      throw bad("damaged chunk");
    }
  }
  return out;
}

}  // namespace shardcost::trace::file
