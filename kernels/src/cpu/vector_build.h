// Internal: the vector builds of the CPU kernels' loops. A kernel whose
// loops GCC vectorises compiles them once per build, in functions marked
// with the build's target attribute, and runs the widest build the CPU has.
// Every build computes the same bits: the loops are elementwise across
// vector lanes, so only how many lanes run at once differs.
#pragma once

#include <stdexcept>
#include <string>

#include "../kernel_choice.h"
#include "cpu_features.h"

// For a function holding a build's loops (the loops themselves are
// always-inlined templates, which compile as their caller does).
#define DTRAIN_TARGET_AVX2 __attribute__((target("avx2")))
// GCC keeps to 256-bit vectors on AVX-512 CPUs unless told to prefer 512.
#define DTRAIN_TARGET_AVX512 \
  __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512")))

namespace dtrain::kernels::detail {

enum class VectorBuild { kBaseline, kAvx2, kAvx512 };

// The widest build this CPU runs, unless `variable` (auto, baseline, avx2,
// avx512) names one, for tests and benchmarks. Read on every call (a getenv
// beside passes over megabytes), so a test can switch it. A build this CPU
// or this compiler's target lacks raises std::invalid_argument naming it.
inline VectorBuild vector_build(const char* variable) {
  const std::size_t choice = env_choice(variable, {"auto", "baseline", "avx2", "avx512"});
#if defined(__x86_64__)
  const bool avx2 = cpu_has_avx2();
  const bool avx512 = cpu_has_avx512();
  if ((choice == 2 && !avx2) || (choice == 3 && !avx512)) {
    throw std::invalid_argument(std::string(variable) + " is " +
                                (choice == 2
                                     ? "avx2, but this CPU has no AVX2"
                                     : "avx512, but this CPU lacks AVX-512 F, BW, VL or DQ"));
  }
  switch (choice) {
    case 1:
      return VectorBuild::kBaseline;
    case 2:
      return VectorBuild::kAvx2;
    case 3:
      return VectorBuild::kAvx512;
    default:
      return avx512 ? VectorBuild::kAvx512 : (avx2 ? VectorBuild::kAvx2 : VectorBuild::kBaseline);
  }
#else
  if (choice >= 2) {
    throw std::invalid_argument(std::string(variable) +
                                " names an x86-64 build, but this is not an x86-64 build");
  }
  return VectorBuild::kBaseline;
#endif
}

}  // namespace dtrain::kernels::detail
