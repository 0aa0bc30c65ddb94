// Internal: what the CPU running the kernels can do, asked once.
#pragma once

namespace dtrain::kernels::detail {

#if defined(__x86_64__)
// Whether this CPU runs AVX2 (the kernels' vector paths).
inline bool cpu_has_avx2() {
  static const bool supported = __builtin_cpu_supports("avx2");
  return supported;
}
#endif

}  // namespace dtrain::kernels::detail
