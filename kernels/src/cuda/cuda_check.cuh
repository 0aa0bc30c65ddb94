// Shared helpers for dtrain's .cu files: error checks that throw (never
// exit) and the grid arithmetic the launchers use.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dtrain::kernels::cuda {

inline void throw_cuda_error(cudaError_t status, const char* expression, const char* file,
                             int line) {
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ") in " + expression + " at " + file + ":" +
                           std::to_string(line));
}

// Blocks of `threads` threads needed to cover `work` items.
inline unsigned int blocks_for(std::int64_t work, unsigned int threads) {
  return static_cast<unsigned int>((work + threads - 1) / threads);
}

// The least power of two at least `value` (1 for value <= 1).
inline std::int64_t power_of_two_at_least(std::int64_t value) {
  std::int64_t power = 1;
  while (power < value) {
    power *= 2;
  }
  return power;
}

}  // namespace dtrain::kernels::cuda

#define DTRAIN_CUDA_CHECK(expression)                                                             \
  do {                                                                                            \
    const cudaError_t dtrain_status_ = (expression);                                              \
    if (dtrain_status_ != cudaSuccess) {                                                          \
      ::dtrain::kernels::cuda::throw_cuda_error(dtrain_status_, #expression, __FILE__, __LINE__); \
    }                                                                                             \
  } while (false)

// Checks that the last kernel launch was accepted.
#define DTRAIN_CUDA_CHECK_LAUNCH() DTRAIN_CUDA_CHECK(cudaGetLastError())
