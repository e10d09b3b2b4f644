#pragma once
// One writer at a time per run content (the POSIX record-lock API; nothing else here calls
// fcntl): two imports of the same file into one store, started together, must leave it stored
// once. The second waits for the first, then finds its run completed.
#include <functional>
#include <string>
#include <string_view>

namespace shardcost::db {

// An exclusive lock on one byte of "<store>.lock", at an offset drawn from the run's uuid,
// held for the object's life and released by the kernel however its process ends (so a killed
// import's lock is gone, and the run it left is known to be abandoned). notice is told once if
// it has to wait. Errors (no lock file can be made) are Error with the path and the fix.
class ImportLock {
 public:
  ImportLock(const std::string& store_path, std::string_view uuid,
             const std::function<void(const std::string&)>& notice);
  ~ImportLock();
  ImportLock(const ImportLock&) = delete;
  ImportLock& operator=(const ImportLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace shardcost::db
