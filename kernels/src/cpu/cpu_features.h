// Internal: what the CPU running the kernels can do, asked once.
#pragma once

namespace dtrain::kernels::detail {

#if defined(__x86_64__)
// Whether this CPU runs AVX2 (the kernels' vector paths).
inline bool cpu_has_avx2() {
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported;
}

// Whether this CPU runs the AVX-512 subsets the kernels' widest vector
// paths are compiled for (F, BW, VL, DQ: Skylake-SP and later, Zen 4).
inline bool cpu_has_avx512() {
  static const bool supported =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return supported;
}
#endif

}  // namespace dtrain::kernels::detail
