// The seed's method 4, "apex mixed precision with distributed", in C++:
// DistributedDataParallel with apex's four opt levels, on torch.amp's
// pieces (autocast regions, GradScaler) and dtrain's MasterWeights:
//
//   O0  float32 throughout: the baseline
//   O1  float32 weights, forward under autocast (apex's recommended level)
//   O2  the model in low precision, float32 master weights for the update
//   O3  the model in low precision, updated in low precision
//
// On the CPU the low precision is bfloat16 (which needs no loss scaling;
// O1 and O2 keep the GradScaler as apex's dynamic loss scale, so the code
// is what a CUDA fp16 program runs, and it simply never finds an overflow
// here). Every rank prints its epochs' mean losses, then whether all ranks
// hold the same weights:
//
//   Rank 0 epoch 0 loss 0.97 scale 65536 (O1: bf16 autocast, 2 ranks)
//   Rank 0 parameters agree across ranks
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include <memory>
#include <optional>

#include "common/format.h"
#include "common/spawn.h"
#include "common/training.h"
#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/amp/master_weights.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/process_setup.h"

namespace {

namespace F = torch::nn::functional;

using dtrain::examples::TrainFlags;

// What an opt level switches on.
struct OptLevel {
  bool autocast = false;    // O1: the forward under autocast
  bool low_model = false;   // O2, O3: parameters in bfloat16
  bool master = false;      // O2: float32 master weights for the update
  bool loss_scale = false;  // O1, O2: apex's dynamic loss scale
  const char* description = "";
};

OptLevel opt_level(const std::string& name) {
  if (name == "O0") {
    return {.description = "fp32"};
  }
  if (name == "O1") {
    return {.autocast = true, .loss_scale = true, .description = "bf16 autocast"};
  }
  if (name == "O2") {
    return {.low_model = true,
            .master = true,
            .loss_scale = true,
            .description = "bf16 model, fp32 master weights"};
  }
  return {.low_model = true, .description = "bf16 model and update"};
}

void run(const TrainFlags& flags, const std::string& level_name, int rank, int size) {
  const OptLevel level = opt_level(level_name);
  const auto train = dtrain::examples::load_training_images(flags);
  dtrain::data::DistributedSampler sampler(train.size(),
                                           dtrain::data::DistributedSamplerOptions(size, rank));

  // apex: model, optimizer = amp.initialize(model, optimizer, opt_level=...)
  dtrain::models::ToyCnn net(dtrain::models::ToyCnnOptions().in_channels(1));
  if (level.low_model) {
    net->to(at::kBFloat16);
  }
  dtrain::ddp::DistributedDataParallel<dtrain::models::ToyCnn> model(net);
  std::optional<dtrain::amp::MasterWeights> master;
  if (level.master) {
    master.emplace(model->parameters());
  }
  torch::optim::SGD optimizer(master ? master->parameters() : model->parameters(),
                              torch::optim::SGDOptions(0.01 * size).momentum(0.9));
  dtrain::amp::GradScaler scaler(dtrain::amp::GradScalerOptions().enabled(level.loss_scale));
  const at::ScalarType input_dtype = level.low_model ? at::kBFloat16 : at::kFloat;

  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    sampler.set_epoch(epoch);
    double loss_sum = 0;
    int64_t batches = 0;
    dtrain::examples::for_each_batch(
        sampler.indices(), flags.batch_size, [&](int64_t, const at::Tensor& index) {
          optimizer.zero_grad();
          if (master) {
            master->zero_grad();
          }
          at::Tensor loss;
          {
            dtrain::amp::AutocastGuard autocast(
                dtrain::amp::AutocastOptions(at::kCPU).enabled(level.autocast));
            const at::Tensor logits = model(train.images.index_select(0, index).to(input_dtype));
            // The loss in float32 at every level, as apex computes it.
            loss = F::cross_entropy(logits.to(at::kFloat), train.labels.index_select(0, index));
          }
          scaler.scale(loss).backward();  // apex: with amp.scale_loss(loss, optimizer) as scaled
          if (master) {
            master->copy_grads_to_master();
          }
          scaler.step(optimizer);
          scaler.update();
          if (master) {
            master->copy_master_to_model();
          }
          loss_sum += loss.item<double>();
          ++batches;
        });
    dtrain::examples::print_line(
        fmt::format("Rank {} epoch {} loss {:.3f} scale {:g} ({}: {}, {} ranks)", rank, epoch,
                    loss_sum / batches, scaler.get_scale(), level_name, level.description, size));
  }
  dtrain::examples::print_parameter_agreement(rank,
                                              master ? master->parameters() : model->parameters());
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{"The seed's apex + distributed program: DDP at apex's opt levels O0-O3"};
  dtrain::dist::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  TrainFlags flags;
  flags.epochs = 2;
  dtrain::examples::add_train_flags(app, flags);
  std::string level = "O1";
  app.add_option("--opt-level", level,
                 "apex's opt level: O0 fp32, O1 autocast, O2 bf16 model with fp32 master "
                 "weights, O3 bf16 throughout")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}))
      ->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::dist::spawn_or_join(options,
                                [&](int rank, int size) { run(flags, level, rank, size); });
    return 0;
  });
}
