// The seed's Horovod program (method 3) in C++: DistributedSampler over
// size() replicas, the optimizer wrapped in DistributedOptimizer, rank 0's
// parameters broadcast before training, and the seed's log line:
//
//   Train Epoch: 0 [0/1024]	Loss: 2.30...
//
// Horovod's hvd.init / hvd.rank / hvd.size are the process group's;
// hvd.DistributedOptimizer and hvd.broadcast_parameters are dtrain::ddp's.
// Trains the toy CNN on a slice of Fashion-MNIST (--train-limit).
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "common/format.h"
#include "common/spawn.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/datasets/fashion_mnist.h"
#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/distributed_optimizer.h"
#include "dtrain/dist/init.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"

namespace {

namespace F = torch::nn::functional;

struct TrainFlags {
  std::string data_dir = dtrain::datasets::fashion_mnist_default_root();
  int64_t train_limit = 4096;
  int epochs = 1;
  int64_t batch_size = 64;
  int log_interval = 10;
};

void run(const TrainFlags& flags, int rank, int size) {
  // dataset ...
  auto train = dtrain::datasets::load_fashion_mnist(
      dtrain::datasets::Split::kTrain,
      dtrain::datasets::FashionMnistOptions().root(flags.data_dir));
  const int64_t n = std::min(flags.train_limit, train.size());
  dtrain::data::DistributedSampler train_sampler(
      n, dtrain::data::DistributedSamplerOptions(/*num_replicas=*/size, /*rank=*/rank));

  // model ...
  torch::manual_seed(rank);  // different on purpose: the broadcast below makes them equal
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));

  // optimizer ... (Horovod scales the learning rate by size())
  auto sgd = std::make_shared<torch::optim::SGD>(
      model->parameters(), torch::optim::SGDOptions(0.01 * size).momentum(0.9));
  dtrain::ddp::DistributedOptimizer optimizer(sgd);

  // At the start, every rank takes rank 0's parameters.
  dtrain::ddp::broadcast_parameters(*model, /*root=*/0);

  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    train_sampler.set_epoch(epoch);
    const at::Tensor order = at::tensor(train_sampler.indices(), at::kLong);
    for (int64_t batch_idx = 0; batch_idx * flags.batch_size < order.numel(); ++batch_idx) {
      const at::Tensor index =
          order.narrow(0, batch_idx * flags.batch_size,
                       std::min(flags.batch_size, order.numel() - batch_idx * flags.batch_size));
      const at::Tensor data = train.images.index_select(0, index);
      const at::Tensor target = train.labels.index_select(0, index);
      optimizer.zero_grad();
      const at::Tensor output = model(data);
      const at::Tensor loss = F::cross_entropy(output, target);
      loss.backward();
      optimizer.step();
      if (batch_idx % flags.log_interval == 0) {
        dtrain::examples::print_line(fmt::format("Train Epoch: {} [{}/{}]\tLoss: {:.4f}", epoch,
                                                 batch_idx * data.size(0),
                                                 train_sampler.num_samples(), loss.item<double>()));
      }
    }
  }
  // Every rank ends with the same model.
  at::Tensor checksum = at::zeros({1}, at::kDouble);
  for (const auto& p : model->parameters()) {
    checksum += p.detach().to(at::kDouble).sum();
  }
  at::Tensor low = checksum.clone();
  dtrain::dist::all_reduce(low, dtrain::dist::ReduceOp::kMin);
  dtrain::dist::all_reduce(checksum, dtrain::dist::ReduceOp::kMax);
  dtrain::examples::print_line(fmt::format("Rank {} parameters {} across ranks", rank,
                                           at::equal(low, checksum) ? "agree" : "DIFFER"));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The seed's Horovod training program: DistributedOptimizer, broadcast_parameters, "
      "DistributedSampler"};
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
