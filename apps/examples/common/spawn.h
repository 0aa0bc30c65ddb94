// The flags of the seed-tutorial examples' "spawn or join" frame, which is
// the SDK's dtrain::dist::spawn_or_join (dtrain/dist/spawn.h).
//
// The seed's run.py starts `size` processes itself (torch.multiprocessing)
// with MASTER_ADDR=127.0.0.1 and MASTER_PORT=29500 set in code. An example
// does the same when it is started by hand; when a launcher started it
// (dtrun or torchrun: RANK/WORLD_SIZE; mpirun: OMPI_COMM_WORLD_RANK; PMI;
// srun: SLURM_PROCID) it runs only as the rank it was given.
//
//   int main(int argc, char** argv) {
//     dtrain::util::set_up_process();  // logging with the rank, crash traces
//     dtrain::dist::SpawnOptions options;
//     CLI::App app{"..."};
//     dtrain::examples::add_flags(app, options);
//     return dtrain::util::run_cli_app(app, argc, argv, [&] {
//       dtrain::dist::spawn_or_join(options, [](int rank, int size) { ... });
//       return 0;
//     });
//   }
#pragma once

#include <CLI/CLI.hpp>

#include "dtrain/dist/spawn.h"

namespace dtrain::examples {

// --world-size (the processes to fork when no launcher started this one),
// --backend, --master-addr, --master-port.
void add_flags(CLI::App& app, dist::SpawnOptions& options);

}  // namespace dtrain::examples
