#include "dtrain/amp/grad_scaler.h"

#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include "dtrain/util/errors.h"

namespace dtrain::amp {

namespace {

// The scale lives in a float32 tensor, and unscaling multiplies by its
// inverse: a scale outside float32's normal range would round to 0 or
// overflow to inf there, and its inverse with it, turning finite gradients
// into NaN that the inf check (made before the multiply) cannot see.
void check_scale(const char* what, double scale) {
  constexpr double kLowest = std::numeric_limits<float>::min();  // smallest normal
  constexpr double kHighest = std::numeric_limits<float>::max();
  DTRAIN_CHECK(scale >= kLowest && scale <= kHighest, what, " must be a normal float32 value, in [",
               kLowest, ", ", kHighest, "], got ", scale);
}

void check_options(const GradScalerOptions& o) {
  check_scale("GradScalerOptions: init_scale", o.init_scale());
  DTRAIN_CHECK(o.growth_factor() > 1 && std::isfinite(o.growth_factor()),
               "GradScalerOptions: growth_factor must be > 1, got ", o.growth_factor());
  DTRAIN_CHECK(o.backoff_factor() > 0 && o.backoff_factor() < 1,
               "GradScalerOptions: backoff_factor must be in (0, 1), got ", o.backoff_factor());
  DTRAIN_CHECK(o.growth_interval() > 0 && o.growth_interval() <= INT32_MAX,
               "GradScalerOptions: growth_interval must be in [1, 2^31), got ",
               o.growth_interval());
  DTRAIN_CHECK(o.hysteresis() >= 1, "GradScalerOptions: hysteresis must be >= 1, got ",
               o.hysteresis());
  if (o.min_scale()) {
    check_scale("GradScalerOptions: min_scale", *o.min_scale());
    DTRAIN_CHECK(*o.min_scale() > 0 && *o.min_scale() <= o.init_scale(),
                 "GradScalerOptions: min_scale must be in (0, init_scale = ", o.init_scale(),
                 "], got ", *o.min_scale());
  }
  if (o.max_scale()) {
    DTRAIN_CHECK(*o.max_scale() >= o.init_scale(),
                 "GradScalerOptions: max_scale must be >= init_scale = ", o.init_scale(), ", got ",
                 *o.max_scale());
  }
}

// The copy of `tensor` on `device` (the tensor itself when it is there already).
at::Tensor on_device(const at::Tensor& tensor, const c10::Device& device) {
  return tensor.device() == device ? tensor : tensor.to(device, /*non_blocking=*/true, true);
}

// Gradients of one optimizer grouped by device, then dtype: the fused
// unscale kernel takes one device and one dtype per call.
struct GradGroup {
  c10::Device device;
  std::vector<std::pair<at::ScalarType, std::vector<at::Tensor>>> by_dtype;
};

std::vector<GradGroup> group_gradients(torch::optim::Optimizer& optimizer) {
  std::vector<GradGroup> groups;
  for (auto& param_group : optimizer.param_groups()) {
    for (auto& param : param_group.params()) {
      const at::Tensor& grad = param.grad();
      if (!grad.defined()) {
        continue;
      }
      DTRAIN_CHECK(grad.scalar_type() != at::kHalf,
                   "GradScaler::unscale_: a parameter gradient is float16 (parameter shape ",
                   param.sizes(),
                   "); keep parameters in float32 under autocast, or put the optimizer on fp32 "
                   "copies with dtrain::amp::MasterWeights");
      DTRAIN_CHECK(!grad.is_sparse(), "GradScaler::unscale_: sparse gradients are not supported");
      auto group = std::find_if(groups.begin(), groups.end(),
                                [&](const GradGroup& g) { return g.device == grad.device(); });
      if (group == groups.end()) {
        groups.push_back({grad.device(), {}});
        group = std::prev(groups.end());
      }
      auto& by_dtype = group->by_dtype;
      auto bucket = std::find_if(by_dtype.begin(), by_dtype.end(),
                                 [&](const auto& b) { return b.first == grad.scalar_type(); });
      if (bucket == by_dtype.end()) {
        by_dtype.push_back({grad.scalar_type(), {}});
        bucket = std::prev(by_dtype.end());
      }
      bucket->second.push_back(grad);
    }
  }
  return groups;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : options_(std::move(options)),
      init_scale_(options_.init_scale()),
      hysteresis_tracker_(options_.hysteresis()) {
  check_options(options_);
}

ScaleRules GradScaler::rules() const {
  return {.growth_factor = options_.growth_factor(),
          .backoff_factor = options_.backoff_factor(),
          .growth_interval = options_.growth_interval(),
          .hysteresis = options_.hysteresis(),
          .min_scale = options_.min_scale(),
          .max_scale = options_.max_scale()};
}

void GradScaler::check_started(const char* call) const {
  DTRAIN_CHECK(scale_.defined(), "GradScaler::", call,
               ": no scale yet; call scale(loss) (and backward) before ", call, "()");
}

at::Tensor GradScaler::scale(const at::Tensor& loss) {
  if (!options_.enabled()) {
    return loss;
  }
  DTRAIN_CHECK(loss.defined(), "GradScaler::scale: loss is an undefined tensor");
  if (!scale_.defined()) {
    const auto on = at::TensorOptions().device(loss.device());
    scale_ = at::full({}, init_scale_, on.dtype(at::kFloat));
    growth_tracker_ = at::full({}, init_growth_tracker_, on.dtype(at::kInt));
  }
  return loss * on_device(scale_, loss.device());
}

std::vector<at::Tensor> GradScaler::scale(const std::vector<at::Tensor>& losses) {
  std::vector<at::Tensor> scaled;
  scaled.reserve(losses.size());
  for (const auto& loss : losses) {
    scaled.push_back(scale(loss));
  }
  return scaled;
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled()) {
    return;
  }
  check_started("unscale_");
  OptimizerState& state = per_optimizer_[&optimizer];
  DTRAIN_CHECK(state.stage != Stage::kUnscaled,
               "GradScaler::unscale_: already called for this optimizer since the last update()");
  DTRAIN_CHECK(state.stage != Stage::kStepped,
               "GradScaler::unscale_: called after step(); call update() first");

  at::NoGradGuard no_grad;
  // As torch.amp: the reciprocal in double, then float32.
  const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  std::vector<at::Tensor> found_inf;
  for (auto& group : group_gradients(optimizer)) {
    at::Tensor found = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(group.device));
    const at::Tensor inv = on_device(inv_scale, group.device);
    for (auto& [dtype, grads] : group.by_dtype) {
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
    }
    found_inf.push_back(found);
  }
  if (options_.process_group()) {
    // Even a rank without gradients joins the collective.
    found_inf = {agree_on_found_inf(found_inf)};
  }
  state.found_inf = std::move(found_inf);
  state.stage = Stage::kUnscaled;
}

at::Tensor GradScaler::agree_on_found_inf(const std::vector<at::Tensor>& per_device) const {
  at::Tensor combined = at::zeros({}, scale_.options().dtype(at::kFloat));
  for (const auto& found : per_device) {
    combined.add_(on_device(found, scale_.device()));
  }
  const auto& group = options_.process_group();
  // Only NCCL reduces device memory; the CPU backends get a host copy.
  const bool on_host = group->backend_name() != "nccl";
  at::Tensor flag = on_host ? combined.cpu() : combined;
  dist::issue_and_wait([&] { return group->all_reduce(flag, {.op = dist::ReduceOp::kMax}); });
  return on_host ? flag.to(scale_.device()) : flag;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled()) {
    optimizer.step();
    return true;
  }
  check_started("step");
  DTRAIN_CHECK(per_optimizer_[&optimizer].stage != Stage::kStepped,
               "GradScaler::step: already called for this optimizer since the last update()");
  if (per_optimizer_[&optimizer].stage == Stage::kReady) {
    unscale_(optimizer);
  }
  OptimizerState& state = per_optimizer_[&optimizer];
  DTRAIN_CHECK(!state.found_inf.empty(),
               "GradScaler::step: no parameter of this optimizer has a gradient; run backward on "
               "the scaled loss first");
  double found = 0;
  for (const auto& flag : state.found_inf) {
    found += flag.item<float>();
  }
  const bool stepped = found == 0;
  if (stepped) {
    optimizer.step();
  } else if (spdlog::should_log(spdlog::level::debug)) {
    // Guarded: reading the scale would be another device synchronisation.
    spdlog::debug("GradScaler: inf/NaN gradients at scale {}; optimizer step skipped",
                  scale_.item<float>());
  }
  state.stage = Stage::kStepped;
  return stepped;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled()) {
    return;
  }
  check_started("update");
  if (new_scale) {
    check_scale("GradScaler::update: new_scale", *new_scale);
    scale_.fill_(*new_scale);
  } else {
    at::Tensor found_inf = at::zeros({}, scale_.options().dtype(at::kFloat));
    bool recorded = false;
    for (const auto& [optimizer, state] : per_optimizer_) {
      for (const auto& flag : state.found_inf) {
        found_inf.add_(on_device(flag, scale_.device()));
        recorded = true;
      }
    }
    DTRAIN_CHECK(recorded,
                 "GradScaler::update: no inf checks were recorded since the last update(); call "
                 "step(optimizer) first");
    const ScaleRules scale_rules = rules();
    if (scale_rules.is_torch_default()) {
      // On the device, without a host round trip.
      at::_amp_update_scale_(scale_, growth_tracker_, found_inf, scale_rules.growth_factor,
                             scale_rules.backoff_factor, scale_rules.growth_interval);
    } else {
      const ScaleState next = next_scale_state({.scale = scale_.item<float>(),
                                                .growth_tracker = growth_tracker_.item<int>(),
                                                .hysteresis_tracker = hysteresis_tracker_},
                                               found_inf.item<float>() != 0, scale_rules);
      scale_.fill_(next.scale);
      growth_tracker_.fill_(next.growth_tracker);
      hysteresis_tracker_ = next.hysteresis_tracker;
    }
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled()) {
    return 1.0;
  }
  return scale_.defined() ? static_cast<double>(scale_.item<float>()) : init_scale_;
}

int64_t GradScaler::growth_tracker() const {
  if (!options_.enabled()) {
    return 0;
  }
  return growth_tracker_.defined() ? growth_tracker_.item<int>() : init_growth_tracker_;
}

std::optional<GradScalerState> GradScaler::state_dict() const {
  if (!options_.enabled()) {
    return std::nullopt;
  }
  return GradScalerState{.scale = get_scale(),
                         .growth_factor = options_.growth_factor(),
                         .backoff_factor = options_.backoff_factor(),
                         .growth_interval = options_.growth_interval(),
                         .growth_tracker = growth_tracker(),
                         .hysteresis_tracker = hysteresis_tracker_};
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  if (!options_.enabled()) {
    return;
  }
  GradScalerOptions adopted = options_;
  adopted.init_scale(state.scale)
      .growth_factor(state.growth_factor)
      .backoff_factor(state.backoff_factor)
      .growth_interval(state.growth_interval);
  // The bounds stay the user's; a saved scale outside them is still accepted.
  adopted.min_scale(std::nullopt).max_scale(std::nullopt);
  check_options(adopted);
  DTRAIN_CHECK(state.growth_tracker >= 0 && state.growth_tracker < state.growth_interval,
               "GradScaler::load_state_dict: growth_tracker must be in [0, growth_interval = ",
               state.growth_interval, "), got ", state.growth_tracker);
  DTRAIN_CHECK(state.hysteresis_tracker >= 0 && state.hysteresis_tracker <= options_.hysteresis(),
               "GradScaler::load_state_dict: hysteresis_tracker must be in [0, hysteresis = ",
               options_.hysteresis(), "], got ", state.hysteresis_tracker);
  options_.growth_factor(state.growth_factor)
      .backoff_factor(state.backoff_factor)
      .growth_interval(state.growth_interval);
  init_scale_ = state.scale;
  init_growth_tracker_ = state.growth_tracker;
  hysteresis_tracker_ = state.hysteresis_tracker;
  if (scale_.defined()) {
    scale_.fill_(state.scale);
    growth_tracker_.fill_(state.growth_tracker);
  }
}

void GradScaler::save(torch::serialize::OutputArchive& archive) const {
  const auto state = state_dict();
  if (!state.has_value()) {
    return;  // disabled: nothing, as torch.amp's state_dict() is {}
  }
  archive.write("scale", c10::IValue(state->scale));
  archive.write("growth_factor", c10::IValue(state->growth_factor));
  archive.write("backoff_factor", c10::IValue(state->backoff_factor));
  archive.write("growth_interval", c10::IValue(state->growth_interval));
  archive.write("_growth_tracker", c10::IValue(state->growth_tracker));
  archive.write("hysteresis_tracker", c10::IValue(state->hysteresis_tracker));
}

void GradScaler::load(torch::serialize::InputArchive& archive) {
  if (!options_.enabled()) {
    return;
  }
  c10::IValue probe;
  DTRAIN_CHECK(archive.try_read("scale", probe),
               "GradScaler::load: the archive holds no GradScaler state (no key 'scale'), "
               "possibly because it was saved from a disabled GradScaler");
  auto read = [&](const char* key) {
    c10::IValue value;
    DTRAIN_CHECK(archive.try_read(key, value), "GradScaler::load: the archive has no key '", key,
                 "'");
    return value;
  };
  // A number of the wrong kind (a tensor, a string, a float where a count
  // belongs) is named here rather than failing inside c10::IValue.
  auto read_double = [&](const char* key) {
    const c10::IValue value = read(key);
    DTRAIN_CHECK(value.isDouble() || value.isInt(), "GradScaler::load: '", key,
                 "' must be a number, got a ", value.tagKind());
    return value.isDouble() ? value.toDouble() : static_cast<double>(value.toInt());
  };
  auto read_int = [&](const char* key) {
    const c10::IValue value = read(key);
    DTRAIN_CHECK(value.isInt(), "GradScaler::load: '", key, "' must be an integer, got a ",
                 value.tagKind());
    return value.toInt();
  };
  load_state_dict({.scale = read_double("scale"),
                   .growth_factor = read_double("growth_factor"),
                   .backoff_factor = read_double("backoff_factor"),
                   .growth_interval = read_int("growth_interval"),
                   .growth_tracker = read_int("_growth_tracker"),
                   .hysteresis_tracker = read_int("hysteresis_tracker")});
}

}  // namespace dtrain::amp
