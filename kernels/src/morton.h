// Morton (Z-order) codes, shared by the CPU and CUDA kernels that order a
// cloud in space (FPS in spatial chunks).
#pragma once

#include <cstdint>

#include "host_device.h"

namespace dtrain::kernels::detail {

// The low 10 bits of v spread to every third bit: interleaving three of
// these (shifted by 0, 1, 2) gives a 30-bit Morton code.
DTRAIN_HOST_DEVICE constexpr std::uint32_t spread_bits(std::uint32_t v) {
  v &= 0x3ffu;
  v = (v | (v << 16)) & 0x030000ffu;
  v = (v | (v << 8)) & 0x0300f00fu;
  v = (v | (v << 4)) & 0x030c30c3u;
  v = (v | (v << 2)) & 0x09249249u;
  return v;
}

}  // namespace dtrain::kernels::detail
