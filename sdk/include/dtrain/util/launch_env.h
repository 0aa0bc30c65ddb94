// Where this process sits in a job, read from the environment that a
// launcher set: dtrun and torchrun (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE), OpenMPI's mpirun (OMPI_COMM_WORLD_*), PMI (PMI_RANK,
// PMI_SIZE) and Slurm's srun (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS).
// The first launcher whose variables are present wins, in that order.
// Where the master is (env://) comes from dtrain/util/scheduler_env.h.
//
// Throws dtrain::Error when a variable is set but is not a non-negative
// integer (DTRAIN_SHARE_GPU: not 0 or 1), naming the variable and its value.
#pragma once

#include <optional>
#include <string>

namespace dtrain::util {

struct LaunchEnv {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<int> local_world_size;
  // Which launcher's variables were found: "torchrun", "openmpi", "pmi", "slurm" or "none".
  std::string source = "none";
  // DTRAIN_SHARE_GPU=1 (dtrun --share-gpu): every local rank on GPU 0, each
  // its own host to NCCL (dtrain/dist/shared_gpu.h). For debugging
  // multi-rank code on a machine with one GPU.
  bool share_gpu = false;
};

// The variable behind LaunchEnv::share_gpu: "1" shares, "0" or unset does not.
inline constexpr const char* kShareGpuVariable = "DTRAIN_SHARE_GPU";

LaunchEnv read_launch_env();

// The value of an environment variable as a non-negative int, or nullopt
// when unset or empty. Throws dtrain::Error when it is not one.
std::optional<int> env_int(const char* name);

// An on/off setting: true for "1", false for "0", nullopt when unset or
// empty; throws dtrain::Error naming the variable for anything else (a
// "true" that silently meant off turned off a setting that is on by default).
std::optional<bool> env_flag(const char* name);

}  // namespace dtrain::util
