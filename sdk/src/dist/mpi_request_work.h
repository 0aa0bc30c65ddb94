// The Work of an mpi backend send or recv: an MPI request, tested on the
// thread that waits for it (or polls is_completed()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/dist/process_group_mpi.h"
#include "dtrain/dist/work.h"
#include "mpi_runtime.h"

namespace dtrain::dist::mpi {

// `tensor` is the buffer MPI reads or writes, kept until the request is done
// (Note [Abandoned buffers]); `expected_bytes` is a receive's size, which
// the sender's message must match, or -1 for a send.
WorkPtr make_request_work(std::string description, MPI_Request request, at::Tensor tensor,
                          int64_t expected_bytes, MPI_Comm comm, const MpiOptions& options);

}  // namespace dtrain::dist::mpi
