#include "train_flags.h"

#include <fmt/format.h>

#include "dtrain/dist/init.h"
#include "dtrain/util/cli_checks.h"
#include "dtrain/util/errors.h"
#include "dtrain/util/launch_env.h"
#include "sharding.h"

namespace dtrain::apps {

std::string precision_name(const CommonTrainOptions& options) {
  if (options.amp == "bf16") {
    return options.device == "cuda" ? "bf16 autocast (CUDA)" : "bf16 autocast (CPU)";
  }
  if (options.amp == "fp16") {
    return "fp16 autocast with loss scaling";
  }
  return "fp32";
}

std::vector<dist::Setting> shared_settings(const CommonTrainOptions& options) {
  auto text = [](const auto& value) { return fmt::format("{}", value); };
  return {{"--epochs", text(options.epochs)},
          {"--batch-size", text(options.batch_size)},
          {"--lr", text(options.lr)},
          {"--lr-scaling", options.lr_scaling},
          {"--seed", text(options.seed)},
          {"--train-limit", text(options.train_limit)},
          {"--test-limit", text(options.test_limit)},
          {"--amp", options.amp},
          {"--device", options.device},
          {"--backend", options.backend},
          {"--rank-weights", options.rank_weights},
          // With a checkpoint the ranks agree on stopping after every step.
          {"--checkpoint", options.checkpoint.empty() ? "not given" : "given"},
          {"--checkpoint-steps", text(options.checkpoint_steps)}};
}

void take_last_flag_values(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void add_common_train_flags(CLI::App& app, CommonTrainOptions& options,
                            const std::string& sample_noun) {
  app.add_option("--epochs", options.epochs, "Passes over the training set")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--batch-size", options.batch_size, "Samples per optimizer step and process")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--lr", options.lr, "Learning rate of one process (see --lr-scaling)")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--lr-scaling", options.lr_scaling,
                 "With N processes: 'linear' trains at lr * N (the global batch is N times "
                 "larger), 'none' at lr")
      ->check(CLI::IsMember({"linear", "none"}))
      ->capture_default_str();
  app.add_option("--threads", options.threads, "Intra-op threads (0: LibTorch's default)")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--loader-workers", options.loader_workers,
                 "Threads making training batches (selection, augmentation) ahead of the "
                 "steps (0: each in its step)")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--seed", options.seed, "Seed of initialisation and shuffling")
      ->check(dtrain::util::unsigned_integer())
      ->capture_default_str();
  app.add_option("--train-limit", options.train_limit,
                 "Use only the first N training " + sample_noun + " (0: all)")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--test-limit", options.test_limit,
                 "Use only the first N test " + sample_noun + " (0: all)")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_option("--csv", options.csv, "Per-epoch report (CSV)")->capture_default_str();
  app.add_option("--amp", options.amp,
                 "Mixed precision: bf16 (autocast), fp16 (autocast and loss scaling; needs "
                 "--device cuda) or off")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--device", options.device,
                 "cpu, or cuda: each process trains on the GPU of its local rank (LOCAL_RANK) "
                 "and processes talk over NCCL")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  // Checks of combinations (apps add theirs as the final callback).
  app.parse_complete_callback([&options] {
    if (options.amp == "fp16" && options.device != "cuda") {
      throw CLI::ValidationError("--amp fp16", "needs --device cuda (on the CPU use --amp bf16)");
    }
    // Gloo stages CUDA tensors through host memory (as torch's Gloo takes
    // them); the MPI group does not, so it would fail at the first bucket.
    if (options.device == "cuda" && options.backend == "mpi") {
      throw CLI::ValidationError(
          "--backend mpi",
          "moves CPU tensors only; with --device cuda use nccl (or auto), "
          "or gloo, which copies each collective's tensors through the host");
    }
    if (options.resume && options.checkpoint.empty()) {
      throw CLI::ValidationError("--resume", "needs --checkpoint, the file to resume from");
    }
    if (options.keep_epoch_checkpoints && options.checkpoint.empty()) {
      throw CLI::ValidationError("--keep-epoch-checkpoints",
                                 "needs --checkpoint, the file each epoch's copy is named after");
    }
    if (options.checkpoint_steps > 0 && options.checkpoint.empty()) {
      throw CLI::ValidationError("--checkpoint-steps " + std::to_string(options.checkpoint_steps),
                                 "needs --checkpoint, the file to write");
    }
    const JoinFlags& join = options.join;
    if ((join.world_size > 0) != (join.rank >= 0)) {
      throw CLI::ValidationError(join.world_size > 0 ? "--world-size" : "--rank",
                                 "needs --world-size and --rank together: a process started "
                                 "by hand is told both (or neither, under a launcher)");
    }
    if (join.world_size > 0 && join.rank >= join.world_size) {
      throw CLI::ValidationError("--rank " + std::to_string(join.rank),
                                 "must be below --world-size " + std::to_string(join.world_size));
    }
    if (join.world_size > 1) {
      // A URL that cannot work is named now, before any data is read.
      try {
        dist::resolve_rendezvous(
            {.init_method = join.init_method, .rank = join.rank, .world_size = join.world_size});
      } catch (const Error& e) {
        throw CLI::ValidationError("--init-method " + join.init_method, e.what());
      }
    }
    // Checked against the job's world now, before any data is read.
    const auto weights = parse_rank_weights(options.rank_weights).fixed.size();
    const int world =
        join.world_size > 0 ? join.world_size : util::read_launch_env().world_size.value_or(1);
    if (weights > 0 && static_cast<int>(weights) != world) {
      throw CLI::ValidationError(
          "--rank-weights " + options.rank_weights,
          std::to_string(weights) + " weight(s) for " + std::to_string(world) +
              " process(es); give one per process, in rank order (or equal, or auto)");
    }
  });
  app.add_option("--backend", options.backend,
                 "Process group backend when launched with several processes (auto: nccl for "
                 "--device cuda, gloo for cpu; gloo also takes --device cuda, copying through "
                 "the host)")
      ->check(CLI::IsMember({"auto", "gloo", "mpi", "nccl"}))
      ->capture_default_str();
  app.add_option("--init-method", options.join.init_method,
                 "Where the processes meet: env:// (MASTER_ADDR, MASTER_PORT), "
                 "tcp://host:port (rank 0 listens there) or file:///path on a shared file "
                 "system")
      ->capture_default_str();
  app.add_option("--world-size", options.join.world_size,
                 "Processes in the job, for processes started by hand, one command each "
                 "(with --rank; default: the launcher's variables)")
      ->check(dtrain::util::positive());
  app.add_option("--rank", options.join.rank,
                 "This process's rank, 0 .. --world-size - 1 (with --world-size)")
      ->check(dtrain::util::non_negative());
  app.add_option("--dist-timeout", options.dist_timeout_s,
                 "Seconds a collective may wait for a peer before failing")
      ->check(dtrain::util::positive())
      ->capture_default_str();
  app.add_option("--checkpoint", options.checkpoint,
                 "Checkpoint file, written by rank 0 after every epoch (atomically)");
  app.add_option("--checkpoint-steps", options.checkpoint_steps,
                 "Also write --checkpoint after every N steps of an epoch, so a restart loses at "
                 "most N steps (0: at epochs' ends only)")
      ->check(dtrain::util::non_negative())
      ->capture_default_str();
  app.add_flag("--keep-epoch-checkpoints", options.keep_epoch_checkpoints,
               "Also keep each epoch's checkpoint, as NAME.epochN.EXT beside --checkpoint "
               "(--checkpoint out/ckpt.pt keeps out/ckpt.epoch1.pt, out/ckpt.epoch2.pt, ...)");
  app.add_flag("--resume", options.resume,
               "Continue from --checkpoint when it exists, at the epoch and step it was written "
               "(every rank reads it)");
  app.add_option("--rank-weights", options.rank_weights,
                 "How each epoch's " + sample_noun +
                     " and each step's global batch (--batch-size times the processes) are "
                     "split among processes, for mixed hardware: equal (DistributedSampler), "
                     "one weight per process in rank order (3,1: relative speeds), or auto "
                     "(equal first, then each epoch by the compute rates measured in the last)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              parse_rank_weights(text);
              return "";
            } catch (const std::exception& e) {
              return std::string(e.what()) + " (got '" + text + "')";
            }
          },
          "WEIGHTS"))
      ->capture_default_str();
}

}  // namespace dtrain::apps
