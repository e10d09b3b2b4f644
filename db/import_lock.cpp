#include "import_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shardcost/error.h"

namespace shardcost::db {
namespace {

// FNV-1a over the uuid, into the first 2^30 bytes (a record lock needs no data there).
off_t offset_of(std::string_view uuid) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : uuid) h = (h ^ c) * 1099511628211ull;
  return static_cast<off_t>(h % (1ull << 30));
}

struct flock byte_at(off_t offset, short type) {
  struct flock l;
  std::memset(&l, 0, sizeof l);
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = offset;
  l.l_len = 1;
  return l;
}

}  // namespace

ImportLock::ImportLock(const std::string& store_path, std::string_view uuid,
                       const std::function<void(const std::string&)>& notice) {
  const std::string path = store_path + ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(path + ": cannot open the store's import lock (" + std::strerror(errno) +
                "); the store's folder must be writable by whoever imports into it");
  struct flock l = byte_at(offset_of(uuid), F_WRLCK);
  if (::fcntl(fd_, F_SETLK, &l) == 0) return;
  if (errno != EAGAIN && errno != EACCES) {
    const int e = errno;
    ::close(fd_);
    throw Error(path + ": cannot lock the store's import lock (" + std::strerror(e) + ")");
  }
  if (notice) notice("waiting for another import of the same content into " + store_path);
  while (::fcntl(fd_, F_SETLKW, &l) != 0) {
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd_);
    throw Error(path + ": cannot lock the store's import lock (" + std::strerror(e) + ")");
  }
}

ImportLock::~ImportLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace shardcost::db
