// Marks for code that both the CPU kernels (or their tests, built by the
// host compiler alone) and the CUDA kernels compile.
#pragma once

#if defined(__CUDACC__)
#define DTRAIN_HOST_DEVICE __host__ __device__
#else
#define DTRAIN_HOST_DEVICE
#endif

// Unrolled in device code, where a loop over a register array must be
// unrolled for the array to stay in registers. Not in host code, nvcc's host
// pass included (__CUDA_ARCH__ is set only for the device passes): the host
// compiler would warn of an unknown pragma.
#if defined(__CUDA_ARCH__)
#define DTRAIN_UNROLL _Pragma("unroll")
#else
#define DTRAIN_UNROLL
#endif
