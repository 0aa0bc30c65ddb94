#include "dtrain/train/trainer_options.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dtrain::train {

const util::EnumWords<Precision>& precision_words() {
  static const util::EnumWords<Precision> words{
      {"off", Precision::kFp32}, {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16}};
  return words;
}

const util::EnumWords<Device>& device_words() {
  static const util::EnumWords<Device> words{{"cpu", Device::kCpu}, {"cuda", Device::kCuda}};
  return words;
}

const util::EnumWords<Backend>& backend_words() {
  static const util::EnumWords<Backend> words{{"auto", Backend::kAuto},
                                              {"gloo", Backend::kGloo},
                                              {"mpi", Backend::kMpi},
                                              {"nccl", Backend::kNccl}};
  return words;
}

namespace {

// A value out of the range its flag takes, in the flags' words
// (util/cli_checks.h): "must be positive, got 0", "must be >= 0, got -1".
std::optional<OptionProblem> range_problem(const TrainerOptions& o) {
  const std::vector<std::pair<const char*, double>> positive = {
      {"--epochs", o.epochs()},
      {"--batch-size", static_cast<double>(o.batch_size())},
      {"--lr", o.lr()},
      {"--dist-timeout", o.dist_timeout_s()},
      {"--trace-steps", static_cast<double>(o.trace_steps())},
      {"TrainerOptions::eval_batch", static_cast<double>(o.eval_batch())}};
  for (const auto& [flag, value] : positive) {
    if (!(value > 0)) {
      return OptionProblem{flag, fmt::format("must be positive, got {}", value)};
    }
  }
  const std::vector<std::pair<const char*, double>> non_negative = {
      {"--threads", o.threads()},
      {"--loader-workers", o.loader_workers()},
      {"--checkpoint-steps", static_cast<double>(o.checkpoint_steps())},
      {"--clip-grad-norm", o.clip_grad_norm()},
      {"--warmup-steps", static_cast<double>(o.warmup_steps())},
      {"--weight-decay", o.optimizer().weight_decay()},
      {"--momentum", o.optimizer().momentum()},
      {"--keep-best", o.keep_best()},
      {"--early-stop-patience", o.early_stop_patience()},
      {"--early-stop-min-delta", o.early_stop_min_delta()}};
  for (const auto& [flag, value] : non_negative) {
    if (!(value >= 0)) {
      return OptionProblem{flag, fmt::format("must be >= 0, got {}", value)};
    }
  }
  if (o.accumulate() < 1) {
    return OptionProblem{"--accumulate", fmt::format("must be positive, got {}", o.accumulate())};
  }
  if (!(o.warmup_start_factor() >= 0 && o.warmup_start_factor() <= 1)) {
    return OptionProblem{"--warmup-start-factor",
                         fmt::format("must be in [0, 1], got {}", o.warmup_start_factor())};
  }
  return std::nullopt;
}

// The recipe's options that do not go together: accumulation with weighted
// shards or checkpoints between a step's batches, Nesterov without
// momentum, best checkpoints without a checkpoint.
std::optional<OptionProblem> recipe_problem(const TrainerOptions& o) {
  if (o.accumulate() > 1 && o.rank_weights().kind != RankWeights::Kind::kEqual) {
    return OptionProblem{"--accumulate " + std::to_string(o.accumulate()),
                         "needs --rank-weights equal: weighted shards average each step's "
                         "gradient by its samples, which accumulation would miscount"};
  }
  if (o.checkpoint_steps() % o.accumulate() != 0) {
    return OptionProblem{"--checkpoint-steps " + std::to_string(o.checkpoint_steps()),
                         fmt::format("must be a multiple of --accumulate {}: a checkpoint is "
                                     "written between optimizer steps",
                                     o.accumulate())};
  }
  const OptimizerOptions& optimizer = o.optimizer();
  if (optimizer.nesterov() &&
      (optimizer.kind() != OptimizerKind::kSgd || !(optimizer.momentum() > 0))) {
    return OptionProblem{"--nesterov", "needs --optimizer sgd and a --momentum above 0"};
  }
  if (o.keep_best() > 0 && o.checkpoint().empty()) {
    return OptionProblem{"--keep-best", "needs --checkpoint, the file the best are copies of"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<OptionProblem> option_problem(const TrainerOptions& o) {
  if (auto problem = range_problem(o)) {
    return problem;
  }
  if (auto problem = recipe_problem(o)) {
    return problem;
  }
  if (o.precision() == Precision::kFp16 && o.device() != Device::kCuda) {
    return OptionProblem{"--amp fp16", "needs --device cuda (on the CPU use --amp bf16)"};
  }
  // Gloo stages CUDA tensors through host memory (as torch's Gloo takes
  // them); the MPI group does not, so it would fail at the first bucket.
  if (o.device() == Device::kCuda && o.backend() == Backend::kMpi) {
    return OptionProblem{"--backend mpi",
                         "moves CPU tensors only; with --device cuda use nccl (or auto), or gloo, "
                         "which copies each collective's tensors through the host"};
  }
  if (o.resume() && o.checkpoint().empty()) {
    return OptionProblem{"--resume", "needs --checkpoint, the file to resume from"};
  }
  if ((!o.init_weights_entry().empty() || o.init_weights_partial()) && o.init_weights().empty()) {
    return OptionProblem{
        o.init_weights_entry().empty() ? "--init-weights-partial" : "--init-weights-entry",
        "needs --init-weights, the state dict to start from"};
  }
  if (o.keep_epoch_checkpoints() && o.checkpoint().empty()) {
    return OptionProblem{"--keep-epoch-checkpoints",
                         "needs --checkpoint, the file each epoch's copy is named after"};
  }
  if (o.checkpoint_steps() > 0 && o.checkpoint().empty()) {
    return OptionProblem{"--checkpoint-steps " + std::to_string(o.checkpoint_steps()),
                         "needs --checkpoint, the file to write"};
  }
  const auto& columns = o.report_columns();
  if (o.best_by() != "test_accuracy" && o.best_by() != "test_loss" &&
      std::find(columns.begin(), columns.end(), o.best_by()) == columns.end()) {
    return OptionProblem{"--best-by",
                         "must be test_accuracy, test_loss or one of the report's "
                         "own columns (" +
                             fmt::format("{}", fmt::join(columns, ", ")) + "), got '" +
                             o.best_by() + "'"};
  }
  const JoinOptions& join = o.join();
  if ((join.world_size() > 0) != (join.rank() >= 0)) {
    return OptionProblem{join.world_size() > 0 ? "--world-size" : "--rank",
                         "needs --world-size and --rank together: a process started by hand is "
                         "told both (or neither, under a launcher)"};
  }
  if (join.world_size() > 0 && join.rank() >= join.world_size()) {
    return OptionProblem{"--rank " + std::to_string(join.rank()),
                         "must be below --world-size " + std::to_string(join.world_size())};
  }
  return std::nullopt;
}

}  // namespace dtrain::train
