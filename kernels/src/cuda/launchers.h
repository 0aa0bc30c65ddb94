// Host launchers of the CUDA kernels. Plain pointers and an explicit
// stream: the .cu files never see at::Tensor (they compile fast and without
// LibTorch), and the *_host.cpp files translate tensors into these calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dtrain::kernels::cuda {

// The floating dtypes a kernel can be instantiated for.
enum class FloatType { kFloat32, kFloat64, kFloat16, kBFloat16 };

// Adds to *counter the number of rows of logits (rows x cols, row-major)
// whose argmax equals labels[row]. Asynchronous on `stream`.
void launch_count_correct(FloatType type, const void* logits, const std::int64_t* labels,
                          std::int64_t rows, std::int64_t cols, unsigned long long* counter,
                          cudaStream_t stream);

}  // namespace dtrain::kernels::cuda
