#include "output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "format.h"
#include "shardcost/error.h"

namespace shardcost::cli {
namespace {

void add_to_leaves(CLI::App& app, std::string& path) {
  const std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  if (subs.empty()) {
    if (app.get_option_no_throw("--output") == nullptr && app.get_option_no_throw("-o") == nullptr)
      app.add_option("--output,-o", path,
                     "write what the command prints to this file instead of standard output: "
                     "whole, through a rename (an error leaves the file as it was; an answer "
                     "with exit 1, such as nothing feasible, is written)");
    return;
  }
  for (CLI::App* sub : subs) add_to_leaves(*sub, path);
}

// Where a whole write of `path` goes: a device, FIFO or socket (/dev/null, a pipe) is written
// to as it is, never replaced by a file; a link is written through (the file it names is
// replaced, the link stays); anything else goes to a temporary file beside its target, renamed
// onto it once written.
struct WholeWrite {
  std::string target;  // what the rename replaces
  std::string file;    // what is opened: the temporary file, or the device itself
  bool renamed() const { return file != target; }
};
WholeWrite whole_write(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) return {path, path};
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const auto resolved = fs::canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  return {target, fmt::format("{}.tmp-{}", target, ::getpid())};
}

// A process launched by mpirun or srun as a rank other than the first.
bool later_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::strcmp(v, "0") != 0;
  }
  return false;
}

}  // namespace

OutputFile::~OutputFile() {
  if (!temp_.empty()) std::remove(temp_.c_str());
}

void OutputFile::add_to(CLI::App& app) {
  add_to_leaves(app, path_);  // the root has commands: only they get the option
}

void OutputFile::begin() {
  if (path_.empty() || later_rank()) return;
  check_output_path(path_, "--output");
  std::fflush(stdout);
  const WholeWrite w = whole_write(path_);
  if (std::freopen(w.file.c_str(), "w", stdout) == nullptr)
    throw InputError(fmt::format("--output {}: {}{}", path_,
                                 w.renamed() ? "cannot write beside it: " : "",
                                 std::strerror(errno)));
  if (w.renamed()) path_ = w.target, temp_ = w.file;
}

void OutputFile::commit() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw Error(fmt::format("cannot write the output: {}", std::strerror(errno)));
  if (temp_.empty()) return;
  if (std::rename(temp_.c_str(), path_.c_str()) != 0)
    throw Error(fmt::format("cannot write the output: renaming {} to {}: {}", temp_, path_,
                            std::strerror(errno)));
  temp_.clear();
}

// A failed write: the machine's (a full disk, a quota, an I/O error: exit 1, as a full disk is
// everywhere else) or the path's (a missing folder, no permission: bad input, exit 2).
[[noreturn]] void write_failed(const std::string& path, int err) {
  if (err == ENOSPC || err == EDQUOT || err == EIO || err == EFBIG)
    throw Error(
        fmt::format("cannot write {}: {}; free some space and retry", path, std::strerror(err)));
  throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(err)));
}

void write_whole(const std::string& path, std::string_view text) {
  const WholeWrite w = whole_write(path);
  std::FILE* f = std::fopen(w.file.c_str(), "wb");
  if (f == nullptr) write_failed(path, errno);
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!closed && err == 0) err = errno;
  if (!written || !closed) {
    if (w.renamed()) std::remove(w.file.c_str());
    write_failed(path, err != 0 ? err : EIO);
  }
  if (w.renamed() && std::rename(w.file.c_str(), w.target.c_str()) != 0) {
    const int e = errno;
    std::remove(w.file.c_str());
    write_failed(path, e);
  }
}

}  // namespace shardcost::cli
