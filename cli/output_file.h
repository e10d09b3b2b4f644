#pragma once
// -o/--output FILE on every command that prints: what the command writes to standard output
// goes to a temporary file beside FILE, renamed onto FILE when the command succeeds. A command
// that fails leaves FILE as it was, and no half-written file behind.
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

namespace shardcost::cli {

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();  // not committed: the temporary file is removed

  // Adds --output,-o to every command of app that runs and has no option of that name.
  void add_to(CLI::App& app);
  // After parsing, before the command runs: checks the path (InputError) and sends standard
  // output to the temporary file. Nothing when no --output was given, or on an MPI rank other
  // than 0 (whose output the launcher keeps).
  void begin();
  // The command succeeded: flushes standard output and renames the file into place. Throws
  // Error when the output could not be written (a full disk).
  void commit();

 private:
  std::string path_;  // what --output named
  std::string temp_;  // where standard output goes meanwhile; empty: not redirected
};

// Writes text to path whole: into a temporary file beside it, renamed onto it once written (a
// device or FIFO is written to directly). An interrupted or failed write leaves path as it
// was. Throws InputError naming the path.
void write_whole(const std::string& path, std::string_view text);

}  // namespace shardcost::cli
