// Which schedule OpenMPI's libnbc follows for dtrain's MPI_Iallreduce, set
// per message size through MPI's tool interface (Note [libnbc's all-reduce
// schedule]), and where MPI_Allreduce beats them all. Every function is
// called with mpi_mutex() held but all_reduce_blocks, which reads only what
// open_iallreduce_schedule set before any group existed.
#pragma once

#include <cstdint>

namespace dtrain::dist::mpi {

// Once MPI is initialised: finds libnbc's control variable; does nothing
// more where MPI has none, or where the job chose an algorithm itself.
void open_iallreduce_schedule();
// How many pieces of about equal size an all-reduce of `bytes` bytes is
// posted in, each its own MPI_Iallreduce, all in flight at once.
std::int64_t iallreduce_pieces(std::int64_t bytes);
// True when an all-reduce of `bytes` bytes that a thread waits for goes
// faster as MPI_Allreduce than on any libnbc schedule.
bool all_reduce_blocks(std::int64_t bytes);
// Before posting an MPI_Iallreduce of `bytes` bytes.
void choose_iallreduce_schedule(std::int64_t bytes);
// Before MPI_Finalize.
void close_iallreduce_schedule();

}  // namespace dtrain::dist::mpi
