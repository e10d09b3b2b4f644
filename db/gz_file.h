#pragma once
// Reading a file that may be gzip-compressed (zlib's gz* API; nothing else in the store calls
// zlib): PyTorch profiler traces ship as .json.gz (Holistic Trace Analysis, Kineto's tests),
// and a plain file reads through the same calls unchanged.
#include <cstddef>
#include <string>

namespace shardcost::db {

class GzFile {
 public:
  // InputError naming the path where it cannot be opened.
  explicit GzFile(const std::string& path);
  ~GzFile();
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  // Up to `size` bytes of the file's content (decompressed); 0 at its end. InputError on a
  // read error or damaged compressed data, naming the path.
  size_t read(char* into, size_t size);

 private:
  std::string path_;
  void* file_ = nullptr;  // gzFile
};

}  // namespace shardcost::db
