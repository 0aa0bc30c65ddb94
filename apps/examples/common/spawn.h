// The "spawn or join" frame shared by the seed-tutorial examples.
//
// The seed's run.py starts `size` processes itself (torch.multiprocessing)
// with MASTER_ADDR=127.0.0.1 and MASTER_PORT=29500 set in code. An example
// does the same when it is started by hand; when a launcher started it
// (dtrun or torchrun: RANK/WORLD_SIZE; mpirun: OMPI_COMM_WORLD_RANK; PMI;
// srun: SLURM_PROCID) it runs only as the rank it was given.
//
//   int main(int argc, char** argv) {
//     dtrain::examples::SpawnOptions options;
//     CLI::App app{"..."};
//     dtrain::examples::add_flags(app, options);
//     return dtrain::util::run_cli_app(app, argc, argv, [&] {
//       return dtrain::examples::spawn_or_join(options, [](int rank, int size) { ... });
//     });
//   }
//
// Each rank initialises the default process group before `fn` and destroys
// it after. A rank whose `fn` throws prints "rank R: error: <what>" on
// stderr and exits 1.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace dtrain::examples {

struct SpawnOptions {
  int world_size = 2;                     // processes to fork when no launcher started us
  std::string backend = "gloo";           // process-group backend
  std::string master_addr = "127.0.0.1";  // used when MASTER_ADDR is not set by a launcher
  int master_port = 29500;                // used when MASTER_PORT is not set by a launcher
};

// --world-size, --backend, --master-addr, --master-port.
void add_flags(CLI::App& app, SpawnOptions& options);

// Runs fn(rank, world_size) as every rank (forked here) or as the launcher's
// rank. Returns 0 when every rank this call is responsible for succeeded.
int spawn_or_join(const SpawnOptions& options, const std::function<void(int rank, int size)>& fn);

}  // namespace dtrain::examples
