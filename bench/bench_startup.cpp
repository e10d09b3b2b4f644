// bench_startup: the resident memory and wall time of commands that do little (--version,
// catalog, db info, an error), each run as its own process, best of 5. Target: every one
// under 64 MB peak RSS (it was 226 MB while cuBLASLt was linked rather than loaded on use).
// Usage: bench_startup [SHARDCOST_BINARY]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Run {
  double seconds = 0;
  long rss_kb = 0;
};

Run run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);  // the child must not print what the parent has buffered
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // The command's output is not what is measured.
    if (std::freopen("/dev/null", "w", stdout) == nullptr ||
        std::freopen("/dev/null", "w", stderr) == nullptr)
      _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage u{};
  if (pid < 0 || wait4(pid, &status, 0, &u) != pid) return {};
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
          u.ru_maxrss};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string bin = argc > 1 ? argv[1] : SHARDCOST_BINARY;
  const std::vector<std::vector<std::string>> commands = {
      {bin, "--version"},
      {bin, "catalog"},
      {bin, "db", "info", "/nonexistent/store.db"},
      {bin, "estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--strategy",
       "tp=8,mbs=1,gbs=8"},
  };
  bool ok = true;
  for (const auto& c : commands) {
    Run best{1e30, 1L << 40};
    for (int i = 0; i < 5; ++i) {
      const Run r = run(c);
      best.seconds = std::min(best.seconds, r.seconds);
      best.rss_kb = std::min(best.rss_kb, r.rss_kb);
    }
    std::string what;
    for (size_t i = 1; i < c.size(); ++i) what += (i > 1 ? " " : "") + c[i];
    const double mb = static_cast<double>(best.rss_kb) / 1024.0;
    std::printf("shardcost %-40.40s %6.1f MB peak RSS, %6.3f s\n", what.c_str(), mb, best.seconds);
    ok = ok && mb < 64;
  }
  std::printf("target: every command under 64 MB peak RSS: %s\n", ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
