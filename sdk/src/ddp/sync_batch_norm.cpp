#include "dtrain/ddp/sync_batch_norm.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/batchnorm.h>
#include <torch/nn/init.h>

#include <ostream>

#include "dtrain/dist/init.h"
#include "dtrain/util/errors.h"
#include "sync_batch_norm_function.h"

namespace dtrain::ddp {

SyncBatchNormImpl::SyncBatchNormImpl(SyncBatchNormOptions options_) : options(std::move(options_)) {
  reset();
}

SyncBatchNormImpl::SyncBatchNormImpl(SyncBatchNormOptions options_, Adopted adopted)
    : options(std::move(options_)), adopted_(std::move(adopted)) {
  reset();
  // clone() calls reset() on a copy of this module: it must create fresh
  // tensors, not register these again.
  adopted_.reset();
}

void SyncBatchNormImpl::reset() {
  DTRAIN_CHECK(options.num_features() > 0, "SyncBatchNorm: num_features must be positive, got ",
               options.num_features());
  DTRAIN_CHECK(options.eps() > 0, "SyncBatchNorm: eps must be positive, got ", options.eps());
  DTRAIN_CHECK(!options.momentum() || (*options.momentum() >= 0 && *options.momentum() <= 1),
               "SyncBatchNorm: momentum must be in [0, 1] or nullopt, got ", *options.momentum());
  const int64_t c = options.num_features();
  // Takes the adopted tensor when there is one, else makes a new one.
  const auto pick = [this](at::Tensor Adopted::*field, auto make) {
    return adopted_ ? (*adopted_).*field : make();
  };
  if (options.affine()) {
    weight = register_parameter("weight", pick(&Adopted::weight, [c] { return at::ones({c}); }));
    bias = register_parameter("bias", pick(&Adopted::bias, [c] { return at::zeros({c}); }));
  } else {
    weight = register_parameter("weight", at::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", at::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean",
                                   pick(&Adopted::running_mean, [c] { return at::zeros({c}); }));
    running_var =
        register_buffer("running_var", pick(&Adopted::running_var, [c] { return at::ones({c}); }));
    num_batches_tracked = register_buffer(
        "num_batches_tracked", pick(&Adopted::num_batches_tracked,
                                    [] { return at::zeros({}, at::TensorOptions(at::kLong)); }));
  } else {
    running_mean = register_buffer("running_mean", at::Tensor());
    running_var = register_buffer("running_var", at::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", at::Tensor());
  }
  if (adopted_) {
    const auto check = [c](const at::Tensor& t, const char* name) {
      DTRAIN_CHECK(!t.defined() || (t.dim() == 1 && t.size(0) == c), "SyncBatchNorm: adopted ",
                   name, " must have shape [", c, "], got ", t.sizes());
    };
    check(weight, "weight");
    check(bias, "bias");
    check(running_mean, "running_mean");
    check(running_var, "running_var");
  }
}

void SyncBatchNormImpl::reset_running_stats() {
  if (options.track_running_stats()) {
    at::NoGradGuard no_grad;
    running_mean.zero_();
    running_var.fill_(1);
    num_batches_tracked.zero_();
  }
}

void SyncBatchNormImpl::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    torch::nn::init::ones_(weight);
    torch::nn::init::zeros_(bias);
  }
}

dist::ProcessGroupPtr SyncBatchNormImpl::group() const {
  if (options.process_group()) {
    return options.process_group();
  }
  return dist::is_initialized() ? dist::default_group() : nullptr;
}

at::Tensor SyncBatchNormImpl::forward(const at::Tensor& input) {
  DTRAIN_CHECK(input.dim() >= 2,
               "SyncBatchNorm: expected an input of at least 2 dimensions (N, C, ",
               "*), got one of size ", input.sizes());
  DTRAIN_CHECK(input.size(1) == options.num_features(), "SyncBatchNorm: expected ",
               options.num_features(), " channels in dimension 1 of the input, got size ",
               input.sizes());
  // The running-average factor exactly as torch::nn::BatchNorm computes it.
  double factor = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
    num_batches_tracked += 1;
    if (!options.momentum()) {
      factor = 1.0 / num_batches_tracked.item<double>();
    }
  }
  // Without running statistics even eval mode normalises with the batch's.
  const bool batch_stats = is_training() || !options.track_running_stats();
  const dist::ProcessGroupPtr pg = is_training() ? group() : nullptr;
  if (!batch_stats || pg == nullptr || pg->size() == 1) {
    return torch::nn::functional::detail::batch_norm(input, running_mean, running_var, weight, bias,
                                                     batch_stats, factor, options.eps());
  }
  return detail::sync_batch_norm(input, weight, bias, running_mean, running_var, options.eps(),
                                 factor, pg);
}

void SyncBatchNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "dtrain::ddp::SyncBatchNorm(" << options.num_features()
         << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

}  // namespace dtrain::ddp
