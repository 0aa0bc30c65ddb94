// Marks for code that both the CPU kernels (or their tests, built by the
// host compiler alone) and the CUDA kernels compile.
#pragma once

#if defined(__CUDACC__)
#define DTRAIN_HOST_DEVICE __host__ __device__
// Unrolled on the GPU, where a loop over a register array must be unrolled
// for the array to stay in registers; the host compiler would warn of an
// unknown pragma.
#define DTRAIN_UNROLL _Pragma("unroll")
#else
#define DTRAIN_HOST_DEVICE
#define DTRAIN_UNROLL
#endif
