// Running the traced command: fork/exec so every child and grandchild inherits the injection
// environment. The parent ignores SIGINT/SIGQUIT while it waits (as system() does): Ctrl-C
// reaches the command, and shardcost lives on to collect what it recorded.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "shardcost/error.h"
#include "shardcost/signals.h"
#include "shardcost/trace.h"

extern char** environ;

namespace shardcost::trace {
namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

int run_command(const Launch& launch) {
  if (launch.argv.empty()) throw InputError("no command to trace; put it after '--'");
  // Everything the child needs is built before fork: after it, only exec and _exit.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const auto key = entry.substr(0, entry.find('='));
    if (!launch.env.contains(std::string(key))) env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : launch.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = launch.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(std::string("pipe failed: ") + std::strerror(errno));
  Fd read_end(fds[0]), write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] auto n = ::write(write_end.get(), &err, sizeof err);
    ::_exit(127);
  }
  const ScopedSignals ignore(SIGINT, SIGQUIT, SIG_IGN);
  write_end.reset();
  int exec_errno = 0;
  ssize_t got;
  do got = ::read(read_end.get(), &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (got == static_cast<ssize_t>(sizeof exec_errno))
    throw InputError("cannot run '" + launch.argv[0] + "': " + std::strerror(exec_errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace shardcost::trace
