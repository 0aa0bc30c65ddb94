// A collective the last rank never calls times out on the others, which log
// the op and the rank that never reached it (Note [Which rank a timeout
// waited on]), then MPI_Abort ends every process of the job, the last one
// included, which would otherwise sleep on. Without arguments, a small
// all-reduce under MpiOptions::abort_on_timeout (DTRAIN_MPI_ABORT_ON_TIMEOUT=1);
// with "blocking", an all-reduce of 64 KiB, which runs as a blocking
// MPI_Allreduce and aborts on its own (Note [A blocking all-reduce,
// watched], process_group_mpi.cpp). Not a gtest: run by test_mpi_run.sh
// under mpirun; CTest expects the job to fail with that log and without the
// lines this program prints when nothing aborted it.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "dtrain/dist/init.h"
#include "dtrain/util/process_setup.h"

namespace dist = dtrain::dist;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  const bool blocking = argc > 1 && std::strcmp(argv[1], "blocking") == 0;
  if (!blocking) {
    ::setenv("DTRAIN_MPI_ABORT_ON_TIMEOUT", "1", 1);
  }
  at::set_num_threads(1);
  dist::init_process_group({.backend = "mpi", .timeout = 30s});
  const int rank = dist::get_rank();
  const int world = dist::get_world_size();
  std::vector<int> all(world);
  for (int r = 0; r < world; ++r) {
    all[r] = r;
  }
  auto group = dist::new_group(all);
  at::Tensor t = at::ones({blocking ? 16 * 1024 : 2});
  group->all_reduce(t)->wait();  // #1, by everyone
  if (rank == world - 1) {
    std::this_thread::sleep_for(30s);
    std::cout << "rank " << rank << " was not aborted" << std::endl;
    return 0;
  }
  try {
    group->all_reduce(t, {.timeout = 2s})->wait();  // #2: times out and aborts the job
    std::cout << "rank " << rank << ": all_reduce #2 finished without the last rank" << std::endl;
  } catch (const std::exception& e) {
    std::cout << "rank " << rank << " raised instead of aborting: " << e.what() << std::endl;
  }
  return 0;
}
