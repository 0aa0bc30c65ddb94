// The seed's method 4, "apex mixed precision with distributed", in C++:
// DistributedDataParallel + an autocast region + GradScaler, the torch.amp
// replacement of apex's amp.initialize / amp.scale_loss. On CPU autocast
// runs in bfloat16 (which needs no loss scaling; the scaler is shown as a
// CUDA fp16 program uses it and simply never finds an overflow here).
//
//   Rank 0 epoch 0 loss 0.97 scale 65536 (bf16 autocast, 2 ranks)
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "common/format.h"
#include "common/spawn.h"
#include "common/training.h"
#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"

namespace {

namespace F = torch::nn::functional;

using dtrain::examples::TrainFlags;

void run(const TrainFlags& flags, int rank, int size) {
  const auto train = dtrain::examples::load_training_images(flags);
  dtrain::data::DistributedSampler sampler(train.size(),
                                           dtrain::data::DistributedSamplerOptions(size, rank));

  dtrain::models::ToyCnn net(dtrain::models::ToyCnnOptions().in_channels(1));
  dtrain::ddp::DistributedDataParallel<dtrain::models::ToyCnn> model(net);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(0.01 * size).momentum(0.9));
  dtrain::amp::GradScaler scaler;  // apex: amp.initialize(model, optimizer)

  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    sampler.set_epoch(epoch);
    double loss_sum = 0;
    int64_t batches = 0;
    dtrain::examples::for_each_batch(
        sampler.indices(), flags.batch_size, [&](int64_t, const at::Tensor& index) {
          optimizer.zero_grad();
          at::Tensor loss;
          {
            dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCPU));
            loss = F::cross_entropy(model(train.images.index_select(0, index)),
                                    train.labels.index_select(0, index));
          }
          scaler.scale(loss).backward();  // apex: with amp.scale_loss(loss, optimizer) as scaled
          scaler.step(optimizer);
          scaler.update();
          loss_sum += loss.item<double>();
          ++batches;
        });
    dtrain::examples::print_line(
        fmt::format("Rank {} epoch {} loss {:.3f} scale {:g} (bf16 "
                    "autocast, {} ranks)",
                    rank, epoch, loss_sum / batches, scaler.get_scale(), size));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The seed's apex + distributed program: DDP, autocast and GradScaler"};
  dtrain::examples::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  TrainFlags flags;
  flags.epochs = 2;
  dtrain::examples::add_train_flags(app, flags);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    return dtrain::examples::spawn_or_join(options,
                                           [&](int rank, int size) { run(flags, rank, size); });
  });
}
