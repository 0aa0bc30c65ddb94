// The mpi backend as init.cpp sees it. Defined in process_group_mpi.cpp, or
// in mpi_unavailable.cpp (which only raises) in a build without MPI.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dtrain/dist/init.h"
#include "dtrain/dist/process_group.h"
#include "dtrain/dist/store_names.h"

namespace dtrain::dist {

// Initialises MPI and checks that the rank and world size init_process_group
// resolved (options or environment) are MPI's; throws dtrain::Error saying both.
void check_mpi_world(int rank, int world_size);

// A group of the mpi backend: the whole job when `size` is MPI's world size,
// else a sub-group whose members learn each other's MPI ranks through `store`.
ProcessGroupPtr make_mpi_group(const std::shared_ptr<Store>& store, int rank, int size,
                               std::chrono::milliseconds timeout, const std::string& name);

// For a job started by mpirun without MASTER_PORT: rank 0 hosts a TCP store
// on a free port and every rank learns its address through MPI; fills
// rdzv.host and rdzv.port and makes rdzv.kind kTcp (Note [The store's address
// through MPI] in mpi_store_address.cpp). Raises dtrain::Error with rank 0's
// reason when it could not host the store, CollectiveTimeoutError when not
// every rank took part within `timeout`.
std::shared_ptr<TcpStore> tcp_store_through_mpi(Rendezvous& rdzv,
                                                std::chrono::milliseconds timeout);

}  // namespace dtrain::dist
