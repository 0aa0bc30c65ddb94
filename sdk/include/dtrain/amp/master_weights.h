// fp32 master weights (apex's O2): the model holds float16/bfloat16
// parameters, so its forward and backward run entirely in low precision, and
// the optimizer updates float32 copies. Opt-in; autocast with fp32
// parameters (O1) is the default recommendation.
//
// When to use it: the model's memory or bandwidth matters more than the
// extra copy (weights, activations and gradients are half size), or the
// model must run in low precision without autocast. Why the fp32 copy: an
// update lr * grad smaller than half a unit in the last place of a bf16
// weight (2^-8 relative) is lost when added in bf16; the fp32 copy keeps
// accumulating such updates.
//
//   model->to(at::kHalf);
//   dtrain::amp::MasterWeights master(model->parameters());
//   torch::optim::SGD optimizer(master.parameters(), torch::optim::SGDOptions(0.01));
//   dtrain::amp::GradScaler scaler;                  // fp16: scale; bf16: optional
//   ...
//   scaler.scale(loss).backward();                    // fp16 gradients on the model
//   master.copy_grads_to_master();                    // -> fp32 gradients on the copies
//   scaler.step(optimizer);                           // unscale, check, step the copies
//   scaler.update();
//   master.copy_master_to_model();                    // round the copies into the model
//   master.zero_grad();
//
// Checkpoints should save the master copies (parameters()), not the
// rounded model. Not thread-safe.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace dtrain::amp {

class MasterWeights {
 public:
  // `model_parameters`: floating tensors (shared with the model, not
  // copied); each gets a float32 leaf copy on its device that requires grad.
  // Throws dtrain::Error for a non-floating parameter.
  explicit MasterWeights(std::vector<at::Tensor> model_parameters);

  // The float32 copies, in the order given: give these to the optimizer.
  const std::vector<at::Tensor>& parameters() const { return master_; }
  const std::vector<at::Tensor>& model_parameters() const { return model_; }

  // master.grad = float32(model.grad); a model parameter without a gradient
  // leaves its copy without one (so the optimizer skips it).
  void copy_grads_to_master();
  // model = master, rounded to the model's dtype.
  void copy_master_to_model();
  // Drops the gradients of both the model and the copies.
  void zero_grad();

 private:
  std::vector<at::Tensor> model_;
  std::vector<at::Tensor> master_;
};

}  // namespace dtrain::amp
