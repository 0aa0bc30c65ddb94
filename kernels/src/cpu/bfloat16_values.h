// Internal: bfloat16 values in the CPU kernels' vectorised row loops. A
// bfloat16 is the top half of a float32, so widening is a shift, and the
// loops that read bfloat16 rows compute in float32. These are plain
// integer operations that GCC vectorises, where c10::BFloat16's own
// conversions branch on NaN.
//
// RowValues<Storage> tells a loop how to read and write its rows: float and
// double compute in their own type; c10::BFloat16 computes in float32 and
// rounds its results to nearest even as torch does (NaN becomes 0x7FC0).
#pragma once

#include <c10/util/BFloat16.h>

#include <bit>
#include <cstdint>

#define DTRAIN_BF16_INLINE inline __attribute__((always_inline))

namespace dtrain::kernels::detail {

template <typename Storage>
struct RowValues {
  using compute_type = Storage;
  static DTRAIN_BF16_INLINE Storage load(Storage value) { return value; }
  static DTRAIN_BF16_INLINE Storage round(Storage value) { return value; }
};

template <>
struct RowValues<c10::BFloat16> {
  using compute_type = float;
  static DTRAIN_BF16_INLINE float load(c10::BFloat16 value) {
    return std::bit_cast<float>(static_cast<uint32_t>(value.x) << 16);
  }
  // Round to nearest, ties to even; NaN to the canonical 0x7FC0.
  static DTRAIN_BF16_INLINE c10::BFloat16 round(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    return c10::BFloat16(static_cast<uint16_t>(value != value ? 0x7FC0u : rounded),
                         c10::BFloat16::from_bits());
  }
};

}  // namespace dtrain::kernels::detail

#undef DTRAIN_BF16_INLINE
