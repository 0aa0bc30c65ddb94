// The flags every training app shares, and their checks. Each app sets its
// own defaults (learning rate, batch size, report path) before registering.
#pragma once

#include <cstdint>
#include <string>

#include <vector>

#include <CLI/CLI.hpp>

#include "dtrain/dist/same_settings.h"
#include "training_job.h"

namespace dtrain::apps {

struct CommonTrainOptions {
  int epochs = 5;
  int64_t batch_size = 64;  // per process, as in PyTorch DDP
  double lr = 0.01;         // one process's rate; see lr_scaling
  // "linear": with N processes (N times the global batch) the rate is
  // lr * N, Goyal et al.'s linear scaling rule, so N processes reach one
  // process's accuracy in the same number of epochs; "none": lr as given.
  std::string lr_scaling = "linear";
  int threads = 0;  // 0: LibTorch's default
  // Threads making training batches ahead of the steps (0: in the step).
  int loader_workers = 1;
  uint64_t seed = 0;
  int64_t train_limit = 0;  // 0: the whole split
  int64_t test_limit = 0;
  std::string csv;
  // "bf16": forward passes under bf16 autocast; "fp16" (CUDA only): under
  // fp16 autocast, with a GradScaler.
  std::string amp = "off";
  // "cpu", or "cuda": the GPU of this process's local rank, NCCL between
  // processes.
  std::string device = "cpu";
  // With more than one process (dtrun, mpirun, srun): the process group's
  // backend and how long a collective may wait for a peer.
  std::string backend = "auto";
  int dist_timeout_s = 300;
  // --init-method, --world-size and --rank: each process started by hand.
  JoinFlags join;
  // How each epoch's samples and each step's global batch are split among
  // the processes: "equal" (DistributedSampler), one weight per process
  // ("3,1": known relative speeds), or "auto" (measured each epoch); see
  // sharding.h.
  std::string rank_weights = "equal";
  // Written by rank 0 after every epoch (atomically); empty: none.
  std::string checkpoint;
  // Also after every this many steps of an epoch (0: at epochs' ends only).
  int64_t checkpoint_steps = 0;
  // Also keep each epoch's checkpoint beside it, as <name>.epoch<N><ext>
  // (the seed's one file per epoch).
  bool keep_epoch_checkpoints = false;
  bool resume = false;  // continue from `checkpoint` when it exists

  // The learning rate for `world` processes under lr_scaling.
  double scaled_lr(int world) const { return lr_scaling == "linear" ? lr * world : lr; }
  // For the log, after the rate: "linear scaling" or "not scaled".
  std::string lr_scaling_words() const {
    return lr_scaling == "linear" ? "linear scaling" : "not scaled";
  }
};

// The common flags every process of a job must be given alike
// (check_same_settings): all but --threads, --loader-workers, --csv,
// --dist-timeout, and --checkpoint's path (whether there is one counts).
std::vector<dist::Setting> shared_settings(const CommonTrainOptions& options);
// What a job whose processes were given different flags is told.
inline constexpr const char* kSameFlagsAdvice =
    "Start every process with the same flags (only --threads, --loader-workers, --csv, "
    "--data-dir, --dist-timeout and --checkpoint's path may differ), and give each a "
    "--data-dir holding the same dataset";

// For logs: "fp32", "bf16 autocast (CPU)", "fp16 autocast with loss scaling".
std::string precision_name(const CommonTrainOptions& options);

// From here on, a flag given twice takes its last value, as with argparse:
// scripts put their defaults first and pass the user's arguments after them.
// Call before registering an app's flags.
void take_last_flag_values(CLI::App& app);

// Registers the shared flags on `app`, with ranges checked by CLI11 at parse
// time. `sample_noun` names a sample in help texts ("images", "clouds").
void add_common_train_flags(CLI::App& app, CommonTrainOptions& options,
                            const std::string& sample_noun);

}  // namespace dtrain::apps
