#pragma once
// For db's own files that query the store beyond Store's members (compare's loaders): the
// connection, without widening the public header.
#include "shardcost/db.h"
#include "sqlite.h"

namespace shardcost::db {

class StoreAccess {
 public:
  static const Connection& connection(const Store& s) { return *s.conn_; }
};

}  // namespace shardcost::db
