// This process's rank in its job, once something that knows has set it:
// init_process_group (through util::set_log_rank), or a program started by
// a launcher as one of several workers, from the launcher's variables (the
// training apps, before they parse their flags). It is not read from the
// environment by default because a launcher's own process would take a
// rank that is not its own: under `srun dtrun`, Slurm's task id names a
// node's agent, not a worker. run_cli_app names it in a program's error
// line, so the lines of processes that fail together tell apart.
// Thread-safe.
#pragma once

#include <optional>

namespace dtrain::util {

std::optional<int> job_rank();

// std::nullopt: no rank (the process left its job, or a test resets it).
void set_job_rank(std::optional<int> rank);

}  // namespace dtrain::util
