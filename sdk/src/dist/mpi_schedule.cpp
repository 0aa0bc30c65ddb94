// Note [libnbc's all-reduce schedule]
// OpenMPI runs non-blocking collectives with libnbc, which, left to choose
// (its control variable coll_libnbc_iallreduce_algorithm at 0, "ignore"),
// reduces an in-place MPI_Iallreduce, and any on fewer than 4 ranks, along
// a binomial tree: up to rank 0, then back down, two transfers one after
// the other where MPI_Allreduce's schedules take one; that is what made
// dtrain's all-reduce of 2 ranks slower than MPI_Allreduce from 64 KiB up.
// So dtrain picks libnbc's schedule per call, through MPI's tool
// interface: recursive doubling (one exchange of the whole message per
// round) for a message that goes in one eager send; above that
// Rabenseifner's reduce-scatter then all-gather of halves, the schedule
// MPI_Allreduce itself takes for large messages, except that a message of
// two to four eager sizes, whose halves would each wait for the receiver's
// go-ahead, goes in pieces of half an eager size, each on recursive
// doubling, all in flight at once. On 2 ranks over TCP loopback, recursive
// doubling of the whole message beat MPI_Allreduce below the eager size
// and lost above it, where Rabenseifner matched it but for 128 KiB, where
// the pieces beat both (and lost to Rabenseifner at 64 KiB). From 64 to
// 128 KiB no libnbc schedule keeps up with MPI_Allreduce there (2 ranks,
// loopback, 3 runs each, ratio to MPI_Allreduce at 64 KiB): Rabenseifner
// 0.72-0.89, ring 0.84-0.87, recursive doubling 0.69-0.70 (the whole
// message waits for the go-ahead), binomial 0.43-0.47, pieces of 16, 22
// or 32 KiB 0.47-0.83; two rounds of halves against MPI_Allreduce's one
// exchange. With the worker no longer woken for a blocking call (Note [A
// caller that waits at once], work_queue.h), at 64 KiB Rabenseifner gave
// 0.85-0.95, ring 0.87-0.89, recursive doubling 0.59-0.68 and pieces of
// 32 KiB on recursive doubling 0.76-0.83 (3 runs each); recursive doubling
// of the whole message then beat the pieces at 128 KiB (1.27-1.46 against
// 1.04-1.17), in runs too noisy to move the bounds on. So from 64 to 128
// KiB an all-reduce that a thread waits for runs as MPI_Allreduce instead
// (Note [A blocking all-reduce, watched], process_group_mpi.cpp). A job
// that chose an algorithm itself (OMPI_MCA_coll_libnbc_iallreduce_algorithm)
// keeps it, in one piece, and never blocks; an MPI without that control
// variable keeps its own choice.
#include "mpi_schedule.h"

#include "mpi_runtime.h"

#include <spdlog/spdlog.h>

namespace dtrain::dist::mpi {

namespace {

// libnbc's enumerators for the algorithm.
constexpr int kRabenseifner = 3;
constexpr int kRecursiveDoubling = 4;
// OpenMPI's TCP transport sends up to 64 KiB eagerly (btl_tcp_eager_limit);
// a larger message waits for the receiver's go-ahead, a round trip that
// recursive doubling pays for the whole message and Rabenseifner's halves
// avoid.
constexpr std::int64_t kEagerBytes = 64 * 1024;
// Up to here, a message whose halves are too large for one eager send each
// goes in pieces of half of one, each on recursive doubling, all at once;
// Rabenseifner's would wait for go-aheads (a smaller message keeps its
// halves, one schedule costing less than two).
constexpr std::int64_t kPiecesBelow = 4 * kEagerBytes;

bool g_open = false;  // MPI_T initialised by us
MPI_T_cvar_handle g_handle = nullptr;
int g_current = 0;  // what the variable holds now

}  // namespace

void open_iallreduce_schedule() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return;
  }
  g_open = true;
  int index = -1;
  int count = 0;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) != MPI_SUCCESS ||
      MPI_T_cvar_handle_alloc(index, nullptr, &g_handle, &count) != MPI_SUCCESS) {
    g_handle = nullptr;
    return;
  }
  if (count != 1 || MPI_T_cvar_read(g_handle, &g_current) != MPI_SUCCESS || g_current != 0) {
    spdlog::debug("mpi: libnbc's MPI_Iallreduce keeps the job's algorithm {}", g_current);
    MPI_T_cvar_handle_free(&g_handle);
    g_handle = nullptr;
  }
}

std::int64_t iallreduce_pieces(std::int64_t bytes) {
  if (g_handle == nullptr || bytes < 2 * kEagerBytes || bytes >= kPiecesBelow) {
    return 1;
  }
  return (bytes + kEagerBytes / 2 - 1) / (kEagerBytes / 2);
}

bool all_reduce_blocks(std::int64_t bytes) {
  return g_handle != nullptr && bytes >= kEagerBytes && bytes < 2 * kEagerBytes;
}

void choose_iallreduce_schedule(std::int64_t bytes) {
  if (g_handle == nullptr) {
    return;
  }
  const int wanted = bytes < kEagerBytes ? kRecursiveDoubling : kRabenseifner;
  if (wanted != g_current && MPI_T_cvar_write(g_handle, &wanted) == MPI_SUCCESS) {
    g_current = wanted;
  }
}

void close_iallreduce_schedule() {
  if (g_handle != nullptr) {
    MPI_T_cvar_handle_free(&g_handle);
    g_handle = nullptr;
  }
  if (g_open) {
    MPI_T_finalize();
    g_open = false;
  }
}

}  // namespace dtrain::dist::mpi
