// torch.multiprocessing.spawn for a process-group job, in C++: the seed
// tutorial's run.py, which starts its ranks itself and has each one meet the
// others at MASTER_ADDR:MASTER_PORT before running its function.
//
//   dtrain::dist::spawn({.nprocs = 4}, [](int rank, int size) {
//     at::Tensor t = at::ones({1});
//     dtrain::dist::all_reduce(t);   // the default group is ready
//   });
//
// Each rank is a forked process: it initialises the default process group
// (env:// at master_addr:master_port, its rank, nprocs), runs fn, destroys
// the group and exits; fn's side effects stay in that process. A rank whose
// fn throws prints "rank R: error: <what>" on stderr and exits 1, and the
// others are then stopped (SIGTERM), rather than left waiting for it until
// their timeout. Call it before this process starts threads of its own (as
// with any fork).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace dtrain::dist {

struct SpawnOptions {
  int nprocs = 2;
  std::string backend = "gloo";
  // Where the ranks meet. In spawn_or_join under a launcher, a launcher's
  // MASTER_ADDR/MASTER_PORT win, and under OpenMPI's mpirun without them
  // the ranks find the store through MPI.
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

// Forks options.nprocs ranks running fn and waits for them. Throws
// dtrain::Error naming the first rank that failed and how (its error, else
// its exit code or signal), and any that failed after it, or a bad option before anything
// starts.
void spawn(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn);

// As spawn, unless a launcher started this process (dtrun/torchrun, mpirun,
// srun): then it runs fn as the launcher's rank alone, in this process.
void spawn_or_join(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn);

}  // namespace dtrain::dist
