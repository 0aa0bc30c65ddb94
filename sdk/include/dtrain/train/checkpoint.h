// Training checkpoints: a module's parameters and buffers, its optimizer's
// state, how far training had got (epochs, and steps into the next one)
// with the app's own values needed to go on from there and, in fp16
// training, the GradScaler's state, in one file that is either the old one
// or the whole new one.
//
//   if (auto done = load_checkpoint(path, *model, optimizer)) first_epoch = *done + 1;
//   ...
//   if (rank == 0) save_checkpoint(path, *model, optimizer, epoch);
//
// save_checkpoint writes a temporary file beside `path` and renames it over
// `path`, so a crash or a full disk midway leaves the previous checkpoint
// intact (and no partial file under `path`). The format is LibTorch's
// serialize archive, the one torch::save writes.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "dtrain/amp/grad_scaler.h"

namespace dtrain::train {

// How far a run had trained when it wrote a checkpoint, and the values of
// its own that it needs to go on exactly from there.
struct TrainingProgress {
  int64_t epochs_done = 0;
  // Steps of epoch epochs_done + 1 already trained: a checkpoint taken in
  // the middle of an epoch. 0 at an epoch's end.
  int64_t steps_done = 0;
  // The app's own named values (a sampler's weights, an epoch's partial
  // sums), saved from and loaded onto the CPU.
  std::map<std::string, at::Tensor> extra = {};
  // Named words about the model, for programs that load it without the
  // training flags ({"model": "PointNet2Cls", "classes": ...};
  // TrainerOptions::checkpoint_notes). None in older files.
  std::map<std::string, std::string> notes = {};
};

// Throws dtrain::IOError naming `path` when it cannot be written. An
// enabled `scaler` is saved too (call between iterations, after update()).
// Throws dtrain::Error naming the field when `progress` counts are
// negative or an extra value has an empty name or no tensor.
void save_checkpoint(const std::string& path, const torch::nn::Module& module,
                     const torch::optim::Optimizer& optimizer, const TrainingProgress& progress,
                     const amp::GradScaler* scaler = nullptr);

// At the end of epoch `epochs_done`, with nothing else to keep.
void save_checkpoint(const std::string& path, const torch::nn::Module& module,
                     const torch::optim::Optimizer& optimizer, int64_t epochs_done,
                     const amp::GradScaler* scaler = nullptr);

// Writes checkpoints without holding up training for the disk: save()
// serializes the state at once (later steps cannot change what is
// written) and leaves the write, the flush to disk and the rename to a
// thread of its own. One write at a time: a save() while one is in flight
// waits for it first. A write that failed is thrown (dtrain::IOError naming
// the path) by the next save() or wait(); the previous checkpoint stays.
//
//   train::CheckpointWriter writer;
//   for (...) { step(); if (rank == 0) writer.save(path, *model, optimizer, progress); }
//   writer.wait();  // on disk before the process ends
class CheckpointWriter {
 public:
  CheckpointWriter() = default;
  // Waits for a write in flight; logs its failure (a destructor cannot throw).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // As save_checkpoint, but returns once the state is serialized.
  void save(const std::string& path, const torch::nn::Module& module,
            const torch::optim::Optimizer& optimizer, const TrainingProgress& progress,
            const amp::GradScaler* scaler = nullptr);
  // Until the last save() is on disk under its path; throws its failure.
  void wait();

 private:
  std::thread writing_;
  std::exception_ptr failure_;  // of the last write; set by its thread
};

// Throws dtrain::IOError naming `path` unless save_checkpoint can write
// there: `path` is not a directory and its directory exists (it is created
// when missing) and is writable. For a run to call before its first epoch,
// so a bad path fails in seconds rather than after an epoch of training.
void check_checkpoint_path(const std::string& path);

// Loads `path` into `module` and `optimizer` and returns its epochs_done,
// or std::nullopt when no file exists at `path`. Tensors land on the
// module's device, whichever device wrote them. Throws dtrain::IOError
// naming the path when it cannot be looked at (only a missing file means
// "no checkpoint"), when the file is unreadable, or when it does not fit
// the module or optimizer (a parameter missing, of another shape or not in
// the module; another optimizer's state) -- then `module` may be partly
// loaded, so callers should stop. `scaler` takes the saved scaler
// state when the file has one, and keeps its own when it has none (a run
// that continues an fp32 run in fp16 starts at the initial scale).
std::optional<int64_t> load_checkpoint(const std::string& path, torch::nn::Module& module,
                                       torch::optim::Optimizer& optimizer,
                                       amp::GradScaler* scaler = nullptr);

// As load_checkpoint, returning the whole progress saved: its steps_done
// and extra values too (0 and none in a file written without them).
std::optional<TrainingProgress> load_checkpoint_progress(const std::string& path,
                                                         torch::nn::Module& module,
                                                         torch::optim::Optimizer& optimizer,
                                                         amp::GradScaler* scaler = nullptr);

// The progress and notes of the checkpoint at `path`, without loading any
// tensor into a module (to build the model its notes describe first).
// Throws dtrain::IOError naming the path when there is no such file or it
// is not a checkpoint.
TrainingProgress read_checkpoint_progress(const std::string& path);

// Loads only the model's state (evaluation, prediction), with the checks
// of load_checkpoint, and returns the progress saved with it. Throws
// dtrain::IOError naming the path when there is no such file, it is not a
// checkpoint, or it does not fit the module.
TrainingProgress load_model_checkpoint(const std::string& path, torch::nn::Module& module);

}  // namespace dtrain::train
