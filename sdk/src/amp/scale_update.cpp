#include "dtrain/amp/scale_update.h"

#include <algorithm>
#include <cmath>

namespace dtrain::amp {

// Arithmetic as in LibTorch's CPU kernel (_amp_update_scale_cpu_): the
// product is taken in double and rounded to float32, so the host path and
// the fused kernel agree bit for bit.
ScaleState next_scale_state(const ScaleState& state, bool found_inf, const ScaleRules& rules) {
  ScaleState next = state;
  if (found_inf) {
    next.growth_tracker = 0;
    next.hysteresis_tracker = std::max<int64_t>(state.hysteresis_tracker - 1, 0);
    if (next.hysteresis_tracker == 0) {
      double backed_off = static_cast<double>(state.scale) * rules.backoff_factor;
      if (rules.min_scale) {
        backed_off = std::max(backed_off, *rules.min_scale);
      }
      next.scale = static_cast<float>(backed_off);
    }
    return next;
  }
  const int64_t successful = state.growth_tracker + 1;
  if (successful != rules.growth_interval) {  // `!=` as the kernel has it
    next.growth_tracker = successful;
    return next;
  }
  next.growth_tracker = 0;
  next.hysteresis_tracker = rules.hysteresis;
  double grown = static_cast<double>(state.scale) * rules.growth_factor;
  if (rules.max_scale) {
    grown = std::min(grown, *rules.max_scale);
  }
  const auto grown_f = static_cast<float>(grown);
  if (std::isfinite(grown_f)) {
    next.scale = grown_f;
  }
  return next;
}

}  // namespace dtrain::amp
