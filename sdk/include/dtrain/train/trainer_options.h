// The settings of a training run by dtrain::train::Trainer (trainer.h):
// typed values with their defaults beside them, set with chained setters
// as LibTorch's frontend options are.
//
//   auto options = TrainerOptions().epochs(20).batch_size(16).lr(1e-3)
//                      .precision(Precision::kBf16).checkpoint("out/run.pt");
//
// The command line reaches them through add_trainer_flags (trainer_flags.h),
// which names each field's flag; the enums' flag words are in the *_words()
// tables. The Trainer checks them once, when it is made (option_problem).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "dtrain/ddp/options.h"
#include "dtrain/train/lr_schedule.h"
#include "dtrain/train/optimizers.h"
#include "dtrain/train/rank_weights.h"
#include "dtrain/util/enum_words.h"

namespace dtrain::train {

// The arithmetic of the forward passes (--amp).
enum class Precision {
  kFp32,  // float32 throughout
  kBf16,  // forward passes under bf16 autocast (CPU or CUDA)
  kFp16,  // forward passes under fp16 autocast, steps through a loss scaler (CUDA only)
};
// Where each process trains (--device): the CPU, or the GPU of its local rank.
enum class Device { kCpu, kCuda };
// The process group's backend with several processes (--backend); kAuto:
// NCCL on GPUs, Gloo on the CPU.
enum class Backend { kAuto, kGloo, kMpi, kNccl };

// Named words about a model that a checkpoint keeps beside its tensors
// (TrainingProgress::notes): {"model": "PointNet2Cls", ...}.
using CheckpointNotes = std::map<std::string, std::string>;

const util::EnumWords<Precision>& precision_words();  // "off", "bf16", "fp16"
const util::EnumWords<Device>& device_words();        // "cpu", "cuda"
const util::EnumWords<Backend>& backend_words();      // "auto", "gloo", "mpi", "nccl"

// How this process meets the others when each is started by hand, one
// command per process (--init-method tcp://host:port --world-size 2
// --rank 0), rather than by a launcher. world_size 0: the launcher's
// variables say (dtrun/torchrun, mpirun, srun, or alone).
struct JoinOptions {
  TORCH_ARG(std::string, init_method) = "env://";
  TORCH_ARG(int, world_size) = 0;
  TORCH_ARG(int, rank) = -1;
};

struct TrainerOptions {
  // Passes over the training set.
  TORCH_ARG(int, epochs) = 5;
  // Samples per step and process, as in PyTorch DDP.
  TORCH_ARG(int64_t, batch_size) = 64;
  // One process's learning rate; the Trainer sets lr_schedule's rate of
  // scaled_lr(lr, lr_scaling, processes) before every epoch.
  TORCH_ARG(double, lr) = 0.01;
  TORCH_ARG(LrScaling, lr_scaling) = LrScaling::kLinear;
  TORCH_ARG(LrSchedule, lr_schedule) = LrSchedule::constant();
  // A linear warmup over the run's first warmup_steps optimizer steps, from
  // warmup_start_factor times the schedule's rate (lr_schedule.h).
  TORCH_ARG(int64_t, warmup_steps) = 0;
  TORCH_ARG(double, warmup_start_factor) = 0.1;
  // What make_optimizer builds (optimizers.h); fit() trains with the
  // optimizer it is given.
  TORCH_ARG(OptimizerOptions, optimizer) = {};
  // Micro-batches of batch_size whose gradients are summed before each
  // optimizer step (DDP all-reduces only the last), each loss weighted by
  // its share of the step's samples: the step of one batch that many times
  // larger, a short last batch included.
  TORCH_ARG(int, accumulate) = 1;
  // Clips the gradients to this global L2 norm before each optimizer step,
  // after the fp16 loss scaler's unscale (0: no clipping), as
  // torch.nn.utils.clip_grad_norm_ does.
  TORCH_ARG(double, clip_grad_norm) = 0;
  TORCH_ARG(Precision, precision) = Precision::kFp32;
  TORCH_ARG(Device, device) = Device::kCpu;
  // With several processes: the process group's backend, how long a
  // collective may wait for a peer, and how processes started by hand meet.
  TORCH_ARG(Backend, backend) = Backend::kAuto;
  TORCH_ARG(int, dist_timeout_s) = 300;
  TORCH_ARG(JoinOptions, join) = {};
  // DistributedDataParallel's own options (ddp/options.h): unused
  // parameters, a static graph, bucket sizes, a comm hook. The Trainer sets
  // record_timeline, and sample-count averaging under --rank-weights.
  TORCH_ARG(ddp::DdpOptions, ddp) = {};
  // Seeds the sampler's shuffle, each batch's augmentation and each step's
  // dropout (with the epoch, the rank and the batch or step).
  TORCH_ARG(uint64_t, seed) = 0;
  // Intra-op threads (0: LibTorch's default).
  TORCH_ARG(int, threads) = 0;
  // Threads making training batches ahead of the steps (0: each in its step).
  TORCH_ARG(int, loader_workers) = 1;
  // How the epochs and the global batch are split among processes.
  TORCH_ARG(RankWeights, rank_weights) = RankWeights::equal();
  // Written by rank 0 after every epoch (atomically, in the background);
  // empty: none. Also after every checkpoint_steps steps of an epoch (0:
  // at epochs' ends only); keep_epoch_checkpoints keeps each epoch's as
  // <name>.epoch<N><ext>; resume continues from it when it exists.
  TORCH_ARG(std::string, checkpoint) = "";
  TORCH_ARG(int64_t, checkpoint_steps) = 0;
  TORCH_ARG(bool, keep_epoch_checkpoints) = false;
  TORCH_ARG(bool, resume) = false;
  // Weights to start from: a state dict in PyTorch's format (state_dict.h;
  // torch.save(model.state_dict()) or another run's export_weights), read
  // by every rank before the job starts. A run that resumes from its
  // checkpoint continues from that instead. init_weights_entry names the
  // dict in the file that holds the state dict ("model"); with
  // init_weights_partial, what does not fit the model is left out and
  // listed (fine-tuning with another head) rather than refused.
  TORCH_ARG(std::string, init_weights) = "";
  TORCH_ARG(std::string, init_weights_entry) = "";
  TORCH_ARG(bool, init_weights_partial) = false;
  // Rank 0 writes the trained model's state dict here, in PyTorch's format,
  // when the run ends (also when the checkpoint already held every epoch);
  // empty: none.
  TORCH_ARG(std::string, export_weights) = "";
  // The per-epoch report (CSV), written by rank 0; empty: none.
  TORCH_ARG(std::string, csv) = "";
  // TensorBoard event files, written by rank 0 into this directory: each
  // step's loss, learning rate, loss scale and throughput, each epoch's
  // report row (docs/trainer.md); empty: none.
  TORCH_ARG(std::string, tensorboard) = "";
  // The job's timeline as a Chrome trace (Perfetto), merged by rank 0 and
  // rewritten after each epoch: the first trace_steps steps of each epoch
  // on every rank, their data, forward, backward, all-reduces and optimizer
  // (docs/trainer.md); empty: none.
  TORCH_ARG(std::string, trace) = "";
  TORCH_ARG(int64_t, trace_steps) = 20;
  // Test samples per evaluation batch (EvalContext::batch_size).
  TORCH_ARG(int64_t, eval_batch) = 64;
  // What a training sample is called in logs and messages ("clouds").
  TORCH_ARG(std::string, noun) = "samples";
  // The model in the log; empty: the module's name().
  TORCH_ARG(std::string, model_name) = "";
  // The report's columns after the common ones: the names of
  // EvalStats::extra, in order ("instance_miou").
  TORCH_ARG(std::vector<std::string>, report_columns) = {};
  // The column whose highest value (lowest, with best_lower) names the
  // best epoch: test_accuracy, test_loss or one of report_columns.
  TORCH_ARG(std::string, best_by) = "test_accuracy";
  TORCH_ARG(bool, best_lower) = false;
  // Keep the checkpoints of the best keep_best epochs by best_by, as
  // <name>.best<N><ext> beside the checkpoint (0: none); the last is
  // always the checkpoint itself.
  TORCH_ARG(int, keep_best) = 0;
  // Stop when best_by has not improved (by more than early_stop_min_delta)
  // for early_stop_patience epochs (0: never).
  TORCH_ARG(int, early_stop_patience) = 0;
  TORCH_ARG(double, early_stop_min_delta) = 0;
  // Called on rank 0 after each row of the report is written, with the
  // report's path (the apps draw their curves from it).
  TORCH_ARG(std::function<void(const std::string& csv)>, after_report_row) = {};
  // What every checkpoint says of the model, for programs that load it
  // without the training flags (TrainingProgress::notes).
  TORCH_ARG(CheckpointNotes, checkpoint_notes) = {};
  // The model has batch norm, which cannot train on one sample: each
  // process's share of an epoch must hold at least 2 (checked before
  // training; weighted splits always check theirs).
  TORCH_ARG(bool, needs_two_per_process) = true;
};

// What is wrong with a combination of options, named by its flag:
// {"--amp fp16", "needs --device cuda (on the CPU use --amp bf16)"}.
struct OptionProblem {
  std::string flag;
  std::string message;
};

// The first problem of `options` (a value out of range, or values that do
// not go together), or nullopt. The flags' own parse reports the same, as
// bad flags.
std::optional<OptionProblem> option_problem(const TrainerOptions& options);

}  // namespace dtrain::train
