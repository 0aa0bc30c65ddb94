// The raw-MPI counterpart of dtrain's mpi backend in bench_allreduce: the
// same all-reduce as one blocking MPI_Allreduce(MPI_IN_PLACE, float, SUM)
// on MPI_COMM_WORLD, timed the same way. Built only with MPI.
#pragma once

#include <cstdint>

namespace dtrain::bench {

// Seconds for `iters` back-to-back in-place SUM all-reduces of `count`
// floats on MPI_COMM_WORLD. Call only between dtrain collectives (dtrain's
// mpi backend asks for MPI_THREAD_SERIALIZED; its worker is idle then).
double time_raw_mpi_allreduce(float* data, std::int64_t count, int iters);

// The largest of every rank's `value` (the slowest rank's time).
double mpi_max(double value);

}  // namespace dtrain::bench
