// ProcessGroupMPI: collectives on CPU tensors over MPI (OpenMPI), for jobs
// started by mpirun.
//
//   mpirun -np 4 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 ./train
//   dtrain::dist::init_process_group({.backend = "mpi"});   // in ./train
//
// Only in builds with DTRAIN_WITH_MPI (dtrain/config.h); elsewhere backend
// "mpi" raises "this build of dtrain has no MPI backend".
//
// Ranks and sizes come from MPI itself (MPI_COMM_WORLD). The first group a
// process creates initialises MPI with MPI_Init_thread (at least
// MPI_THREAD_SERIALIZED) unless the program already did; dtrain then
// finalises it at exit. Every MPI call dtrain makes holds one process-wide
// lock (see Note [One MPI call at a time] in src/dist/mpi_runtime.h), so a
// program that calls MPI itself must not do so concurrently with dtrain.
//
// Collectives run one at a time per group, in issue order, as MPI's
// non-blocking collectives (MPI_Iallreduce, ...) polled against the op's
// timeout: on the thread that waits for one (tested without pause, as
// MPI's blocking calls spin), or, when nobody waits yet, on the group's
// worker thread (tested with back-off, leaving the cores to the program);
// send and recv are MPI_Isend/MPI_Irecv whose Works complete
// independently, waited in any order (they progress while some MPI call
// runs in the process, as usual in MPI). A timeout raises
// CollectiveTimeoutError naming the op, the group and the rank; a group
// made by init_process_group or new_group also names the ranks that never
// reached the collective (Note [Which rank a timeout waited on], through
// the job's store, as on Gloo). MPI cannot
// cancel a collective, so after a timed-out collective the group is broken:
// later collectives on it fail at once. With MpiOptions::abort_on_timeout
// the whole job is aborted (MPI_Abort) instead.
//
// An all-reduce of 64 KiB up to 128 KiB that a thread waits for runs as
// blocking MPI_Allreduce, faster there than any non-blocking schedule; past
// its timeout it names the op and the missing ranks as above and always
// aborts the job, since a blocking call cannot be left (MpiOptions::
// blocking_all_reduce = false keeps it polled).
//
// Under OpenMPI, dtrain sets libnbc's MPI_Iallreduce algorithm (a control
// variable of the whole process) before each all-reduce, by its size (Note
// [libnbc's all-reduce schedule] in src/dist/mpi_schedule.cpp), unless the
// job set OMPI_MCA_coll_libnbc_iallreduce_algorithm itself; a program's own
// MPI_Iallreduce follows whichever dtrain set last.
//
// Dtypes: float32, float64, float16, bfloat16 (reduced by dtrain's own
// MPI_Op), int32, int64, uint8. Tensors of more than 2^31-1 elements are
// rejected (MPI counts are int).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

struct MpiOptions {
  // How long a collective or a send/recv may take before it fails.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // On a timeout, MPI_Abort the job (every rank ends) rather than raising.
  bool abort_on_timeout = false;
  // Where a collective that timed out learns which ranks never reached it,
  // a store shared by the group's members and this group alone (a prefix of
  // the job's store; make_mpi_group gives one). Without it, the error names
  // only the op, the group and the rank.
  std::shared_ptr<Store> diagnosis_store{};
  // Run a waited-for all-reduce of 64 KiB up to 128 KiB as MPI_Allreduce,
  // aborting the job on its timeout; false polls it like every collective.
  bool blocking_all_reduce = true;
  // Options from the environment: DTRAIN_MPI_ABORT_ON_TIMEOUT=1,
  // DTRAIN_MPI_BLOCKING_ALL_REDUCE=0.
  static MpiOptions from_env();
};

class ProcessGroupMPI : public ProcessGroup {
 public:
  // Every process of the MPI job, over a duplicate of MPI_COMM_WORLD.
  // Collective: every process of the job must construct it.
  explicit ProcessGroupMPI(MpiOptions options = MpiOptions::from_env(),
                           std::string name = "default");
  // The processes whose MPI_COMM_WORLD ranks are `world_ranks` (group rank i
  // is world_ranks[i]), over MPI_Comm_create_group. Exactly those processes
  // construct it, with the same list and name; throws dtrain::Error when this
  // process is not listed or the list repeats a rank or leaves the world.
  ProcessGroupMPI(std::vector<int> world_ranks, MpiOptions options, std::string name);
  ~ProcessGroupMPI() override;

  std::string backend_name() const override { return "mpi"; }

  // This process's rank in MPI_COMM_WORLD and the job's size (initialise MPI when needed).
  static int world_rank();
  static int world_size();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::dist
