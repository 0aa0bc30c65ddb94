// This process's place in a training job: alone, or one rank of a process
// group started by dtrun, torchrun-style variables, mpirun or srun.
#pragma once

#include <string>
#include <vector>

#include "dtrain/util/launch_env.h"

namespace dtrain::apps {

struct Job {
  int rank = 0;
  int world = 1;
  bool distributed() const { return world > 1; }

  // Sums `values` over every rank (a no-op alone).
  std::vector<double> sum(std::vector<double> values) const;
  // Every rank's `value`, in rank order (this one's alone).
  std::vector<double> each(double value) const;
};

// Joins the process group when the launcher asked for more than one
// process (backend "auto" picks by device; timeout_s bounds every
// collective); alone, keeps freed host memory in the process as
// init_process_group would.
Job start_job(const util::LaunchEnv& env, const std::string& backend, int timeout_s);

// Leaves the process group, when there is one.
void finish_job(const Job& job);

}  // namespace dtrain::apps
