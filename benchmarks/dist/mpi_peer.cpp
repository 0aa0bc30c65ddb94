#include "mpi_peer.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace dtrain::bench {

namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed with MPI error " + std::to_string(code));
  }
}

}  // namespace

double time_raw_mpi_allreduce(float* data, std::int64_t count, int iters) {
  if (count > INT_MAX) {
    throw std::invalid_argument("raw MPI_Allreduce takes at most INT_MAX elements");
  }
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
  return MPI_Wtime() - start;
}

double mpi_max(double value) {
  double result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return result;
}

}  // namespace dtrain::bench
