// A Slurm job that checkpoints and requeues itself before its time runs out.
//
// With `#SBATCH --signal=USR1@90` Slurm sends SIGUSR1 to the job's steps 90 s
// before the time limit; a run with --checkpoint then stops at the next step
// the ranks agree on, writes the checkpoint there, and rank 0 requeues the job
// (`scontrol requeue $SLURM_JOB_ID`). The requeued job runs the same script:
// in a Slurm job a --checkpoint path implies --resume, so it goes on at that
// step. DTRAIN_REQUEUE_SIGNAL names another signal (USR2, HUP, ..., or a
// number) or turns this off ("none"). SIGTERM (the time limit itself,
// scancel) still only stops with a checkpoint, as outside Slurm.
#pragma once

#include <optional>
#include <string>

namespace dtrain::train {

// The variable naming the requeue signal.
inline constexpr const char* kRequeueSignalVariable = "DTRAIN_REQUEUE_SIGNAL";

// SLURM_JOB_ID when this process runs in a Slurm job, else nullopt.
std::optional<std::string> slurm_job_id();

// The signal that asks for a requeue: DTRAIN_REQUEUE_SIGNAL's, else SIGUSR1
// in a Slurm job; 0 outside one or with "none". Throws dtrain::Error naming
// the value when it is no signal this can catch.
int requeue_signal();

// Runs `scontrol requeue <SLURM_JOB_ID>`; throws dtrain::Error with
// scontrol's own words when it fails (a job submitted with --no-requeue,
// scontrol not on PATH).
void requeue_slurm_job();

// "SLURM_JOB_ID=42, SLURM_RESTART_COUNT=1" for the log, or "" outside Slurm.
std::string slurm_job_summary();

}  // namespace dtrain::train
