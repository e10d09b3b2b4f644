// PyTorch profiler / Kineto Chrome trace, streamed. GPU events are complete events ("ph": "X")
// with categories kernel, gpu_memcpy and gpu_memset (older Kineto: Kernel, Memcpy, Memset),
// times in microseconds, and args.device / args.stream; ProfilerStep#N spans are the steps.
//
// The file is read in chunks: a scanner follows the document's structure (strings, nesting)
// byte by byte, hands each element of traceEvents, and the small deviceProperties and
// baseTimeNanoseconds values, to simdjson's on-demand parser one at a time, and forgets it. So
// memory stays flat in the file size (docs/store.md has the figures). The structure outside
// the events is checked (balanced, one object with a traceEvents list); every event is parsed
// in full, and a GPU event or step without a valid ts, dur or name is an error naming the event
// and the field.
#include <simdjson.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "gz_file.h"
#include "import_util.h"
#include "kineto.h"
#include "shardcost/error.h"
#include "shardcost/importers.h"

namespace shardcost::db {
namespace {

namespace od = simdjson::ondemand;

// A value read as an integer when it is one; `out` untouched otherwise.
bool int_of(od::value v, int64_t& out) {
  return v.get_int64().get(out) == simdjson::SUCCESS;
}

// The most microseconds whose nanoseconds fit in int64 (with room for the fraction).
constexpr int64_t kMaxExactUs = 9'200'000'000'000'000;

// A JSON number of microseconds, written "123456" or "123456.789" (no sign, no exponent), to
// the nanosecond: the integer and fraction digits read apart (rounded at the fourth decimal);
// nullopt for any other form (the double then stands).
std::optional<int64_t> exact_ns(std::string_view raw) {
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t' || raw.back() == '\r'))
    raw.remove_suffix(1);
  const size_t dot = raw.find('.');
  const std::string_view whole = raw.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : raw.substr(dot + 1);
  if (whole.empty() || whole.size() > 16) return std::nullopt;
  int64_t us = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    us = us * 10 + (c - '0');
  }
  int64_t ns = 0;
  for (size_t i = 0; i < frac.size(); ++i) {
    const char c = frac[i];
    if (c < '0' || c > '9') return std::nullopt;
    if (i < 3) ns = ns * 10 + (c - '0');
    if (i == 3 && c >= '5') ++ns;
  }
  for (size_t i = frac.size(); i < 3; ++i) ns *= 10;
  if (us > kMaxExactUs) return std::nullopt;  // past int64 nanoseconds: time_ns refuses it
  return us * 1000 + ns;
}

std::optional<EventKind> gpu_kind(std::string_view cat) {
  std::string c(cat);
  for (auto& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (c == "kernel") return EventKind::kernel;
  if (c == "gpu_memcpy" || c == "memcpy") return EventKind::memcpy;
  if (c == "gpu_memset" || c == "memset") return EventKind::memset;
  return std::nullopt;
}

// The bytes that move the scanner inside an event: brackets and quotes.
constexpr auto kStructural = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'{', '}', '[', ']', '"'}) t[c] = true;
  return t;
}();

// The latest a GPU event or step may start (µs that still fit in int64 nanoseconds); the
// longest it may last is kMaxDurationUs (import_util.h): beyond either the number is not a time.
constexpr double kMaxTimestampUs = 9.2e15;

class KinetoStream {
 public:
  explicit KinetoStream(std::string_view source) : source_(source) {
    m_.run.tool = "kineto";
    m_.run.source = std::string(source);
  }

  // n bytes at p; readable memory runs to p + capacity (>= n): an event that ends at least
  // SIMDJSON_PADDING bytes before that is parsed where it lies, without a copy.
  void feed(const char* p, size_t n, size_t capacity) {
    hash_.update(std::string_view(p, n));
    size_t event_from = 0, value_from = 0;  // where this chunk's part of a capture begins
    for (size_t i = 0; i < n; ++i) {
      if (!in_string_ && depth_ >= 3) {
        // Inside an event only brackets and quotes move the scanner: skip the rest.
        while (i < n && !kStructural[static_cast<unsigned char>(p[i])]) ++i;
        if (i == n) break;
      }
      if (in_string_ && !escape_ && !key_capture_) {
        // The bulk of a trace is strings: jump to the next quote or backslash.
        const char* end = p + n;
        const auto* quote = static_cast<const char*>(std::memchr(p + i, '"', n - i));
        const char* stop = quote ? quote : end;
        const auto* slash =
            static_cast<const char*>(std::memchr(p + i, '\\', static_cast<size_t>(stop - p) - i));
        if (slash) stop = slash;
        i = static_cast<size_t>(stop - p);
        if (i == n) break;
      }
      const char c = p[i];
      if (in_string_) {
        if (escape_)
          escape_ = false;
        else if (c == '\\')
          escape_ = true;
        else if (c == '"') {
          in_string_ = false;
          if (key_capture_) {
            key_capture_ = false;
            current_key_ = key_;
            expect_key_ = false;
          }
        } else if (key_capture_ && key_.size() < 64)
          key_.push_back(c);
        continue;
      }
      switch (c) {
        case '"':
          if (depth_ == events_depth_ && in_events_) not_an_event();
          in_string_ = true;
          if (depth_ == 1 && expect_key_) key_capture_ = true, key_.clear();
          break;
        case '{':
        case '[':
          if (depth_ == 0) {
            if (done_) fail("not a JSON object");
            if (c == '[') {
              // PyTorch before 1.9 wrote the events as the document itself: one list.
              events_depth_ = 1;
              in_events_ = saw_events_ = true;
            } else {
              expect_key_ = true;
            }
          } else if (depth_ == 1 && events_depth_ == 2 && current_key_ == "traceEvents") {
            if (c != '[') fail("'traceEvents' is not a list");
            in_events_ = saw_events_ = true;
          } else if (depth_ == events_depth_ && in_events_) {
            if (c != '{') not_an_event();
            in_event_ = true;
            event_from = i;
          }
          ++depth_;
          break;
        case '}':
        case ']':
          if (depth_ == 0) fail("unbalanced brackets");
          --depth_;
          if (depth_ == events_depth_ && in_event_) {
            if (event_buf_.empty() && capacity - (i + 1) >= simdjson::SIMDJSON_PADDING) {
              event(p + event_from, i + 1 - event_from, capacity - event_from);
            } else {
              take(event_buf_, p, event_from, i + 1);
              pad(event_buf_);
              event(padded_.data(), event_buf_.size(), padded_.size());
              event_buf_.clear();
            }
            in_event_ = false;
          } else if (depth_ == events_depth_ - 1 && in_events_) {
            in_events_ = false;
            done_ = done_ || depth_ == 0;  // the document's own list closed
          } else if (depth_ == 0) {
            end_value(p, value_from, i);
            done_ = true;
          }
          break;
        case ',':
          if (depth_ == 1 && events_depth_ == 2) {
            end_value(p, value_from, i);
            expect_key_ = true;
          }
          break;
        case ':':
          if (depth_ == 1 &&
              (current_key_ == "deviceProperties" || current_key_ == "baseTimeNanoseconds" ||
               current_key_ == "distributedInfo")) {
            capture_ = current_key_;
            value_buf_.clear();
            value_from = i + 1;
          }
          break;
        case ' ':
        case '\n':
        case '\r':
        case '\t':
          break;
        default:
          if (depth_ == 0) fail(done_ ? "text after the trace's object" : "not a JSON object");
          if (depth_ == events_depth_ && in_events_) not_an_event();
          break;
      }
    }
    // What this chunk holds of a capture still open continues with the next one.
    if (in_event_) take(event_buf_, p, event_from, n);
    if (!capture_.empty()) take(value_buf_, p, value_from, n);
  }

  Measurements finish() {
    if (!done_ || depth_ != 0 || in_string_)
      fail("not valid JSON (it ends inside the document); is the trace complete?");
    if (!saw_events_)
      throw InputError(std::string(source_) +
                       ": no 'traceEvents' list; is this a PyTorch profiler (Kineto) Chrome "
                       "trace?");
    if (m_.kernels.empty())
      throw InputError(std::string(source_) +
                       ": the trace has no GPU events (kernel, gpu_memcpy, gpu_memset); was it "
                       "recorded with ProfilerActivity.CUDA?");
    for (auto& [id, index] : device_of_) {
      DeviceRecord& d = m_.devices[static_cast<size_t>(index)];
      if (auto it = properties_.find(id); it != properties_.end()) d = it->second;
      d.index = static_cast<int>(id);
    }
    for (auto& k : m_.kernels) k.start_ns += base_ns_;
    for (auto& st : m_.steps) st.start_ns += base_ns_;
    m_.run.uuid = hash_.uuid("kineto");
    return std::move(m_);
  }

 private:
  [[noreturn]] void not_an_event() const {
    fail("event " + std::to_string(event_index_) + " is not an object");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(std::string(source_) + ": " + what);
  }
  static void take(std::string& buf, const char* p, size_t from, size_t to) {
    if (to > from) buf.append(p + from, to - from);
  }
  void end_value(const char* p, size_t from, size_t to) {
    if (capture_.empty()) return;
    take(value_buf_, p, from, to);
    if (capture_ == "deviceProperties")
      device_properties(value_buf_);
    else if (capture_ == "distributedInfo")
      distributed_info(value_buf_);
    else
      base_time(value_buf_);
    capture_.clear();
    value_buf_.clear();
  }

  // text copied into padded_, with the padding simdjson reads past the end.
  void pad(const std::string& text) {
    padded_.assign(text.begin(), text.end());
    padded_.resize(text.size() + simdjson::SIMDJSON_PADDING, '\0');
  }
  simdjson::simdjson_result<od::document> parse(const std::string& text) {
    pad(text);
    return parser_.iterate(padded_.data(), text.size(), padded_.size());
  }

  void device_properties(const std::string& text) {
    auto doc = parse(text);
    od::array list;
    if (doc.get_array().get(list)) fail("'deviceProperties' is not a list");
    for (auto item : list) {
      od::object p;
      if (item.get_object().get(p)) fail("'deviceProperties' holds a non-object");
      DeviceRecord d;
      d.name = "unknown GPU";
      int64_t id = 0, major = -1, minor = 0;
      for (auto field : p) {
        std::string_view key;
        if (field.unescaped_key().get(key)) fail("'deviceProperties' is not valid JSON");
        od::value v = field.value();
        if (key == "id")
          (void)int_of(v, id);
        else if (key == "name") {
          std::string_view s;
          if (!v.get_string().get(s)) d.name = std::string(s);
        } else if (key == "totalGlobalMem")
          (void)int_of(v, d.memory_bytes);
        else if (key == "numSms") {
          int64_t sms = 0;
          if (int_of(v, sms)) d.sms = static_cast<int>(sms);
        } else if (key == "computeMajor")
          (void)int_of(v, major);
        else if (key == "computeMinor")
          (void)int_of(v, minor);
      }
      if (major >= 0) d.compute_capability = std::to_string(major) + "." + std::to_string(minor);
      properties_[id] = d;
    }
  }

  // PyTorch's distributed traces say which rank recorded them: {"rank": 3, "world_size": 8}.
  void distributed_info(const std::string& text) {
    auto doc = parse(text);
    od::object info;
    if (doc.get_object().get(info)) return;  // not ours to judge; the rank stays unknown
    int64_t rank = -1;
    if (!info["rank"].get_int64().get(rank) && rank >= 0 && rank < (int64_t{1} << 24))
      m_.trace_rank = static_cast<int>(rank);
  }

  void base_time(const std::string& text) {
    auto doc = parse(text);
    int64_t ns = 0;
    if (!doc.get_int64().get(ns)) base_ns_ = ns;
  }

  int device(int64_t id) {
    if (auto it = device_of_.find(id); it != device_of_.end()) return it->second;
    DeviceRecord d;
    d.name = "unknown GPU";
    m_.devices.push_back(d);
    return device_of_[id] = static_cast<int>(m_.devices.size() - 1);
  }

  // A time field of event `index`: present, a number, not negative, below `limit` µs.
  int64_t time_ns(std::optional<double> us, const char* field, double limit, int64_t index) const {
    const std::string at = "event " + std::to_string(index);
    if (!us) fail(at + " has no '" + field + "' (a GPU event or step needs ts, dur and name)");
    if (!std::isfinite(*us) || *us < 0 || *us > limit)
      fail(at + ": '" + field + "' " + std::to_string(*us) + " is not a time in microseconds");
    return std::llround(*us * 1000.0);
  }

  // ts as validated by time_ns, the exact nanoseconds its digits give.
  int64_t check_ts(std::optional<double> us, int64_t index, int64_t exact) const {
    (void)time_ns(us, "ts", kMaxTimestampUs, index);
    return exact;
  }

  void event(const char* text, size_t length, size_t capacity) {
    const int64_t index = event_index_++;
    auto doc = parser_.iterate(text, length, capacity);
    od::object e;
    auto bad = [&](simdjson::error_code ec) {
      fail("event " + std::to_string(index) + " is not valid JSON (" + simdjson::error_message(ec) +
           ")");
    };
    if (auto ec = doc.get_object().get(e)) bad(ec);
    // Views into the parser's string buffer: valid until the next event is parsed.
    std::string_view ph, cat, name;
    bool has_name = false;
    std::optional<double> ts, dur;
    std::optional<int64_t> ts_ns;  // ts to the nanosecond, where its digits say it
    int64_t dev = 0, stream = 0, tid = 0, bytes = 0;
    bool has_stream = false;
    int32_t dims[6] = {};
    bool launch_ok = true;
    int launch_parts = 0;
    for (auto field : e) {
      std::string_view key;
      if (auto ec = field.unescaped_key().get(key)) bad(ec);
      od::value v = field.value();
      std::string_view str;
      if (key == "ph") {
        if (!v.get_string().get(str)) ph = str;
      } else if (key == "cat") {
        if (!v.get_string().get(str)) cat = str;
      } else if (key == "name") {
        if (!v.get_string().get(str)) name = str, has_name = true;
      } else if (key == "ts") {
        // Microseconds since the epoch have 16 digits before the point: as a double they are
        // off by up to a quarter of a microsecond, so the digits are read as written too.
        const std::string_view raw = v.raw_json_token();
        double d;
        if (!v.get_double().get(d)) {
          ts = d;
          ts_ns = exact_ns(raw);
        }
      } else if (key == "dur") {
        double d;
        if (!v.get_double().get(d)) dur = d;
      } else if (key == "tid") {
        (void)int_of(v, tid);
      } else if (key == "args") {
        od::object args;
        if (v.get_object().get(args)) continue;
        for (auto a : args) {
          std::string_view k;
          if (auto ec = a.unescaped_key().get(k)) bad(ec);
          od::value x = a.value();
          if (k == "device")
            (void)int_of(x, dev);
          else if (k == "stream")
            has_stream = !x.get_int64().get(stream);
          else if (k == "bytes")
            (void)int_of(x, bytes);
          else if (k == "grid" || k == "block") {
            const int base = k == "grid" ? 0 : 3;
            od::array arr;
            int d = 0;
            if (x.get_array().get(arr)) {
              launch_ok = false;
              continue;
            }
            for (auto item : arr) {
              int64_t v64 = 0;
              if (d >= 3 || item.get_int64().get(v64) || v64 < 1 || v64 > INT32_MAX)
                launch_ok = false;
              else
                dims[base + d] = static_cast<int32_t>(v64);
              ++d;
            }
            if (d != 3) launch_ok = false;
            ++launch_parts;
          }
        }
      }
    }
    if (ph != "X") return;
    // The profiler's step spans (host side; the GPU-side copy of each is skipped).
    if (cat.substr(0, 4) != "gpu_" && has_name) {
      constexpr std::string_view kStep = "ProfilerStep#";
      if (name.substr(0, kStep.size()) == kStep) {
        // A step name that is not ProfilerStep#<number>, or without a duration, is no step.
        const auto number = step_number(name, kStep);
        if (!number || !dur) return;
        const int64_t d = time_ns(dur, "dur", kMaxDurationUs, index);
        const int64_t start =
            ts_ns ? check_ts(ts, index, *ts_ns) : time_ns(ts, "ts", kMaxTimestampUs, index);
        if (d > 0) m_.steps.push_back({*number, start, d});
        return;
      }
    }
    const auto kind = gpu_kind(cat);
    if (!kind) return;
    if (!has_name)
      fail("event " + std::to_string(index) +
           " has no 'name' (a GPU event or step needs ts, dur and name)");
    KernelEvent k;
    k.kind = *kind;
    k.start_ns = ts_ns ? check_ts(ts, index, *ts_ns) : time_ns(ts, "ts", kMaxTimestampUs, index);
    k.duration_ns = time_ns(dur, "dur", kMaxDurationUs, index);
    k.device = device(dev);
    k.stream = has_stream ? stream : tid;
    if (bytes < 0)
      fail("event " + std::to_string(index) + ": 'bytes' " + std::to_string(bytes) +
           " is negative");
    k.bytes = bytes;
    if (k.kind == EventKind::kernel && launch_ok && launch_parts == 2)
      k.launch = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]};
    auto it = names_.find(name);
    if (it == names_.end()) {
      it = names_.emplace(std::string(name), static_cast<int32_t>(m_.names.size())).first;
      m_.names.emplace_back(name);
    }
    k.name = it->second;
    m_.kernels.push_back(k);
  }

  std::string_view source_;
  Measurements m_;
  StreamHash hash_;
  // The scanner.
  int depth_ = 0;
  int events_depth_ = 2;  // where the events sit: in traceEvents (2) or the document's list (1)
  bool in_string_ = false, escape_ = false, expect_key_ = false, key_capture_ = false;
  bool done_ = false, saw_events_ = false, in_events_ = false, in_event_ = false;
  std::string key_, current_key_, capture_, event_buf_, value_buf_;
  int64_t event_index_ = 0;
  // The parser and what it has read.
  od::parser parser_;
  std::vector<char> padded_;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> names_;
  std::map<int64_t, int> device_of_;  // CUDA device id -> index in m_.devices
  std::map<int64_t, DeviceRecord> properties_;
  int64_t base_ns_ = 0;
};

}  // namespace

Measurements import_kineto(std::string_view text, std::string_view source) {
  KinetoStream s(source);
  s.feed(text.data(), text.size(), text.size());
  return s.finish();
}

Measurements import_kineto_chunks(std::string_view text, std::string_view source, size_t chunk) {
  KinetoStream s(source);
  for (size_t at = 0; at < text.size(); at += chunk)
    s.feed(text.data() + at, std::min(chunk, text.size() - at), std::min(chunk, text.size() - at));
  return s.finish();
}

// Plain or gzip-compressed (.json.gz), read through one door.
Measurements import_kineto_file(const std::string& path) {
  check_input_file(path);
  GzFile f(path);
  KinetoStream s(path);
  constexpr size_t kChunk = 4 << 20;
  std::vector<char> chunk(kChunk + simdjson::SIMDJSON_PADDING);
  while (const size_t n = f.read(chunk.data(), kChunk)) s.feed(chunk.data(), n, chunk.size());
  return s.finish();
}

}  // namespace shardcost::db
