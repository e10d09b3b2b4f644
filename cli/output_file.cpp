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
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    add_to_leaves(*sub, path_);
}

void OutputFile::begin() {
  if (path_.empty() || later_rank()) return;
  check_output_path(path_, "--output");
  std::fflush(stdout);
  // A device, FIFO or socket (/dev/null, a pipe, /dev/stdout) is written to as it is: only a
  // regular file is replaced, never a device node.
  std::error_code ec;
  const auto st = std::filesystem::status(path_, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    if (std::freopen(path_.c_str(), "w", stdout) == nullptr)
      throw InputError(fmt::format("--output {}: {}", path_, std::strerror(errno)));
    return;
  }
  // A link is written through: the file it names is replaced, the link stays.
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path_, ec))) {
    const auto target = std::filesystem::canonical(path_, ec);
    if (!ec) path_ = target.string();
  }
  const std::string temp = fmt::format("{}.tmp-{}", path_, ::getpid());
  if (std::freopen(temp.c_str(), "w", stdout) == nullptr)
    throw InputError(
        fmt::format("--output {}: cannot write beside it ({})", path_, std::strerror(errno)));
  temp_ = temp;
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

void write_whole(const std::string& path, std::string_view text) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  const bool special = std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
  std::string target = path;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
    const auto resolved = std::filesystem::canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  const std::string temp = special ? target : fmt::format("{}.tmp-{}", target, ::getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr)
    throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    if (!special) std::remove(temp.c_str());
    throw InputError(fmt::format("cannot write {}; check the disk", path));
  }
  if (!special && std::rename(temp.c_str(), target.c_str()) != 0) {
    std::remove(temp.c_str());
    throw InputError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
}

}  // namespace shardcost::cli
