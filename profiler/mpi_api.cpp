#include "mpi_api.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>
#include <map>

#include "shardcost/error.h"

#ifdef SHARDCOST_HAVE_MPI
// The C API only: Open MPI's deprecated C++ bindings do not compile warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace shardcost::bench::mpi {

Type parse_type(std::string_view s) {
  if (s == "float" || s == "fp32" || s == "f32") return Type::f32;
  if (s == "double" || s == "fp64" || s == "f64") return Type::f64;
  if (s == "int32" || s == "int") return Type::i32;
  if (s == "int64") return Type::i64;
  throw InputError(
      fmt::format("--dtype {} is not available with --backend mpi; use float, "
                  "double, int32 or int64",
                  s));
}

size_t type_size(Type t) {
  return t == Type::f32 || t == Type::i32 ? 4 : 8;
}

Op parse_op(std::string_view s) {
  if (s == "sum") return Op::sum;
  if (s == "prod") return Op::prod;
  if (s == "max") return Op::max;
  if (s == "min") return Op::min;
  throw InputError(fmt::format("--redop {} is unknown; use sum, prod, max or min", s));
}

#ifdef SHARDCOST_HAVE_MPI
namespace {

void check(int rc, const char* call, int line) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(
      fmt::format("{} failed at profiler/mpi_api.cpp:{}: {} (error {})", call, line, text, rc));
}
#define SC_MPI(call) check((call), #call, __LINE__)

int to_count(int64_t count) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw InputError(
        fmt::format("{} elements is more than one MPI call moves (2^31-1); use a "
                    "smaller -e",
                    count));
  return static_cast<int>(count);
}

MPI_Datatype datatype(Type t) {
  switch (t) {
    case Type::f32:
      return MPI_FLOAT;
    case Type::f64:
      return MPI_DOUBLE;
    case Type::i32:
      return MPI_INT32_T;
    case Type::i64:
      return MPI_INT64_T;
  }
  return MPI_BYTE;
}

MPI_Op op(Op o) {
  switch (o) {
    case Op::sum:
      return MPI_SUM;
    case Op::prod:
      return MPI_PROD;
    case Op::max:
      return MPI_MAX;
    case Op::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

const void* in(const void* send) {
  return send ? send : MPI_IN_PLACE;
}

// Owns MPI's lifetime: initialised once, finalised when the process exits normally.
struct Session {
  World world;
  Session() {
    int initialised = 0;
    SC_MPI(MPI_Initialized(&initialised));
    if (!initialised) {
      int provided = 0;
      SC_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    }
    SC_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    SC_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world.rank));
    SC_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world.size));
    // Ranks that share memory share a node: number the nodes by their lowest world rank.
    MPI_Comm local;
    SC_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL,
                               &local));
    int leader = world.rank;
    SC_MPI(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local));
    SC_MPI(MPI_Comm_rank(local, &world.local_rank));
    SC_MPI(MPI_Comm_size(local, &world.local_size));
    SC_MPI(MPI_Comm_free(&local));
    std::vector<int> leaders(static_cast<size_t>(world.size));
    SC_MPI(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD));
    std::map<int, int> index;
    for (int l : leaders) index.emplace(l, 0);
    int next = 0;
    for (auto& [l, i] : index) i = next++;
    world.nodes = next;
    for (int l : leaders) world.node_of_rank.push_back(index[l]);
  }
  ~Session() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Finalize();
  }
};

Session& session() {
  static Session s;
  return s;
}

}  // namespace

bool available() {
  return true;
}

std::string version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(len));
  const auto comma = v.find(',');
  return comma == std::string::npos ? v : v.substr(0, comma);
}

const World& world() {
  return session().world;
}

void abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void barrier() {
  SC_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

void max_all(std::vector<int64_t>& v) {
  SC_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), to_count(static_cast<int64_t>(v.size())),
                       MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD));
}

int64_t sum_all(int64_t value) {
  SC_MPI(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
  return value;
}

int min_all(int value) {
  SC_MPI(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  return value;
}

void broadcast_values(std::vector<int64_t>& v, int root) {
  SC_MPI(MPI_Bcast(v.data(), to_count(static_cast<int64_t>(v.size())), MPI_INT64_T, root,
                   MPI_COMM_WORLD));
}

void all_reduce(const void* send, void* recv, int64_t count, Type t, Op o) {
  SC_MPI(MPI_Allreduce(in(send), recv, to_count(count), datatype(t), op(o), MPI_COMM_WORLD));
}

void all_gather(const void* send, void* recv, int64_t count, Type t) {
  SC_MPI(MPI_Allgather(in(send), to_count(count), datatype(t), recv, to_count(count), datatype(t),
                       MPI_COMM_WORLD));
}

void reduce_scatter(const void* send, void* recv, int64_t count, Type t, Op o) {
  SC_MPI(MPI_Reduce_scatter_block(in(send), recv, to_count(count), datatype(t), op(o),
                                  MPI_COMM_WORLD));
}

void broadcast(void* buffer, int64_t count, Type t, int root) {
  SC_MPI(MPI_Bcast(buffer, to_count(count), datatype(t), root, MPI_COMM_WORLD));
}

void reduce(const void* send, void* recv, int64_t count, Type t, Op o, int root) {
  // MPI_IN_PLACE is only legal at the root; elsewhere the data is in recv.
  const void* s = send ? send : (world().rank == root ? MPI_IN_PLACE : recv);
  SC_MPI(MPI_Reduce(s, recv, to_count(count), datatype(t), op(o), root, MPI_COMM_WORLD));
}

void alltoall(const void* send, void* recv, int64_t count, Type t) {
  SC_MPI(MPI_Alltoall(in(send), to_count(count), datatype(t), recv, to_count(count), datatype(t),
                      MPI_COMM_WORLD));
}

void sendrecv(const void* send, int to, void* recv, int from, int64_t count, Type t) {
  SC_MPI(MPI_Sendrecv(send, to_count(count), datatype(t), to, 0, recv, to_count(count), datatype(t),
                      from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

void send(const void* data, int64_t bytes, int to) {
  SC_MPI(MPI_Send(data, to_count(bytes), MPI_BYTE, to, 1, MPI_COMM_WORLD));
}

void recv(void* data, int64_t bytes, int from) {
  SC_MPI(MPI_Recv(data, to_count(bytes), MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

#else  // built without MPI

namespace {
[[noreturn]] void missing() {
  throw Error(
      "this shardcost was built without MPI, so --backend mpi cannot run; install "
      "libopenmpi-dev and rebuild");
}
}  // namespace

bool available() {
  return false;
}
std::string version() {
  return "none";
}
const World& world() {
  missing();
}
void abort(int code) {
  std::_Exit(code);
}
void barrier() {
  missing();
}
void max_all(std::vector<int64_t>&) {
  missing();
}
int64_t sum_all(int64_t) {
  missing();
}
int min_all(int) {
  missing();
}
void broadcast_values(std::vector<int64_t>&, int) {
  missing();
}
void all_reduce(const void*, void*, int64_t, Type, Op) {
  missing();
}
void all_gather(const void*, void*, int64_t, Type) {
  missing();
}
void reduce_scatter(const void*, void*, int64_t, Type, Op) {
  missing();
}
void broadcast(void*, int64_t, Type, int) {
  missing();
}
void reduce(const void*, void*, int64_t, Type, Op, int) {
  missing();
}
void alltoall(const void*, void*, int64_t, Type) {
  missing();
}
void sendrecv(const void*, int, void*, int, int64_t, Type) {
  missing();
}
void send(const void*, int64_t, int) {
  missing();
}
void recv(void*, int64_t, int) {
  missing();
}
#endif

}  // namespace shardcost::bench::mpi
