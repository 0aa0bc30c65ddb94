// The C++ of docs/ddp.md, compiled with the project so the guide's code
// cannot drift from the API (lint.doc_samples checks the guide shows these
// lines). Not run: the tests run the same calls against references.
#include <torch/torch.h>

#include <spdlog/spdlog.h>

#include "dtrain/ddp/broadcast.h"
#include "dtrain/ddp/comm_hook.h"
#include "dtrain/ddp/data_parallel.h"
#include "dtrain/ddp/distributed_data_parallel.h"  // link dtrain::sdk
#include "dtrain/ddp/distributed_optimizer.h"
#include "dtrain/ddp/sync_batch_norm.h"
#include "dtrain/dist/init.h"
#include "dtrain/models/toy_cnn.h"  // link dtrain::models

namespace snippets {

using Shard = std::vector<std::pair<at::Tensor, at::Tensor>>;

void train_toy_cnn(const Shard& my_shard) {
  dtrain::dist::init_process_group();  // dtrun, mpirun or srun
  dtrain::models::ToyCnn model(dtrain::models::ToyCnnOptions().in_channels(1));
  dtrain::ddp::DistributedDataParallel<dtrain::models::ToyCnn> ddp(model);
  torch::optim::SGD optimizer(ddp->parameters(), 0.01);  // ddp-> is the module
  for (const auto& [images, labels] : my_shard) {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(ddp(images), labels);  // model's forward
    loss.backward();  // all-reduce overlaps backward
    optimizer.step();
  }
}

using Ddp = dtrain::ddp::DistributedDataParallel<torch::nn::Linear>;

void accumulate(Ddp& ddp, torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& x) {
  for (int micro = 0; micro < 4; ++micro) {
    if (micro < 3) {
      auto guard = ddp.no_sync();              // forward and backward inside
      ddp(x[micro]).pow(2).mean().backward();  // stays local
    } else {
      ddp(x[micro]).pow(2).mean().backward();  // reduces the accumulated sum
    }
  }
  optimizer.step();
}

void train_uneven(Ddp& ddp, const std::vector<at::Tensor>& my_batches) {
  ddp.join([&] {
    for (const auto& batch : my_batches) {  // ranks may have different counts
      ddp(batch).pow(2).mean().backward();
    }
  });
}

void report_overlap(Ddp& ddp) {
  ddp.timeline().write_chrome_trace("trace.json");  // chrome://tracing or Perfetto
  spdlog::info("{}", ddp.timeline().summary());
  // communication hidden behind backward: 71.4% (20 steps, 6.0 buckets/step)
}

void horovod_style(torch::nn::Linear model, double lr, int world) {
  auto sgd = std::make_shared<torch::optim::SGD>(model->parameters(), lr * world);
  dtrain::ddp::DistributedOptimizerOptions options;
  options.backward_passes_per_step = 2;  // accumulate 2, then reduce
  options.compression = dtrain::ddp::compression_hook(at::kHalf);
  dtrain::ddp::DistributedOptimizer optimizer(sgd, options);
  dtrain::ddp::broadcast_parameters(*model, /*root=*/0);     // hvd.broadcast_parameters
  dtrain::ddp::broadcast_optimizer_state(*sgd, /*root=*/0);  // hvd.broadcast_optimizer_state
}

at::Tensor sync_batch_norm(const at::Tensor& x) {
  auto bn = dtrain::ddp::SyncBatchNorm(dtrain::ddp::SyncBatchNormOptions(64).momentum(0.01));
  return bn(x);  // x: (N, C, *) -- BatchNorm1d, 2d and 3d inputs alike
}

int convert(torch::nn::Conv2d conv) {
  torch::nn::Sequential net(conv, torch::nn::BatchNorm2d(64), torch::nn::ReLU());
  return dtrain::ddp::convert_sync_batchnorm(net);  // before building the optimizer
}

void data_parallel(torch::nn::Sequential net, const at::Tensor& x) {
  dtrain::ddp::DataParallel<torch::nn::Sequential> model(net);  // every visible GPU
  dtrain::ddp::DataParallel<torch::nn::Sequential> two(
      net, dtrain::ddp::DataParallelOptions().num_devices(2).output_device(torch::kCPU));
  auto y = model(x);  // x on any device
  torch::optim::SGD opt(model.module()->parameters(), 0.1);
}

}  // namespace snippets
