#include "recipe_flags.h"

#include <memory>
#include <string>

#include "dtrain/ddp/comm_hook.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"

namespace dtrain::train::detail {

namespace {

// --comm-hook's words: none (DDP's plain all-reduce), fp16, bf16.
std::shared_ptr<ddp::CommHook> parse_comm_hook(const std::string& word) {
  if (word == "none") {
    return nullptr;
  }
  if (word == "fp16" || word == "bf16") {
    return ddp::compression_hook(word == "fp16" ? at::kHalf : at::kBFloat16);
  }
  throw Error("must be none, fp16 or bf16");
}

std::string comm_hook_word(const std::shared_ptr<ddp::CommHook>& hook) {
  if (hook == nullptr) {
    return "none";
  }
  const std::string name = hook->name();
  return name.find("bf16") != std::string::npos   ? "bf16"
         : name.find("fp16") != std::string::npos ? "fp16"
                                                  : name;
}

}  // namespace

void add_recipe_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Recipe");
  OptimizerOptions& optimizer = o.optimizer();
  flags.add_choice("--optimizer", optimizer.kind(), optimizer_words(),
                   "adam, adamw (decoupled weight decay) or sgd, for programs that build theirs "
                   "with make_optimizer (dtrain's apps do)",
                   Agreement::same());
  flags
      .add("--weight-decay", optimizer.weight_decay(),
           "Weight decay (L2 for adam and sgd, decoupled for adamw)", Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags.add("--momentum", optimizer.momentum(), "SGD momentum", Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags.add_switch("--nesterov", optimizer.nesterov(),
                   "Nesterov momentum (with --optimizer sgd and --momentum)", Agreement::same());
  flags
      .add_switch("--decay-norms-biases,!--no-decay-norms-biases",
                  optimizer.decay_norms_and_biases(),
                  "Whether weight decay also pulls on biases and norms' scales and shifts (every "
                  "parameter of one dimension); --no-decay-norms-biases leaves them out",
                  Agreement::same())
      ->capture_default_str();
  flags
      .add("--warmup-steps", o.warmup_steps(),
           "Raise the learning rate linearly over the run's first N optimizer steps, from "
           "--warmup-start-factor times the schedule's rate",
           Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags
      .add("--warmup-start-factor", o.warmup_start_factor(),
           "The fraction of the rate at the first warmup step", Agreement::same())
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  flags
      .add("--accumulate", o.accumulate(),
           "Batches whose gradients are summed into each optimizer step (the step of a batch N "
           "times larger; DDP all-reduces once a step)",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags
      .add("--clip-grad-norm", o.clip_grad_norm(),
           "Clip the gradients to this global L2 norm before each optimizer step, after fp16's "
           "unscale (0: no clipping)",
           Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
}

void add_ddp_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("DDP");
  ddp::DdpOptions& d = o.ddp();
  flags.add_switch("--find-unused-parameters", d.find_unused_parameters,
                   "Find the parameters each step leaves without a gradient (a model with a "
                   "branch some steps skip); costs a walk of the graph every step",
                   Agreement::same());
  flags.add_switch("--static-graph", d.static_graph,
                   "The parameters used never change from step to step: found once, in the first",
                   Agreement::same());
  flags
      .add("--bucket-cap-mb", d.bucket_cap_mb, "Size cap of DDP's gradient buckets (MiB)",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags
      .add("--first-bucket-mb", d.first_bucket_mb,
           "Cap of the first bucket (the last layers'), small so its all-reduce starts early",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags.add_switch("--gradient-as-bucket-view", d.gradient_as_bucket_view,
                   "Gradients are views into DDP's buckets: one copy and one gradient's memory "
                   "saved",
                   Agreement::same());
  flags
      .add_switch("--broadcast-buffers,!--no-broadcast-buffers", d.broadcast_buffers,
                  "Rank 0's buffers (batch norm's statistics) go to every rank before each "
                  "training forward",
                  Agreement::same())
      ->capture_default_str();
  flags
      .add_text<std::shared_ptr<ddp::CommHook>>(
          "--comm-hook", d.comm_hook, parse_comm_hook, comm_hook_word,
          "How buckets travel: none (their own dtype), fp16 or bf16 (cast for the all-reduce: "
          "half the bytes)",
          Agreement::same())
      ->type_name("HOOK");
}

void add_checkpoint_policy_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Checkpoints");
  flags
      .add("--best-by", o.best_by(),
           "The metric that ranks epochs: test_accuracy, test_loss or a column of the app's "
           "report",
           Agreement::same())
      ->capture_default_str();
  flags
      .add_text<bool>(
          "--best-mode", o.best_lower(),
          [](const std::string& word) {
            DTRAIN_CHECK(word == "max" || word == "min", "must be max or min");
            return word == "min";
          },
          [](const bool& lower) { return lower ? "min" : "max"; },
          "max: the highest --best-by is best (accuracy); min: the lowest (a loss)",
          Agreement::same())
      ->type_name("MODE");
  flags
      .add("--keep-best", o.keep_best(),
           "Keep the checkpoints of the best N epochs by --best-by, as NAME.best.epochE.EXT beside "
           "--checkpoint, which holds the last",
           Agreement::not_compared())
      ->check(util::non_negative())
      ->capture_default_str();
  flags
      .add("--early-stop-patience", o.early_stop_patience(),
           "Stop when --best-by has not improved for N epochs (0: never)", Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags
      .add("--early-stop-min-delta", o.early_stop_min_delta(),
           "The least change of --best-by that counts as an improvement", Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
}

}  // namespace dtrain::train::detail
