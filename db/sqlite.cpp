#include "sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "shardcost/db.h"
#include "shardcost/error.h"

namespace shardcost::db {
namespace {

constexpr int kBusyTimeoutMs = 30000;

// One line: statements are squeezed to single spaces and cut short.
std::string short_sql(std::string_view sql) {
  std::string out;
  for (char c : sql) {
    const bool space = c == '\n' || c == ' ' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > 90) out = out.substr(0, 87) + "...";
  return out;
}

// A path as a file: URI's path: '%', '?' and '#' escaped; SQLite takes the rest as it is.
std::string uri_path(const std::string& path) {
  std::string out;
  for (char ch : path) {
    if (ch == '%' || ch == '?' || ch == '#')
      out += fmt::format("%{:02X}", static_cast<unsigned char>(ch));
    else
      out += ch;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Connection

Connection::Connection(const std::string& path, Access access) : path_(path) {
  const bool read_only = access != Access::read_write;
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  std::string name = path;
  if (access == Access::immutable) {
    flags |= SQLITE_OPEN_URI;
    name = "file:" + uri_path(path) + "?immutable=1";
  }
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 hands back a handle even on failure; it must still be closed.
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError("cannot open " + path + ": " + message +
                     "; check that the file exists and is readable" +
                     (read_only ? "" : " and its folder writable"));
  }
  sqlite3_extended_result_codes(db_, 0);
  if (const int brc = sqlite3_busy_handler(db_, &Connection::on_busy, this); brc != SQLITE_OK)
    fail(brc, "setting the busy handler", "");
}

// SQLite's busy timeout, with one line said when the wait starts: a command that waits for
// another writer says so at once, not after 30 s of silence.
int Connection::on_busy(void* self, int count) {
  auto& c = *static_cast<Connection*>(self);
  const auto now = std::chrono::steady_clock::now();
  if (count == 0) {
    c.wait_start_ = now;
    c.tell_lock_wait();
  }
  if (now - c.wait_start_ >= std::chrono::milliseconds(kBusyTimeoutMs)) return 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 << std::min(count, 7), 100)));
  return 1;
}

namespace {
std::function<void(const std::string&)>& lock_notice() {
  static std::function<void(const std::string&)> f;
  return f;
}
}  // namespace

void set_lock_wait_notice(std::function<void(const std::string&)> f) {
  lock_notice() = std::move(f);
}

const std::function<void(const std::string&)>& lock_wait_notice() {
  return lock_notice();
}

void Connection::tell_lock_wait() const {
  if (told_wait_) return;
  told_wait_ = true;
  if (lock_notice())
    lock_notice()(fmt::format("waiting for {} (locked by another writer; up to {} s)", path_,
                              kBusyTimeoutMs / 1000));
}

Connection::~Connection() {
  // Every Statement is finalized before its connection goes (they never outlive the Store).
  if (db_) sqlite3_close(db_);
}

std::string Connection::library_version() {
  return sqlite3_libversion();
}

void Connection::fail(int rc, std::string_view what, std::string_view sql) const {
  const int primary = rc & 0xff;
  const std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const std::string where =
      sql.empty() ? std::string(what) : std::string(what) + " '" + short_sql(sql) + "'";
  switch (primary) {
    case SQLITE_NOTADB:
      throw InputError(path_ + " is not a shardcost store (not an SQLite database: " + detail +
                       "); check the path");
    case SQLITE_CORRUPT:
      throw InputError(path_ + " is damaged (" + detail + ", " + where +
                       "); run 'shardcost db check' on it and restore it from a copy");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw BusyError(path_ + " is locked by another writer for longer than " +
                      std::to_string(kBusyTimeoutMs / 1000) + " s (" + where +
                      "); retry when the other process has finished");
    case SQLITE_READONLY:
      throw InputError(path_ + " is read-only (" + where + "); check its permissions");
    case SQLITE_FULL:
      throw Error(path_ + ": the disk is full (" + where + "); free some space and retry");
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR: {
      // The operating system's reason: a full disk or quota is the machine's trouble (exit 1,
      // as SQLITE_FULL), not a bad path.
      const int err = db_ ? sqlite3_system_errno(db_) : 0;
      if (err == ENOSPC || err == EDQUOT)
        throw Error(path_ + ": the disk is full (" + std::strerror(err) + ", " + where +
                    "); free some space and retry");
      throw InputError(path_ + ": cannot read or write the file (" + detail + ", " + where +
                       "); check the path, its folder and the disk");
    }
    case SQLITE_ERROR:
      // A table or column the schema has is missing: a damaged or hand-edited store, not a
      // failed run (compare would read exit 1 as a regression).
      if (detail.rfind("no such table", 0) == 0 || detail.rfind("no such column", 0) == 0)
        throw InputError(path_ + " is not a whole shardcost store (" + detail + ", " + where +
                         "); run 'shardcost db check' on it, and restore it from a copy");
      throw Error(path_ + ": sqlite error " + std::to_string(rc) + " (" + detail + ") " + where);
    default:
      throw Error(path_ + ": sqlite error " + std::to_string(rc) + " (" + detail + ") " + where);
  }
}

Statement Connection::prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    fail(rc, "preparing", sql);
  }
  return Statement(this, stmt, std::string(sql));
}

void Connection::exec(std::string_view sql) const {
  const std::string text(sql);
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);  // sqlite3_errmsg still holds it for fail()
  if (rc != SQLITE_OK) fail(rc, "running", sql);
}

int64_t Connection::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}
int Connection::changes() const {
  return sqlite3_changes(db_);
}

// ---------------------------------------------------------------- Statement

Statement::Statement(const Connection* conn, sqlite3_stmt* stmt, std::string sql)
    : conn_(conn), stmt_(stmt), sql_(std::move(sql)) {}

Statement::Statement(Statement&& o) noexcept
    : conn_(o.conn_), stmt_(std::exchange(o.stmt_, nullptr)), sql_(std::move(o.sql_)) {}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    conn_ = o.conn_;
    stmt_ = std::exchange(o.stmt_, nullptr);
    sql_ = std::move(o.sql_);
  }
  return *this;
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::fail(int rc, const char* what) const {
  conn_->fail(rc, what, sql_);
}

Statement& Statement::bind(int index, int64_t value) {
  if (const int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK) fail(rc, "binding");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (const int rc = sqlite3_bind_double(stmt_, index, value); rc != SQLITE_OK) fail(rc, "binding");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  const int rc = sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                                   SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(rc, "binding");
  return *this;
}

Statement& Statement::bind(int index, std::optional<int64_t> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
  if (const int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) fail(rc, "binding");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  fail(rc, "running");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  // The step's own error was already reported; reset only re-arms the statement.
  sqlite3_reset(stmt_);
  if (const int rc = sqlite3_clear_bindings(stmt_); rc != SQLITE_OK) fail(rc, "clearing");
}

int Statement::columns() const {
  return sqlite3_column_count(stmt_);
}
std::string Statement::column_name(int i) const {
  return sqlite3_column_name(stmt_, i);
}
bool Statement::is_null(int i) const {
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL;
}
int64_t Statement::int64(int i) const {
  return sqlite3_column_int64(stmt_, i);
}
double Statement::real(int i) const {
  return sqlite3_column_double(stmt_, i);
}

std::string Statement::text(int i) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
}

Cell Statement::cell(int i) const {
  switch (sqlite3_column_type(stmt_, i)) {
    case SQLITE_INTEGER:
      return int64(i);
    case SQLITE_FLOAT:
      return real(i);
    case SQLITE_NULL:
      return std::monostate{};
    default:
      return text(i);
  }
}

// ---------------------------------------------------------------- Transaction

Transaction::Transaction(const Connection& c) : conn_(c) {
  conn_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    conn_.exec("ROLLBACK");
  } catch (...) {
    // A failed COMMIT may already have rolled back; nothing more to undo.
  }
}

void Transaction::commit() {
  conn_.exec("COMMIT");
  open_ = false;
}

}  // namespace shardcost::db
