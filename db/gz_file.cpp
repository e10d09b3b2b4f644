#include "gz_file.h"

#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "shardcost/error.h"

namespace shardcost::db {

GzFile::GzFile(const std::string& path) : path_(path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw InputError("cannot read " + path + ": " +
                     (errno ? std::strerror(errno) : "zlib could not open it"));
  file_ = f;
  // Large reads: a trace is hundreds of megabytes. A failure here only costs speed.
  (void)gzbuffer(f, 1 << 20);
}

GzFile::~GzFile() {
  if (file_) (void)gzclose(static_cast<gzFile>(file_));
}

size_t GzFile::read(char* into, size_t size) {
  const unsigned ask = static_cast<unsigned>(std::min<size_t>(size, INT_MAX));
  const int n = gzread(static_cast<gzFile>(file_), into, ask);
  if (n < 0) {
    int code = 0;
    const char* why = gzerror(static_cast<gzFile>(file_), &code);
    throw InputError("cannot read " + path_ + " (" + (why ? why : "a read error") +
                     "); is the file complete?");
  }
  return static_cast<size_t>(n);
}

}  // namespace shardcost::db
