// libshardcost_inject.so: loaded by the CUDA driver through CUDA_INJECTION64_PATH, which calls
// InitializeInjection during cuInit. The only code of shardcost that calls CUPTI. It records
// activities into buffers, parses each completed buffer (activity_parser) and appends it to
// $SHARDCOST_TRACE_DIR/<host>-<pid>.sctrace, which `shardcost trace` folds into the store.
//
// It must never change what the traced program does: every CUPTI call is checked, a failure
// becomes a warning (stderr and the trace file) and tracing stops; nothing here throws out of a
// callback or calls exit.
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "activity_parser.h"
#include "trace_file.h"

namespace shardcost::trace {
namespace {

constexpr size_t kBufferBytes = 4u << 20;  // a few MiB: CUPTI's own default is 3 MiB
constexpr size_t kBufferAlign = 8;         // CUPTI requires 8-byte aligned buffers
constexpr uint32_t kDefaultFlushMs = 2000;

std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
    return "CUPTI error " + std::to_string(r);
  return text;
}

std::string runtime_api_name(uint32_t cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || !name)
    return "runtime api " + std::to_string(cbid);
  return name;
}

// Walks CUPTI's own buffers with CUPTI's own iterator.
class CuptiWalker final : public RecordWalker {
 public:
  CUpti_Activity* next(uint8_t* buffer, size_t valid_bytes,
                       CUpti_Activity* current) const override {
    CUpti_Activity* record = current;
    return cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS ? record
                                                                                     : nullptr;
  }
};

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() { close(); }
  bool open(const std::string& path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return fd_ >= 0;
  }
  bool is_open() const { return fd_ >= 0; }
  // Whole chunks or nothing more: a short write (disk full) stops the file.
  bool append(const std::string& bytes) {
    size_t done = 0;
    while (fd_ >= 0 && done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return close(), false;
      done += static_cast<size_t>(n);
    }
    return fd_ >= 0;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

class Tracer {
 public:
  int initialize();
  void buffer_completed(uint8_t* buffer, size_t valid_bytes, CUcontext ctx, uint32_t stream);
  void flush();
  // The child of a fork without exec has none of CUPTI's threads and may have inherited
  // mutex_ locked: no lock here, and the parent's file is left to the parent.
  void after_fork_in_child() {
    in_forked_child_ = true;
    file_.close();
  }
  void warn(const std::string& message);
  int signal_pipe[2] = {-1, -1};

 private:
  bool check(CUptiResult r, const char* call);
  void enable_kinds(const char* kinds);
  void route_nvtx_to_cupti();
  void write_batch(file::Batch& batch);

  std::mutex mutex_;
  OutputFile file_;
  ActivityParser parser_{runtime_api_name};
  bool enabled_ = false;
  std::atomic<bool> in_forked_child_{false};
};

// Leaked on purpose: CUPTI may call back from its worker thread until the process is gone,
// after static destructors have run.
Tracer& tracer() {
  static Tracer* t = new Tracer;
  return *t;
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // 0: CUPTI drops the records and counts them
  *max_records = 0;
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid) {
  (void)size;
  if (buffer) tracer().buffer_completed(buffer, valid, ctx, stream);
  std::free(buffer);
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void flush_at_exit() {
  tracer().flush();
}

// Termination signals: the handler only writes to a pipe (async-signal-safe); a thread flushes,
// restores the default action and re-raises, so the program still dies of the same signal.
// Crash signals (SIGSEGV, SIGABRT, ...) get no flush: the process state cannot be trusted;
// what the periodic flush wrote survives.
constexpr int kFlushSignals[] = {SIGINT, SIGTERM, SIGHUP};

pid_t g_owner_pid = 0;

void on_signal(int sig) {
  if (::getpid() != g_owner_pid) {  // a forked child: the flush thread is the parent's
    std::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  const unsigned char s = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(tracer().signal_pipe[1], &s, 1);
}

void install_signal_flush() {
  Tracer& t = tracer();
  g_owner_pid = ::getpid();
  if (::pipe2(t.signal_pipe, O_CLOEXEC) != 0) return t.warn("no flush on signals: pipe failed");
  for (int sig : kFlushSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // theirs
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
  std::thread([fd = t.signal_pipe[0]] {
    unsigned char sig = 0;
    while (true) {
      const ssize_t n = ::read(fd, &sig, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1) return;
      tracer().flush();
      std::signal(sig, SIG_DFL);
      ::kill(::getpid(), sig);
    }
  }).detach();
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

}  // namespace

void Tracer::warn(const std::string& message) {
  std::fprintf(stderr, "shardcost-inject: warning: %s\n", message.c_str());
  file::Batch b;
  b.warnings.push_back(message);
  std::lock_guard lock(mutex_);
  write_batch(b);
}

bool Tracer::check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  warn(std::string(call) + " failed: " + cupti_error(r));
  return false;
}

void Tracer::write_batch(file::Batch& batch) {
  if (!file_.is_open() || batch.empty()) return;
  std::string bytes;
  file::encode(batch, bytes);
  file_.append(bytes);
}

// NVTX hands its ranges to the library named by NVTX_INJECTION64_PATH, loaded at the
// process's first NVTX call; CUPTI's marker records need that library to be CUPTI itself.
// Set (unless the user set it) to the libcupti this library runs with. Ranges of a program
// whose first NVTX call came before CUDA initialised (before this library was loaded) are
// not seen: NVTX has already looked.
void Tracer::route_nvtx_to_cupti() {
  if (const char* set = std::getenv("NVTX_INJECTION64_PATH"); set && *set) return;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 || !info.dli_fname)
    return warn("cannot locate libcupti for NVTX ranges; steps are not recorded");
  if (::setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0) != 0)
    warn("cannot set NVTX_INJECTION64_PATH; steps are not recorded");
}

void Tracer::enable_kinds(const char* kinds) {
  struct Kind {
    const char* name;
    CUpti_ActivityKind kind;
  };
  constexpr Kind kKinds[] = {{"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
                             {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
                             {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY2},
                             {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
                             {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
                             {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
                             {"nvtx", CUPTI_ACTIVITY_KIND_MARKER}};
  const std::string list =
      std::string(",") + (kinds && *kinds ? kinds : "kernel,memcpy,memset,sync,runtime,nvtx") + ",";
  if (list.find(",nvtx,") != std::string::npos) route_nvtx_to_cupti();
  // Devices and contexts always: they name the GPUs and place synchronisation records.
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE), "cuptiActivityEnable(DEVICE)");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT), "cuptiActivityEnable(CONTEXT)");
  for (const auto& k : kKinds) {
    if (list.find(std::string(",") + k.name + ",") == std::string::npos) continue;
    const std::string call = std::string("cuptiActivityEnable(") + k.name + ")";
    if (check(cuptiActivityEnable(k.kind), call.c_str())) enabled_ = true;
  }
}

int Tracer::initialize() {
  const char* dir = std::getenv("SHARDCOST_TRACE_DIR");
  if (!dir || !*dir) {
    std::fprintf(stderr,
                 "shardcost-inject: warning: SHARDCOST_TRACE_DIR is not set; not tracing "
                 "(run the program with 'shardcost trace -- ...')\n");
    return 1;
  }
  const std::string path =
      std::string(dir) + "/" + host_name() + "-" + std::to_string(::getpid()) + ".sctrace";
  {
    std::lock_guard lock(mutex_);
    if (!file_.open(path)) {
      std::fprintf(stderr, "shardcost-inject: warning: cannot write %s (%s); not tracing\n",
                   path.c_str(), std::strerror(errno));
      return 1;
    }
    file_.append(file::encode_header(static_cast<uint32_t>(::getpid()), host_name()));
  }
  // Another CUPTI client (Nsight Systems, a profiler already attached) owns the callback API;
  // sharing the activity API with it would corrupt both. Warn and stay out of its way.
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult sub = cuptiSubscribe(&probe, ignore_callback, nullptr);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    warn("another CUPTI client is active (Nsight, a profiler); not tracing this process");
    return 1;
  }
  if (!check(sub, "cuptiSubscribe")) return 1;
  // Released at once, so a profiler the program starts later (torch.profiler) can subscribe.
  check(cuptiUnsubscribe(probe), "cuptiUnsubscribe");

  if (!check(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed),
             "cuptiActivityRegisterCallbacks"))
    return 1;
  enable_kinds(std::getenv("SHARDCOST_TRACE_KINDS"));
  if (!enabled_) return 1;
  uint32_t flush_ms = kDefaultFlushMs;
  if (const char* ms = std::getenv("SHARDCOST_TRACE_FLUSH_MS"))
    flush_ms = static_cast<uint32_t>(std::strtoul(ms, nullptr, 10));
  if (flush_ms > 0) check(cuptiActivityFlushPeriod(flush_ms), "cuptiActivityFlushPeriod");
  std::atexit(flush_at_exit);
  pthread_atfork(nullptr, nullptr, [] { tracer().after_fork_in_child(); });
  install_signal_flush();
  return 1;
}

void Tracer::buffer_completed(uint8_t* buffer, size_t valid_bytes, CUcontext ctx, uint32_t stream) {
  if (in_forked_child_) return;
  try {
    file::Batch batch;
    std::lock_guard lock(mutex_);
    parser_.parse(CuptiWalker(), buffer, valid_bytes, batch);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
      batch.dropped = dropped;
    write_batch(batch);
  } catch (...) {
    // Out of memory while parsing: the buffer's records are lost, the program goes on.
  }
}

void Tracer::flush() {
  if (!enabled_ || in_forked_child_) return;
  // Forced: also the buffers still being filled. Errors are ignored here: at exit the driver
  // may already be gone, and there is nobody left to tell.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

}  // namespace shardcost::trace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  static int result = 1;
  try {
    std::call_once(once, [] { result = shardcost::trace::tracer().initialize(); });
  } catch (...) {
    // Never let an exception reach the driver.
  }
  return result;
}
