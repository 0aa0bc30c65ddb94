// The C++ of docs/amp.md, compiled with the project so the guide's code
// cannot drift from the API (lint.doc_samples checks the guide shows these
// lines). Not run: the examples and tests run the same calls.
#include <torch/torch.h>

#include "dtrain/amp/autocast.h"
#include "dtrain/amp/grad_scaler.h"
#include "dtrain/amp/master_weights.h"

namespace snippets {

void autocast_regions() {
  {
    dtrain::amp::AutocastGuard autocast(at::kCPU);  // bf16 on CPU
  }
  {
    dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCUDA));  // fp16 on CUDA
  }
  {
    dtrain::amp::AutocastGuard autocast(
        dtrain::amp::AutocastOptions(at::kCUDA).dtype(at::kBFloat16));  // bf16 on CUDA
  }
  dtrain::amp::AutocastGuard fp32(dtrain::amp::AutocastOptions(at::kCPU).enabled(false));
}

void train_with_loss_scaling(torch::nn::Linear model, torch::optim::Optimizer& optimizer,
                             const at::Tensor& x, const at::Tensor& y, int steps) {
  dtrain::amp::GradScaler scaler;  // init 65536, growth x2, backoff x0.5, interval 2000
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    at::Tensor loss;
    {
      dtrain::amp::AutocastGuard autocast(at::kCUDA);
      loss = torch::mse_loss(model(x), y);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);  // optional: to clip
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);  // false: skipped
    scaler.update();
  }
}

void train_on_master_weights(torch::nn::Linear model, const at::Tensor& x, const at::Tensor& y) {
  model->to(at::kHalf);                                    // or kBFloat16
  dtrain::amp::MasterWeights master(model->parameters());  // fp32 copies
  torch::optim::SGD optimizer(master.parameters(), torch::optim::SGDOptions(0.01));
  dtrain::amp::GradScaler scaler;
  const at::Tensor loss = torch::mse_loss(model(x.to(at::kHalf)).to(at::kFloat), y);
  scaler.scale(loss).backward();  // low-precision gradients on the model
  master.copy_grads_to_master();  // fp32 gradients on the copies (inf/NaN kept)
  scaler.step(optimizer);         // unscale, check, step the copies
  scaler.update();
  master.copy_master_to_model();  // round the copies into the model
  master.zero_grad();
}

}  // namespace snippets
