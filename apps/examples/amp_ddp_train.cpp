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
#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/ddp/distributed_data_parallel.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"

namespace {

namespace F = torch::nn::functional;

struct TrainFlags {
  std::string data_dir = dtrain::datasets::fashion_mnist_default_root();
  int64_t train_limit = 4096;
  int epochs = 2;
  int64_t batch_size = 64;
};

void run(const TrainFlags& flags, int rank, int size) {
  auto train = dtrain::datasets::load_fashion_mnist(
      dtrain::datasets::Split::kTrain,
      dtrain::datasets::FashionMnistOptions().root(flags.data_dir));
  const int64_t n = std::min(flags.train_limit, train.size());
  dtrain::data::DistributedSampler sampler(n, dtrain::data::DistributedSamplerOptions(size, rank));

  dtrain::models::ToyCnn net(dtrain::models::ToyCnnOptions().in_channels(1));
  dtrain::ddp::DistributedDataParallel<dtrain::models::ToyCnn> model(net);
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(0.01 * size).momentum(0.9));
  dtrain::amp::GradScaler scaler;  // apex: amp.initialize(model, optimizer)

  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    sampler.set_epoch(epoch);
    const at::Tensor order = at::tensor(sampler.indices(), at::kLong);
    double loss_sum = 0;
    int64_t batches = 0;
    for (int64_t begin = 0; begin < order.numel(); begin += flags.batch_size) {
      const at::Tensor index =
          order.narrow(0, begin, std::min(flags.batch_size, order.numel() - begin));
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
    }
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
  app.add_option("--data-dir", flags.data_dir, "Fashion-MNIST directory")->capture_default_str();
  app.add_option("--train-limit", flags.train_limit, "Training images used")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--epochs", flags.epochs)->check(CLI::PositiveNumber)->capture_default_str();
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    return dtrain::examples::spawn_or_join(options,
                                           [&](int rank, int size) { run(flags, rank, size); });
  });
}
