// Element types and reduction functions for the Gloo backend. Half and
// bfloat16 are reduced in float and rounded back (round to nearest even),
// as torch does; Gloo's own helpers know no bfloat16.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <type_traits>

#include "gloo_api.h"

namespace dtrain::dist::gloo_api {

struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

inline float to_float(Half h) {
  const std::uint32_t sign = (h.bits & 0x8000u) << 16;
  std::uint32_t exponent = (h.bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = h.bits & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf, NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
  } else {
    bits = sign;
  }
  return std::bit_cast<float>(bits);
}

inline Half to_half(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return {static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u))};
  }
  if (abs >= 0x477FF000u) {  // rounds to beyond the largest half
    return {static_cast<std::uint16_t>(sign | 0x7C00u)};
  }
  if (abs < 0x38800000u) {  // subnormal half or zero
    const auto magnitude = std::bit_cast<float>(abs);
    // Scale so the subnormal's units land on integers, then round to nearest even.
    const float scaled = magnitude * 16777216.0f;  // 2^24
    auto units = static_cast<std::uint32_t>(scaled);
    const float remainder = scaled - static_cast<float>(units);
    if (remainder > 0.5f || (remainder == 0.5f && (units & 1u))) {
      ++units;
    }
    return {static_cast<std::uint16_t>(sign | units)};
  }
  std::uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);  // round to nearest even
  return {static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
}

inline float to_float(BFloat16 b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b.bits) << 16);
}

inline BFloat16 to_bfloat16(float f) {
  auto x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
    return {static_cast<std::uint16_t>((x >> 16) | 0x40u)};  // quiet NaN
  }
  x += 0x7FFFu + ((x >> 16) & 1u);
  return {static_cast<std::uint16_t>(x >> 16)};
}

template <Reduce op, typename T>
inline T combine(T a, T b) {
  if constexpr (op == Reduce::kSum) {
    return a + b;
  } else if constexpr (op == Reduce::kProduct) {
    return a * b;
  } else if constexpr (op == Reduce::kMin) {
    return b < a ? b : a;
  } else {
    return b > a ? b : a;
  }
}

// One loop per (type, op) with the op fixed at compile time, so the
// compiler vectorises it: this is the inner loop of every Gloo reduction.
template <typename T, Reduce op>
void reduce_loop(void* out, const void* a, const void* b, std::size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, Half>) {
      o[i] = to_half(combine<op>(to_float(x[i]), to_float(y[i])));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      o[i] = to_bfloat16(combine<op>(to_float(x[i]), to_float(y[i])));
    } else {
      o[i] = combine<op>(x[i], y[i]);
    }
  }
}

// The function Gloo calls to combine two buffers of n elements.
template <typename T>
std::function<void(void*, const void*, const void*, std::size_t)> reduce_function(Reduce op) {
  switch (op) {
    case Reduce::kSum:
      return &reduce_loop<T, Reduce::kSum>;
    case Reduce::kProduct:
      return &reduce_loop<T, Reduce::kProduct>;
    case Reduce::kMin:
      return &reduce_loop<T, Reduce::kMin>;
    case Reduce::kMax:
      return &reduce_loop<T, Reduce::kMax>;
  }
  throw std::invalid_argument("unknown reduce op");
}

// Calls body.template operator()<T>(T*) with the C++ type of dtype.
template <typename Body>
void visit_dtype(DType dtype, Body&& body) {
  switch (dtype) {
    case DType::kFloat32:
      return body(static_cast<float*>(nullptr));
    case DType::kFloat64:
      return body(static_cast<double*>(nullptr));
    case DType::kFloat16:
      return body(static_cast<Half*>(nullptr));
    case DType::kBFloat16:
      return body(static_cast<BFloat16*>(nullptr));
    case DType::kInt32:
      return body(static_cast<std::int32_t*>(nullptr));
    case DType::kInt64:
      return body(static_cast<std::int64_t*>(nullptr));
    case DType::kUInt8:
      return body(static_cast<std::uint8_t*>(nullptr));
  }
  throw std::invalid_argument("unknown dtype");
}

}  // namespace dtrain::dist::gloo_api
