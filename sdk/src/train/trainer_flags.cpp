#include "dtrain/train/trainer_flags.h"

#include <string>

#include "dtrain/dist/init.h"
#include "dtrain/train/run_config.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/cli_help.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"
#include "recipe_flags.h"

namespace dtrain::train {

namespace {

// --epochs, --batch-size, --lr, --lr-scaling, --threads, --loader-workers, --seed.
void add_loop_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Training");
  flags.add("--epochs", o.epochs(), "Passes over the training set", Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags
      .add("--batch-size", o.batch_size(), "Samples per optimizer step and process",
           Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags.add("--lr", o.lr(), "Learning rate of one process (see --lr-scaling)", Agreement::same())
      ->check(util::positive())
      ->capture_default_str();
  flags.add_choice("--lr-scaling", o.lr_scaling(), lr_scaling_words(),
                   "With N processes: 'linear' trains at lr * N (the global batch is N times "
                   "larger), 'none' at lr",
                   Agreement::same());
  flags
      .add("--threads", o.threads(), "Intra-op threads (0: LibTorch's default)",
           Agreement::may_differ())
      ->check(util::non_negative())
      ->capture_default_str();
  flags
      .add("--loader-workers", o.loader_workers(),
           "Threads making training batches (selection, augmentation) ahead of the steps (0: "
           "each in its step)",
           Agreement::may_differ())
      ->check(util::non_negative())
      ->capture_default_str();
  flags.add("--seed", o.seed(), "Seed of initialisation and shuffling", Agreement::same())
      ->check(util::unsigned_integer())
      ->capture_default_str();
}

// --csv, --tensorboard, --trace, --trace-steps, --amp, --device, --backend, --init-method,
// --world-size, --rank, --dist-timeout.
void add_job_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Output");
  flags.add("--csv", o.csv(), "Per-epoch report (CSV)", Agreement::may_differ())
      ->capture_default_str();
  flags
      .add("--tensorboard", o.tensorboard(),
           "Directory for TensorBoard event files (rank 0): each step's loss, learning rate, "
           "loss scale and throughput, each epoch's report row",
           Agreement::may_differ())
      ->type_name("DIR");
  // Every rank sends its spans to rank 0 after each epoch: all or none trace.
  flags
      .add("--trace", o.trace(),
           "Chrome/Perfetto trace of the job's timeline (JSON), merged by rank 0: data, forward, "
           "backward, each bucket's all-reduce, the waits and the optimizer of each rank's steps",
           Agreement::partly([&o] { return o.trace().empty() ? "not given" : "given"; },
                             "--trace's path"))
      ->type_name("PATH");
  flags
      .add("--trace-steps", o.trace_steps(),
           "Steps of each epoch that --trace records (the first ones)", Agreement::may_differ())
      ->check(util::positive())
      ->capture_default_str();
  flags.topic("Precision");
  flags.add_choice("--amp", o.precision(), precision_words(),
                   "Mixed precision: bf16 (autocast), fp16 (autocast and loss scaling; needs "
                   "--device cuda) or off",
                   Agreement::same());
  flags.add_choice("--device", o.device(), device_words(),
                   "cpu, or cuda: each process trains on the GPU of its local rank (LOCAL_RANK) "
                   "and processes talk over NCCL",
                   Agreement::same());
  flags.topic("Distributed");
  flags.add_choice("--backend", o.backend(), backend_words(),
                   "Process group backend when launched with several processes (auto: nccl for "
                   "--device cuda, gloo for cpu; gloo also takes --device cuda, copying through "
                   "the host)",
                   Agreement::same());
  flags
      .add("--init-method", o.join().init_method(),
           "Where the processes meet: env:// (MASTER_ADDR, MASTER_PORT), tcp://host:port (rank 0 "
           "listens there) or file:///path on a shared file system",
           Agreement::not_compared())
      ->capture_default_str();
  flags
      .add("--world-size", o.join().world_size(),
           "Processes in the job, for processes started by hand, one command each (with --rank; "
           "default: the launcher's variables)",
           Agreement::not_compared())
      ->check(util::positive());
  flags
      .add("--rank", o.join().rank(),
           "This process's rank, 0 .. --world-size - 1 (with --world-size)",
           Agreement::not_compared())
      ->check(util::non_negative());
  flags
      .add("--dist-timeout", o.dist_timeout_s(),
           "Seconds a collective may wait for a peer before failing", Agreement::may_differ())
      ->check(util::positive())
      ->capture_default_str();
}

// --checkpoint, --checkpoint-steps, --keep-epoch-checkpoints, --resume.
void add_checkpoint_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Checkpoints");
  // With a checkpoint the ranks agree on stopping every few steps (Note
  // [Agreeing on a stop] in train_epoch.cpp).
  flags.add("--checkpoint", o.checkpoint(),
            "Checkpoint file, written by rank 0 after every epoch (atomically)",
            Agreement::partly([&o] { return o.checkpoint().empty() ? "not given" : "given"; },
                              "--checkpoint's path"));
  flags
      .add("--checkpoint-steps", o.checkpoint_steps(),
           "Also write --checkpoint after every N steps of an epoch, so a restart loses at most N "
           "steps (0: at epochs' ends only)",
           Agreement::same())
      ->check(util::non_negative())
      ->capture_default_str();
  flags.add_switch("--keep-epoch-checkpoints", o.keep_epoch_checkpoints(),
                   "Also keep each epoch's checkpoint, as NAME.epochN.EXT beside --checkpoint "
                   "(--checkpoint out/ckpt.pt keeps out/ckpt.epoch1.pt, out/ckpt.epoch2.pt, ...)",
                   Agreement::not_compared());
  flags.add_switch("--resume", o.resume(),
                   "Continue from --checkpoint when it exists, at the epoch and step it was "
                   "written (every rank reads it)",
                   Agreement::not_compared());
}

// --init-weights, --init-weights-entry, --init-weights-partial, --export-weights.
void add_weights_flags(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Weights");
  flags
      .add("--init-weights", o.init_weights(),
           "Start from this state dict (PyTorch's format: torch.save(model.state_dict()), or "
           "--export-weights of another run); a resumed run continues from its checkpoint",
           Agreement::partly([&o] { return o.init_weights().empty() ? "not given" : "given"; },
                             "--init-weights' path"))
      ->type_name("FILE");
  flags
      .add("--init-weights-entry", o.init_weights_entry(),
           "The key under which --init-weights' file holds the state dict, when it holds more "
           "(a checkpoint dict: model, state_dict)",
           Agreement::same())
      ->type_name("KEY");
  flags.add_switch("--init-weights-partial", o.init_weights_partial(),
                   "Load what fits the model from --init-weights and list the rest, rather than "
                   "refuse a file that does not fit (fine-tuning with another head)",
                   Agreement::same());
  flags
      .add("--export-weights", o.export_weights(),
           "At the end, write the trained model's state dict here for PyTorch "
           "(model.load_state_dict(torch.load(FILE)))",
           Agreement::may_differ())
      ->type_name("FILE");
}

// --rank-weights: parsed into RankWeights, compared as given.
void add_rank_weights_flag(FlagTable& flags, TrainerOptions& o) {
  flags.topic("Distributed");
  flags
      .add_text(
          "--rank-weights", o.rank_weights(), parse_rank_weights,
          [](const RankWeights& weights) { return to_string(weights); },
          "How each epoch's " + o.noun() +
              " and each step's global batch (--batch-size times the processes) are split among "
              "processes, for mixed hardware: equal (DistributedSampler), one weight per process "
              "in "
              "rank order (3,1: relative speeds), or auto (equal first, then each epoch by the "
              "compute rates measured in the last)",
          Agreement::same())
      ->type_name("WEIGHTS");
}

// What only the job can say: whether --init-method can work, and whether
// --rank-weights gives one weight per process.
void check_against_the_job(const TrainerOptions& o) {
  const JoinOptions& join = o.join();
  if (join.world_size() > 1) {
    // A URL that cannot work is named now, before any data is read.
    try {
      dist::resolve_rendezvous({.init_method = join.init_method(),
                                .rank = join.rank(),
                                .world_size = join.world_size()});
    } catch (const Error& e) {
      throw CLI::ValidationError("--init-method " + join.init_method(), e.what());
    }
  }
  const auto weights = o.rank_weights().fixed.size();
  const int world =
      join.world_size() > 0 ? join.world_size() : util::read_launch_env().world_size.value_or(1);
  if (weights > 0 && static_cast<int>(weights) != world) {
    throw CLI::ValidationError(
        "--rank-weights " + to_string(o.rank_weights()),
        std::to_string(weights) + " weight(s) for " + std::to_string(world) +
            " process(es); give one per process, in rank order (or equal, or auto)");
  }
}

}  // namespace

void add_trainer_flags(FlagTable& flags, TrainerOptions& options) {
  add_loop_flags(flags, options);
  add_job_flags(flags, options);
  add_checkpoint_flags(flags, options);
  add_weights_flags(flags, options);
  add_rank_weights_flag(flags, options);
  detail::add_recipe_flags(flags, options);
  detail::add_ddp_flags(flags, options);
  detail::add_checkpoint_policy_flags(flags, options);
  flags.check([&options] {
    if (const auto problem = option_problem(options)) {
      throw CLI::ValidationError(problem->flag, problem->message);
    }
    check_against_the_job(options);
  });
  // --config replays a run from the settings it wrote beside its report.
  // How this process joined its job is not among them: a replay under
  // another launcher, or at another size, must not inherit it.
  add_config_flag(flags, {"--init-method", "--world-size", "--rank"});
}

void add_trainer_help(FlagTable& flags, std::vector<std::string> more) {
  for (const char* name : {"--epochs", "--batch-size", "--lr", "--device", "--amp", "--checkpoint",
                           "--resume", "--csv", "--config"}) {
    more.emplace_back(name);
  }
  util::add_topic_help(flags.app(), std::move(more));
}

}  // namespace dtrain::train
