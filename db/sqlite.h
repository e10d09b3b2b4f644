#pragma once
// The only door to sqlite3_*: a connection and its prepared statements, both RAII and
// move-only. Every return code is checked; errors carry the SQL and the file.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shardcost/db.h"

struct sqlite3;
struct sqlite3_stmt;

namespace shardcost::db {

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
  // Opens (read_only) or opens-or-creates the file.
  Connection(const std::string& path, bool read_only);
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

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
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

}  // namespace shardcost::db
