// Stopping a training run at a step boundary instead of mid-step, so it can
// write a checkpoint first. Schedulers warn before they end a job (Slurm
// sends SIGTERM, then SIGKILL after its KillWait; scancel, a time limit or
// preemption), dtrun passes its own SIGTERM or SIGINT on to its workers,
// and people press Ctrl-C: each of those only asks the run to stop.
//
//   train::GracefulStop::install();
//   for (...) {
//     step();
//     if (train::GracefulStop::signal() != 0) { save_checkpoint(...); return 128 + sig; }
//   }
//
// In a job, ranks must agree on the step to stop after (the signal reaches
// them at different times): all-reduce the flag every few steps.
#pragma once

namespace dtrain::train {

class GracefulStop {
 public:
  // From now on, a SIGTERM or SIGINT (and in a Slurm job the requeue
  // signal, train/slurm_requeue.h) is recorded rather than ending the
  // process. Repeated SIGTERMs are recorded once (a scheduler and the
  // launcher may both send one); a second SIGINT (Ctrl-C twice) ends the
  // process at once, as SIGINT does by default. Process-wide; safe to
  // call again.
  static void install();

  // The first signal received since install(), or 0.
  static int signal();
};

}  // namespace dtrain::train
