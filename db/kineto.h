#pragma once
// The Kineto importer's chunked form, for tests: the text fed `chunk` bytes at a time, as the
// file form feeds what it reads (captures that span chunks must come out whole).
#include <cstddef>
#include <string_view>

#include "shardcost/db.h"

namespace shardcost::db {

Measurements import_kineto_chunks(std::string_view text, std::string_view source, size_t chunk);

}  // namespace shardcost::db
