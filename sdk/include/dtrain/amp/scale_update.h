// The loss-scale state machine of GradScaler::update(), as a pure function
// so that its rules can be read and tested on their own.
//
// torch.amp's rules (hysteresis 1, no bounds), which LibTorch's fused
// at::_amp_update_scale_ implements:
//   - an overflow (inf/NaN gradient) multiplies the scale by backoff_factor
//     and restarts the count of good steps;
//   - growth_interval good steps in a row multiply it by growth_factor
//     (only when the result is finite) and restart the count.
// dtrain's additions, off by default:
//   - hysteresis N: an overflow always skips its step, but only backs the
//     scale off once N overflows have happened since the scale last grew (or
//     since the start); from then on every overflow backs off, until the next
//     growth refills the allowance (Megatron-LM's DynamicGradScaler).
//   - min_scale / max_scale: a backoff never goes below min_scale, a growth
//     never above max_scale.
#pragma once

#include <cstdint>
#include <optional>

namespace dtrain::amp {

struct ScaleRules {
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t hysteresis = 1;
  std::optional<double> min_scale{};
  std::optional<double> max_scale{};

  // True when the rules are exactly torch.amp's (the fused kernel applies).
  bool is_torch_default() const { return hysteresis == 1 && !min_scale && !max_scale; }
};

struct ScaleState {
  // float32, like the scale tensor: every result is rounded as the kernel rounds it.
  float scale = 65536.0f;
  // Good steps in a row since the last overflow or growth.
  int64_t growth_tracker = 0;
  // Overflows still tolerated before backing off (starts at hysteresis).
  int64_t hysteresis_tracker = 1;

  bool operator==(const ScaleState&) const = default;
};

ScaleState next_scale_state(const ScaleState& state, bool found_inf, const ScaleRules& rules);

}  // namespace dtrain::amp
