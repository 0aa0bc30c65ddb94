// This process's place in a training job: alone, or one rank of a process
// group started by dtrun, torchrun-style variables, mpirun or srun.
#pragma once

#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "dtrain/train/trainer_options.h"
#include "dtrain/util/launch_env.h"

namespace dtrain::train {

// The launcher's variables, with the world size and rank of `join` in
// place of theirs when given (processes started by hand). Names the rank
// in error lines from here on.
util::LaunchEnv launch_env(const JoinOptions& join);

struct Job {
  int rank = 0;
  int world = 1;
  // Where this process trains: the CPU, or the GPU of its local rank.
  c10::Device device{c10::kCPU};
  bool distributed() const { return world > 1; }

  // Sums `values` over every rank (a no-op alone).
  std::vector<double> sum(std::vector<double> values) const;
  // Every rank's `value`, in rank order (this one's alone).
  std::vector<double> each(double value) const;
};

// Call first in main(): dtrain's logging and crash traces
// (util::set_up_process; the host-memory policy comes with start_job, once
// the data is loaded), and a process that a launcher started as one of
// several names its rank in its error line from the start (a bad flag or a
// missing dataset included), not only once it has joined the process group.
// A launcher variable that cannot be read is left to the run to report.
void set_up_training_process();

// Where `device` trains this process: the CPU, or for kCuda the GPU
// numbered by its local rank (the only one, when it sees one), made the
// current one. Throws dtrain::Error when there is no such GPU. Called
// before the model is built, so it and its optimizer's state start there.
c10::Device choose_device(const util::LaunchEnv& env, Device device);

// Keeps freed host memory in the process (util::retain_freed_host_memory),
// then joins the process group when `env` (from launch_env) counts more
// than one process, where `join` says, on `backend` (kAuto: NCCL on GPUs,
// Gloo on CPUs; timeout_s bounds every collective).
Job start_job(const util::LaunchEnv& env, const JoinOptions& join, Backend backend, int timeout_s,
              c10::Device device = c10::kCPU);

// Leaves the process group, when there is one.
void finish_job(const Job& job);

}  // namespace dtrain::train
