// The seed's Horovod program (method 3) in C++: DistributedSampler over
// size() replicas, the optimizer wrapped in DistributedOptimizer, rank 0's
// parameters broadcast before training, and the seed's log line:
//
//   Train Epoch: 0 [0/1024]	Loss: 2.30...
//
// Horovod's hvd.init / hvd.rank / hvd.size are the process group's, and
// hvd.local_rank() (the seed's torch.cuda.set_device argument) is
// dtrain::dist::get_node_local_rank(); hvd.DistributedOptimizer and hvd.broadcast_parameters are
// dtrain::ddp's. Trains the toy CNN on a slice of Fashion-MNIST (--train-limit).
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "common/format.h"
#include "common/spawn.h"
#include "common/training.h"
#include "dtrain/data/distributed_sampler.h"
#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/distributed_optimizer.h"
#include "dtrain/dist/init.h"
#include "dtrain/models/toy_cnn.h"
#include "dtrain/util/cli_app.h"
#include "dtrain/util/process_setup.h"

namespace {

namespace F = torch::nn::functional;

using dtrain::examples::TrainFlags;

constexpr int kLogInterval = 10;  // batches between log lines

void run(const TrainFlags& flags, int rank, int size) {
  // dataset ...
  const auto train = dtrain::examples::load_training_images(flags);
  dtrain::data::DistributedSampler train_sampler(
      train.size(), dtrain::data::DistributedSamplerOptions(/*num_replicas=*/size, /*rank=*/rank));

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
    dtrain::examples::for_each_batch(
        train_sampler.indices(), flags.batch_size, [&](int64_t batch_idx, const at::Tensor& index) {
          const at::Tensor data = train.images.index_select(0, index);
          const at::Tensor target = train.labels.index_select(0, index);
          optimizer.zero_grad();
          const at::Tensor output = model(data);
          const at::Tensor loss = F::cross_entropy(output, target);
          loss.backward();
          optimizer.step();
          if (batch_idx % kLogInterval == 0) {
            dtrain::examples::print_line(fmt::format(
                "Train Epoch: {} [{}/{}]\tLoss: {:.4f}", epoch, batch_idx * data.size(0),
                train_sampler.num_samples(), loss.item<double>()));
          }
        });
  }
  // Every rank ends with the same model.
  dtrain::examples::print_parameter_agreement(rank, model->parameters());
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::util::set_up_process();
  CLI::App app{
      "The seed's Horovod training program: DistributedOptimizer, broadcast_parameters, "
      "DistributedSampler"};
  dtrain::dist::SpawnOptions options;
  dtrain::examples::add_flags(app, options);
  TrainFlags flags;
  dtrain::examples::add_train_flags(app, flags);
  return dtrain::util::run_cli_app(app, argc, argv, [&] {
    dtrain::dist::spawn_or_join(options, [&](int rank, int size) { run(flags, rank, size); });
    return 0;
  });
}
