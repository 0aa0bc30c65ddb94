// This process's rank in its job, as a process group established it:
// init_process_group sets it (through util::set_log_rank). Unlike the
// launcher's variables it is never a guess: under `srun dtrun`, Slurm's
// task id names a node, not a rank. run_cli_app names it in a program's
// error line, so the lines of processes that fail together tell apart.
// Thread-safe.
#pragma once

#include <optional>

namespace dtrain::util {

std::optional<int> job_rank();

// std::nullopt: no rank (the process left its job, or a test resets it).
void set_job_rank(std::optional<int> rank);

}  // namespace dtrain::util
