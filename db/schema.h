#pragma once
// The store's schema, written once: migration i takes a file from version i to i + 1.
// The version lives in SQLite's user_version header field.
#include <string_view>
#include <vector>

#include "sqlite.h"

namespace shardcost::db {

const std::vector<std::string_view>& migrations();  // size() == kSchemaVersion

int schema_version(const Connection&);
// True when the file holds no tables at all (a new store).
bool is_empty(const Connection&);
// Applies migrations [from, to), each in its own transaction with its version bump.
void migrate(const Connection&, int from, int to);

}  // namespace shardcost::db
