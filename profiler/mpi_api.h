#pragma once
// The only door to MPI. MPI is initialised on first use and finalised at exit; every call's
// return code is checked and turned into an Error naming the call and the source line.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardcost::bench::mpi {

bool available();       // built with MPI
std::string version();  // "Open MPI v4.1.4, ..." or "none"

enum class Type { f32, f64, i32, i64 };
Type parse_type(std::string_view);  // float double int32 int64; throws InputError
size_t type_size(Type);
enum class Op { sum, prod, max, min };
Op parse_op(std::string_view);  // sum prod max min; throws InputError

struct World {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // among the ranks of this node (shared memory)
  int nodes = 1;                       // distinct hosts
  std::vector<int> node_of_rank;       // host index of every rank
  bool same_node(int a, int b) const { return node_of_rank[a] == node_of_rank[b]; }
};
const World& world();  // initialises MPI on first call

[[noreturn]] void abort(int code);
void barrier();
void max_all(std::vector<int64_t>& values);  // element-wise maximum over ranks, in place
int64_t sum_all(int64_t value);
int min_all(int value);
void broadcast_values(std::vector<int64_t>& values, int root);

// send == nullptr means in place (MPI_IN_PLACE). Counts are elements.
void all_reduce(const void* send, void* recv, int64_t count, Type, Op);
void all_gather(const void* send, void* recv, int64_t count_per_rank, Type);
void reduce_scatter(const void* send, void* recv, int64_t count_per_rank, Type, Op);
void broadcast(void* buffer, int64_t count, Type, int root);
void reduce(const void* send, void* recv, int64_t count, Type, Op, int root);
void alltoall(const void* send, void* recv, int64_t count_per_rank, Type);
void sendrecv(const void* send, int to, void* recv, int from, int64_t count, Type);
void send(const void* data, int64_t bytes, int to);
void recv(void* data, int64_t bytes, int from);

}  // namespace shardcost::bench::mpi
