// Flags of train_toycnn and their checks.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace dtrain::apps {

struct TrainOptions {
  std::string data_dir;
  int epochs = 5;
  int64_t batch_size = 64;  // per process, as in PyTorch DDP
  double lr = 0.01;         // one process's rate; see lr_scaling
  // "linear": with N processes (N times the global batch) the rate is
  // lr * N, Goyal et al.'s linear scaling rule, so N processes reach one
  // process's accuracy in the same number of epochs; "none": lr as given.
  std::string lr_scaling = "linear";
  double momentum = 0.9;
  int threads = 0;  // 0: LibTorch's default
  uint64_t seed = 0;
  int64_t train_limit = 0;  // 0: the whole split
  int64_t test_limit = 0;
  std::string csv = "out/train_toycnn.csv";
  std::string amp = "off";
  // With more than one process (dtrun, mpirun, srun): the process group's
  // backend and how long a collective may wait for a peer.
  std::string backend = "auto";
  int dist_timeout_s = 300;  // "bf16": forward passes under CPU bf16 autocast
};

// Registers every flag on `app`, with ranges checked by CLI11 at parse time.
void add_train_flags(CLI::App& app, TrainOptions& options);

}  // namespace dtrain::apps
