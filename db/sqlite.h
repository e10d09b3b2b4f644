#pragma once
// The only door to sqlite3_*: a connection and its prepared statements, both RAII and
// move-only. Every return code is checked; errors carry the SQL and the file.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shardcost/db.h"
#include "shardcost/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace shardcost::db {

// Another writer held the file for longer than the busy timeout (SQLITE_BUSY, SQLITE_LOCKED):
// the one failure worth waiting out and retrying.
class BusyError : public Error {
 public:
  using Error::Error;
};

class Connection;

class Statement {
 public:
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, std::optional<int64_t> value);
  Statement& bind_null(int index);

  bool step();   // true: a row is ready; false: done
  void run();    // step to completion, then reset
  void reset();  // ready to bind and run again

  int columns() const;
  std::string column_name(int i) const;
  bool is_null(int i) const;
  int64_t int64(int i) const;
  double real(int i) const;
  std::string text(int i) const;
  Cell cell(int i) const;

 private:
  friend class Connection;
  Statement(const Connection* conn, sqlite3_stmt* stmt, std::string sql);
  [[noreturn]] void fail(int rc, const char* what) const;
  const Connection* conn_;
  sqlite3_stmt* stmt_;
  std::string sql_;
};

class Connection {
 public:
  enum class Access { read_write, read_only, immutable };
  // Opens (read_only) or opens-or-creates the file. immutable: read-only, and nothing may
  // change the file while it is open (a store in a folder nobody can write: no -shm to make).
  // A writer holding the file is waited for (up to 30 s), said once through the lock notice.
  Connection(const std::string& path, Access access);
  Connection(const std::string& path, bool read_only)
      : Connection(path, read_only ? Access::read_only : Access::read_write) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  Statement prepare(std::string_view sql) const;
  // Runs one or more statements without parameters (schema, pragmas).
  void exec(std::string_view sql) const;
  int64_t last_insert_id() const;
  int changes() const;
  const std::string& path() const { return path_; }
  static std::string library_version();

  // Throws the store's error for a failed call: one line with the file, the SQL and a fix.
  [[noreturn]] void fail(int rc, std::string_view what, std::string_view sql) const;
  // Says, through the lock notice and once per connection, that it waits for another writer.
  void tell_lock_wait() const;

 private:
  static int on_busy(void* self, int count);
  sqlite3* db_ = nullptr;
  std::string path_;
  std::chrono::steady_clock::time_point wait_start_;
  mutable bool told_wait_ = false;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back if not committed.
class Transaction {
 public:
  explicit Transaction(const Connection& c);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  const Connection& conn_;
  bool open_ = true;
};

// What set_lock_wait_notice set (empty: nothing to tell), for waits outside SQLite's.
const std::function<void(const std::string&)>& lock_wait_notice();

}  // namespace shardcost::db
