// The marks in furthest_point_sample_cuda_choices()'s lines (pointnet2.h).
// No LibTorch here: the CUDA files that write the lines include it too.
#pragma once

namespace dtrain::kernels {

// Stands beside a kernel whose picks differed from the register kernel's
// while the plan measured it: the kernel was left out of the choice, and
// the fault is worth reporting (docs/kernels.md, "CUDA FPS: measured, not
// guessed").
inline constexpr const char* kFpsKernelDiffers = "DIFFERS";

}  // namespace dtrain::kernels
