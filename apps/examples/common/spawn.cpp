#include "spawn.h"

namespace dtrain::examples {

void add_flags(CLI::App& app, dist::SpawnOptions& options) {
  app.add_option("--world-size", options.nprocs,
                 "processes to start when no launcher started this one")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--backend", options.backend, "process-group backend")
      ->check(CLI::IsMember({"gloo", "nccl", "mpi", "auto"}))
      ->capture_default_str();
  app.add_option("--master-addr", options.master_addr,
                 "rendezvous address when this program starts the ranks")
      ->capture_default_str();
  app.add_option("--master-port", options.master_port,
                 "rendezvous port when this program starts the ranks")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
}

}  // namespace dtrain::examples
