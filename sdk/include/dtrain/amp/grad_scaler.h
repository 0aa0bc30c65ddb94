// GradScaler: dynamic loss scaling for float16 training, with torch.amp's
// semantics and defaults (torch.amp.GradScaler), in C++.
//
//   dtrain::amp::GradScaler scaler;                   // 65536, x2 / x0.5, interval 2000
//   for (auto& [x, y] : batches) {
//     optimizer.zero_grad();
//     at::Tensor loss;
//     {
//       dtrain::amp::AutocastGuard autocast(dtrain::amp::AutocastOptions(at::kCUDA));
//       loss = loss_fn(model(x), y);
//     }
//     scaler.scale(loss).backward();
//     scaler.unscale_(optimizer);                     // optional: to clip true gradients
//     torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(optimizer);                         // skipped on inf/NaN gradients
//     scaler.update();
//   }
//
// Per iteration, for each optimizer: unscale_ at most once, then step at
// most once; update() once after every optimizer has stepped. Calling them
// out of order throws dtrain::Error saying which call was early or repeated.
// The scale lives on the device of the first loss passed to scale(); step()
// reads the inf/NaN flag on the host (one synchronisation, as in torch.amp).
//
// Beyond torch.amp (see scale_update.h): min/max bounds on the scale,
// hysteresis, and a distributed mode: with a process group, unscale_
// all-reduces the inf/NaN flag with MAX over the group, so every rank skips
// the same steps and keeps the same scale even when gradients are not
// all-reduced (local steps, Horovod-style optimizers). Every rank of the
// group must then call unscale_/step for the same optimizers in the same
// order (it is a collective).
//
// A disabled scaler (enabled(false)) is a pass-through: scale() returns the
// loss, step() always steps, get_scale() is 1. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include "dtrain/amp/scale_update.h"
#include "dtrain/dist/process_group.h"

namespace torch::optim {
class Optimizer;
}
namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace dtrain::amp {

struct GradScalerOptions {
  TORCH_ARG(double, init_scale) = 65536.0;
  TORCH_ARG(double, growth_factor) = 2.0;   // > 1
  TORCH_ARG(double, backoff_factor) = 0.5;  // in (0, 1)
  TORCH_ARG(int64_t, growth_interval) = 2000;
  TORCH_ARG(bool, enabled) = true;
  // Extensions (scale_update.h); the defaults give torch.amp's behaviour.
  TORCH_ARG(int64_t, hysteresis) = 1;
  TORCH_ARG(std::optional<double>, min_scale) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_scale) = std::nullopt;
  // Non-null: skip decisions agreed over this group (found-inf MAX-reduced).
  TORCH_ARG(dist::ProcessGroupPtr, process_group) = nullptr;
};

// What a checkpoint keeps; the first five fields are torch.amp's state_dict.
struct GradScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;
  int64_t hysteresis_tracker = 1;
};

class GradScaler {
 public:
  // Throws dtrain::Error naming the first option out of range.
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (the scale is created on loss's device the first time).
  at::Tensor scale(const at::Tensor& loss);
  std::vector<at::Tensor> scale(const std::vector<at::Tensor>& losses);

  // Divides the gradients of `optimizer`'s parameters by the scale in place
  // and records whether any is inf/NaN (with a process group: on any rank).
  // Throws for float16 gradients (keep fp32 parameters, or see
  // MasterWeights) and for sparse gradients.
  void unscale_(torch::optim::Optimizer& optimizer);

  // unscale_ (unless done this iteration), then optimizer.step() when every
  // gradient is finite. Returns whether the optimizer stepped.
  bool step(torch::optim::Optimizer& optimizer);

  // Updates the scale from the inf/NaN flags of this iteration's step()s, or
  // sets it to `new_scale` (a normal float32 value: the scale is a float32
  // tensor). Ends the iteration.
  void update(std::optional<double> new_scale = std::nullopt);

  // The current scale (a host read: synchronises with the device); 1 when disabled.
  double get_scale() const;
  int64_t growth_tracker() const;
  bool is_enabled() const { return options_.enabled(); }
  const GradScalerOptions& options() const { return options_; }

  // nullopt when disabled (torch.amp returns an empty dict). Call after
  // update(), not in the middle of an iteration.
  std::optional<GradScalerState> state_dict() const;
  // No-op when disabled. Also adopts the state's factors and interval.
  // Throws dtrain::Error naming a field out of range.
  void load_state_dict(const GradScalerState& state);

  // state_dict() in a LibTorch archive, keys as in torch.amp ("scale",
  // "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
  // plus "hysteresis_tracker"; load throws dtrain::Error when a key is missing.
  // A disabled scaler saves nothing (torch.amp's empty dict), so a
  // checkpoint loop need not ask whether AMP is on; an enabled scaler
  // loading such an archive throws, saying so (as torch.amp does).
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct OptimizerState {
    Stage stage = Stage::kReady;
    std::vector<at::Tensor> found_inf;  // one per device holding gradients
  };

  void check_started(const char* call) const;
  ScaleRules rules() const;
  // found_inf of every device summed on the scale's device, then MAX-reduced over the group.
  at::Tensor agree_on_found_inf(const std::vector<at::Tensor>& per_device) const;

  GradScalerOptions options_;
  at::Tensor scale_;           // 0-dim float32, created by the first scale()
  at::Tensor growth_tracker_;  // 0-dim int32, beside scale_
  double init_scale_;
  int64_t init_growth_tracker_ = 0;
  int64_t hysteresis_tracker_;
  std::unordered_map<const torch::optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace dtrain::amp
