// Shared helpers for dtrain's .cu files: error checks that throw (never
// exit), the grid arithmetic every launcher uses, and the device's limits.
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

namespace dtrain::kernels::cuda {

// An attribute of the current device.
inline int device_attribute(cudaDeviceAttr attribute) {
  int device = 0;
  DTRAIN_CUDA_CHECK(cudaGetDevice(&device));
  int value = 0;
  DTRAIN_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

// The dynamic shared memory a block may ask for on the current device,
// leaving room for the kernels' static shared memory.
inline std::int64_t dynamic_shared_limit() {
  constexpr std::int64_t kStaticReserve = 8192;
  return device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin) - kStaticReserve;
}

}  // namespace dtrain::kernels::cuda
