// A small program on the Trainer for the recipe tests (test_trainer_recipes
// .cpp): a classifier without batch norm or dropout, so runs compare to
// 1e-6, whose second head is used only on every other step (a branch some
// steps skip), trained on fixed random data with every Trainer flag, plus:
//   --initial-weights FILE  the weights before training (state dict)
//   --lr-log FILE           rank 0: each step's learning rate, a line each
//   --accuracies A,B,...    the evaluation's "accuracy" of each epoch this
//                           run trains, as given (to rank epochs as a test
//                           wants)
//   --branch-every N        the second head runs on every Nth step (0: never)
//   --cosine                a cosine schedule over the run (else constant)
#include <fstream>
#include <iomanip>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>

#include "dtrain/train/optimizers.h"
#include "dtrain/train/state_dict.h"
#include "dtrain/train/trainer.h"
#include "dtrain/train/trainer_flags.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/launch_env.h"

namespace {

using namespace dtrain::train;

struct TwoHeadsImpl : torch::nn::Module {
  TwoHeadsImpl()
      : body(register_module("body", torch::nn::Linear(4, 8))),
        head(register_module("head", torch::nn::Linear(8, 3))),
        extra(register_module("extra", torch::nn::Linear(8, 3))) {}
  at::Tensor forward(const at::Tensor& x, bool with_extra) {
    const at::Tensor hidden = at::relu(body(x));
    return with_extra ? head(hidden) + extra(hidden) : head(hidden);
  }
  torch::nn::Linear body, head, extra;
};
TORCH_MODULE(TwoHeads);

struct ProbeOptions {
  TrainerOptions trainer = TrainerOptions()
                               .epochs(2)
                               .batch_size(4)
                               .lr(0.1)
                               .lr_scaling(LrScaling::kNone)
                               .loader_workers(0)
                               .threads(1)
                               .needs_two_per_process(false);
  std::string initial_weights;
  std::string lr_log;
  std::vector<double> accuracies;
  int branch_every = 2;
  bool cosine = false;
};

void add_probe_flags(FlagTable& flags, ProbeOptions& options) {
  add_trainer_flags(flags, options.trainer);
  flags.topic("Probe");
  flags.add("--initial-weights", options.initial_weights, "", Agreement::may_differ());
  flags.add("--lr-log", options.lr_log, "", Agreement::may_differ());
  flags.app().add_option("--accuracies", options.accuracies, "")->delimiter(',');
  flags.add("--branch-every", options.branch_every, "", Agreement::same());
  flags.add_switch("--cosine", options.cosine, "", Agreement::same());
}

int train(ProbeOptions& options, const FlagTable& flags) {
  if (options.cosine) {
    options.trainer.lr_schedule(LrSchedule::cosine(options.trainer.epochs()));
  }
  Trainer trainer(options.trainer, flags);
  at::manual_seed(7);
  const at::Tensor inputs = at::randn({50, 4});
  const at::Tensor labels = at::randint(3, {50});
  TwoHeads model;
  model->to(trainer.device());
  if (!options.initial_weights.empty()) {
    save_state_dict(*model, options.initial_weights);
  }
  const auto optimizer = make_optimizer(*model, options.trainer.lr(), options.trainer.optimizer());
  std::unique_ptr<std::ofstream> lr_log;
  if (!options.lr_log.empty() && dtrain::util::read_launch_env().rank.value_or(0) == 0) {
    lr_log = std::make_unique<std::ofstream>(options.lr_log);
  }
  int64_t batches = 0;
  auto step = [&](JobModel<TwoHeads>& net, const Batch& batch) {
    if (lr_log) {
      *lr_log << std::setprecision(17) << optimizer->param_groups().front().options().get_lr()
              << "\n"
              << std::flush;
    }
    const bool with_extra = options.branch_every > 0 && batches++ % options.branch_every == 0;
    return torch::nn::functional::cross_entropy(net.train(batch[0], with_extra), batch[1]);
  };
  int epoch = 0;
  auto evaluate = [&](JobModel<TwoHeads>& net, const EvalContext& context) {
    const at::Tensor logits = net.eval(inputs, false);
    const double loss = torch::nn::functional::cross_entropy(logits, labels).item<double>();
    const double accuracy = static_cast<size_t>(epoch) < options.accuracies.size()
                                ? options.accuracies[static_cast<size_t>(epoch)]
                                : logits.argmax(1).eq(labels).to(at::kDouble).mean().item<double>();
    ++epoch;
    (void)context;
    return EvalStats{.mean_loss = loss, .accuracy = accuracy};
  };
  return trainer.fit(model, *optimizer, TensorDataset({inputs, labels}), step, evaluate);
}

}  // namespace

int main(int argc, char** argv) {
  set_up_training_process();
  CLI::App app{"The Trainer's recipe features, for tests"};
  ProbeOptions options;
  FlagTable flags(app);
  add_probe_flags(flags, options);
  return dtrain::util::run_cli_app(app, argc, argv, [&] { return train(options, flags); });
}
