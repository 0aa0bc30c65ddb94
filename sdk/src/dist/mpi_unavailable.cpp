// The mpi backend in a build without MPI (DTRAIN_WITH_MPI is 0): every entry raises.
#include "dtrain/util/errors.h"
#include "mpi_backend.h"

namespace dtrain::dist {

namespace {

[[noreturn]] void no_mpi() {
  throw Error(
      "init_process_group: backend 'mpi': this build of dtrain has no MPI backend (configure "
      "with -DDTRAIN_MPI=ON after installing OpenMPI, e.g. apt-get install libopenmpi-dev)");
}

}  // namespace

void check_mpi_world(int, int) {
  no_mpi();
}

ProcessGroupPtr make_mpi_group(const std::shared_ptr<Store>&, int, int, std::chrono::milliseconds,
                               const std::string&) {
  no_mpi();
}

std::shared_ptr<TcpStore> tcp_store_through_mpi(Rendezvous&, std::chrono::milliseconds) {
  throw Error(
      "init_process_group: init_method env:// needs MASTER_ADDR and MASTER_PORT to be set (this "
      "build of dtrain has no MPI through which mpirun's ranks could share the store's address; "
      "pass them with mpirun -x MASTER_ADDR=... -x MASTER_PORT=...)");
}

}  // namespace dtrain::dist
