#include "sync_batch_norm_function.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "dtrain/util/errors.h"

namespace dtrain::ddp::detail {
namespace {

// Every dimension but the channel's: the ones a channel's statistics sum over.
std::vector<int64_t> reduced_dims(const at::Tensor& input) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) {
    dims.push_back(d);
  }
  return dims;
}

// A (C) tensor shaped (1, C, 1, ...) to broadcast against an (N, C, *) input.
at::Tensor per_channel(const at::Tensor& values, const at::Tensor& input) {
  std::vector<int64_t> shape(static_cast<std::size_t>(input.dim()), 1);
  shape[1] = values.size(0);
  return values.reshape(shape);
}

// Statistics and gradients of fp16/bf16 inputs are computed in fp32, as
// ATen's batch_norm does; other inputs in their own precision.
at::ScalarType compute_type(const at::Tensor& input) {
  return at::isReducedFloatingType(input.scalar_type()) ? at::kFloat : input.scalar_type();
}

// Note [SyncBatchNorm statistics]
// Each rank sends n_r, n_r * mean_r and n_r * (var_r + mean_r^2) (its sum
// and sum of squares) in float64, one all_reduce for the lot; the global
// variance is then sumsq / N - mean^2. The per-rank mean and variance come
// from ATen's two-pass var_mean, and the cancellation in the global formula
// happens in float64, so the result agrees with a BatchNorm over the
// concatenated batch to float32 rounding. (PyTorch all-gathers mean,
// invstd and count instead; the sums need one collective of fixed size.)
struct GlobalStats {
  at::Tensor mean;    // (C), compute type
  at::Tensor invstd;  // (C), compute type
  at::Tensor var;     // (C), biased, float64
  double count = 0;   // values per channel over the group
};

// Every rank's channel count must be this rank's before the statistics'
// all_reduce, whose size is 2 * channels + 1: Gloo aborts the process
// (gloo::EnforceNotMet, not an exception) when the sizes differ. This is
// the one extra collective of the forward, 8 bytes per rank; it cannot
// travel in the all_reduce, whose size is what is in question.
void check_same_channels(const at::Tensor& input, const dist::ProcessGroupPtr& group) {
  const int64_t channels = input.size(1);
  const auto options = input.options().dtype(at::kLong);
  const at::Tensor mine = at::full({1}, channels, options);
  std::vector<at::Tensor> all(static_cast<std::size_t>(group->size()));
  for (auto& t : all) {
    t = at::empty({1}, options);
  }
  dist::issue_and_wait([&] { return group->all_gather(all, mine); });
  const at::Tensor gathered = at::cat(all).cpu();
  const int64_t* data = gathered.data_ptr<int64_t>();
  const std::vector<int64_t> counts(data, data + gathered.numel());
  if (std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; })) {
    return;
  }
  std::ostringstream listed;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    listed << (r == 0 ? "" : ", ") << "rank " << r << " has " << counts[r];
  }
  throw Error(::dtrain::detail::concat(
      "SyncBatchNorm: expected the same number of channels (dimension 1 of the input) on every "
      "rank, got ",
      listed.str(), " (this is rank ", group->rank(), " of ", group->size(),
      "); every rank must run the same model"));
}

GlobalStats global_stats(const at::Tensor& input, double eps, const dist::ProcessGroupPtr& group) {
  check_same_channels(input, group);
  const int64_t channels = input.size(1);
  const int64_t local_count = channels == 0 ? 0 : input.numel() / channels;
  const auto f64 = input.options().dtype(at::kDouble);
  at::Tensor packed = at::zeros({2 * channels + 1}, f64);
  if (local_count > 0) {
    auto [var, mean] = at::var_mean(input.to(compute_type(input)), reduced_dims(input),
                                    /*correction=*/0, /*keepdim=*/false);
    const at::Tensor mean64 = mean.to(at::kDouble);
    packed.slice(0, 0, channels).copy_(mean64 * local_count);
    packed.slice(0, channels, 2 * channels)
        .copy_((var.to(at::kDouble) + mean64 * mean64) * local_count);
    packed[2 * channels].fill_(static_cast<double>(local_count));
  }
  dist::issue_and_wait([&] { return group->all_reduce(packed); });
  GlobalStats stats;
  stats.count = packed[2 * channels].item<double>();
  DTRAIN_CHECK(stats.count > 1, "SyncBatchNorm: expected more than 1 value per channel when ",
               "training over the group, got ", stats.count, " (input of size ", input.sizes(),
               " on rank ", group->rank(), " of ", group->size(), ")");
  const at::Tensor mean64 = packed.slice(0, 0, channels) / stats.count;
  stats.var =
      (packed.slice(0, channels, 2 * channels) / stats.count - mean64 * mean64).clamp_min(0);
  stats.mean = mean64.to(compute_type(input));
  stats.invstd = (stats.var + eps).rsqrt().to(compute_type(input));
  return stats;
}

void update_running_stats(const at::Tensor& running_mean, const at::Tensor& running_var,
                          const GlobalStats& stats, double momentum) {
  if (running_mean.defined()) {
    running_mean.mul_(1 - momentum).add_(stats.mean.to(running_mean.scalar_type()), momentum);
  }
  if (running_var.defined()) {
    // The running variance is unbiased, as in BatchNorm.
    const at::Tensor unbiased = stats.var * (stats.count / (stats.count - 1));
    running_var.mul_(1 - momentum).add_(unbiased.to(running_var.scalar_type()), momentum);
  }
}

// The backward of sync_batch_norm: gradients for (input, weight, bias).
class SyncBatchNormBackward : public torch::autograd::Node {
 public:
  SyncBatchNormBackward(const at::Tensor& input, const at::Tensor& weight, GlobalStats stats,
                        dist::ProcessGroupPtr group)
      : input_(input, /*is_output=*/false),
        weight_(weight, /*is_output=*/false),
        mean_(std::move(stats.mean)),
        invstd_(std::move(stats.invstd)),
        count_(stats.count),
        group_(std::move(group)) {}

  std::string name() const override { return "dtrain::ddp::SyncBatchNormBackward"; }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    input_.reset_data();
    weight_.reset_data();
  }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const at::Tensor input = input_.unpack();
    const at::Tensor weight = weight_.unpack();
    const auto type = compute_type(input);
    // An unused output still takes part in the collective below, or the
    // other ranks would wait for this one.
    const at::Tensor grad_out =
        grads[0].defined() ? grads[0].to(type) : at::zeros_like(input, input.options().dtype(type));
    const auto dims = reduced_dims(input);
    const at::Tensor xmu = input.to(type) - per_channel(mean_, input);
    at::Tensor sum_dy = grad_out.sum(dims);
    at::Tensor sum_dy_xmu = (grad_out * xmu).sum(dims);

    torch::autograd::variable_list result(3);
    // weight and bias: this rank's share only (see sync_batch_norm.h).
    if (should_compute_output(1)) {
      result[1] = (sum_dy_xmu * invstd_).to(weight.scalar_type());
    }
    if (should_compute_output(2)) {
      result[2] = sum_dy.to(weight.defined() ? weight.scalar_type() : input.scalar_type());
    }
    if (should_compute_output(0)) {
      const int64_t channels = input.size(1);
      at::Tensor packed = at::cat({sum_dy, sum_dy_xmu});
      dist::issue_and_wait([&] { return group_->all_reduce(packed); });
      const at::Tensor mean_dy = packed.slice(0, 0, channels) / count_;
      const at::Tensor mean_dy_xmu = packed.slice(0, channels, 2 * channels) / count_;
      at::Tensor scale = invstd_;
      if (weight.defined()) {
        scale = scale * weight.to(type);
      }
      // d/dx of w * (x - mean) * invstd + b with mean and invstd over the group.
      const at::Tensor grad_input = (grad_out - per_channel(mean_dy, input) -
                                     xmu * per_channel(invstd_ * invstd_ * mean_dy_xmu, input)) *
                                    per_channel(scale, input);
      result[0] = grad_input.to(input.scalar_type());
    }
    return result;
  }

 private:
  // Locked with Node::mutex_, as ATen's generated backward nodes do.
  torch::autograd::SavedVariable input_;
  torch::autograd::SavedVariable weight_;
  at::Tensor mean_;
  at::Tensor invstd_;
  double count_;
  dist::ProcessGroupPtr group_;
};

}  // namespace

at::Tensor sync_batch_norm(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias, const at::Tensor& running_mean,
                           const at::Tensor& running_var, double eps, double momentum,
                           const dist::ProcessGroupPtr& group) {
  DTRAIN_INTERNAL_ASSERT(group != nullptr);
  at::Tensor output;
  GlobalStats stats;
  {
    // The graph is built by hand below: one node for the whole function.
    at::NoGradGuard no_grad;
    stats = global_stats(input, eps, group);
    update_running_stats(running_mean, running_var, stats, momentum);
    at::Tensor scale = stats.invstd;
    if (weight.defined()) {
      scale = scale * weight.to(scale.scalar_type());
    }
    at::Tensor y = (input.to(stats.mean.scalar_type()) - per_channel(stats.mean, input)) *
                   per_channel(scale, input);
    if (bias.defined()) {
      y = y + per_channel(bias.to(y.scalar_type()), input);
    }
    output = y.to(input.scalar_type());
  }
  if (torch::autograd::compute_requires_grad(input, weight, bias)) {
    auto node = std::make_shared<SyncBatchNormBackward>(input, weight, stats, group);
    node->set_next_edges(torch::autograd::collect_next_edges(input, weight, bias));
    torch::autograd::set_history(output, node);
  }
  return output;
}

}  // namespace dtrain::ddp::detail
